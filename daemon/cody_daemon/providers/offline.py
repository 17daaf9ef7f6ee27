"""The built-in `offline` provider: no key, no network (what `auto` uses when no provider has
credentials, and the demo's model).

It implements the same interface and emits the same events as the HTTP providers: several
text deltas, a reasoning delta, tool calls, usage estimated as characters / 4. Grammar of
the latest user message (case-insensitive):

    list files [in DIR]   -> listDir
    read PATH             -> readFile
    run CMD               -> exec (inside the sandbox)
    run outside CMD       -> exec asking to leave the sandbox (`escalate`)
    write PATH: TEXT      -> writeFile

After a tool result it summarises that result; anything else gets a short help text.
Deltas are paced (`delay_s`) so a terminal shows the text streaming.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncGenerator
from typing import Any

from ..core.history import (
    FunctionCallItem,
    FunctionCallOutputItem,
    HistoryItem,
    MessageItem,
    ReasoningItem,
    SummaryPart,
)
from ..ids import new_id
from .base import (
    ModelEvent,
    ModelRequest,
    ReasoningDelta,
    ReasoningDone,
    StreamEnd,
    TextDelta,
    ToolCallRequested,
    UsageReport,
)

__all__ = ["HELP_TEXT", "OfflineProvider"]

HELP_TEXT = (
    "I am Cody's built-in offline model, so I only understand a few requests:\n"
    "- `list files [in DIR]`\n"
    "- `read PATH`\n"
    "- `run CMD` (`run outside CMD` asks to leave the sandbox)\n"
    "- `write PATH: TEXT`\n"
    "Point Cody at a real provider (set OPENAI_API_KEY, or see the README) for everything else."
)

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^list files(?:\s+in\s+(?P<dir>.+))?$", re.I | re.S), "listDir"),
    (re.compile(r"^read\s+(?P<path>.+)$", re.I | re.S), "readFile"),
    (re.compile(r"^run\s+(?P<cmd>.+)$", re.I | re.S), "exec"),
    (re.compile(r"^write\s+(?P<path>[^:]+?)\s*:\s?(?P<text>.*)$", re.I | re.S), "writeFile"),
)


def _chunks(text: str, words: int = 2, minimum: int = 3) -> list[str]:
    """Split text into deltas of a few words (at least `minimum` when the text allows),
    keeping every character."""
    pieces = re.findall(r"\S+\s*|\s+", text)
    chunks = ["".join(pieces[i : i + words]) for i in range(0, len(pieces), words)]
    if len(chunks) < minimum and len(text) >= minimum:
        size = -(-len(text) // minimum)
        chunks = [text[i : i + size] for i in range(0, len(text), size)]
    return chunks or [text]


def plan_reply(history: list[HistoryItem]) -> tuple[str, str, dict[str, Any] | None, str | None]:
    """(reasoning, text, tool arguments or None, tool name or None) for the next reply."""
    last = history[-1] if history else None
    if isinstance(last, FunctionCallOutputItem):
        call = next(
            (
                item
                for item in reversed(history)
                if isinstance(item, FunctionCallItem) and item.call_id == last.call_id
            ),
            None,
        )
        name = call.name if call else "the tool"
        return (
            f"The {name} call finished; I'll summarise its result.",
            summarize(name, last),
            None,
            None,
        )
    request = ""
    for item in reversed(history):
        if isinstance(item, MessageItem) and item.role == "user":
            request = item.text.strip()
            break
    for pattern, tool in _PATTERNS:
        match = pattern.match(request)
        if not match:
            continue
        if tool == "listDir":
            directory = (match.group("dir") or ".").strip()
            return (
                f"The user wants the files in {directory}; I'll call listDir.",
                f"Let me list the files in `{directory}`.",
                {"dirPath": directory},
                tool,
            )
        if tool == "readFile":
            path = match.group("path").strip()
            return (
                f"The user wants to read {path}; I'll call readFile.",
                f"Reading `{path}`.",
                {"filePath": path},
                tool,
            )
        if tool == "exec":
            command = match.group("cmd").strip()
            outside = re.match(r"^outside\s+(?P<cmd>.+)$", command, re.I | re.S)
            if outside:
                command = outside.group("cmd").strip()
                return (
                    f"The user wants `{command}` run outside the sandbox; I'll ask for that.",
                    f"I'll ask to run `{command}` outside the sandbox.",
                    {
                        "command": command,
                        "escalate": True,
                        "justification": "you asked to run it outside the sandbox",
                    },
                    tool,
                )
            return (
                f"The user wants me to run `{command}`; I'll call exec.",
                f"I'll run `{command}`.",
                {"command": command},
                tool,
            )
        path = match.group("path").strip()
        return (
            f"The user wants me to write {path}; I'll call writeFile.",
            f"Writing `{path}`.",
            {"filePath": path, "content": match.group("text")},
            tool,
        )
    return ("The request is outside my offline grammar; I'll explain it.", HELP_TEXT, None, None)


def summarize(tool: str, output: FunctionCallOutputItem) -> str:
    """A short summary of a tool result, as a model would write it."""
    text = output.output.strip()
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict) and "error" in data:
            return f"The {tool} call did not succeed: {data['error']}."
    lines = text.splitlines()
    if tool == "exec":
        code = next(
            (line.split(":", 1)[1].strip() for line in lines if line.startswith("Exit code:")), "?"
        )
        body = lines[lines.index("Output:") + 1 :] if "Output:" in lines else lines
        shown = "\n".join(body[:10]).strip()
        verdict = "succeeded" if code == "0" else f"exited with code {code}"
        return f"The command {verdict}." + (f" Its output:\n\n```\n{shown}\n```" if shown else "")
    if tool == "listDir":
        entries = [
            line.strip()
            for line in lines[1:]
            if line.strip() and line.strip() != "(empty)" and not line.strip().startswith("[")
        ]
        listed = ", ".join(entries[:12]) + (", …" if len(entries) > 12 else "")
        if not entries:
            return "The directory is empty."
        noun = "entry" if len(entries) == 1 else "entries"
        return f"I found {len(entries)} {noun}: {listed}."
    if tool == "readFile":
        preview = "\n".join(line.split("\t", 1)[-1] for line in lines[:5])
        count = f"{len(lines)} line" + ("" if len(lines) == 1 else "s")
        return f"I read {count}. It starts with:\n\n```\n{preview}\n```"
    return f"Done: {lines[0] if lines else 'the tool finished'}."


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _history_chars(history: list[HistoryItem]) -> int:
    total = 0
    for item in history:
        if isinstance(item, MessageItem | ReasoningItem):
            total += len(item.text)
        elif isinstance(item, FunctionCallItem):
            total += len(item.arguments) + len(item.name)
        else:
            total += len(item.output)
    return total


class OfflineProvider:
    """A deterministic local model; see the module docstring for its grammar."""

    def __init__(self, *, provider_id: str = "offline", delay_s: float = 0.015) -> None:
        self._id = provider_id
        self._delay_s = delay_s

    @property
    def id(self) -> str:
        return self._id

    async def aclose(self) -> None:
        return None

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        history = list(request.history)
        reasoning, text, arguments, tool = plan_reply(history)
        yield ReasoningDelta(reasoning)
        yield ReasoningDone(
            ReasoningItem(
                id=new_id("rs_"), summary=[SummaryPart(text=reasoning)], provider=self._id
            )
        )
        for chunk in _chunks(text):
            if self._delay_s:
                await asyncio.sleep(self._delay_s)
            yield TextDelta(chunk)
        if tool is not None and arguments is not None:
            yield ToolCallRequested(
                call_id=new_id("call_"), name=tool, arguments=json.dumps(arguments)
            )
        input_tokens = _estimate_tokens(request.instructions) + _estimate_tokens(
            "x" * _history_chars(history)
        )
        output_tokens = _estimate_tokens(text + reasoning + json.dumps(arguments or {}))
        yield UsageReport(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            reasoning_tokens=_estimate_tokens(reasoning),
        )
        yield StreamEnd(stop="tool_use" if tool else "end_turn")
