"""The one line naming a session's project instructions (`_meta.cody.projectDocs`), shown
by the chat, `exec` and `doctor`.

Invariant: every path comes from the file system, so a repository chooses its characters;
control and format characters (escape sequences, bidi overrides) are shown inert (inert.py,
the one gate) before the line reaches a terminal.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from cody_protocol.session import ProjectDoc

from .inert import one_line as printable

__all__ = ["printable", "project_docs_line", "shown_path"]


def shown_path(path: str, cwd: str) -> str:
    """`path` relative to `cwd` when inside it, `~/...` when in the home directory."""
    try:
        relative = os.path.relpath(path, cwd)
    except ValueError:
        relative = path
    if not relative.startswith(".."):
        return printable(relative)
    home = os.path.expanduser("~")
    if home not in ("", "/") and path.startswith(home + os.sep):
        return printable("~" + path[len(home) :])
    return printable(path)


def project_docs_line(docs: Sequence[ProjectDoc], cwd: str) -> str | None:
    """`Project instructions: ~/.codex/AGENTS.md, AGENTS.md (3.1 KB)`, with what was cut or
    skipped; None when the session has none."""
    if not docs:
        return None
    read = [doc for doc in docs if doc.bytes > 0]
    names = [shown_path(d.path, cwd) + (" (cut)" if d.truncated else "") for d in read]
    line = "Project instructions: " + (", ".join(names) if names else "none read")
    if read:
        line += f" ({_size(sum(doc.bytes for doc in read))})"
    left_out = [shown_path(d.path, cwd) for d in docs if d.truncated and d.bytes == 0]
    if left_out:
        line += f"; over project_doc_max_bytes, left out: {', '.join(left_out)}"
    skipped = [f"{shown_path(d.path, cwd)} ({printable(d.skipped)})" for d in docs if d.skipped]
    if skipped:
        line += f"; skipped: {', '.join(skipped)}"
    return line


def _size(count: int) -> str:
    return f"{count} bytes" if count < 1024 else f"{count / 1024:.1f} KB"
