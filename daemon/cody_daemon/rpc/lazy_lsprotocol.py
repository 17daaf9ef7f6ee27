"""A stand-in for `lsprotocol.types` so the daemon starts without building LSP's ~1,000 classes.

pygls (Cody's JSON-RPC layer) imports `lsprotocol.types` whole at import time, and that one
module costs ~300 ms of a ~650 ms start on a 2-core machine (upstream lsprotocol issue
#441). Cody serves JSON-RPC, not LSP: of that module the daemon uses two small classes
(`ResponseError`, `ResponseErrorMessage`, pygls' error answers) and a few method names.

`install()` (called by `cody_daemon.cli.main` before anything imports pygls) puts this
stand-in into `sys.modules["lsprotocol.types"]`. It holds, eagerly, exactly the names
pygls 2.1 binds while it is imported (`EAGER_NAMES`):

- the method-name constants, equal to lsprotocol's;
- `ResponseError` and `ResponseErrorMessage`: attrs classes with lsprotocol's fields and
  defaults (the converter in rpc/protocol.py gives them lsprotocol's wire shape);
- the two small enums pygls reads at import (`PositionEncodingKind`, `TextDocumentSyncKind`),
  with lsprotocol's member names and values (str/int enums: members compare equal to the
  real ones);
- `LSPAny`, the same `typing` object as lsprotocol's;
- `ALL_TYPES_MAP` / `METHOD_TO_TYPES`: read-only mappings that load the real module on first
  lookup and answer from it;
- every other class pygls names at import (LSP document, notebook and capability types that
  only pygls' `LanguageServer` uses, never Cody's `JsonRPCServer`): a deferred class that
  loads the real module when it is called, checked against (`isinstance`/`issubclass`) or
  asked for an attribute, and then acts as the real class does.

Any other name (`lsprotocol.types.Hover`, ...) loads the real module on first access; from
then on the stand-in's namespace *is* the real module's (the eager names too), and
`sys.modules["lsprotocol.types"]` is the real module. So code that reaches past the eager
names is slower, never wrong.

Invariants, each checked by a test:
- every eager name exists in the real module with an equal value or the same fields
  (tests/unit/test_lazy_lsprotocol.py);
- while pygls is imported and the daemon answers `initialize` and `session/new`, the real
  module is never loaded (tests/unit/test_lazy_imports.py, through the real daemon);
- pygls' own error and cancel answers keep lsprotocol's wire shape (tests/e2e/test_rpc.py).
Only the daemon's entry point installs it; importing `cody_daemon` as a library (the
in-process tests) leaves `lsprotocol` alone.
"""

from __future__ import annotations

import enum
import importlib
import sys
import threading
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any, Optional, Union

import attrs

__all__ = ["EAGER_NAMES", "install", "installed"]

MODULE = "lsprotocol.types"

# -- the values pygls binds at import (pygls 2.1.1, lsprotocol 2025.0.0) ---------------------

_METHODS = {
    "CANCEL_REQUEST": "$/cancelRequest",
    "EXIT": "exit",
    "INITIALIZE": "initialize",
    "INITIALIZED": "initialized",
    "NOTEBOOK_DOCUMENT_DID_CHANGE": "notebookDocument/didChange",
    "NOTEBOOK_DOCUMENT_DID_CLOSE": "notebookDocument/didClose",
    "NOTEBOOK_DOCUMENT_DID_OPEN": "notebookDocument/didOpen",
    "SET_TRACE": "$/setTrace",
    "SHUTDOWN": "shutdown",
    "TEXT_DOCUMENT_DID_CHANGE": "textDocument/didChange",
    "TEXT_DOCUMENT_DID_CLOSE": "textDocument/didClose",
    "TEXT_DOCUMENT_DID_OPEN": "textDocument/didOpen",
    "TEXT_DOCUMENT_DID_SAVE": "textDocument/didSave",
    "TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL": "textDocument/semanticTokens/full",
    "TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL_DELTA": "textDocument/semanticTokens/full/delta",
    "TEXT_DOCUMENT_SEMANTIC_TOKENS_RANGE": "textDocument/semanticTokens/range",
    "WINDOW_WORK_DONE_PROGRESS_CANCEL": "window/workDoneProgress/cancel",
    "WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS": "workspace/didChangeWorkspaceFolders",
    "WORKSPACE_DID_CREATE_FILES": "workspace/didCreateFiles",
    "WORKSPACE_DID_DELETE_FILES": "workspace/didDeleteFiles",
    "WORKSPACE_DID_RENAME_FILES": "workspace/didRenameFiles",
    "WORKSPACE_EXECUTE_COMMAND": "workspace/executeCommand",
    "WORKSPACE_WILL_CREATE_FILES": "workspace/willCreateFiles",
    "WORKSPACE_WILL_DELETE_FILES": "workspace/willDeleteFiles",
    "WORKSPACE_WILL_RENAME_FILES": "workspace/willRenameFiles",
}

_DEFERRED_CLASSES = (
    "ClientCapabilities",
    "DidChangeNotebookDocumentParams",
    "DidCloseNotebookDocumentParams",
    "DidOpenNotebookDocumentParams",
    "FileOperationRegistrationOptions",
    "NotebookDocument",
    "NotebookDocumentSyncOptions",
    "Position",
    "Range",
    "SaveOptions",
    "SemanticTokensLegend",
    "SemanticTokensRegistrationOptions",
    "ShowDocumentResult",
    "TextDocumentContentChangeEvent",
    "TextDocumentContentChangePartial",
    "TextDocumentItem",
    "VersionedTextDocumentIdentifier",
    "WorkspaceFolder",
)

LSPAny = Union[Any, None]  # noqa: UP007 -- the very object lsprotocol defines


@attrs.define
class ResponseError:
    """lsprotocol's `ResponseError`: what pygls answers a failed request with."""

    code: int = attrs.field()
    message: str = attrs.field()
    data: Optional[LSPAny] = attrs.field(default=None)  # noqa: UP045


@attrs.define
class ResponseErrorMessage:
    """lsprotocol's `ResponseErrorMessage`: pygls' envelope for an error answer."""

    id: Optional[Union[int, str]] = attrs.field(default=None)  # noqa: UP007, UP045
    error: Optional[ResponseError] = attrs.field(default=None)  # noqa: UP045
    jsonrpc: str = attrs.field(default="2.0")


class PositionEncodingKind(str, enum.Enum):  # noqa: UP042 -- lsprotocol's own shape
    Utf8 = "utf-8"
    Utf16 = "utf-16"
    Utf32 = "utf-32"


class TextDocumentSyncKind(int, enum.Enum):
    None_ = 0
    Full = 1
    Incremental = 2


# -- loading the real module -------------------------------------------------------------------

_lock = threading.RLock()


def _real() -> ModuleType:
    """The real `lsprotocol.types`, imported on first need (then the stand-in mirrors it)."""
    with _lock:
        current = sys.modules.get(MODULE)
        if current is not None and not isinstance(current, _StandIn):
            return current
        stand_in = current
        del sys.modules[MODULE]
        try:
            real = importlib.import_module(MODULE)
        except BaseException:
            if stand_in is not None:
                sys.modules[MODULE] = stand_in
            raise
        if stand_in is not None:
            vars(stand_in).update(
                {key: value for key, value in vars(real).items() if not key.startswith("__")}
            )
        return real


class _DeferredMeta(type):
    """A class standing for a real lsprotocol class until something actually uses it."""

    _lsp_name: str

    def _target(cls) -> Any:
        return getattr(_real(), cls._lsp_name)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls._target()(*args, **kwargs)

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, cls._target())

    def __subclasscheck__(cls, subclass: Any) -> bool:
        return issubclass(subclass, cls._target())

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(cls._target(), name)


def _deferred(name: str) -> type:
    return _DeferredMeta(name, (), {"_lsp_name": name, "__module__": MODULE})


class _LazyMap(Mapping[Any, Any]):
    """One of lsprotocol's lookup tables, read from the real module on first use."""

    def __init__(self, name: str) -> None:
        self._name = name

    def _table(self) -> Mapping[Any, Any]:
        table: Mapping[Any, Any] = getattr(_real(), self._name)
        return table

    def __getitem__(self, key: Any) -> Any:
        return self._table()[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())


class _StandIn(ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(_real(), name)


def _eager() -> dict[str, Any]:
    names: dict[str, Any] = dict(_METHODS)
    names.update({name: _deferred(name) for name in _DEFERRED_CLASSES})
    names.update(
        LSPAny=LSPAny,
        ResponseError=ResponseError,
        ResponseErrorMessage=ResponseErrorMessage,
        PositionEncodingKind=PositionEncodingKind,
        TextDocumentSyncKind=TextDocumentSyncKind,
        ALL_TYPES_MAP=_LazyMap("ALL_TYPES_MAP"),
        METHOD_TO_TYPES=_LazyMap("METHOD_TO_TYPES"),
    )
    return names


EAGER_NAMES: frozenset[str] = frozenset(_eager())


def install() -> bool:
    """Put the stand-in in place unless `lsprotocol.types` is already imported.

    Call before anything imports pygls. Returns whether the stand-in is now in place."""
    with _lock:
        if MODULE in sys.modules:
            return isinstance(sys.modules[MODULE], _StandIn)
        import lsprotocol

        stand_in = _StandIn(MODULE, __doc__)
        vars(stand_in).update(_eager())
        sys.modules[MODULE] = stand_in
        lsprotocol.types = stand_in  # type: ignore[attr-defined]
        return True


def installed() -> bool:
    """Whether `lsprotocol.types` is the stand-in (the real module not loaded yet)."""
    return isinstance(sys.modules.get(MODULE), _StandIn)
