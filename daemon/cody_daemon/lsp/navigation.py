"""The `symbols` tool's questions, asked of the running servers and answered as text.

Invariants: positions the model gives and gets are 1-based (`path:line:col`); a symbol named
without a column is looked up as a whole word on its line (or the first line of the file
that has it); each answer lists at most `MAX_RESULTS` entries and says how many it left out;
the first server that gives a non-empty answer wins.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from ..core.code_intel import SymbolQuery, shown_path
from .client import ServerConnection, ServerGone
from .files import line_of, read_source
from .specs import language_id
from .wire import path_of

__all__ = ["MAX_RESULTS", "answer"]

MAX_RESULTS = 50


async def answer(servers: Sequence[ServerConnection], query: SymbolQuery, timeout_s: float) -> str:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    problems: list[str] = []
    for connection in servers:
        if not _supports(connection, query.operation):
            continue
        try:
            lines = await _ask(connection, query, deadline - loop.time())
        except ServerGone as exc:
            problems.append(f"{connection.spec.name}: {exc}")
            continue
        if lines:
            return _listing(lines, query)
    if problems:
        raise ValueError("; ".join(problems))
    return f"No results for {_describe(query)}."


def _supports(connection: ServerConnection, operation: str) -> bool:
    caps = connection.capabilities
    if caps is None:
        return False
    provider = {
        "workspaceSymbols": caps.workspace_symbol_provider,
        "documentSymbols": caps.document_symbol_provider,
        "definition": caps.definition_provider,
        "references": caps.references_provider,
    }[operation]
    return bool(provider)


async def _ask(connection: ServerConnection, query: SymbolQuery, timeout_s: float) -> list[str]:
    cwd = query.cwd
    if query.operation == "workspaceSymbols":
        found = await connection.request(
            "workspace/symbol", lsp.WorkspaceSymbolParams(query=query.query or ""), timeout_s
        )
        return [_symbol_line(item, cwd) for item in found or ()]
    assert query.path is not None
    text = await _synced(connection, query.path)
    document = lsp.TextDocumentIdentifier(uri=query.path.as_uri())
    if query.operation == "documentSymbols":
        found = await connection.request(
            "textDocument/documentSymbol",
            lsp.DocumentSymbolParams(text_document=document),
            timeout_s,
        )
        lines: list[str] = []
        for item in found or ():
            _outline(item, query.path, cwd, lines, depth=0)
        return lines
    position = _position(text, query)
    if query.operation == "definition":
        found = await connection.request(
            "textDocument/definition",
            lsp.DefinitionParams(text_document=document, position=position),
            timeout_s,
        )
    else:
        found = await connection.request(
            "textDocument/references",
            lsp.ReferenceParams(
                text_document=document,
                position=position,
                context=lsp.ReferenceContext(include_declaration=True),
            ),
            timeout_s,
        )
    if found is None:
        return []
    locations = list(found) if isinstance(found, list | tuple) else [found]
    return await asyncio.to_thread(lambda: [_location_line(item, cwd) for item in locations])


async def _synced(connection: ServerConnection, path: Path) -> str:
    """The file's text on disk, sent to the server first when it holds another one."""
    try:
        text = await asyncio.to_thread(read_source, path)
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    if connection.document_text(path) != text:
        connection.sync(path, text, language_id(path))
    return text


def _position(text: str, query: SymbolQuery) -> lsp.Position:
    lines = text.split("\n")
    symbol = query.symbol
    if query.line is None:
        if not symbol:
            raise ValueError("give `line` (and `column` or `symbol`), or a `symbol` to look for")
        for number, line in enumerate(lines, start=1):
            if _find(line, symbol) is not None:
                return _position(text, _at(query, number))
        raise ValueError(f"`{symbol}` does not occur in {query.path}")
    if not 1 <= query.line <= len(lines):
        raise ValueError(f"line {query.line} is outside {query.path} ({len(lines)} lines)")
    line = lines[query.line - 1]
    if query.column is not None:
        column = query.column
    elif symbol:
        found = _find(line, symbol)
        if found is None:
            raise ValueError(f"`{symbol}` does not occur on line {query.line} of {query.path}")
        column = found + 1
    else:
        column = len(line) - len(line.lstrip()) + 1
    return lsp.Position(line=query.line - 1, character=max(column - 1, 0))


def _at(query: SymbolQuery, line: int) -> SymbolQuery:
    return SymbolQuery(
        operation=query.operation, cwd=query.cwd, path=query.path, line=line, symbol=query.symbol
    )


def _find(line: str, symbol: str) -> int | None:
    match = re.search(rf"(?<![\w$]){re.escape(symbol)}(?![\w$])", line)
    return match.start() if match else None


def _location_line(item: Any, cwd: Path) -> str:
    if isinstance(item, lsp.LocationLink):
        uri, start = item.target_uri, item.target_selection_range.start
    else:
        uri, start = item.uri, item.range.start
    path = path_of(uri)
    where = shown_path(path, cwd) if path is not None else uri
    source = line_of(path, start.line) if path is not None else ""
    return f"{where}:{start.line + 1}:{start.character + 1}" + (f"  {source}" if source else "")


def _symbol_line(item: Any, cwd: Path) -> str:
    location = item.location
    kind = _kind(item.kind)
    container = f" (in {item.container_name})" if getattr(item, "container_name", None) else ""
    if isinstance(location, lsp.Location):
        path = path_of(location.uri)
        where = shown_path(path, cwd) if path is not None else location.uri
        start = location.range.start
        return f"{where}:{start.line + 1}:{start.character + 1} {kind} {item.name}{container}"
    path = path_of(location.uri)
    where = shown_path(path, cwd) if path is not None else location.uri
    return f"{where} {kind} {item.name}{container}"


def _outline(item: Any, path: Path, cwd: Path, out: list[str], depth: int) -> None:
    if isinstance(item, lsp.SymbolInformation):
        out.append(_symbol_line(item, cwd))
        return
    start = item.selection_range.start
    out.append(
        f"{'  ' * depth}{shown_path(path, cwd)}:{start.line + 1}:{start.character + 1} "
        f"{_kind(item.kind)} {item.name}"
    )
    for child in item.children or ():
        _outline(child, path, cwd, out, depth + 1)


def _kind(kind: Any) -> str:
    try:
        return lsp.SymbolKind(kind).name.lower()
    except ValueError:
        return "symbol"


def _listing(lines: list[str], query: SymbolQuery) -> str:
    shown = lines[:MAX_RESULTS]
    head = f"{_describe(query)}: {len(lines)} result{'s' if len(lines) != 1 else ''}"
    more = [f"... and {len(lines) - MAX_RESULTS} more"] if len(lines) > MAX_RESULTS else []
    return "\n".join([head, *shown, *more])


def _describe(query: SymbolQuery) -> str:
    if query.operation == "workspaceSymbols":
        return f"workspace symbols matching {query.query or ''!r}"
    target = query.symbol or (f"line {query.line}" if query.line else "")
    return f"{query.operation} of {target} in {query.path}".replace("  ", " ")
