"""`_cody/files/search`: the files a client offers for an `@path` mention.

The same candidates and ranking as the model's `fileSearch` (tools/file_search.py: ignore
rules apply, `.git` is skipped, fuzzy fzf-style scoring), in the session's own directory,
which must still exist (engine/workdir.py).
"""

from __future__ import annotations

from ..errors import CodyError
from ..tools.base import ToolError
from ..tools.file_search import search_paths
from .session import Session
from .workdir import require_workdir

__all__ = ["search_files"]


async def search_files(session: Session, query: str, limit: int) -> tuple[list[str], bool]:
    """The best `limit` paths (relative, `/`-separated) and whether more matched."""
    require_workdir(session.id, session.cwd)
    try:
        return await search_paths(session.cwd, query, limit)
    except ToolError as exc:
        raise CodyError(exc.message) from None
