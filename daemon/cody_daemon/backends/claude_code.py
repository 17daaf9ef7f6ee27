"""Claude Code as a session backend: `claude -p` with stream-json on both sides.

Protocol (Claude Code 2.1.197, observed; the `stdio` permission prompt tool is what the
official Agent SDK uses): `claude -p --input-format stream-json --output-format stream-json
--verbose --include-partial-messages --permission-prompt-tool stdio [mapped flags]
[--model M] [--effort E] [--resume ID]`. We send a `control_request` `initialize`, then one
`user` line per prompt; Claude answers with `system` `init` (its session id), `stream_event`s
(the Messages API stream: text and thinking deltas, per-call usage), complete `assistant`
messages (tool_use blocks), `user` messages (tool results), `control_request`s
`can_use_tool` (answered `{behavior: "allow", updatedInput}` or `{behavior: "deny",
message: "User denied approval"}`, which reaches the model as an error result and the turn
goes on), and one `result` per turn (`total_cost_usd` counts the whole process, so a turn's
cost is the difference). Cancel: `control_request` `interrupt`.

Every tool call reaches Cody's decision: the `initialize` request registers a PreToolUse hook
callback for every tool (no matcher), and Cody answers each `hook_callback` with
`permissionDecision: "ask"`, which makes Claude Code send `can_use_tool` for the call whatever
its own rules would do (its read-only commands such as `git status`, `Read`, and the edits
`acceptEdits` accepts on its own would otherwise run without asking; 2.1.197: a hook `ask`
skips its allow rules and read-only checks, only its deny rules still apply). As a tripwire,
a tool result that did not come through `can_use_tool` ends the turn with an error and stops
the CLI (nothing of a later call runs unasked).

A prompt starting with `/` would be parsed by Claude Code as one of its own commands (`/cost`
runs, `/init: ...` is "Unknown command"), so it is sent with a zero-width space (U+200B) in
front: the model gets the text, Claude Code parses nothing (Cody's own commands are expanded
before a prompt reaches a backend, engine/slash.py).

Invariants (besides base.py's; a turn's own are in backends/claude_turn.py, how a tool call
is shown and asked in backends/claude_tools.py):
- one `claude` process per live session, started at the first prompt and kept for the next
  ones; when the flags a turn needs differ from the running process's (the user changed the
  mode or model), the process is ended and a new one resumes the session (`--resume`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from cody_protocol.prompt import DryRunReport

from .base import BackendSettings, Launch, PeerBackend, StopReason, TurnIO
from .claude_protocol import ControlResponse, PermissionAllow, PermissionDeny, UserLine
from .claude_turn import HOOKS, ClaudeTurn
from .discovery import home_dir, json_object
from .env import relevant_env_names
from .failures import classify
from .info import BackendInfo, LoginStatus
from .mapping import claude_flags
from .peer import Message, view

__all__ = ["BACKEND", "INFO", "ClaudeBackend", "claude_login"]


def claude_login(env: Mapping[str, str]) -> LoginStatus:
    """A key or token in the environment, else a claude.ai login in its config directory."""
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"):
        if env.get(name):
            return LoginStatus("ok", f"env {name}")
    for name in ("CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX"):
        if env.get(name):
            return LoginStatus("ok", f"env {name}")
    config_dir = Path(env.get("CLAUDE_CONFIG_DIR") or home_dir(env) / ".claude")
    credentials = json_object(config_dir / ".credentials.json")
    if credentials is not None and isinstance(credentials.get("claudeAiOauth"), dict):
        return LoginStatus("ok", str(config_dir / ".credentials.json"))
    if os.uname().sysname == "Darwin":
        return LoginStatus("unknown", "the macOS keychain (not inspected)")
    return LoginStatus("missing")


INFO: Final = BackendInfo(
    kind="claude",
    display_name="Claude Code",
    subject="Claude Code",
    cli_name="claude",
    cli_env="CLAUDE_CLI_PATH",
    npm_package="@anthropic-ai/claude-code",
    install_note="(see https://docs.claude.com/en/docs/claude-code/setup)",
    install_dirs=(".claude/local",),
    login_hint="run `claude` and log in (/login), or set ANTHROPIC_API_KEY",
    login=claude_login,
    env_prefixes=("CLAUDE_", "ANTHROPIC_", "AWS_", "GOOGLE_", "VERTEX_", "DISABLE_", "IS_SANDBOX"),
    # The model credentials Claude Code 2.1.197 reads (its own subprocess scrub list).
    credentials=frozenset(
        {
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "CLAUDE_CODE_OAUTH_TOKEN",
            "ANTHROPIC_CUSTOM_HEADERS",
            "ANTHROPIC_FOUNDRY_API_KEY",
            "ANTHROPIC_AWS_API_KEY",
            "ANTHROPIC_BEDROCK_MANTLE_API_KEY",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "AWS_BEARER_TOKEN_BEDROCK",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "AZURE_CLIENT_SECRET",
        }
    ),
    env_set={"CLAUDE_CODE_DISABLE_GIT_INSTRUCTIONS": "1"},
    env_dropped=("CLAUDE_CODE_SAFE_MODE", "CLAUDE_CODE_SIMPLE"),
    enforcement=(
        "Claude Code has no sandbox. It asks Cody about every tool call (a PreToolUse hook), "
        "and Cody refuses what the sandbox mode forbids, login files and protected paths; its "
        "Bash commands run with your access once allowed, so outside `danger-full-access` they "
        'count as unsandboxed (asked, or refused in `never` unless sandbox_unavailable = "allow"). '
        "Tools outside the allowlist are removed with --tools/--disallowedTools and declined by "
        "Cody if asked for anyway."
    ),
)

INIT_TIMEOUT_S: Final = 60.0
INTERRUPT_GRACE_S: Final = 1.0
_NOT_COMMAND: Final = "\u200b"
"""Put before a prompt that starts with `/`, so Claude Code does not parse it as a command."""
_EFFORT: Final = {"minimal": "low", "low": "low", "medium": "medium", "high": "high"}


def _answer_id(message: Message) -> Any:
    """A `control_response` names the request it answers by `response.request_id`."""
    if message.get("type") != "control_response":
        return None
    response = message.get("response")
    return str(response.get("request_id", "")) if isinstance(response, dict) else ""


class ClaudeBackend(PeerBackend):
    info = INFO

    def __init__(self, launch: Launch) -> None:
        super().__init__(launch)
        self._cost_seen = 0.0
        """`total_cost_usd` of the running process so far."""
        self.window: int | None = None
        """The context window of its model (from `init` and `result`)."""
        self._in_turn = False
        self._running_flags: list[str] = []
        """The running process's argv without the CLI path and `--resume` (settings changed?)."""

    # -- the command line -------------------------------------------------------------------

    def argv(self, settings: BackendSettings) -> list[str]:
        assert self.launch.cli is not None
        return self._argv(str(self.launch.cli), settings)

    def _argv(self, cli: str, settings: BackendSettings) -> list[str]:
        args = [
            cli,
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
            "--permission-prompt-tool",
            "stdio",
            *claude_flags(settings).argv(),
        ]
        if settings.model:
            args += ["--model", settings.model]
        if settings.reasoning_effort:
            args += ["--effort", _EFFORT[settings.reasoning_effort]]
        if self.resume_id:
            args += ["--resume", self.resume_id]
        return args

    def dry_run(self, prompt: str, settings: BackendSettings) -> DryRunReport:
        flags = claude_flags(settings)
        found = self.launch.cli is not None
        return DryRunReport(
            backend="claude",
            command=self.argv(settings) if found else None,
            cwd=str(self.launch.cwd),
            env=relevant_env_names("claude", self.launch.env),
            flags={
                "permissionMode": flags.permission_mode,
                "tools": flags.tools,
                "disallowedTools": flags.disallowed,
                "settingSources": flags.setting_sources,
                "model": settings.model,
                "effort": _EFFORT.get(settings.reasoning_effort or ""),
                "resume": self.resume_id,
            },
            allowed_tools=sorted(settings.allowed_tools) if settings.allowed_tools else None,
            backend_tools=flags.tools,
            requests=[
                {
                    "type": "control_request",
                    "request_id": "init_1",
                    "request": {"subtype": "initialize", "hooks": HOOKS},
                },
                dict(_user_line(prompt)),
            ],
            found=found,
            notes=[*flags.notes, INFO.enforcement] + ([] if found else [self.launch.install_hint]),
        )

    # -- the process ------------------------------------------------------------------------

    async def _ensure_process(self, settings: BackendSettings) -> None:
        wanted = self._argv("", settings)[: -2 if self.resume_id else None]
        if self._peer is not None and self._peer.alive and self._running_flags == wanted:
            return
        await self._close_peer(gracefully=True)
        self._running_flags = wanted
        await self._start_peer(self.argv(settings), _answer_id)
        self._cost_seen = 0.0
        await self._control({"subtype": "initialize", "hooks": HOOKS}, INIT_TIMEOUT_S)

    async def _control(self, request: dict[str, Any], timeout_s: float) -> ControlResponse:
        assert self._peer is not None
        request_id = f"cody_{self._peer.next_id()}"
        message = {"type": "control_request", "request_id": request_id, "request": request}
        answer = await self._peer.request(
            request_id, message, timeout_s=timeout_s, what=f"the {request['subtype']} request"
        )
        response = view(ControlResponse, answer.get("response"))
        if response.get("subtype") == "error":
            raise classify("claude", str(response.get("error") or "control request failed"))
        return response

    # -- a turn -----------------------------------------------------------------------------

    async def turn(self, prompt: str, io: TurnIO) -> StopReason:
        await self._ensure_process(io.settings)
        assert self._peer is not None
        self._send(dict(_user_line(prompt)))
        await self._peer.drain()
        self._in_turn = True
        try:
            return await ClaudeTurn(self, io).run()
        finally:
            self._in_turn = False

    def answer_permission(
        self, request_id: str, response: PermissionAllow | PermissionDeny | dict[str, Any]
    ) -> None:
        self._send(
            {
                "type": "control_response",
                "response": {"subtype": "success", "request_id": request_id, "response": response},
            }
        )

    def refuse_control(self, request_id: str, why: str) -> None:
        self._send(
            {
                "type": "control_response",
                "response": {"subtype": "error", "request_id": request_id, "error": why},
            }
        )

    def turn_cost(self, total: float) -> float:
        cost = max(total - self._cost_seen, 0.0)
        self._cost_seen = total
        return cost

    # -- cancel / close ---------------------------------------------------------------------

    async def stop(self) -> None:
        peer = self._peer
        if peer is not None and self._in_turn:

            async def interrupt() -> None:
                await self._control({"subtype": "interrupt"}, INTERRUPT_GRACE_S)

            def refuse(message: Message) -> None:
                if message.get("type") == "control_request":
                    self.refuse_control(str(message.get("request_id", "")), "cancelled")

            def turn_over(message: Message) -> bool:
                return message.get("type") == "result"

            await peer.interrupt(interrupt, turn_over, refuse, grace_s=2 * INTERRUPT_GRACE_S)
        await self._close_peer()


def _user_line(prompt: str) -> UserLine:
    if prompt.lstrip().startswith("/"):
        prompt = _NOT_COMMAND + prompt  # text for the model, not a Claude Code command
    return {
        "type": "user",
        "message": {"role": "user", "content": prompt},
        "parent_tool_use_id": None,
        "session_id": "",
    }


BACKEND: Final = ClaudeBackend
