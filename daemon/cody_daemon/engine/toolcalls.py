"""Describing tool calls for clients (title, kind, raw input), live and on replay."""

from __future__ import annotations

import asyncio
import json
import logging
import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cody_protocol.content import (
    ContentToolCallContent,
    DiffToolCallContent,
    TerminalToolCallContent,
    TextContent,
    ToolCallContent,
)
from cody_protocol.updates import ToolCallLocation, ToolKind
from pydantic import BaseModel

from ..tools.base import GrantKey, Progress, Tool, ToolArgumentError, ToolResult
from ..tools.registry import ToolRegistry
from .events import CallDecision, ToolCallProgressReport

__all__ = [
    "DISPLAY_CONTENT_MAX_CHARS",
    "LiveOutput",
    "DescribedCall",
    "ProgressThrottle",
    "call_display",
    "describe_call",
    "describe_grant",
    "error_result",
    "text_content",
    "wire_raw_output",
]

LIVE_OUTPUT_INTERVAL_S = 0.1
"""At most one live-output update per call per this interval."""
LIVE_OUTPUT_LIMIT_CHARS = 2 * 1024 * 1024
"""Live output forwarded per call in all (exec stops its own stream at 1 MiB before this)."""
LIVE_OUTPUT_MAX_PENDING_CHARS = 64 * 1024
"""Pending live output is sent at once when it reaches this (bounds one update's size)."""

logger = logging.getLogger(__name__)

DISPLAY_CONTENT_MAX_CHARS = 1_000_000
"""A call's display content (diffs of whole files) larger than this is not kept for the
replay; the replay then shows the output text."""


@dataclass(slots=True, kw_only=True)
class DescribedCall:
    tool: Tool[Any] | None
    title: str
    kind: ToolKind
    raw_input: Any
    args: BaseModel | None
    error: str | None
    """Why the call cannot run (unknown tool, bad arguments), or None."""
    locations: list[ToolCallLocation] = field(default_factory=list)
    """The files the call will touch (`Tool.locations`; empty unless a cwd was given)."""


def text_content(text: str) -> list[ToolCallContent]:
    return [ContentToolCallContent(content=TextContent(text=text))]


def describe_call(
    registry: ToolRegistry,
    name: str,
    arguments: str,
    *,
    cwd: Path | None = None,
    absent: Mapping[str, str] | None = None,
) -> DescribedCall:
    """Title, kind and parsed arguments of a call; with `cwd`, also the files it will touch.
    `absent`: tools not offered in this session, with why (a call to one says so)."""
    tool = registry.get(name)
    try:
        raw: Any = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError as exc:
        return DescribedCall(
            tool=tool,
            title=name,
            kind=tool.kind if tool else "other",
            raw_input=arguments,
            args=None,
            error=f"arguments for {name} are not valid JSON: {exc.msg} at position {exc.pos}",
        )
    if tool is None:
        known = ", ".join(registry.names())
        why = (absent or {}).get(name)
        error = (
            f"tool '{name}' is not available in this session: {why}"
            if why is not None
            else f"unknown tool '{name}'; available tools: {known}"
        )
        return DescribedCall(
            tool=None, title=name, kind="other", raw_input=raw, args=None, error=error
        )
    try:
        args = tool.parse(raw)
    except ToolArgumentError as exc:
        return DescribedCall(
            tool=tool, title=name, kind=tool.kind, raw_input=raw, args=None, error=exc.message
        )
    return DescribedCall(
        tool=tool,
        title=tool.title(args),
        kind=tool.kind,
        raw_input=raw,
        args=args,
        error=None,
        locations=_locations(tool, args, cwd) if cwd is not None else [],
    )


def _locations(tool: Tool[Any], args: BaseModel, cwd: Path) -> list[ToolCallLocation]:
    try:
        return list(tool.locations(args, cwd))
    except Exception:  # a display hint: never a reason for the call to fail
        logger.warning("%s: could not compute the call's locations", tool.name, exc_info=True)
        return []


def call_display(
    *,
    title: str | None,
    kind: str | None,
    locations: list[ToolCallLocation],
    content: list[ToolCallContent],
    plan: list[tuple[str, str]] | None,
    decision: CallDecision | None = None,
) -> dict[str, Any]:
    """What `FunctionCallOutputItem.display` keeps of a call as the client saw it."""
    display: dict[str, Any] = {}
    if title is not None:
        display["title"] = title
    if kind is not None:
        display["kind"] = kind
    if locations:
        display["locations"] = [loc.wire() for loc in locations]
    # A display terminal ends with its command: the replay shows the output text instead.
    kept = [block for block in content if not isinstance(block, TerminalToolCallContent)]
    if kept and _content_chars(kept) <= DISPLAY_CONTENT_MAX_CHARS:
        display["content"] = [block.wire() for block in kept]
    if plan is not None:
        display["plan"] = [{"content": step, "status": status} for step, status in plan]
    if decision is not None:
        display["decision"] = decision.payload()
    return display


def _content_chars(content: Sequence[ToolCallContent]) -> int:
    total = 0
    for block in content:
        if isinstance(block, DiffToolCallContent):
            total += len(block.old_text or "") + len(block.new_text) + len(block.path)
        elif isinstance(block, ContentToolCallContent):
            total += len(block.content.model_dump_json())
    return total


def unusable_arguments(tool_name: str, exc: Exception) -> str:
    """The model-readable reason the policy checks could not handle a call's arguments (8.10).

    The checks resolve paths; a value the OS refuses (a NUL byte in a path) fails this call only.
    """
    text = str(exc)
    if "null byte" in text or "null character" in text:
        return f"invalid arguments for {tool_name}: a path must not contain a null byte (NUL)"
    return f"{tool_name} cannot run with these arguments: {text}"


def error_result(message: str, raw_output: dict[str, Any] | None = None) -> ToolResult:
    return ToolResult(
        output=json.dumps({"error": message}),
        success=False,
        raw_output=raw_output,
        content=text_content(message),
    )


def wire_raw_output(output: str, raw_output: dict[str, Any] | None) -> dict[str, Any]:
    """`rawOutput` for clients: the tool's metadata plus the text the model received."""
    return {**(raw_output or {}), "output": output}


def describe_grant(key: GrantKey) -> str:
    if key and key[0] == "outside":
        return describe_grant(key[1:]) + ", outside the sandbox"
    if key and key[0] == "exec":
        return f"the command `{_command_line(key[1:])}`"
    if key and key[0] == "paths":
        return "changes to " + ", ".join(key[1:])
    if len(key) == 2 and key[0] == "fetch":
        return f"every page of {key[1]}"
    if len(key) >= 2:
        return f"{key[1]} with these exact arguments"
    return "this call"


PROGRESS_MESSAGE_MAX_CHARS = 300


class ProgressThrottle:
    """A running call's progress reports (`ToolContext.on_progress`) as client updates: the
    first at once, then at most one per `interval_s` (those in between are dropped: the
    final result follows anyway); the message redacted and cut to one short line; nothing
    after `close()` (a late report must not reopen a finished call)."""

    def __init__(
        self,
        call_id: str,
        emit: Callable[[ToolCallProgressReport], None],
        redact: Callable[[str], str],
        *,
        interval_s: float = LIVE_OUTPUT_INTERVAL_S,
    ) -> None:
        self._call_id = call_id
        self._emit = emit
        self._redact = redact
        self._interval_s = interval_s
        self._last = float("-inf")
        self._closed = False

    def __call__(self, progress: Progress) -> None:
        now = time.monotonic()
        if self._closed or now - self._last < self._interval_s:
            return
        self._last = now
        message = progress.message
        if message is not None:
            message = " ".join(self._redact(message).split())[:PROGRESS_MESSAGE_MAX_CHARS]
        shown = Progress(progress.progress, progress.total, message)
        self._emit(
            ToolCallProgressReport(
                call_id=self._call_id,
                progress=shown.progress,
                total=shown.total,
                message=message,
                text=shown.text(),
            )
        )

    def close(self) -> None:
        self._closed = True


def _command_line(words: Sequence[str]) -> str:
    """An exec grant key as the shell line it stands for, quoting kept (`bash -c 'a | b'`,
    `echo "a b"` as `echo 'a b'`), with the `cd <dir> &&` of a call run in another directory
    left unquoted around its directory."""
    if len(words) >= 3 and words[0] == "cd" and words[2] == "&&":
        return f"cd {shlex.quote(words[1])} && {shlex.join(words[3:])}"
    return shlex.join(words)


class LiveOutput:
    """Throttles a running tool's output into increments: each `send` gets only the text that
    came since the previous one, at most every `interval_s` (a timer sends what is left, so
    a command that prints a line and then waits is seen within the interval; `close` sends
    the rest). Sent at once after a quiet spell, only whole lines go (the rest follows with
    the timer), so a line that arrives in two reads is sent, and redacted, in one piece.

    Memory and traffic are bounded: at most `limit_chars` are forwarded in all (then one
    notice), and whatever is pending is sent as soon as it reaches `max_pending_chars`.
    Nothing is ever re-sent, so the total sent is linear in the output (not quadratic).
    """

    def __init__(
        self,
        send: Callable[[str], None],
        *,
        interval_s: float = LIVE_OUTPUT_INTERVAL_S,
        limit_chars: int = LIVE_OUTPUT_LIMIT_CHARS,
        max_pending_chars: int = LIVE_OUTPUT_MAX_PENDING_CHARS,
    ) -> None:
        self._send = send
        self._interval_s = interval_s
        self._limit = limit_chars
        self._max_pending = max_pending_chars
        self._pending: list[str] = []
        self._pending_chars = 0
        self._forwarded = 0
        self._last = float("-inf")
        self._timer: asyncio.TimerHandle | None = None
        self._closed = False
        self.cut = False
        """True once `limit_chars` stopped the stream."""

    def add(self, chunk: str) -> None:
        if self._closed or self.cut or not chunk:
            return
        room = self._limit - self._forwarded
        if len(chunk) > room:
            chunk = chunk[:room] + f"\n[... live output stops after {self._limit} characters ...]\n"
            self.cut = True
        self._forwarded += len(chunk)
        self._pending.append(chunk)
        self._pending_chars += len(chunk)
        now = time.monotonic()
        if self._pending_chars >= self._max_pending:
            self._flush()
        elif now - self._last >= self._interval_s:
            self._flush(whole_lines=True)
        if self._pending and self._timer is None:
            delay = max(0.0, self._interval_s - (time.monotonic() - self._last))
            self._timer = asyncio.get_running_loop().call_later(delay, self._flush)

    def _flush(self, *, whole_lines: bool = False) -> None:
        """Send what is pending; with `whole_lines`, only up to its last newline (the rest
        waits for the timer): a line written in two pieces then travels, and is redacted,
        as one."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._pending:
            return
        text = "".join(self._pending)
        self._pending.clear()
        self._pending_chars = 0
        if whole_lines:
            cut = text.rfind("\n") + 1
            if cut < len(text):
                self._pending.append(text[cut:])
                self._pending_chars = len(text) - cut
                text = text[:cut]
        if not text:
            return
        self._last = time.monotonic()
        self._send(text)

    def close(self) -> None:
        """Send what is pending; nothing is sent after this."""
        if self._closed:
            return
        self._flush()
        self._closed = True
