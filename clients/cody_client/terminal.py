"""Rendering a session in a terminal: streamed text, thoughts, each tool call shown once.

Writes plain text when the stream is not a TTY (or NO_COLOR is set), ANSI colours otherwise.
Agent text goes to `out`; everything else (thoughts, tool calls, status) to `info`, which is
the same stream in chat mode and stderr in `exec` mode.

Both streams are behind inert.py's gate, so nothing the daemon sends reaches the terminal as
a control sequence; `Style` makes the client's own colours (`inert.styled`). A field shown on
one line (a title, a path, a grant) goes through `one_line`, so it cannot fake further lines.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from cody_protocol.content import (
    ContentToolCallContent,
    DiffToolCallContent,
    TextContent,
    ToolCallContent,
)
from cody_protocol.permission import RequestPermissionParams
from cody_protocol.prompt import PromptResult
from cody_protocol.updates import (
    AgentMessageChunk,
    AgentThoughtChunk,
    SessionInfoUpdate,
    SessionUpdate,
    ToolCallStart,
    ToolCallUpdate,
    UsageUpdate,
    UserMessageChunk,
)

from .inert import Safe, guard, inert, join, one_line, styled
from .markdown import MarkdownStream

__all__ = ["Renderer", "Style", "use_color", "was_refused"]

DENIED_MARKER = "User denied approval"
OPTIONS_LINE = "y allow · a allow for session · n reject · r reject for session · c cancel"
"""The approval keys, short enough for an 80-column terminal with the frame."""
PROJECT_OPTIONS_LINE = "y allow · a session · p project · n reject · r reject session · c cancel"
"""The keys when `allow_project` is offered (its rule is shown on the line above)."""


def was_refused(raw_output: object, text: str | None) -> bool:
    """Whether a finished call was rejected or refused (`rawOutput.refused`, or older daemons'
    "User denied approval" text): `exec` then exits 4."""
    if isinstance(raw_output, dict) and raw_output.get("refused"):
        return True
    return bool(text) and DENIED_MARKER in (text or "")


def use_color(stream: TextIO) -> bool:
    return stream.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


@dataclass(frozen=True)
class Style:
    color: bool

    def _wrap(self, code: str, text: str) -> Safe:
        return styled(code, text) if self.color else inert(text)

    def dim(self, text: str) -> Safe:
        return self._wrap("2", text)

    def bold(self, text: str) -> Safe:
        return self._wrap("1", text)

    def green(self, text: str) -> Safe:
        return self._wrap("32", text)

    def red(self, text: str) -> Safe:
        return self._wrap("31", text)

    def yellow(self, text: str) -> Safe:
        return self._wrap("33", text)

    def cyan(self, text: str) -> Safe:
        return self._wrap("36", text)


@dataclass
class _Call:
    title: str
    kind: str
    finished: bool = False
    changes: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Lines added and removed per file, from the call's diffs (an edit)."""

    def note_diffs(self, content: Sequence[ToolCallContent]) -> None:
        for item in content:
            if isinstance(item, DiffToolCallContent):
                self.changes[item.path] = _line_counts(item)


@dataclass
class Renderer:
    out: TextIO
    info: TextIO
    style: Style
    show_thoughts: bool = True
    show_decisions: bool = False
    """Print what decided each tool call (`--decisions`)."""
    markdown: bool = False
    """Render agent text as markdown while it streams (interactive terminals only)."""
    calls: dict[str, _Call] = field(default_factory=dict)
    denied: bool = False
    _mode: str = "idle"
    _out_at_line_start: bool = True
    _info_at_line_start: bool = True
    _used: int | None = None
    _size: int | None = None
    _md: MarkdownStream | None = None
    total_tokens: int = 0
    on_child: Callable[[str, str, str], None] | None = None
    """Called with (child session id, agent, the `task` call's id) when a call of the shown
    session starts a child session (a subagent): the chat then shows the child's activity."""
    number_messages: bool = False
    """Number user messages as `#N` (0-based, as `/fork N` counts them): `/history`."""
    _message_numbers: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        same = self.out is self.info
        self.out = guard(self.out)
        self.info = self.out if same else guard(self.info)

    def fresh(self, *, number_messages: bool = False) -> Renderer:
        """A renderer on the same streams and style that has shown nothing yet (replays)."""
        return Renderer(
            out=self.out,
            info=self.info,
            style=self.style,
            show_thoughts=self.show_thoughts,
            markdown=self.markdown,
            show_decisions=self.show_decisions,
            number_messages=number_messages,
        )

    def forget_usage(self) -> None:
        """Another session is shown now: its context use is unknown until its next turn."""
        self._used = self._size = None
        self.total_tokens = 0

    # -- streams --------------------------------------------------------------------------

    def _write(self, stream: TextIO, text: str) -> None:
        if not text:
            return
        stream.write(text)
        stream.flush()
        at_start = text.endswith("\n")
        if stream is self.out:
            self._out_at_line_start = at_start
        if stream is self.info:
            self._info_at_line_start = at_start
        if stream is self.out and stream is self.info:
            self._out_at_line_start = self._info_at_line_start = at_start

    def _end_markdown(self) -> None:
        # Only a rendering that was on screen leaves the cursor at a line start: a finished
        # stream object says nothing about where the cursor is now (a thought may follow it).
        if self._md is not None and self._md.end():
            self._out_at_line_start = self._info_at_line_start = True

    def _newline(self) -> None:
        self._end_markdown()
        if not self._out_at_line_start:
            self._write(self.out, "\n")
        if self.info is not self.out and not self._info_at_line_start:
            self._write(self.info, "\n")

    def line(self, text: str) -> None:
        """A line of client information (banner, hints), on the info stream."""
        self._newline()
        self._write(self.info, text + "\n")
        self._mode = "idle"

    # -- updates --------------------------------------------------------------------------

    def on_update(self, update: SessionUpdate) -> None:
        if isinstance(update, AgentMessageChunk):
            if self._mode != "text":
                self._newline()
                self._mode = "text"
            if self.markdown:
                if self._md is None:
                    self._md = MarkdownStream(self.out)
                self._md.add(_text_of(update.content))
            else:
                self._write(self.out, _text_of(update.content))
        elif isinstance(update, AgentThoughtChunk):
            if not self.show_thoughts:
                return
            if self._mode != "thought":
                self._newline()
                self._write(self.info, self.style.dim("thinking: "))
                self._mode = "thought"
            self._write(self.info, self.style.dim(_text_of(update.content)))
        elif isinstance(update, UserMessageChunk):
            self._newline()
            self._write(self.info, self._message_number(update) + self.style.bold("› "))
            self._write(self.info, _text_of(update.content) + "\n")
            self._mode = "idle"
        elif isinstance(update, ToolCallStart):
            self._tool_started(update)
        elif isinstance(update, ToolCallUpdate):
            child = (update.meta or {}).get("cody")
            if isinstance(child, dict) and isinstance(child.get("childSessionId"), str):
                self._child_started(update.tool_call_id, child)
            if self.show_decisions:
                self._show_decision(update)
            if update.status in ("completed", "failed"):
                self._tool_finished(
                    update.tool_call_id, update.status, update.content or [], update.raw_output
                )
        elif isinstance(update, UsageUpdate):
            self._used, self._size = update.used, update.size
        elif isinstance(update, SessionInfoUpdate):
            cody = update.meta.cody if update.meta is not None else None
            notice = cody.compaction if cody is not None else None
            if notice is not None and self._size:
                self._used = notice.tokens_after  # what the model sees from now on
            if notice is not None and notice.reason == "auto":
                self.line(
                    self.style.dim(
                        f"(context compacted: {notice.summarized_items} earlier items "
                        f"summarised, about {notice.tokens_before:,} -> "
                        f"{notice.tokens_after:,} tokens)"
                    )
                )

    def _message_number(self, update: UserMessageChunk) -> str:
        """`#N ` before the first chunk of each user message when numbering, else nothing."""
        if not self.number_messages:
            return ""
        key = update.message_id or f"chunk-{len(self._message_numbers)}"
        if key in self._message_numbers:
            return ""
        self._message_numbers[key] = len(self._message_numbers)
        return self.style.dim(f"#{self._message_numbers[key]} ")

    def _tool_started(self, update: ToolCallStart) -> None:
        call = self.calls.get(update.tool_call_id)
        if call is None:
            call = _Call(title=update.title, kind=update.kind)
            call.note_diffs(update.content or [])
            self.calls[update.tool_call_id] = call
            self._newline()
            self._write(
                self.info,
                self.style.cyan("▸ ")
                + self.style.bold(one_line(update.title))
                + self.style.dim(f"  [{update.kind}]")
                + "\n",
            )
            self._mode = "tool"
        if update.status in ("completed", "failed"):
            self._tool_finished(
                update.tool_call_id, update.status, update.content or [], update.raw_output
            )

    def _child_started(self, call_id: str, meta: dict[str, object]) -> None:
        child, agent = str(meta["childSessionId"]), str(meta.get("agent") or "subagent")
        how = "in the background" if meta.get("background") else "working"
        self._newline()
        self._write(
            self.info,
            self.style.dim(f"  ↳ {one_line(agent)} {how} · session {one_line(child)}") + "\n",
        )
        self._mode = "tool"
        if self.on_child is not None:
            self.on_child(child, agent, call_id)

    def child_line(self, agent: str, text: str) -> None:
        """One line of a child session's activity, under the parent's `task` call."""
        self._newline()
        self._write(self.info, self.style.dim(f"  │ {one_line(agent)}: ") + one_line(text) + "\n")
        self._mode = "tool"

    def _tool_finished(
        self,
        call_id: str,
        status: str,
        content: Sequence[ToolCallContent],
        raw_output: object = None,
    ) -> None:
        call = self.calls.get(call_id)
        if call is None or call.finished:
            return
        call.finished = True
        call.note_diffs(content)
        text = "\n".join(
            _text_of(item.content) for item in content if isinstance(item, ContentToolCallContent)
        )
        if was_refused(raw_output, text):
            self.denied = True
        lines = [line for line in text.strip().splitlines() if line.strip()]
        if status == "completed":  # an edit says what it changed: `notes.txt +3 -1`
            lines[:0] = [
                f"{_shown_path(path)} +{add} -{rem}" for path, (add, rem) in call.changes.items()
            ]
        preview = lines[:6]
        mark = self.style.green("  ✓ ") if status == "completed" else self.style.red("  ✗ ")
        self._newline()
        if not preview:
            self._write(self.info, mark + self.style.dim(status) + "\n")
        else:
            self._write(self.info, mark + self.style.dim(preview[0]) + "\n")
            for line in preview[1:]:
                self._write(self.info, "    " + self.style.dim(line) + "\n")
            if len(lines) > len(preview):
                self._write(
                    self.info,
                    "    " + self.style.dim(f"… {len(lines) - len(preview)} more lines") + "\n",
                )
        self._mode = "tool"

    # -- turn end -------------------------------------------------------------------------

    def turn_finished(self, result: PromptResult, *, model: str | None = None) -> None:
        self._newline()
        parts = [f"stop: {result.stop_reason}"]
        if model:
            parts.insert(0, one_line(model))
        if result.meta is not None:
            usage = result.meta.cody.usage
            self.total_tokens = usage.total.total_tokens
            parts.append(
                f"{_count(usage.turn.input_tokens)} in / {_count(usage.turn.output_tokens)} out"
            )
            cost = result.meta.cody.cost
            if cost is not None and cost.total > 0:  # a free model shows no "$0.0000"
                parts.append(f"${cost.turn:.4f} (session ${cost.total:.4f})")
            children = result.meta.cody.subagents
            if children is not None and children.sessions:
                spent = f"{_count(children.usage.total_tokens)} tokens"
                if children.cost:
                    spent += f", ${children.cost:.4f}"
                parts.append(f"subagents {children.sessions}: {spent}")
        if self._used is not None and self._size:
            parts.append(f"context {100 * self._used // self._size}% of {_count(self._size)}")
        self._write(self.info, self.style.dim("── " + " · ".join(parts)) + "\n")
        self._mode = "idle"

    def _show_decision(self, update: ToolCallUpdate) -> None:
        """`--decisions`: what decided the call (`_meta.cody.decision`), under it."""
        meta = update.meta or {}
        cody = meta.get("cody") if isinstance(meta, dict) else None
        found = cody.get("decision") if isinstance(cody, dict) else None
        if not isinstance(found, dict):
            return
        verb = "allowed" if found.get("outcome") == "allow" else "refused"
        by, detail = one_line(str(found.get("by"))), one_line(str(found.get("detail")))
        self.line(self.style.dim(f"  {verb} by {by}: {detail}"))

    # -- approvals ------------------------------------------------------------------------

    def _approval_header(self, request: RequestPermissionParams) -> str:
        call = request.tool_call
        return (
            self.style.yellow("╭─ Approval needed: ")
            + self.style.bold(one_line(call.title))
            + self.style.dim(f"  [{call.kind}]")
        )

    def _approval_footer(self, request: RequestPermissionParams) -> list[str]:
        lines: list[str] = []
        meta = request.meta.cody if request.meta is not None else None
        if meta is not None and meta.grant_key:
            lines.append(
                self.style.yellow("│ ")
                + self.style.dim(f'("for this session" applies to {one_line(meta.grant_key)})')
            )
        project = next((o for o in request.options if o.option_id == "allow_project"), None)
        if project is not None:
            lines.append(self.style.yellow("│ ") + "p: " + one_line(project.name))
        options = PROJECT_OPTIONS_LINE if project is not None else OPTIONS_LINE
        lines.append(self.style.yellow("╰─ ") + options)
        return lines

    def _text_lines(self, item: ContentToolCallContent) -> list[str]:
        # Split at newlines only: another line break (CR, VT, FF, U+2028) is shown escaped
        # inside its line, so each line of the request starts with the frame.
        return [
            self.style.yellow("│ ")
            + (self.style.yellow(line) if line.startswith(("WARNING", "OUTSIDE")) else line)
            for line in _text_of(item.content).split("\n")
        ]

    def approval_text(self, request: RequestPermissionParams) -> Safe:
        """The request as plain (optionally coloured) lines: command and cwd, or the diff."""
        lines = [self._approval_header(request)]
        for item in request.tool_call.content:
            if isinstance(item, DiffToolCallContent):
                lines.extend(self.style.yellow("│ ") + line for line in self._diff_lines(item))
            elif isinstance(item, ContentToolCallContent):
                lines.extend(self._text_lines(item))
        lines.extend(self._approval_footer(request))
        return join("\n", lines)

    def _diff_lines(self, diff: DiffToolCallContent) -> list[str]:
        old = (diff.old_text or "").splitlines()
        new = diff.new_text.splitlines()
        label = "new file " if diff.old_text is None else ""
        lines: list[str] = [self.style.bold(f"{label}{one_line(diff.path)}")]
        for line in difflib.unified_diff(old, new, lineterm="", n=2):
            if line.startswith(("---", "+++")):
                continue
            if line.startswith("+"):
                lines.append(self.style.green(line))
            elif line.startswith("-"):
                lines.append(self.style.red(line))
            elif line.startswith("@@"):
                lines.append(self.style.cyan(line))
            else:
                lines.append(line)
        return lines

    def show_approval(self, request: RequestPermissionParams) -> None:
        """The request inside its frame: every line, diffs included, starts with `│ `."""
        self._newline()
        self._write(self.info, self.approval_text(request) + "\n")
        self._mode = "idle"

    def show_mcp_status(self, params: Any) -> None:
        """A `_cody/mcp/status` worth a line: a server ready (its tool count), failed (why,
        and whether it is restarted), or still starting while a turn goes on without it."""
        if not isinstance(params, dict):
            return
        server, state, reason = params.get("server"), params.get("state"), params.get("reason")
        name = one_line(str(server))
        if state == "ready":
            self.line(self.style.dim(f"MCP server {name}: ready, {params.get('tools', 0)} tools"))
        elif state == "failed":
            self.line(
                self.style.yellow(f"MCP server {name} failed: ") + one_line(str(reason or ""))
            )
        elif state == "starting" and reason:
            self.line(self.style.dim(f"MCP server {name}: ") + one_line(str(reason)))

    def status_parts(self) -> list[str]:
        """Short statuses for toolbars: context use (what the model sees now, so it drops
        after a compaction), then the tokens the session has used in all."""
        parts = []
        if self._used is not None and self._size:
            parts.append(f"context {100 * self._used // self._size}% of {_count(self._size)}")
        if self.total_tokens:
            parts.append(f"{_count(self.total_tokens)} tokens used")
        return parts

    def status(self) -> str:
        return " · ".join(self.status_parts())

    @property
    def messages_numbered(self) -> bool:
        """Whether a user message was shown with its `#N`."""
        return bool(self._message_numbers)


def _line_counts(diff: DiffToolCallContent) -> tuple[int, int]:
    """Lines added and removed by `diff`."""
    added = removed = 0
    old = (diff.old_text or "").splitlines()
    for line in difflib.unified_diff(old, diff.new_text.splitlines(), lineterm="", n=0):
        if line.startswith(("---", "+++")):
            continue
        added += line.startswith("+")
        removed += line.startswith("-")
    return added, removed


def _shown_path(path: str) -> str:
    """A file's path on one line, relative to the current directory when under it."""
    try:
        relative = os.path.relpath(path)
    except ValueError:
        relative = path
    return one_line(path if relative.startswith("..") else relative)


def _count(tokens: int) -> str:
    """A token count for a status line: 842, 12.3k, 1.05M."""
    if tokens < 1000:
        return str(tokens)
    if tokens < 1_000_000:
        return f"{tokens / 1000:.1f}".rstrip("0").rstrip(".") + "k"
    return f"{tokens / 1_000_000:.2f}".rstrip("0").rstrip(".") + "M"


def _text_of(block: object) -> str:
    return block.text if isinstance(block, TextContent) else ""
