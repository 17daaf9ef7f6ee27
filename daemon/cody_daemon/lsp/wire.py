"""What the LSP client needs besides the connection: lsprotocol's converter with the hook it
lacks, the capabilities Cody declares, and small conversions (URIs, messages, settings)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Union
from urllib.parse import unquote, urlparse

from lsprotocol import types as lsp
from pygls.protocol import default_converter

__all__ = ["CLIENT_CAPABILITIES", "lsp_converter", "one_line", "path_of", "section"]

MESSAGE_CHARS = 300


_NotebookFilterValue = Union[  # noqa: UP007 - the exact typing object lsprotocol names
    str,
    lsp.NotebookDocumentFilterNotebookType,
    lsp.NotebookDocumentFilterScheme,
    lsp.NotebookDocumentFilterPattern,
    None,
]


def lsp_converter() -> Any:
    """pygls' converter plus the structure hook lsprotocol 2025.0.0 lacks: a server's
    `notebookDocumentSync` filter (ruff sends one) is a string or one of three filter
    classes, and without the hook `initialize`'s answer cannot be read at all."""
    converter = default_converter()  # type: ignore[no-untyped-call]
    kinds = (
        ("notebookType", lsp.NotebookDocumentFilterNotebookType),
        ("scheme", lsp.NotebookDocumentFilterScheme),
        ("pattern", lsp.NotebookDocumentFilterPattern),
    )

    def notebook_filter(value: Any, _type: Any) -> Any:
        if value is None or isinstance(value, str):
            return value
        for key, cls in kinds:
            if key in value:
                return converter.structure(value, cls)
        raise ValueError(f"not a notebook document filter: {sorted(value)}")

    converter.register_structure_hook(_NotebookFilterValue, notebook_filter)
    return converter


def section(settings: Mapping[str, Any] | None, name: str | None) -> Any:
    """The part of `settings` a `workspace/configuration` item asks for (`python.analysis`)."""
    node: Any = dict(settings or {})
    for part in (name or "").split("."):
        if not part:
            continue
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def path_of(uri: str) -> Path | None:
    """The path of a `file://` URI (None for any other scheme)."""
    if not uri.startswith("file://"):
        return None
    return Path(unquote(urlparse(uri).path))


def one_line(message: str) -> str:
    """A server's message on one line (ruff adds `help:` paragraphs), shortened."""
    parts = [line.strip() for line in message.splitlines() if line.strip()]
    text = "; ".join(parts)
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 1] + "…"


CLIENT_CAPABILITIES = lsp.ClientCapabilities(
    workspace=lsp.WorkspaceClientCapabilities(
        configuration=True, workspace_folders=True, apply_edit=False
    ),
    text_document=lsp.TextDocumentClientCapabilities(
        synchronization=lsp.TextDocumentSyncClientCapabilities(did_save=True),
        publish_diagnostics=lsp.PublishDiagnosticsClientCapabilities(version_support=True),
        definition=lsp.DefinitionClientCapabilities(link_support=False),
        references=lsp.ReferenceClientCapabilities(),
        document_symbol=lsp.DocumentSymbolClientCapabilities(
            hierarchical_document_symbol_support=True
        ),
    ),
    window=lsp.WindowClientCapabilities(work_done_progress=False),
)
