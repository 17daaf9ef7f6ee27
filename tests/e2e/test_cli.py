"""`cody-client` as a user runs it: a real process, with and without a terminal."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.support.checkpoints import require_bwrap
from tests.support.daemon import CodyEnv
from tests.support.mock_responses import MockResponsesServer, text, tool_call

CLIENT = [sys.executable, "-m", "cody_client"]


async def run_client(
    env: CodyEnv,
    *args: str,
    stdin: bytes = b"",
    extra_env: dict[str, str] | None = None,
    timeout: float = 60,
) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        *CLIENT,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**env.env, **(extra_env or {})},
        cwd=env.workspace,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin), timeout)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_demo_without_a_terminal_shows_the_whole_flow(cody_env: CodyEnv) -> None:
    code, out, err = await run_client(cody_env, "demo")
    assert code == 0, err
    assert "list the files" in out and "hello.py" in out
    assert "thinking:" in out
    before, asked = out.split("Approval needed: python3 hello.py", 1)
    assert "Hello from the Cody demo!" in before, "the sandboxed run did not ask"
    assert "allowed by sandbox: the sandbox contains it" in before, "each call says why it ran"
    assert "OUTSIDE THE SANDBOX" in asked and "you asked to run it outside the sandbox" in asked
    assert "p: Always allow `exec(python3 hello.py)` in " in asked
    assert "y allow · a session · p project · n reject · r reject session · c cancel" in asked
    assert 'answers "allow once" itself' in asked
    assert "Hello from the Cody demo!" in asked.split("Starting a fresh daemon")[0]
    assert "`cody-client sessions list` shows it" in out
    assert "Cody was here." in out.split("Starting a fresh daemon")[1]
    sessions = list((cody_env.cody_home / "sessions").glob("*/*/*/*.jsonl"))
    assert len(sessions) == 1
    assert not list(cody_env.tmpdir.glob("cody-demo-*")), "the demo removes its workspace"


async def test_demo_without_bubblewrap_says_commands_run_unsandboxed(cody_env: CodyEnv) -> None:
    code, out, err = await run_client(cody_env, "demo", extra_env={"CODY_BWRAP": "none"})
    assert code == 0, err
    assert "no bubblewrap: commands ask before running unsandboxed" in out.splitlines()[1]
    assert "WITHOUT a sandbox" in out
    assert "Hello from the Cody demo!" in out


async def test_the_demos_banner_names_the_sandbox_the_daemon_uses(cody_env: CodyEnv) -> None:
    """The banner said "no bubblewrap" whenever `bwrap` was not on PATH, although the daemon
    sandboxed every command with the bwrap of the locked wheel (the README's first command on
    a fresh machine printed both "no bubblewrap" and "allowed by sandbox")."""
    require_bwrap(cody_env)
    code, out, err = await run_client(cody_env, "demo")
    assert code == 0, err
    banner = out.splitlines()[1]
    assert "bubblewrap sandbox" in banner and "no bubblewrap" not in banner, banner
    assert "allowed by sandbox: the sandbox contains it" in out


@pytest.mark.skipif(
    shutil.which("tmux") is None and os.environ.get("CI") != "true", reason="tmux is not installed"
)
async def test_demo_in_a_terminal_asks_and_echoes_each_answer_once(cody_env: CodyEnv) -> None:
    name = f"cody-test-{uuid.uuid4().hex[:8]}"
    env_args = [f"{key}={value}" for key, value in cody_env.env.items()]
    command = ["env", "-i", *env_args, "TERM=xterm-256color", *CLIENT, "demo"]
    subprocess.run(
        [
            "tmux",
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            "160",
            "-y",
            "60",
            "-c",
            str(cody_env.workspace),
            subprocess.list2cmdline(command) + "; sleep 30",
        ],
        check=True,
    )
    try:

        async def pane() -> str:
            result = subprocess.run(
                ["tmux", "capture-pane", "-p", "-t", name, "-S", "-200"],
                capture_output=True,
                text=True,
                check=True,
            )
            return result.stdout

        async def wait_for(needle: str, count: int = 1) -> str:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                screen = await pane()
                if screen.count(needle) >= count:
                    return screen
                await asyncio.sleep(0.1)
            raise AssertionError(f"{needle!r} did not appear:\n{await pane()}")

        screen = await wait_for("choice [y/a/p/n/r/c]:")
        ran = screen.count("Hello from the Cody demo!")
        assert ran >= 1, "the sandboxed run did not ask"
        subprocess.run(["tmux", "send-keys", "-t", name, "y"], check=True)
        await wait_for("Hello from the Cody demo!", ran + 1)
        screen = await wait_for("Replay it:")
        assert "choice [y/a/p/n/r/c]: y\n" in screen + "\n"
        assert "choice [y/a/p/n/r/c]: yy" not in screen
        assert screen.count("choice [") == 1, "only leaving the sandbox asked"
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], check=False)


async def test_exec_streams_the_answer_and_exits_0(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    model.enqueue(tool_call("exec", {"command": "touch from-tool"}, call_id="c1"))
    model.enqueue(text("All done."))
    code, out, err = await run_client(
        cody_env, "exec", "--approval-policy", "untrusted", "--approve", "allow", "do the thing"
    )
    assert code == 0, err
    assert out.strip() == "All done."
    assert "allowed by --approve allow: touch from-tool" in err
    assert "Approval needed" not in err, "a rule answered: no approval box"


async def test_exec_stops_the_processes_the_model_left_running_and_says_so(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """A one-shot run leaves nothing running: a dev server the model started in the
    background is stopped before `exec` exits, with a line on stderr naming it."""
    cody_env.use_mock_provider(model.base_url)
    marker = f"{time.time_ns() % 100000 + 700000}"
    model.enqueue(
        tool_call("exec", {"command": f"sleep {marker}", "background": True}, call_id="c1")
    )
    model.enqueue(text("Started it."))
    code, out, err = await run_client(cody_env, "exec", "--approve", "allow", "start a server")
    assert code == 0, err
    assert out.strip() == "Started it."
    assert "stopped process 1 the model left running" in err
    assert f"killed by SIGTERM): sleep {marker}" in err
    for entry in Path("/proc").iterdir():
        try:
            cmdline = entry.joinpath("cmdline").read_bytes() if entry.name.isdigit() else b""
        except OSError:
            continue  # gone meanwhile
        assert f"sleep {marker}".encode() not in cmdline


async def test_exec_exit_codes(cody_env: CodyEnv, model: MockResponsesServer) -> None:
    cody_env.use_mock_provider(model.base_url)
    model.enqueue(tool_call("exec", {"command": "touch denied.txt"}, call_id="c1"))
    model.enqueue(text("could not"))
    code, _, err = await run_client(cody_env, "exec", "--approval-policy", "untrusted", "touch it")
    assert code == 4, err
    assert "no terminal to ask" in err
    assert not (cody_env.workspace / "denied.txt").exists()

    model.enqueue_error(401)
    code, _, err = await run_client(cody_env, "exec", "hello")
    assert code == 5 and "MOCK_API_KEY" in err

    code, _, err = await run_client(cody_env, "exec", "-", stdin=b"   ")
    assert code == 2 and "empty" in err

    code, _, err = await run_client(cody_env, "exec", "--approval-policy", "sometimes", "x")
    assert code == 2

    model.enqueue(text("read from stdin"))
    code, out, _ = await run_client(cody_env, "exec", "-", stdin=b"a prompt on stdin")
    assert code == 0 and "read from stdin" in out
    assert model.requests[-1].body["input"][-1]["content"][0]["text"] == "a prompt on stdin"


async def test_exec_max_turn_requests_exits_6(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url, extra="max_tool_iterations = 1")
    model.enqueue(tool_call("listDir", {"dirPath": "."}, call_id="l1"))
    code, _, err = await run_client(cody_env, "exec", "loop")
    assert code == 6, err


async def test_sessions_list_show_delete(cody_env: CodyEnv) -> None:
    code, out, err = await run_client(cody_env, "exec", "--provider", "offline", "list files")
    assert code == 0, err
    code, out, _ = await run_client(cody_env, "sessions", "list")
    [line] = out.strip().splitlines()
    session_id = line.split()[0]
    assert "list files" in line and str(cody_env.workspace) in line
    code, out, _ = await run_client(cody_env, "sessions", "show", session_id)
    assert code == 0 and "› list files" in out and "▸ LS .\n" in out
    code, out, _ = await run_client(cody_env, "sessions", "delete", session_id)
    assert code == 0
    code, out, _ = await run_client(cody_env, "sessions", "list")
    assert "No saved sessions." in out
    code, _, err = await run_client(cody_env, "sessions", "show", session_id)
    assert code == 2 and f"No Cody session {session_id} found." in err and "_cody" not in err


async def test_a_prompt_equal_to_a_subcommand_follows_double_dash(cody_env: CodyEnv) -> None:
    code, out, err = await run_client(cody_env, "--", "demo", stdin=b"")
    assert code == 0, err
    assert "offline model" in out, "the offline model answered the prompt 'demo' with its help"
    assert "Cody demo" not in out


async def test_chat_without_a_terminal_reads_prompts_from_stdin(cody_env: CodyEnv) -> None:
    code, out, err = await run_client(
        cody_env, "--provider", "offline", stdin=b"list files\nread missing.txt\n"
    )
    assert code == 0, err
    assert "List ." in out and "missing.txt" in out
    assert "Resume with: cody-client --resume" in out


async def test_exec_says_only_what_a_user_needs_on_stderr(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """Regressions: a "no terminal" note on every run, the untrusted-project warning dropped,
    daemon log lines with timestamps, and protocol words in errors."""
    cody_env.use_mock_provider(model.base_url)
    project = cody_env.workspace / ".cody"
    project.mkdir()
    (project / "config.toml").write_text('sandbox_mode = "danger-full-access"\n')
    model.enqueue(text("plain answer"))
    code, out, err = await run_client(cody_env, "exec", "just answer")
    assert code == 0 and out.strip() == "plain answer", err
    assert "no terminal" not in err, "nothing was rejected, so nothing to say about it"
    assert "warning:" in err and "not trusted" in err and "sandbox_mode" in err
    assert not any(line[:4].isdigit() for line in err.splitlines()), err

    code, _, err = await run_client(cody_env, "exec", "--provider", "openai", "hi")
    assert code == 5
    assert "--provider" in err and "session/set_config_option" not in err

    code, _, err = await run_client(cody_env, "--resume", "no-such-session")
    assert code == 2
    assert "cody-client sessions list" in err and "session/list" not in err


async def test_exec_exits_4_when_a_call_is_refused_not_only_when_rejected(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    model.enqueue(tool_call("exec", {"command": "echo hidden"}, call_id="c1"))
    model.enqueue(text("could not run it"))
    code, _, err = await run_client(
        cody_env, "exec", "--approve", "allow", "--allowed-tools", "readFile", "run it"
    )
    assert code == 4, err

    outside = cody_env.root / "outside.txt"
    model.enqueue(tool_call("writeFile", {"filePath": str(outside), "content": "x"}, call_id="w1"))
    model.enqueue(text("blocked"))
    code, _, err = await run_client(
        cody_env, "exec", "--approval-policy", "never", "--approve", "allow", "write outside"
    )
    assert code == 4, err
    assert not outside.exists(), "policy never: a write outside the sandbox is refused"


async def test_exec_with_bad_arguments_leaves_no_early_daemon_behind(cody_env: CodyEnv) -> None:
    """`exec` starts its daemon before parsing anything (launch.py); a usage error must end
    that daemon too, not leave it running."""
    pid_file = cody_env.root / "daemon.pid"
    fake = cody_env.root / "fake-daemon"
    fake.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 30\n")
    fake.chmod(0o755)
    code, _, err = await run_client(
        cody_env, "exec", "--no-such-flag", "hi", extra_env={"CODY_DAEMON": str(fake)}
    )
    assert code == 2 and "--no-such-flag" in err
    for _ in range(50):
        if pid_file.exists() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.1)
    pid = int(pid_file.read_text())
    state = Path(f"/proc/{pid}/stat")
    assert not state.exists() or ") Z" in state.read_text(), "the early daemon was killed"


async def test_exec_takes_over_its_early_daemon(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """The daemon `launch` starts before asyncio is imported is the one `exec` talks to
    (one daemon process, its stderr shown), and it is gone when `exec` ends."""
    cody_env.use_mock_provider(model.base_url, extra='approval_policy = "never"')
    starts = cody_env.root / "starts.log"
    wrapper = cody_env.root / "counting-daemon"
    wrapper.write_text(
        f'#!/bin/sh\necho $$ >> {starts}\nexec {sys.executable} -m cody_daemon "$@"\n'
    )
    wrapper.chmod(0o755)
    model.enqueue(text("early answer"))
    code, out, err = await run_client(
        cody_env, "exec", "--no-daemon-socket", "say it", extra_env={"CODY_DAEMON": str(wrapper)}
    )
    assert code == 0, err
    assert "early answer" in out
    [pid] = starts.read_text().split()
    assert (
        not Path(f"/proc/{pid}/cmdline").exists() or not Path(f"/proc/{pid}/cmdline").read_bytes()
    ), "the daemon ended with exec"


async def test_permissions_lists_every_rule_and_removes_one_keeping_the_comments(
    cody_env: CodyEnv,
) -> None:
    ws = cody_env.workspace
    config = cody_env.cody_home / "config.toml"
    config.write_text(
        "# rules I care about\n"
        '[permissions]\ndeny = ["exec(rm -rf:*)"]  # never\n\n'
        f'[projects."{ws}".permissions]\nallow = ["exec(make test:*)"]\n'
    )
    claude = cody_env.root / "claude-config" / "settings.json"
    claude.write_text('{"permissions": {"allow": ["Bash(ls:*)"]}}')

    code, out, err = await run_client(cody_env, "permissions")
    assert code == 0, err
    assert f"deny   exec(rm -rf:*)  [{config}]" in out
    assert f"allow  exec(make test:*)  in {ws}  [{config}]" in out
    assert f"allow  Bash(ls:*)  [{claude}]  (read-only)" in out

    code, out, err = await run_client(cody_env, "permissions", "remove", "exec(make test:*)")
    assert code == 0, err
    assert "Removed allow  exec(make test:*)" in out
    text = config.read_text()
    assert "exec(make test:*)" not in text
    assert text.startswith("# rules I care about\n") and "# never" in text

    code, _, err = await run_client(cody_env, "permissions", "remove", "Bash(ls:*)")
    assert code == 2 and "no rule 'Bash(ls:*)' in Cody's config" in err
    assert "Bash(ls:*)" in claude.read_text()


async def test_exec_approve_project_saves_the_offered_rule(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    model.enqueue(tool_call("exec", {"command": "mkdir -p build"}, call_id="c1"))
    model.enqueue(text("built"))
    code, _, err = await run_client(
        cody_env, "exec", "--approval-policy", "untrusted", "--approve", "project", "build it"
    )
    assert code == 0, err
    assert "allowed by --approve project: mkdir -p build (rule saved for the project)" in err
    config = (cody_env.cody_home / "config.toml").read_text()
    assert f'[projects."{cody_env.workspace}".permissions]' in config
    assert '"exec(mkdir:*)"' in config


async def test_exec_add_dir_lets_the_session_write_there_and_decisions_say_why(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    extra = cody_env.root / "extra"
    extra.mkdir()
    cody_env.use_mock_provider(model.base_url)
    model.enqueue(
        tool_call("writeFile", {"filePath": str(extra / "out.txt"), "content": "x"}, call_id="w1")
    )
    model.enqueue(text("written"))
    code, _, err = await run_client(
        cody_env, "exec", "--add-dir", str(extra), "--decisions", "--approve", "deny", "write"
    )
    assert code == 0, err
    assert (extra / "out.txt").read_text() == "x", "no question: --approve deny never answered"
    assert "allowed by sandbox: the sandbox contains it" in err
