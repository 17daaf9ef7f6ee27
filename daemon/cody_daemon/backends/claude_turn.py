"""One turn of Claude Code, translated: its stream-json messages in, `BackendEvent`s out, and
each of its tool calls put to Cody (backends/claude_code.py says how the CLI is driven).

Invariants:
- every tool use is answered at Claude Code's PreToolUse hook with `ask` (`pre_tool_use`),
  so it comes back as `can_use_tool`, where Cody's decision is taken (`approve`);
- a tool result of a call that did not come through `can_use_tool`, and is not an error,
  ends the turn with an error (the tripwire; sub-agents' results included);
- messages of sub-agents (`parent_tool_use_id` set) are not shown as the agent's own text;
- a 401/403 that Claude Code would retry for minutes ends the turn at once as `auth`.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast, get_args

from ..errors import ProviderError
from .base import (
    DENIED,
    Answer,
    CostReported,
    PlanStatus,
    PlanUpdated,
    ResumeIdAssigned,
    StopReason,
    TextDelta,
    ThoughtDelta,
    TokenCounts,
    ToolFinished,
    ToolStarted,
    TurnIO,
    UsageReported,
)
from .claude_protocol import (
    AssistantLine,
    CanUseToolRequest,
    ContentBlock,
    ControlRequestLine,
    HookCallbackRequest,
    MessageBody,
    PermissionAllow,
    PermissionDeny,
    PreToolUseInput,
    ResultLine,
    StreamEvent,
    StreamEventLine,
    SystemLine,
    Usage,
    UserLine,
)
from .claude_tools import approval_ask, describe_tool
from .display import exec_known_safe, text_content
from .failures import classify
from .peer import CliEnded, Message

if TYPE_CHECKING:
    from .claude_code import ClaudeBackend

__all__ = ["HOOKS", "ClaudeTurn", "CliEnded"]

HOOK_ID: Final = "cody_pre_tool_use"
HOOKS: Final = {"PreToolUse": [{"hookCallbackIds": [HOOK_ID]}]}
"""Every tool call (no matcher) is put to Cody's callback (see the module docstring)."""
_ASK_CODY: Final = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "ask",
        "permissionDecisionReason": "Cody decides every tool call",
    }
}
_PLAN_STATUSES: Final[tuple[PlanStatus, ...]] = get_args(PlanStatus)
"""Claude Code's todo statuses are Cody's plan statuses (anything else: pending)."""
_STOP: Final[dict[str, StopReason]] = {
    "max_tokens": "max_tokens",
    "refusal": "refusal",
}


class ClaudeTurn:
    def __init__(self, backend: ClaudeBackend, io: TurnIO) -> None:
        self.backend = backend
        self.io = io
        self.cwd: Path = backend.launch.cwd
        self.streamed: set[str] = set()
        """Ids of assistant messages whose text arrived as stream deltas."""
        self.started: dict[str, ToolStarted] = {}
        self.call_usage: Usage = {}
        self.message_id = ""
        self.decided: set[str] = set()
        """Tool use ids that came through `can_use_tool` (Cody's decision)."""
        self.hook_cwd: dict[str, Path] = {}
        """Where Claude Code stood (its Bash keeps a `cd`) when it announced a tool use."""

    async def run(self) -> StopReason:
        while True:
            message = await self.backend.next_message()
            kind = message.get("type")
            if kind == "control_request":
                await self._control_request(cast(ControlRequestLine, message))
            elif kind == "result":
                return self._result(cast(ResultLine, message))
            elif message.get("parent_tool_use_id"):
                if kind == "user":  # a sub-agent's own conversation: only the tripwire
                    self._check_decided(_body(message))
            elif kind == "system":
                self._system(cast(SystemLine, message))
            elif kind == "stream_event":
                self._stream_event(cast(StreamEventLine, message).get("event") or {})
            elif kind == "assistant":
                self._assistant(_body(message))
            elif kind == "user":
                self._tool_results(_body(message))

    # messages

    def _system(self, message: SystemLine) -> None:
        subtype = message.get("subtype")
        if subtype == "init":
            session_id = str(message.get("session_id") or "")
            model = str(message.get("model") or "")
            if self.backend.window is None:
                self.backend.window = 1_000_000 if model.endswith("[1m]") else 200_000
            if session_id and session_id != self.backend.resume_id:
                self.backend.resume_id = session_id
                self.io.emit(ResumeIdAssigned(session_id))
        elif subtype == "api_retry":
            status = message.get("error_status")
            if status in (401, 403) or message.get("error") == "authentication_failed":
                raise CliEnded(
                    classify(
                        "claude",
                        f"the model API answered {status} ({message.get('error')})",
                        status=status if isinstance(status, int) else None,
                        code=str(message.get("error") or ""),
                    )
                )

    def _stream_event(self, event: StreamEvent) -> None:
        kind = event.get("type")
        if kind == "content_block_delta":
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta":
                self.streamed.add(self.message_id)
                self.io.emit(TextDelta(str(delta.get("text", ""))))
            elif delta.get("type") == "thinking_delta":
                self.streamed.add(self.message_id)
                self.io.emit(ThoughtDelta(str(delta.get("thinking", ""))))
        elif kind == "message_start":
            message = event.get("message") or {}
            self.message_id = str(message.get("id", ""))
            self.call_usage = Usage(**(message.get("usage") or {}))
        elif kind == "message_delta":
            usage = Usage(**self.call_usage)
            usage.update(event.get("usage") or {})
            fresh = int(usage.get("input_tokens") or 0)
            read = int(usage.get("cache_read_input_tokens") or 0)
            written = int(usage.get("cache_creation_input_tokens") or 0)
            self.io.emit(
                UsageReported(
                    last=TokenCounts(
                        input=fresh + read + written,
                        output=int(usage.get("output_tokens") or 0),
                        cached_read=read,
                        cached_write=written,
                    ),
                    context_window=self.backend.window,
                )
            )

    def _assistant(self, message: MessageBody) -> None:
        message_id = str(message.get("id", ""))
        for block in _blocks(message):
            kind = block.get("type")
            if kind == "tool_use":
                self._tool_use(block)
            elif message_id not in self.streamed and message.get("model") != "<synthetic>":
                if kind == "text" and block.get("text"):
                    self.io.emit(TextDelta(str(block["text"])))
                elif kind == "thinking" and block.get("thinking"):
                    self.io.emit(ThoughtDelta(str(block["thinking"])))

    def _tool_use(self, block: ContentBlock) -> None:
        call_id = str(block.get("id", ""))
        if call_id in self.started:
            return
        name = str(block.get("name", ""))
        tool_input = _as_dict(block.get("input"))
        started = describe_tool(call_id, name, tool_input, self.cwd)
        self.started[call_id] = started
        self.io.emit(started)
        if name == "TodoWrite":
            todos = tool_input.get("todos") or []
            self.io.emit(
                PlanUpdated(
                    tuple(
                        (
                            str(todo.get("content", "")),
                            _plan_status(todo.get("status")),
                        )
                        for todo in todos
                        if isinstance(todo, dict)
                    )
                )
            )

    def _tool_results(self, message: MessageBody) -> None:
        for block in _tool_result_blocks(message):
            call_id = str(block.get("tool_use_id", ""))
            text = _result_text(block.get("content"))
            failed = bool(block.get("is_error"))
            if failed and text.startswith("<tool_use_error>"):
                text = text.removeprefix("<tool_use_error>").removesuffix("</tool_use_error>")
            self.io.emit(
                ToolFinished(
                    call_id=call_id,
                    status="failed" if failed else "completed",
                    output=text,
                    content=text_content(text) if text else None,
                )
            )
        self._check_decided(message)

    def _check_decided(self, message: MessageBody) -> None:
        """The tripwire of the module docstring: a call that ran without Cody's decision."""
        for block in _tool_result_blocks(message):
            call_id = str(block.get("tool_use_id", ""))
            if not block.get("is_error") and call_id not in self.decided:
                started = self.started.get(call_id)
                name = started.tool if started is not None else "a"
                raise CliEnded(
                    ProviderError(
                        kind="provider",
                        provider="claude",
                        message=(
                            f"Claude Code ran {name} tool call {call_id[:60]} without asking "
                            "Cody, so the session's Claude Code was stopped. Nothing else runs "
                            "unasked; report this with your Claude Code version."
                        ),
                    )
                )

    def _result(self, message: ResultLine) -> StopReason:
        total = message.get("total_cost_usd")
        if isinstance(total, int | float):
            self.io.emit(CostReported(self.backend.turn_cost(float(total))))
        for usage in (message.get("modelUsage") or {}).values():
            if isinstance(usage, dict) and isinstance(usage.get("contextWindow"), int):
                self.backend.window = int(usage["contextWindow"])
        subtype = message.get("subtype")
        if subtype == "success" and not message.get("is_error"):
            return _STOP.get(str(message.get("stop_reason")), "end_turn")
        if subtype == "error_max_turns":
            return "max_turn_requests"
        if subtype == "error_during_execution" and not message.get("is_error"):
            return "cancelled"
        status = message.get("api_error_status")
        detail = str(message.get("result") or "") or "; ".join(
            str(e) for e in message.get("errors") or []
        )
        raise CliEnded(
            classify(
                "claude",
                detail or f"the turn ended with {subtype}",
                status=status if isinstance(status, int) else None,
            )
        )

    # approvals

    async def _control_request(self, message: ControlRequestLine) -> None:
        request_id = str(message.get("request_id", ""))
        raw = _as_dict(message.get("request"))
        subtype = raw.get("subtype")
        if subtype == "hook_callback" and raw.get("callback_id") == HOOK_ID:
            hook = cast(HookCallbackRequest, raw)
            self._pre_tool_use(request_id, cast(PreToolUseInput, _as_dict(hook.get("input"))))
            return
        if subtype != "can_use_tool":
            self.backend.refuse_control(request_id, f"{subtype} is not supported")
            return
        request = cast(CanUseToolRequest, raw)
        name = str(request.get("tool_name", ""))
        tool_input = _as_dict(request.get("input"))
        call_id = str(request.get("tool_use_id") or f"claude_{request_id}")
        self.decided.add(call_id)
        started = self.started.get(call_id)
        if started is None:
            started = describe_tool(call_id, name, tool_input, self.cwd)
            self.started[call_id] = started
            self.io.emit(started)
        safe = False
        if name == "Bash":
            where = self.hook_cwd.get(call_id, self.cwd)
            command = str(tool_input.get("command", ""))
            env = self.backend.launch.env
            safe = await asyncio.to_thread(exec_known_safe, command, cwd=where, env=env)
        ask = approval_ask(started, name, tool_input, self.cwd, self.io.settings, known_safe=safe)
        answer = await self.io.approve(ask)
        self.backend.answer_permission(request_id, _permission_answer(answer, tool_input))

    def _pre_tool_use(self, request_id: str, hook_input: PreToolUseInput) -> None:
        """Every tool use: answer `ask`, so that Claude Code asks Cody (`can_use_tool`)."""
        call_id = str(hook_input.get("tool_use_id") or "")
        where = hook_input.get("cwd")
        if call_id and isinstance(where, str) and os.path.isabs(where):
            self.hook_cwd[call_id] = Path(where)
        self.backend.answer_permission(request_id, _ASK_CODY)


def _permission_answer(
    answer: Answer, tool_input: dict[str, Any]
) -> PermissionAllow | PermissionDeny:
    if answer.decision in ("allow_once", "allow_session"):
        return {"behavior": "allow", "updatedInput": tool_input}
    reply: PermissionDeny = {"behavior": "deny", "message": answer.message or DENIED}
    if answer.decision == "cancelled":
        reply["interrupt"] = True
    return reply


def _plan_status(value: object) -> PlanStatus:
    return next((status for status in _PLAN_STATUSES if status == value), "pending")


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _body(line: Message) -> MessageBody:
    """The `message` of an `assistant` or `user` line."""
    return cast(MessageBody, _as_dict(cast(AssistantLine | UserLine, line).get("message")))


def _blocks(message: MessageBody) -> list[ContentBlock]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _tool_result_blocks(message: MessageBody) -> list[ContentBlock]:
    return [b for b in _blocks(message) if b.get("type") == "tool_result"]


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""
