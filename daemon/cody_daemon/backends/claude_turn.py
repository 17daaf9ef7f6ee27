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
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ..errors import ProviderError
from .base import (
    DENIED,
    Answer,
    Approver,
    BackendEvent,
    BackendSettings,
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
    UsageReported,
)
from .claude_tools import approval_ask, describe_tool
from .display import exec_known_safe, text_content
from .failures import classify

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
_PLAN_STATUS: Final[dict[str, PlanStatus]] = {
    "pending": "pending",
    "in_progress": "in_progress",
    "completed": "completed",
}
_STOP: Final[dict[str, StopReason]] = {
    "max_tokens": "max_tokens",
    "refusal": "refusal",
}


class CliEnded(Exception):
    def __init__(self, error: ProviderError) -> None:
        super().__init__(error.message)
        self.error = error


class ClaudeTurn:
    def __init__(
        self,
        backend: ClaudeBackend,
        emit: Callable[[BackendEvent], None],
        approve: Approver,
        settings: BackendSettings,
    ) -> None:
        self.backend = backend
        self.emit = emit
        self.approve = approve
        self.settings = settings
        self.cwd: Path = backend.launch.cwd
        self.streamed: set[str] = set()
        """Ids of assistant messages whose text arrived as stream deltas."""
        self.started: dict[str, ToolStarted] = {}
        self.call_usage: dict[str, int] = {}
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
                await self._control_request(message)
            elif kind == "result":
                return self._result(message)
            elif message.get("parent_tool_use_id"):
                if kind == "user":  # a sub-agent's own conversation: only the tripwire
                    self._check_decided(message.get("message") or {})
            elif kind == "system":
                self._system(message)
            elif kind == "stream_event":
                self._stream_event(message.get("event") or {})
            elif kind == "assistant":
                self._assistant(message.get("message") or {})
            elif kind == "user":
                self._tool_results(message.get("message") or {})

    # messages

    def _system(self, message: dict[str, Any]) -> None:
        subtype = message.get("subtype")
        if subtype == "init":
            session_id = str(message.get("session_id") or "")
            model = str(message.get("model") or "")
            if self.backend.window is None:
                self.backend.window = 1_000_000 if model.endswith("[1m]") else 200_000
            if session_id and session_id != self.backend.resume_id:
                self.backend.resume_id = session_id
                self.emit(ResumeIdAssigned(session_id))
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

    def _stream_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "content_block_delta":
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta":
                self.streamed.add(self.message_id)
                self.emit(TextDelta(str(delta.get("text", ""))))
            elif delta.get("type") == "thinking_delta":
                self.streamed.add(self.message_id)
                self.emit(ThoughtDelta(str(delta.get("thinking", ""))))
        elif kind == "message_start":
            message = event.get("message") or {}
            self.message_id = str(message.get("id", ""))
            self.call_usage = dict(message.get("usage") or {})
        elif kind == "message_delta":
            usage = {**self.call_usage, **(event.get("usage") or {})}
            fresh = int(usage.get("input_tokens") or 0)
            read = int(usage.get("cache_read_input_tokens") or 0)
            written = int(usage.get("cache_creation_input_tokens") or 0)
            self.emit(
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

    def _assistant(self, message: dict[str, Any]) -> None:
        message_id = str(message.get("id", ""))
        for block in message.get("content") or []:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "tool_use":
                self._tool_use(block)
            elif message_id not in self.streamed and message.get("model") != "<synthetic>":
                if kind == "text" and block.get("text"):
                    self.emit(TextDelta(str(block["text"])))
                elif kind == "thinking" and block.get("thinking"):
                    self.emit(ThoughtDelta(str(block["thinking"])))

    def _tool_use(self, block: dict[str, Any]) -> None:
        call_id = str(block.get("id", ""))
        if call_id in self.started:
            return
        name = str(block.get("name", ""))
        tool_input = _as_dict(block.get("input"))
        started = describe_tool(call_id, name, tool_input, self.cwd)
        self.started[call_id] = started
        self.emit(started)
        if name == "TodoWrite":
            todos = tool_input.get("todos") or []
            self.emit(
                PlanUpdated(
                    tuple(
                        (
                            str(todo.get("content", "")),
                            _PLAN_STATUS.get(str(todo.get("status")), "pending"),
                        )
                        for todo in todos
                        if isinstance(todo, dict)
                    )
                )
            )

    def _tool_results(self, message: dict[str, Any]) -> None:
        content = message.get("content")
        if not isinstance(content, list):
            return
        for block in _tool_result_blocks(message):
            call_id = str(block.get("tool_use_id", ""))
            text = _result_text(block.get("content"))
            failed = bool(block.get("is_error"))
            if failed and text.startswith("<tool_use_error>"):
                text = text.removeprefix("<tool_use_error>").removesuffix("</tool_use_error>")
            self.emit(
                ToolFinished(
                    call_id=call_id,
                    status="failed" if failed else "completed",
                    output=text,
                    content=text_content(text) if text else None,
                )
            )
        self._check_decided(message)

    def _check_decided(self, message: dict[str, Any]) -> None:
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

    def _result(self, message: dict[str, Any]) -> StopReason:
        total = message.get("total_cost_usd")
        if isinstance(total, int | float):
            self.emit(CostReported(self.backend.turn_cost(float(total))))
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

    async def _control_request(self, message: dict[str, Any]) -> None:
        request_id = str(message.get("request_id", ""))
        request = message.get("request") or {}
        subtype = request.get("subtype")
        if subtype == "hook_callback" and request.get("callback_id") == HOOK_ID:
            self._pre_tool_use(request_id, _as_dict(request.get("input")))
            return
        if subtype != "can_use_tool":
            self.backend.refuse_control(request_id, f"{subtype} is not supported")
            return
        name = str(request.get("tool_name", ""))
        tool_input = _as_dict(request.get("input"))
        call_id = str(request.get("tool_use_id") or f"claude_{request_id}")
        self.decided.add(call_id)
        started = self.started.get(call_id)
        if started is None:
            started = describe_tool(call_id, name, tool_input, self.cwd)
            self.started[call_id] = started
            self.emit(started)
        safe = False
        if name == "Bash":
            where = self.hook_cwd.get(call_id, self.cwd)
            command = str(tool_input.get("command", ""))
            env = self.backend.launch.env
            safe = await asyncio.to_thread(exec_known_safe, command, cwd=where, env=env)
        ask = approval_ask(started, name, tool_input, self.cwd, self.settings, known_safe=safe)
        answer = await self.approve(ask)
        self.backend.answer_permission(request_id, _permission_answer(answer, tool_input))

    def _pre_tool_use(self, request_id: str, hook_input: dict[str, Any]) -> None:
        """Every tool use: answer `ask`, so that Claude Code asks Cody (`can_use_tool`)."""
        call_id = str(hook_input.get("tool_use_id") or "")
        where = hook_input.get("cwd")
        if call_id and isinstance(where, str) and os.path.isabs(where):
            self.hook_cwd[call_id] = Path(where)
        self.backend.answer_permission(request_id, _ASK_CODY)


def _permission_answer(answer: Answer, tool_input: dict[str, Any]) -> dict[str, Any]:
    if answer.decision in ("allow_once", "allow_session"):
        return {"behavior": "allow", "updatedInput": tool_input}
    reply: dict[str, Any] = {"behavior": "deny", "message": answer.message or DENIED}
    if answer.decision == "cancelled":
        reply["interrupt"] = True
    return reply


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _tool_result_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


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
