"""`symbols`: ask the running language servers where things are defined and used.

Offered to the model only while a language server that answers symbol requests runs for
the session's project (`unavailable` says why not; servers start with the first edit of a
file they handle, so the tool can appear during a turn).
Read-only: it sends the servers the files' text on disk and reads their answers; positions
are 1-based `path:line:col`, as in diagnostics.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from cody_protocol.updates import ToolCallLocation
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..config.model import ToolConfig
from ..core.code_intel import Navigator, SymbolQuery
from ..policy.sandbox import resolve_path
from .base import (
    OWN_DEADLINE_MARGIN_S,
    PathRead,
    Tool,
    ToolContext,
    ToolError,
    ToolFacts,
    ToolResult,
    location,
)

__all__ = ["SymbolsArgs", "SymbolsTool"]

ANSWER_TIMEOUT_S = 10.0

Operation = Literal["workspaceSymbols", "documentSymbols", "definition", "references"]


class SymbolsArgs(BaseModel):
    model_config = ConfigDict(
        extra="forbid", validate_by_name=True, validate_by_alias=True, defer_build=True
    )

    operation: Operation = Field(
        description="workspaceSymbols: find symbols by name in the project (`query`); "
        "documentSymbols: outline one file (`filePath`); definition / references: where the "
        "symbol at a position of `filePath` is defined / used (`line` with `symbol` or "
        "`column`, or just `symbol`: its first occurrence in the file)."
    )
    query: str | None = Field(default=None, description="workspaceSymbols: the name to find.")
    file_path: str | None = Field(
        default=None,
        alias="filePath",
        description="The file (relative paths are resolved against the working directory).",
    )
    line: int | None = Field(default=None, ge=1, description="1-based line of the symbol.")
    column: int | None = Field(default=None, ge=1, description="1-based column of the symbol.")
    symbol: str | None = Field(default=None, description="The symbol's name, as written.")

    @model_validator(mode="after")
    def _needs(self) -> SymbolsArgs:
        if self.operation == "workspaceSymbols":
            if not self.query:
                raise ValueError("workspaceSymbols needs `query`")
        elif self.file_path is None:
            raise ValueError(f"{self.operation} needs `filePath`")
        elif self.operation != "documentSymbols" and self.line is None and not self.symbol:
            raise ValueError(f"{self.operation} needs `line` or `symbol`")
        return self


class SymbolsTool(Tool[SymbolsArgs]):
    name = "symbols"
    description = (
        "Navigate code with the project's language servers: find a symbol by name, outline "
        "a file, go to a definition, list references. Answers are `path:line:col` lines."
    )
    kind = "search"
    facts = ToolFacts(changes="nothing", files="read")
    args_model = SymbolsArgs

    def __init__(self, navigator: Navigator) -> None:
        self._navigator = navigator

    def unavailable(
        self,
        env: Mapping[str, str],
        tool_config: Mapping[str, ToolConfig],
        session_id: str | None = None,
    ) -> str | None:
        return super().unavailable(env, tool_config, session_id) or (
            self._navigator.not_navigable(session_id)
        )

    def title(self, args: SymbolsArgs) -> str:
        target = args.query or args.symbol or args.file_path or ""
        return f"Symbols: {args.operation} {target}".rstrip()

    @staticmethod
    def _path(args: SymbolsArgs, cwd: Path) -> Path | None:
        if args.file_path is None:
            return None
        return resolve_path(os.path.expanduser(args.file_path), cwd)

    def path_reads(self, args: SymbolsArgs, ctx: ToolContext) -> tuple[PathRead, ...]:
        path = self._path(args, ctx.cwd)
        return (PathRead(path),) if path is not None else ()

    def locations(self, args: SymbolsArgs, cwd: Path) -> list[ToolCallLocation]:
        path = self._path(args, cwd)
        return [location(path, args.line)] if path is not None else []

    def known_safe(self, args: SymbolsArgs, ctx: ToolContext) -> bool:
        return True

    def time_limit_s(self, args: SymbolsArgs, ctx: ToolContext) -> float:
        return ANSWER_TIMEOUT_S + OWN_DEADLINE_MARGIN_S

    async def run(self, args: SymbolsArgs, ctx: ToolContext) -> ToolResult:
        path = self._path(args, ctx.cwd)
        if path is not None and not await asyncio.to_thread(path.is_file):
            raise ToolError(f"{path} is not a file")
        query = SymbolQuery(
            operation=args.operation,
            cwd=ctx.cwd,
            query=args.query,
            path=path,
            line=args.line,
            column=args.column,
            symbol=args.symbol,
        )
        try:
            text = await self._navigator.navigate(ctx.session_id, query, ANSWER_TIMEOUT_S)
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        return ToolResult(output=text, raw_output={"operation": args.operation})
