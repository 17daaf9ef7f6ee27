"""`exec`: real processes in real temp directories, with and without bubblewrap."""

from __future__ import annotations

import asyncio
import os
import random
import shlex
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from cody_daemon.policy.sandbox import SandboxPolicy, bwrap_path
from cody_daemon.tools import subreaper
from cody_daemon.tools.base import ToolArgumentError, ToolContext, ToolError, ToolResult
from cody_daemon.tools.exec import (
    HEAD_BYTES,
    STREAM_LIMIT_BYTES,
    TAIL_BYTES,
    ExecTool,
    OutputBuffer,
    child_environment,
)
from cody_protocol.content import ContentToolCallContent, TextContent

from tests.support.workspaces import workspace_and_outside

# --- fixtures and helpers ------------------------------------------------------------------


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace outside the sandbox's temp root (which is a dedicated dir)."""
    return workspace_and_outside(tmp_path, monkeypatch).workspace


def require_bwrap() -> None:
    bwrap_path.cache_clear()
    if bwrap_path() is None:
        if os.environ.get("CI") == "true":
            pytest.fail("bubblewrap is required in CI but is not usable")
        pytest.skip("bubblewrap (bwrap) is not usable on this machine")


@pytest.fixture(params=["bwrap", "no-bwrap"])
def isolation(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run the test with bubblewrap and without it (`CODY_BWRAP=none`)."""
    if request.param == "bwrap":
        monkeypatch.delenv("CODY_BWRAP", raising=False)
        require_bwrap()
    else:
        monkeypatch.setenv("CODY_BWRAP", "none")
        bwrap_path.cache_clear()
    yield str(request.param)
    bwrap_path.cache_clear()


def make_ctx(
    ws: Path, mode: str = "workspace-write", outputs: list[str] | None = None
) -> ToolContext:
    return ToolContext(
        session_id="s",
        call_id="c",
        cwd=ws,
        sandbox=SandboxPolicy.create(mode, ws),  # type: ignore[arg-type]
        on_output=None if outputs is None else outputs.append,
    )


async def run(
    ws: Path,
    command: list[str] | str,
    *,
    tool: ExecTool | None = None,
    outputs: list[str] | None = None,
    **extra: object,
) -> ToolResult:
    tool = tool or ExecTool()
    args = tool.parse({"command": command, **extra})
    return await tool.run(args, make_ctx(ws, outputs=outputs))


def combined(result: ToolResult) -> str:
    """The command output as shown in the result's content block."""
    block = result.content[0]
    assert isinstance(block, ContentToolCallContent)
    assert isinstance(block.content, TextContent)
    return block.content.text


def marker() -> str:
    """A unique `sleep` duration that identifies our processes in /proc."""
    return f"37.{random.randrange(10**8):08d}"


def live_pids(text: str) -> list[int]:
    """Pids of live (not zombie) processes whose command line contains `text`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if text.encode() in cmdline and state not in ("Z", "X"):
            found.append(int(entry))
    return found


def live_group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes in process group `pgid` (zombies are already dead)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return []
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            members.append(int(entry))
    return members


async def wait_for_pids(text: str, count: int, within_s: float = 3.0) -> list[int]:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        pids = live_pids(text)
        if len(pids) >= count:
            return pids
        await asyncio.sleep(0.02)
    raise AssertionError(f"expected {count} processes matching {text!r}, got {live_pids(text)}")


async def assert_all_gone(text: str) -> None:
    """No process matching `text` survives (allowing a moment for SIGKILL delivery)."""
    deadline = time.monotonic() + 1.0
    while live_pids(text) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert live_pids(text) == []


# --- arguments, schema, metadata -----------------------------------------------------------


def test_schema_uses_the_documented_argument_names() -> None:
    spec = ExecTool().spec()
    params = spec.parameters
    assert spec.name == "exec"
    assert set(params["properties"]) == {"command", "cwd", "timeoutMs", "escalate", "justification"}
    assert params["required"] == ["command"]
    for prop in params["properties"].values():
        assert len(prop["description"]) > 20
    command_types = {branch["type"] for branch in params["properties"]["command"]["anyOf"]}
    assert command_types == {"array", "string"}
    timeout = params["properties"]["timeoutMs"]
    assert (timeout["type"], timeout["minimum"], timeout["maximum"]) == ("integer", 1, 3_600_000)
    assert params["properties"]["cwd"]["type"] == "string"
    assert params["properties"]["escalate"]["type"] == "boolean"
    assert params["properties"]["justification"]["type"] == "string"


def test_tool_metadata() -> None:
    tool = ExecTool()
    assert (tool.name, tool.kind, tool.requires_approval) == ("exec", "execute", True)


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"command": ""}, "command"),
        ({"command": "   "}, "command"),
        ({"command": []}, "command"),
        ({"command": [""]}, "command"),
        ({"command": "ls", "timeoutMs": 0}, "timeoutMs"),
        ({"command": "ls", "timeoutMs": 3_600_001}, "timeoutMs"),
        ({"command": "ls", "bogus": 1}, "bogus"),
        ({}, "command"),
    ],
)
def test_bad_arguments_are_rejected(raw: dict[str, object], problem: str) -> None:
    with pytest.raises(ToolArgumentError, match=problem):
        ExecTool().parse(raw)


def test_camel_case_timeout_is_parsed() -> None:
    args = ExecTool().parse({"command": ["ls"], "timeoutMs": 5000, "cwd": "sub"})
    assert (args.timeout_ms, args.cwd, args.command) == (5000, "sub", ["ls"])


def test_title_is_the_command_as_typed() -> None:
    tool = ExecTool()
    assert tool.title(tool.parse({"command": "ls -la | head"})) == "ls -la | head"
    assert tool.title(tool.parse({"command": ["echo", "a b", "c"]})) == "echo 'a b' c"


def test_grant_key_is_the_normalised_command(workspace: Path) -> None:
    tool = ExecTool()
    ctx = make_ctx(workspace)
    keys = {
        tool.grant_key(tool.parse({"command": command}), ctx)
        for command in ("git status", ["git", "status"], ["bash", "-lc", "git status"])
    }
    assert keys == {("exec", "git", "status")}


def test_preview_shows_command_and_cwd(workspace: Path) -> None:
    tool = ExecTool()
    (workspace / "sub").mkdir()
    [block] = tool.preview(
        tool.parse({"command": ["git", "log"], "cwd": "sub"}), make_ctx(workspace)
    )
    assert isinstance(block, ContentToolCallContent)
    assert isinstance(block.content, TextContent)
    assert block.content.text.splitlines()[:2] == ["$ git log", f"cwd: {workspace / 'sub'}"]


def test_a_multi_line_command_cannot_pass_for_the_cwd_line(workspace: Path) -> None:
    """Each further line of the command starts with `> ` (issue 20.5)."""
    tool = ExecTool()
    [block] = tool.preview(
        tool.parse({"command": "rm -rf ~/x #\ncwd: /tmp/safe"}), make_ctx(workspace)
    )
    assert isinstance(block, ContentToolCallContent)
    assert isinstance(block.content, TextContent)
    assert block.content.text.split("\n")[:3] == [
        "$ rm -rf ~/x #",
        "> cwd: /tmp/safe",
        f"cwd: {workspace}",
    ]


def test_child_environment_drops_secrets() -> None:
    env = child_environment(
        {
            "PATH": "/bin",
            "OPENAI_API_KEY": "x",
            "github_token": "x",
            "DB_PASSWORD": "x",
            "MY_SECRET_THING": "x",
            "HOME": "/root",
        }
    )
    assert env == {"PATH": "/bin", "HOME": "/root"}


# --- running commands ----------------------------------------------------------------------


async def test_shell_string_runs_through_bash(workspace: Path, isolation: str) -> None:
    result = await run(workspace, "echo $((1+2)) | tr 3 x && echo done")
    assert result.success
    assert combined(result) == "x\ndone\n"
    assert result.output.startswith("Exit code: 0\nWall time: ")
    assert result.output.endswith("Output:\nx\ndone\n")
    assert result.raw_output == {
        "exitCode": 0,
        "durationMs": result.raw_output["durationMs"] if result.raw_output else None,
        "timedOut": False,
        "truncated": False,
        "sandboxed": isolation == "bwrap",
    }


async def test_argv_runs_without_a_shell(workspace: Path, isolation: str) -> None:
    result = await run(workspace, ["printf", "%s|", "a b", "$HOME", "; rm -rf x"])
    assert combined(result) == "a b|$HOME|; rm -rf x|"


async def test_non_zero_exit_is_a_failed_result(workspace: Path) -> None:
    result = await run(workspace, "echo oops >&2; exit 3")
    assert not result.success
    assert result.raw_output is not None and result.raw_output["exitCode"] == 3
    assert result.output.startswith("Exit code: 3\n")
    assert "oops" in combined(result)


INTERLEAVE = """
import fcntl, os, struct, termios, time

def read_by_the_daemon(fd):
    # FIONREAD on our end of the pipe: bytes the reader has not taken yet.
    deadline = time.monotonic() + 20
    while struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, bytes(4)))[0]:
        assert time.monotonic() < deadline, "the daemon never read the pipe"
        time.sleep(0.001)

for n in range(1, 6):
    for fd, name in ((1, "out"), (2, "err")):
        os.write(fd, f"{name}{n}\\n".encode())
        read_by_the_daemon(fd)
"""


async def test_stdout_and_stderr_interleave_in_arrival_order(
    workspace: Path, isolation: str
) -> None:
    """Each line is written only once the previous one has left its pipe (no sleeps)."""
    result = await run(workspace, ["python3", "-c", INTERLEAVE])
    assert combined(result) == "".join(f"out{n}\nerr{n}\n" for n in range(1, 6))


async def test_output_streams_while_the_command_runs(workspace: Path) -> None:
    seen: list[tuple[float, str]] = []
    outputs: list[str] = []

    class Recorder(list[str]):
        def append(self, text: str) -> None:
            seen.append((time.monotonic(), text))
            outputs.append(text)

    started = time.monotonic()
    tool = ExecTool()
    ctx = make_ctx(workspace)
    ctx.on_output = Recorder().append
    result = await tool.run(tool.parse({"command": "echo first; sleep 0.4; echo second"}), ctx)
    finished = time.monotonic()
    assert "".join(outputs) == "first\nsecond\n" == combined(result)
    first_at = next(at for at, text in seen if "first" in text)
    assert first_at - started < finished - started - 0.3


async def test_stdin_is_not_inherited(workspace: Path, isolation: str) -> None:
    result = await run(workspace, "readlink /proc/self/fd/0; cat; echo end", timeoutMs=5000)
    assert combined(result) == "/dev/null\nend\n"


async def test_secrets_are_not_passed_to_the_command(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODY_TEST_API_KEY", "sk-very-secret")
    monkeypatch.setenv("CODY_TEST_TOKEN", "tok-very-secret")
    monkeypatch.setenv("CODY_TEST_PLAIN", "visible-value")
    text = combined(await run(workspace, ["env"]))
    assert "visible-value" in text
    assert "very-secret" not in text


async def test_relative_cwd_resolves_against_the_session_cwd(workspace: Path) -> None:
    (workspace / "sub").mkdir()
    result = await run(workspace, ["pwd"], cwd="sub")
    assert combined(result) == f"{workspace / 'sub'}\n"


async def test_missing_cwd_is_a_clear_error(workspace: Path) -> None:
    with pytest.raises(ToolError, match="does not exist"):
        await run(workspace, ["pwd"], cwd="nope")
    (workspace / "file").write_text("x")
    with pytest.raises(ToolError, match="not a directory"):
        await run(workspace, ["pwd"], cwd="file")


async def test_unknown_program_is_a_clear_error(workspace: Path, isolation: str) -> None:
    with pytest.raises(ToolError, match="command not found: cody-no-such-program"):
        await run(workspace, ["cody-no-such-program", "x"])
    with pytest.raises(ToolError, match="command not found"):
        await run(workspace, ["./missing-script"])
    script = workspace / "not-executable.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    with pytest.raises(ToolError, match="not executable"):
        await run(workspace, ["./not-executable.sh"])


async def test_unknown_program_in_a_shell_string_is_a_failed_result(workspace: Path) -> None:
    result = await run(workspace, "cody-no-such-program")
    assert not result.success
    assert result.raw_output is not None and result.raw_output["exitCode"] == 127
    assert "not found" in combined(result)


# --- output cap ----------------------------------------------------------------------------


def test_output_buffer_keeps_head_and_tail() -> None:
    buffer = OutputBuffer(head_limit=4, tail_limit=3)
    for piece in (b"ab", b"cdef", b"ghij", b"klm"):
        buffer.append(piece)
    assert buffer.total == 13
    assert buffer.truncated
    assert buffer.text() == "abcd\n[... 6 bytes omitted ...]\nklm"


def test_output_buffer_small_output_is_whole() -> None:
    buffer = OutputBuffer(head_limit=4, tail_limit=3)
    buffer.append(b"abcdefg")
    assert not buffer.truncated
    assert buffer.text() == "abcdefg"


def test_output_buffer_memory_is_bounded() -> None:
    buffer = OutputBuffer(head_limit=10, tail_limit=10)
    for _ in range(10_000):
        buffer.append(b"x" * 7)
    assert len(buffer._head) + len(buffer._tail) <= 30


async def test_long_output_keeps_head_and_tail(workspace: Path) -> None:
    result = await run(workspace, ["seq", "1", "200000"])
    expected = "".join(f"{n}\n" for n in range(1, 200001)).encode()
    omitted = len(expected) - HEAD_BYTES - TAIL_BYTES
    text = combined(result)
    assert text.startswith("1\n2\n3\n")
    assert text.endswith("199999\n200000\n")
    assert f"\n[... {omitted} bytes omitted ...]\n" in text
    assert text == (
        expected[:HEAD_BYTES].decode()
        + f"\n[... {omitted} bytes omitted ...]\n"
        + expected[-TAIL_BYTES:].decode()
    )
    assert result.raw_output is not None and result.raw_output["truncated"] is True
    assert f"{len(expected)} bytes in total" in result.output


async def test_huge_output_does_not_grow_memory(workspace: Path) -> None:
    outputs: list[str] = []
    tracemalloc.start()
    try:
        result = await run(workspace, "head -c 100000000 /dev/zero | tr '\\0' a", outputs=outputs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.success
    assert peak < 4 * 1024 * 1024
    assert len(combined(result)) < HEAD_BYTES + TAIL_BYTES + 100
    assert f"[... {100_000_000 - HEAD_BYTES - TAIL_BYTES} bytes omitted ...]" in combined(result)
    streamed = "".join(outputs)
    assert len(streamed) < STREAM_LIMIT_BYTES + READ_CHUNK_SLACK
    assert "live output stops" in streamed


READ_CHUNK_SLACK = 128 * 1024


# --- timeouts, cancellation, process groups -------------------------------------------------


async def test_timeout_kills_the_command_and_keeps_output(workspace: Path, isolation: str) -> None:
    tag = marker()
    started = time.monotonic()
    result = await run(workspace, f"echo started; sleep {tag}", timeoutMs=300)
    assert time.monotonic() - started < 2
    assert not result.success
    assert result.raw_output is not None and result.raw_output["timedOut"] is True
    assert "Timed out: the command was killed after 0.3 s" in result.output
    assert combined(result) == "started\n"
    await assert_all_gone(tag)


async def test_timeout_escalates_to_sigkill(workspace: Path, isolation: str) -> None:
    tag = marker()
    tool = ExecTool(kill_grace_s=0.3)
    started = time.monotonic()
    result = await run(
        workspace, f"trap '' TERM; echo started; sleep {tag}", tool=tool, timeoutMs=300
    )
    assert time.monotonic() - started < 2
    assert result.raw_output is not None and result.raw_output["timedOut"] is True
    assert "started" in combined(result)
    await assert_all_gone(tag)


async def test_background_jobs_do_not_outlive_the_call(workspace: Path, isolation: str) -> None:
    tag = marker()
    started = time.monotonic()
    result = await run(workspace, f"sleep {tag} & echo launched")
    assert time.monotonic() - started < 1.5
    assert result.success
    assert combined(result) == "launched\n"
    await assert_all_gone(tag)


@pytest.mark.parametrize(
    "command",
    [
        "sleep {a} & sleep {b}",
        "sleep {a} & sleep {b} & wait",
        ["bash", "-c", "sleep {a}"],
        ["bash", "-c", "bash -c 'sleep {a} & sleep {b}'; echo unreachable"],
    ],
    ids=["bg-and-fg", "two-bg-and-wait", "bash-c", "nested-bash"],
)
async def test_cancel_kills_the_whole_process_group(
    workspace: Path, isolation: str, command: str | list[str]
) -> None:
    tag_a, tag_b = marker(), marker()
    if isinstance(command, str):
        command = command.format(a=tag_a, b=tag_b)
        expected = {tag_a, tag_b}
    else:
        command = [word.format(a=tag_a, b=tag_b) for word in command]
        expected = {tag for tag in (tag_a, tag_b) if tag in shlex.join(command)}
    task = asyncio.create_task(run(workspace, command))
    pgids = set()
    for tag in expected:
        for pid in await wait_for_pids(tag, 1):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            pgids.add(int(fields[2]))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for tag in expected:
        await assert_all_gone(tag)
    assert pgids
    if isolation == "no-bwrap":
        for pgid in pgids:
            assert live_group_members(pgid) == []


async def test_cancel_during_a_noisy_command(workspace: Path, isolation: str) -> None:
    tag = marker()
    outputs: list[str] = []
    task = asyncio.create_task(
        run(workspace, f"sleep {tag} & yes | head -c 50000000; sleep {tag}", outputs=outputs)
    )
    await wait_for_pids(tag, 1)
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await assert_all_gone(tag)


# --- processes that leave the process group (issue 8 item 11) -------------------------------

ESCAPES = (
    "setsid sleep {tag} & "
    "(setsid sh -c 'sleep {tag}' &); "
    "( (sleep {tag} &) & ); "
    "nohup setsid sh -c 'trap \"\" TERM HUP; sleep {tag}' >/dev/null 2>&1 & "
)
"""setsid, double fork, nohup with ignored SIGTERM: every way a command detaches a child."""


async def test_detached_processes_do_not_outlive_the_call(workspace: Path, isolation: str) -> None:
    tag = marker()
    result = await run(workspace, ESCAPES.format(tag=tag) + "echo launched")
    assert result.success and combined(result) == "launched\n"
    await assert_all_gone(tag)


async def test_timeout_kills_detached_processes_too(workspace: Path, isolation: str) -> None:
    tag = marker()
    tool = ExecTool(kill_grace_s=0.4)
    script = ESCAPES.format(tag=tag) + f"echo launched; sleep {tag}"
    result = await run(workspace, script, tool=tool, timeoutMs=500)
    assert result.raw_output is not None and result.raw_output["timedOut"] is True
    assert combined(result) == "launched\n"
    await assert_all_gone(tag)


async def test_cancel_kills_detached_processes_too(workspace: Path, isolation: str) -> None:
    tag = marker()
    task = asyncio.create_task(run(workspace, ESCAPES.format(tag=tag) + f"sleep {tag}"))
    await wait_for_pids(tag, 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await assert_all_gone(tag)


async def test_exit_status_passes_through_unchanged(workspace: Path, isolation: str) -> None:
    result = await run(workspace, "exit 7")
    assert result.raw_output is not None and result.raw_output["exitCode"] == 7
    result = await run(workspace, "kill -SEGV $$")
    assert result.raw_output is not None and result.raw_output["exitCode"] == 128 + 11
    result = await run(workspace, ["sh", "-c", "echo fine"])
    assert result.success and combined(result) == "fine\n"


async def test_detached_processes_die_when_the_daemon_dies(workspace: Path) -> None:
    """The no-bwrap helper asks for SIGTERM when its parent (the daemon) dies: a daemon
    killed with -9 leaves nothing behind either."""
    tag = marker()
    helper = Path(subreaper.__file__)
    parent = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "import os, subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-I', '-S', {str(helper)!r}, str(os.getpid()), "
        f"'0.2', '--', 'sh', '-c', {ESCAPES.format(tag=tag) + f'sleep {tag}'!r}])\n"
        "time.sleep(60)\n",
        start_new_session=True,
    )
    try:
        await wait_for_pids(tag, 5)
    finally:
        parent.kill()
        await parent.wait()
    await assert_all_gone(tag)
