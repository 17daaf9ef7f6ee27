"""`_cody/lsp/servers`: which language servers a directory gets, and whether they start."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cody_protocol import methods

from .handlers import parse

if TYPE_CHECKING:
    from .context import HandlerContext

__all__ = ["lsp_handlers"]


def lsp_handlers(app: HandlerContext) -> dict[str, Callable[[Any], Awaitable[Any]]]:
    """`_cody/lsp/servers`'s handler (registered by rpc/handlers.py)."""

    async def lsp_servers(params: Any) -> Any:
        from cody_protocol.extensions import (
            LanguageServerInfo,
            LanguageServersParams,
            LanguageServersResult,
        )

        from ..engine.code_report import language_servers_report

        parsed = parse(LanguageServersParams, params)
        cwd = Path(await asyncio.to_thread(_real_dir, parsed.cwd or os.getcwd()))
        if not await asyncio.to_thread(cwd.is_dir):
            from ..errors import InvalidParams, Issue

            raise InvalidParams(
                f"cwd {cwd} is not a directory",
                [Issue(key="cwd", message="not a directory", value=str(cwd), source="params")],
            )
        enabled, servers = await language_servers_report(app.deps, cwd, start=parsed.start)
        return LanguageServersResult(
            cwd=str(cwd),
            enabled=enabled,
            servers=[
                LanguageServerInfo(
                    name=s.name,
                    command=list(s.command),
                    extensions=list(s.extensions),
                    path=s.path,
                    state=s.state,
                    sandboxed=s.sandboxed,
                    problem=s.problem,
                )
                for s in servers
            ],
        )

    return {methods.CODY_LSP_SERVERS: lsp_servers}


def _real_dir(path: str) -> str:
    return os.path.realpath(os.path.expanduser(path))
