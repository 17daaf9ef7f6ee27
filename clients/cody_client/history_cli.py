"""`cody-client history`: Codex, Claude Code and Cody sessions, listed, shown, imported.

    cody-client history list [--agent codex|claude|cody] [--cwd DIR] [--json]
    cody-client history show ID|PATH [--agent A] [--json]
    cody-client history import ID|PATH [--agent A] [--cwd DIR]

`show` renders a chat transcript (`--json`: one UnifiedMessage per line, the whole message);
`import` creates a Cody session holding the conversation, working in `--cwd` or the current
directory (never the directory the file names: a file may name `/`), and says how to
continue it.
Exit codes: 0 done, 1 error, 2 unknown session or bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from cody_protocol.history import HistorySessionInfo, UnifiedMessage

from .inert import guard, json_document, one_line
from .terminal import Style, use_color
from .wording import for_terminal

if TYPE_CHECKING:
    from .client import CodyClient

__all__ = ["Transcript", "build_history_parser", "run_history"]

AGENTS = ("codex", "claude", "cody")
_RESULT_LINES = 6


def build_history_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cody-client history",
        description="Codex, Claude Code and Cody sessions on this machine, in one format.",
        epilog="ID is a session id (see `history list`) or the path of a session file.",
    )
    parser.add_argument("action", choices=("list", "show", "import"))
    parser.add_argument("session", nargs="?", metavar="ID|PATH", help="the session (show, import)")
    parser.add_argument("--agent", choices=AGENTS, help="only this agent's sessions")
    parser.add_argument(
        "--cwd",
        default=None,
        help="list: only sessions of this directory; import: the new session's directory "
        "(default: the current directory, never the one the session file names)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON lines (list, show)")
    return parser


def _reference(session: str) -> dict[str, Any]:
    """A path when it names a file (or has a slash), else a session id."""
    if os.sep in session or session.endswith(".jsonl") or os.path.isfile(session):
        return {"path": os.path.abspath(session)}
    return {"session_id": session}


class _NoUniqueMatch(LookupError):
    def __init__(self, message: str, candidates: list[HistorySessionInfo]) -> None:
        super().__init__(message)
        self.message = message
        self.candidates = candidates


async def _resolve(client: CodyClient, session: str, agent: str | None) -> dict[str, Any]:
    """The session's reference; an id prefix (shorter than a full id) is looked up among the
    sessions `history list` shows, as `--resume` does among Cody's: it must match one."""
    from .client import FULL_ID_LENGTH

    reference = _reference(session)
    prefix = reference.get("session_id")
    if prefix is None or len(prefix) >= FULL_ID_LENGTH:
        return reference
    matches = [
        info
        for info in await client.history_list(agent=agent)
        if info.session_id.startswith(prefix)
    ]
    if len(matches) == 1:
        return {"path": matches[0].path}
    if not matches:
        raise _NoUniqueMatch(
            f"No session id starts with {prefix!r}. Run `cody-client history list` to see the "
            "sessions on this machine.",
            [],
        )
    raise _NoUniqueMatch(
        f"{len(matches)} sessions start with {prefix!r}; give more characters.", matches
    )


async def run_history(
    args: argparse.Namespace,
    parser: argparse.ArgumentParser,
    on_stderr: Callable[[str], None],
) -> int:
    from .client import RemoteError
    from .warm import open_daemon

    if args.action in ("show", "import") and not args.session:
        parser.error(f"history {args.action} needs a session id or path")
    out = guard(sys.stdout)
    try:
        async with open_daemon(on_stderr=on_stderr) as client:
            if args.action == "list":
                sessions = await client.history_list(agent=args.agent, cwd=args.cwd)
                if args.json:
                    for info in sessions:
                        out.write(json_document(json.dumps(info.wire(), ensure_ascii=False)) + "\n")
                elif not sessions:
                    out.write("No sessions found.\n")
                for info in [] if args.json else sessions:
                    count = f"{'' if info.message_count_exact else '~'}{info.message_count}"
                    out.write(
                        f"{info.agent:6}  {one_line(info.session_id)}  "
                        f"{one_line(info.updated_at or ''):24}  {count:>6} msgs  "
                        f"{one_line(info.cwd or '-')}  {one_line(info.title or '')}\n"
                    )
            elif args.action == "show":
                transcript = Transcript(out, Style(use_color(out)))
                reference = await _resolve(client, args.session, args.agent)
                async for message in client.history_messages(
                    **reference, agent=args.agent, include_original=args.json
                ):
                    if args.json:
                        line = json.dumps(message.wire(), ensure_ascii=False)
                        out.write(json_document(line) + "\n")
                    else:
                        transcript.write(message)
            else:
                reference = await _resolve(client, args.session, args.agent)
                session, stats = await client.import_history(
                    **reference, agent=args.agent, cwd=args.cwd
                )
                source, cwd = one_line(stats.session_id), one_line(stats.cwd)
                out.write(
                    f"Imported {stats.agent} session {source}: {stats.items} items "
                    f"({stats.tool_calls} tool calls) into Cody session {session.id} in {cwd}.\n"
                )
                if stats.images_left_out:
                    out.write(
                        f"({stats.images_left_out} image(s) left out: each breaks a limit on "
                        "images' type, size or number.)\n"
                    )
                if stats.source_cwd and stats.source_cwd != stats.cwd:
                    out.write(
                        f"(It ran in {one_line(stats.source_cwd)}; to work there instead, "
                        "import it again with --cwd.)\n"
                    )
                out.write(f"Continue it with:\n  cody-client --resume {session.id} --cwd {cwd}\n")
    except RemoteError as exc:
        sys.stderr.write(f"cody-client: {for_terminal(exc.message)}\n")
        return 2 if exc.code in (-32602, -32002) else 1
    except _NoUniqueMatch as exc:
        sys.stderr.write(f"cody-client: {exc.message}\n")
        for info in exc.candidates[:10]:
            sys.stderr.write(f"  {info.agent:6}  {info.session_id}  {info.title or ''}\n")
        return 2
    return 0


class Transcript:
    """Renders unified messages like a chat: a result under its call (named when several
    calls are open), injected context and compaction notes dimmed and shortened."""

    def __init__(self, out: TextIO, style: Style) -> None:
        self.out = guard(out)
        self.style = style
        self._open: dict[str, str] = {}

    def write(self, message: UnifiedMessage) -> None:
        style, out = self.style, self.out
        aside = message.is_meta or message.compaction or message.is_sidechain
        for block in message.content:
            if block.type == "text":
                if aside or message.role == "system":
                    out.write(style.dim(f"· {_first_line(block.text)}  [{_why(message)}]") + "\n\n")
                elif message.role == "user":
                    out.write(style.bold("› ") + block.text + "\n\n")
                else:
                    out.write(block.text + "\n\n")
            elif block.type == "thinking" and block.thinking:
                out.write(style.dim(block.thinking) + "\n\n")
            elif block.type == "tool_use":
                self._open[block.id] = block.name
                call = style.cyan(f"▸ {one_line(block.name)} ")
                out.write(call + one_line(_describe_input(block.input)) + "\n")
            elif block.type == "tool_result":
                self._result(block.tool_use_id, block.content, is_error=block.is_error)
            elif block.type == "image":
                out.write(style.dim("[image]") + "\n")

    def _result(self, call_id: str, content: Any, *, is_error: bool) -> None:
        style = self.style
        name = self._open.pop(call_id, None)
        several = name is not None and len(self._open) > 0
        if isinstance(content, str):
            text = content
        else:
            text = "\n".join(b.text if b.type == "text" else "[image]" for b in content)
        lines = text.rstrip("\n").splitlines() or [""]
        shown = lines[:_RESULT_LINES]
        mark = style.red("  ✗ ") if is_error else style.green("  ✓ ")
        self.out.write(mark + (f"{one_line(name)}: " if several and name else "") + shown[0] + "\n")
        for line in shown[1:]:
            self.out.write("    " + line + "\n")
        if len(lines) > len(shown):
            self.out.write(style.dim(f"    … {len(lines) - len(shown)} more lines") + "\n")
        if not self._open:
            self.out.write("\n")


def _why(message: UnifiedMessage) -> str:
    if message.compaction:
        return "compaction"
    if message.is_sidechain:
        return "sub-agent"
    return "injected" if message.is_meta else message.role


def _first_line(text: str) -> str:
    lines = text.strip().splitlines() or [""]
    first = lines[0] if len(lines[0]) <= 160 else lines[0][:159] + "…"
    return first + (" …" if len(lines) > 1 else "")


def _describe_input(tool_input: dict[str, Any]) -> str:
    for key in ("command", "file_path", "filePath", "path", "dirPath", "pattern", "query", "url"):
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return value.splitlines()[0][:200]
    text = json.dumps(tool_input, ensure_ascii=False)
    return text if len(text) <= 200 else text[:199] + "…"
