"""Real Codex and Claude Code sessions, made by the pinned CLIs offline against the mocks.

`build_codex(...)` and `build_claude(...)` run the real CLIs (tests/support/agent_clis.py)
against loopback mock models and return what they wrote, plus what was scripted, so a test
can check a parser against both. What each builds:

Codex (`$CODEX_HOME/sessions/...`), two threads:
- `main`: `codex exec --json` "run echo hello": reasoning (summary + encrypted content), a plan
  (`update_plan`) and a shell call (`exec_command`) in one response, then an answer whose
  usage passes the configured auto-compact limit; then `codex exec --json resume` "say
  again": Codex compacts the thread first (it asks the model for a summary; Codex's own
  compaction, triggered offline by `model_auto_compact_token_limit`), then answers;
- `declined`: `codex app-server`, a command asking for escalation that the client declines.
The stdout of both exec runs is kept (`codex exec --json` transcripts).

Claude Code (`$CLAUDE_CONFIG_DIR/projects/<cwd>/<id>.jsonl`), one session over three runs of
`claude -p --output-format stream-json --verbose --include-partial-messages`:
thinking + text + `TodoWrite` + `Bash` (bypassPermissions), then `--resume` with a `Write`
that the default permission mode denies, then `--resume` "/compact". The stdout of each run
is kept (stream-json transcripts with partial messages).

`python -m tests.support.agent_sessions OUT_DIR` writes the files to OUT_DIR (that is how
tests/fixtures/history/live/ was made).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import mock_anthropic, mock_responses
from .agent_clis import claude, claude_env, codex, codex_env, write_codex_config

__all__ = ["ClaudeSessions", "CodexSessions", "build_claude", "build_codex"]

CODEX_PROMPTS = ("run echo hello", "say again")
CLAUDE_PROMPTS = ("run echo hello", "write a.txt", "/compact")
_TIMEOUT_S = 180


@dataclass
class CodexSessions:
    codex_home: Path
    main_id: str
    declined_id: str
    main_rollout: Path
    declined_rollout: Path
    exec_outputs: list[Path] = field(default_factory=list)
    requests: list[Any] = field(default_factory=list)
    """What Codex sent the mock model (Responses request bodies)."""


@dataclass
class ClaudeSessions:
    config_dir: Path
    session_id: str
    session_file: Path
    stream_outputs: list[Path] = field(default_factory=list)
    requests: list[Any] = field(default_factory=list)


def _run(argv: list[str], *, env: dict[str, str], cwd: Path) -> str:
    result = subprocess.run(
        argv,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=_TIMEOUT_S,
        check=False,
    )
    if result.returncode != 0:
        raise AssertionError(
            f"{argv[0]} exited {result.returncode}\nstdout:\n{result.stdout[-3000:]}\n"
            f"stderr:\n{result.stderr[-3000:]}"
        )
    return result.stdout


def _one(paths: list[Path], what: str) -> Path:
    assert len(paths) == 1, f"expected one {what}, found {paths}"
    return paths[0]


def build_codex(codex_home: Path, home: Path, workspace: Path, out: Path) -> CodexSessions:
    r = mock_responses
    workspace.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    with r.MockResponsesServer.in_thread() as server:
        write_codex_config(codex_home, server.base_url)
        config = codex_home / "config.toml"
        config.write_text(
            "model_auto_compact_token_limit = 2000\nmodel_context_window = 8000\n"
            + config.read_text(encoding="utf-8"),
            encoding="utf-8",
        )
        env = codex_env(home, codex_home)
        exec_argv = [str(codex()), "exec", "--json", "--skip-git-repo-check", "-C", str(workspace)]
        plan = {"plan": [{"step": "run echo", "status": "in_progress"}], "explanation": "one step"}
        server.enqueue(
            r.reasoning("I should run echo", encrypted="enc-codex-1"),
            r.tool_call("update_plan", plan, call_id="call_plan"),
            r.tool_call("exec_command", {"cmd": "echo hello"}, call_id="call_echo"),
            usage=r.Usage(input=100, output=20, reasoning=5),
        )
        server.enqueue(r.text("Done: hello"), usage=r.Usage(input=3000, output=20, cached=50))
        first = _run([*exec_argv, CODEX_PROMPTS[0]], env=env, cwd=workspace)
        (out / "codex_exec_1.jsonl").write_text(first, encoding="utf-8")
        thread_id = json.loads(first.splitlines()[0])["thread_id"]
        server.enqueue(
            r.text("Summary: the user ran echo hello."), usage=r.Usage(input=90, output=10)
        )
        server.enqueue(r.text("Again done"), usage=r.Usage(input=120, output=10))
        second = _run([*exec_argv, "resume", thread_id, CODEX_PROMPTS[1]], env=env, cwd=workspace)
        (out / "codex_exec_2.jsonl").write_text(second, encoding="utf-8")
        declined_id = _declined_thread(server, env, workspace)
        requests = [request.body for request in server.requests]
    rollouts = sorted((codex_home / "sessions").glob("*/*/*/rollout-*.jsonl"))
    return CodexSessions(
        codex_home=codex_home,
        main_id=thread_id,
        declined_id=declined_id,
        main_rollout=_one([p for p in rollouts if thread_id in p.name], "main rollout"),
        declined_rollout=_one([p for p in rollouts if declined_id in p.name], "declined rollout"),
        exec_outputs=[out / "codex_exec_1.jsonl", out / "codex_exec_2.jsonl"],
        requests=requests,
    )


def _declined_thread(server: Any, env: dict[str, str], workspace: Path) -> str:
    """A turn in `codex app-server` whose escalated command the client declines."""
    r = mock_responses
    escalate = {
        "cmd": "touch x.txt",
        "sandbox_permissions": "require_escalated",
        "justification": "write",
    }
    server.enqueue(
        r.tool_call("exec_command", escalate, call_id="call_denied"),
        usage=r.Usage(input=100, output=20),
    )
    server.enqueue(r.text("Understood, I will not touch it."), usage=r.Usage(input=150, output=10))
    process = subprocess.Popen(
        [str(codex()), "app-server"],
        env=env,
        cwd=workspace,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin, process.stdout

    def send(message: dict[str, Any]) -> None:
        stdin.write(json.dumps(message) + "\n")
        stdin.flush()

    def until(predicate: Any) -> dict[str, Any]:
        deadline = time.monotonic() + _TIMEOUT_S
        while time.monotonic() < deadline:
            line = stdout.readline()
            if not line:
                raise AssertionError("codex app-server closed its output")
            message: dict[str, Any] = json.loads(line)
            if message.get("method", "").endswith("requestApproval"):
                send({"id": message["id"], "result": {"decision": "decline"}})
            if predicate(message):
                return message
        raise AssertionError("codex app-server did not answer in time")

    try:
        send(
            {
                "id": 1,
                "method": "initialize",
                "params": {"clientInfo": {"name": "tests", "version": "0"}},
            }
        )
        until(lambda m: m.get("id") == 1)
        send({"method": "initialized"})
        params = {"cwd": str(workspace), "approvalPolicy": "on-request", "sandbox": "read-only"}
        send({"id": 2, "method": "thread/start", "params": params})
        thread_id = str(until(lambda m: m.get("id") == 2)["result"]["thread"]["id"])
        text = [{"type": "text", "text": "touch x.txt"}]
        send({"id": 3, "method": "turn/start", "params": {"threadId": thread_id, "input": text}})
        until(lambda m: m.get("method") == "turn/completed")
    finally:
        stdin.close()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        stdout.close()
    return thread_id


def build_claude(config_dir: Path, home: Path, workspace: Path, out: Path) -> ClaudeSessions:
    a = mock_anthropic
    workspace.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    with a.MockAnthropicServer.in_thread() as server:
        env = claude_env(home, config_dir, server.base_url)
        base = [
            str(claude()), "-p", "--output-format", "stream-json", "--verbose",
            "--include-partial-messages", "--model", "claude-sonnet-4-5",
        ]  # fmt: skip
        todos = {
            "todos": [
                {"content": "run echo", "status": "in_progress", "activeForm": "Running echo"}
            ]
        }
        server.enqueue(
            a.reasoning("The user wants echo.", signature="sig-claude-1"),
            a.text("I'll run it."),
            a.tool_call("TodoWrite", todos, call_id="toolu_plan"),
            a.tool_call(
                "Bash", {"command": "echo hello", "description": "echo"}, call_id="toolu_echo"
            ),
            usage=a.Usage(input=100, output=20),
        )
        server.enqueue(a.text("Done: hello"), usage=a.Usage(input=200, output=20, cached=50))
        first = _run(
            [*base, "--permission-mode", "bypassPermissions", CLAUDE_PROMPTS[0]],
            env=env,
            cwd=workspace,
        )
        (out / "claude_stream_1.jsonl").write_text(first, encoding="utf-8")
        session_id = str(json.loads(first.splitlines()[-1])["session_id"])
        target = str(workspace / "a.txt")
        server.enqueue(
            a.tool_call("Write", {"file_path": target, "content": "hi"}, call_id="toolu_write"),
            usage=a.Usage(input=300, output=20),
        )
        server.enqueue(a.text("The write was denied."), usage=a.Usage(input=350, output=10))
        second = _run(
            [*base, "--resume", session_id, "--permission-mode", "default", CLAUDE_PROMPTS[1]],
            env=env,
            cwd=workspace,
        )
        (out / "claude_stream_2.jsonl").write_text(second, encoding="utf-8")
        server.enqueue(
            a.text("<summary>The user ran echo hello; a write was denied.</summary>"),
            usage=a.Usage(input=400, output=15),
        )
        third = _run([*base, "--resume", session_id, CLAUDE_PROMPTS[2]], env=env, cwd=workspace)
        (out / "claude_stream_3.jsonl").write_text(third, encoding="utf-8")
        requests = [request.body for request in server.requests if request.body is not None]
    files = sorted((config_dir / "projects").glob(f"*/{session_id}.jsonl"))
    return ClaudeSessions(
        config_dir=config_dir,
        session_id=session_id,
        session_file=_one(files, "Claude Code session file"),
        stream_outputs=[out / f"claude_stream_{n}.jsonl" for n in (1, 2, 3)],
        requests=requests,
    )


def main(argv: list[str]) -> None:
    out = Path(argv[0]).resolve()
    work = out / "_work"
    codex_sessions = build_codex(work / "codex-home", work / "home", work / "workspace", out)
    claude_sessions = build_claude(work / "claude-config", work / "home", work / "workspace", out)
    (out / "codex_rollout_compacted.jsonl").write_bytes(codex_sessions.main_rollout.read_bytes())
    (out / "codex_rollout_declined.jsonl").write_bytes(codex_sessions.declined_rollout.read_bytes())
    (out / "claude_session_compacted.jsonl").write_bytes(claude_sessions.session_file.read_bytes())


if __name__ == "__main__":
    main(sys.argv[1:])
