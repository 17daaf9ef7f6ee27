"""Running codex/claude sessions through the daemon offline: the real CLIs, a mock model.

`BackendRig.open(kind, cody_env)` starts the loopback mock the CLI talks to (Responses for
the Codex CLI, Messages for Claude Code), puts the pinned CLI (tests/support/agent_clis.py)
into `CODEX_CLI_PATH` / `CLAUDE_CLI_PATH` and the offline settings into the daemon's
environment (the daemon hands its environment to the CLI), and gives one scripting API for
both models:

    rig.say("hello")                     # the next model call answers with text
    rig.run("touch a.txt", "call_1")     # the next model call runs a command
    rig.stall(seconds)                   # the next model call answers only after `seconds`

Nothing here talks to the daemon: tests do that through `tests.support.daemon.Daemon`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cody_daemon.backends.info import KINDS, BackendKind

from . import mock_anthropic as anthropic
from . import mock_responses as responses
from .agent_clis import claude, claude_env, codex, codex_env, write_codex_config
from .daemon import CodyEnv

__all__ = [
    "KINDS",
    "BackendKind",
    "BackendRig",
    "decided",
    "offline_backends_env",
    "session_lines",
]


@dataclass
class BackendRig:
    kind: BackendKind
    mock: responses.MockResponsesServer
    cody_env: CodyEnv

    @classmethod
    @asynccontextmanager
    async def open(
        cls, kind: BackendKind, cody_env: CodyEnv, *, approval_policy: str = "on-request"
    ) -> AsyncIterator[BackendRig]:
        server: responses.MockResponsesServer = (
            responses.MockResponsesServer() if kind == "codex" else anthropic.MockAnthropicServer()
        )
        async with server:
            rig = cls(kind, server, cody_env)
            rig.configure(approval_policy)
            yield rig

    def configure(self, approval_policy: str) -> None:
        """Point the CLI at the mock and the daemon at the CLI (env + Cody config)."""
        root = self.cody_env.root
        env = self.cody_env.env
        if self.kind == "codex":
            write_codex_config(root / "codex-home", self.mock.base_url)
            cli_env = codex_env(root / "home", root / "codex-home")
            env["CODEX_CLI_PATH"] = str(codex())
            keys = ("CODEX_HOME", "MOCK_KEY", "RUST_LOG")
        else:
            cli_env = claude_env(root / "home", root / "claude-config", self.mock.base_url)
            env["CLAUDE_CLI_PATH"] = str(claude())
            keys = (
                "CLAUDE_CONFIG_DIR",
                "ANTHROPIC_BASE_URL",
                "ANTHROPIC_API_KEY",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
                "DISABLE_AUTOUPDATER",
                "IS_SANDBOX",
            )
        for key in keys:
            if key in cli_env:
                env[key] = cli_env[key]
        # Codex runs commands in its own sandbox, which may not work in a container: tests
        # that are not about the sandbox use danger-full-access.
        self.cody_env.write_config(
            f'approval_policy = "{approval_policy}"\nsandbox_mode = "danger-full-access"\n'
        )

    # -- scripting the model --------------------------------------------------------------

    def say(self, text: str, *, chunks: int = 2, thought: str | None = None) -> None:
        outputs = []
        if thought is not None:
            outputs.append(self._reasoning(thought))
        outputs.append(responses.text(text, chunks=chunks))
        self.mock.enqueue(*outputs, usage=self._usage(120, 12))

    def run(self, command: str, call_id: str, *, text: str | None = None) -> None:
        """The next model call runs `command` (Codex `exec_command`, Claude `Bash`)."""
        outputs = [] if text is None else [responses.text(text)]
        if self.kind == "codex":
            outputs.append(responses.tool_call("exec_command", {"cmd": command}, call_id=call_id))
        else:
            outputs.append(
                responses.tool_call(
                    "Bash", {"command": command, "description": "run it"}, call_id=call_id
                )
            )
        self.mock.enqueue(*outputs, usage=self._usage(200, 20))

    def run_escalated(self, command: str, call_id: str) -> None:
        """The next model call asks Codex to run `command` outside its sandbox
        (`sandbox_permissions: "require_escalated"`, as its `exec_command` tool offers)."""
        assert self.kind == "codex", "only the Codex CLI has a sandbox to leave"
        arguments = {
            "cmd": command,
            "sandbox_permissions": "require_escalated",
            "justification": "it needs to",
        }
        self.mock.enqueue(
            responses.tool_call("exec_command", arguments, call_id=call_id),
            usage=self._usage(200, 20),
        )

    def edit(self, path: str, old: str, new: str, call_id: str) -> None:
        """The next model call replaces the line `old` with `new` in `path` (relative).

        Codex: its `apply_patch` custom tool (the raw patch as input; the shared mock has no
        builder for custom tool calls, so the events are spelled out per the Responses
        streaming reference); Claude Code: its `Edit` tool."""
        if self.kind == "claude":  # Claude Code edits only files it has read in the session
            full = str(self.cody_env.workspace / path)
            read = {"file_path": full}
            self.mock.enqueue(responses.tool_call("Read", read, call_id=f"{call_id}_read"))
            arguments = {"file_path": full, "old_string": old, "new_string": new}
            self.mock.enqueue(responses.tool_call("Edit", arguments, call_id=call_id))
            return
        patch = f"*** Begin Patch\n*** Update File: {path}\n@@\n-{old}\n+{new}\n*** End Patch\n"
        item = {
            "id": f"ctc_{call_id}",
            "type": "custom_tool_call",
            "status": "completed",
            "call_id": call_id,
            "name": "apply_patch",
            "input": patch,
        }
        base = {"id": f"resp_{call_id}", "object": "response", "created_at": 0, "model": "gpt-5.5"}
        where = {"output_index": 0, "item_id": item["id"]}
        self.mock.enqueue_events(
            [
                {"type": "response.created", "response": {**base, "status": "in_progress"}},
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": {**item, "status": "in_progress", "input": ""},
                },
                {"type": "response.custom_tool_call_input.delta", **where, "delta": patch},
                {"type": "response.custom_tool_call_input.done", **where, "input": patch},
                {"type": "response.output_item.done", "output_index": 0, "item": item},
                {
                    "type": "response.completed",
                    "response": {
                        **base,
                        "status": "completed",
                        "output": [item],
                        "usage": responses.Usage(input=50, output=5).to_json(),
                    },
                },
            ]
        )

    def stall(self, seconds: float) -> None:
        """The next model call sends its headers only after `seconds` (a hanging provider)."""
        self.mock.enqueue(responses.text("too late"), headers_delay_s=seconds)

    def fail(self, status: int, times: int = 1) -> None:
        for _ in range(times):
            self.mock.enqueue_error(status)

    def _reasoning(self, text: str) -> responses.Output:
        if self.kind == "codex":
            return responses.reasoning(text)
        return anthropic.reasoning(text, signature="sig-mock")

    def _usage(self, tokens_in: int, tokens_out: int) -> responses.Usage:
        if self.kind == "codex":
            return responses.Usage(input=tokens_in, output=tokens_out)
        return anthropic.Usage(input=tokens_in, output=tokens_out)

    # -- reading what the CLI sent the model -----------------------------------------------

    def model_saw(self) -> str:
        """Everything the CLI sent its model (command outputs included)."""
        return "\n".join(r.raw_body.decode("utf-8", "replace") for r in self.mock.requests)

    def model_inputs(self, index: int = -1) -> str:
        """The text of a model request's conversation (to see what the CLI resumed)."""
        calls = [r for r in self.mock.requests if isinstance(r.body, dict)]
        body = calls[index].body
        return json.dumps(body.get("input") if self.kind == "codex" else body.get("messages"))


def session_lines(cody_env: CodyEnv) -> list[dict[str, Any]]:
    """Every line of every session file of the daemon."""
    return [
        json.loads(line)
        for path in cody_env.cody_home.rglob("rollout-*.jsonl")
        for line in path.read_text().splitlines()
        if line.strip()
    ]


def decided(cody_env: CodyEnv) -> dict[str, tuple[str, str]]:
    """Call id -> (decision, reason) of every `approval` event in the session files."""
    return {
        line["payload"]["callId"]: (line["payload"]["decision"], line["payload"]["reason"])
        for line in session_lines(cody_env)
        if line["type"] == "event" and line["payload"].get("kind") == "approval"
    }


@contextmanager
def offline_backends_env(
    root: Path, script: Callable[[BackendKind, responses.MockResponsesServer], None]
) -> Iterator[dict[str, str]]:
    """For clients tested outside Python (Neovim, the ACP TypeScript SDK): both mock models on
    threads, scripted by `script(kind, mock)`, and the environment variables a daemon needs to
    run codex and claude sessions against them (CLI paths, CODEX_HOME, Claude's offline env)."""
    with ExitStack() as stack:
        mocks: dict[BackendKind, responses.MockResponsesServer] = {
            "codex": stack.enter_context(responses.MockResponsesServer.in_thread()),
            "claude": stack.enter_context(anthropic.MockAnthropicServer.in_thread()),
        }
        for kind, mock in mocks.items():
            script(kind, mock)
        write_codex_config(root / "codex-home", mocks["codex"].base_url)
        env = {
            **codex_env(root / "home", root / "codex-home"),
            **claude_env(root / "home", root / "claude-config", mocks["claude"].base_url),
            "CODEX_CLI_PATH": str(codex()),
            "CLAUDE_CLI_PATH": str(claude()),
        }
        keep = ("CODEX_", "CLAUDE_", "ANTHROPIC_", "MOCK_KEY", "IS_SANDBOX", "DISABLE_", "RUST_LOG")
        yield {name: value for name, value in env.items() if name.startswith(keep)}
