"""One running language server, driven through pygls' LSP client.

Invariants:
- The process is ours: started with its stdin/stdout as the LSP channel and its stderr
  drained into a small tail (a server that logs a lot never blocks, and a crash is reported
  with its last words); it runs in its own process group, which `close` kills after a
  polite `shutdown`/`exit`, so nothing it started outlives it.
- Every request has a timeout and returns early when the process exits, so a server that
  hangs or dies costs its caller at most the time it gave.
- Documents are sent whole (`didOpen`, then `didChange` with the full text and `didSave`);
  versions only grow. Diagnostics of a version are those the server published with that
  version (or, for a server that sends none, its next publication), or pulled with
  `textDocument/diagnostic` where the server offers it.
- Requests from the server are answered from what the client has (`workspace/configuration`
  from the server's settings, workspace folders) or with a refusal (`workspace/applyEdit`):
  a server never changes files through Cody.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.io_ import run_async
from pygls.lsp.client import LanguageClient

from ..core.code_intel import Diagnostic, Severity
from .specs import ServerSpec
from .wire import CLIENT_CAPABILITIES, lsp_converter, one_line, path_of, section

__all__ = ["Launch", "ServerConnection", "ServerGone"]

logger = logging.getLogger(__name__)

STDERR_TAIL_BYTES = 4096
SHUTDOWN_GRACE_S = 2.0
STDERR_DRAIN_S = 0.5
_SEVERITIES: dict[int, Severity] = {1: "error", 2: "warning", 3: "information", 4: "hint"}


class ServerGone(Exception):
    """The server exited, did not answer in time or answered with an error."""


@dataclass(frozen=True, slots=True)
class Launch:
    """How to start a server: argv (wrapped in the sandbox or not), environment, cwd."""

    argv: list[str]
    env: Mapping[str, str]
    cwd: Path
    pass_fds: tuple[int, ...] = ()
    sandboxed: bool = False


@dataclass(slots=True)
class _Document:
    version: int
    text: str
    published: int = 0
    """The version the last published diagnostics are for (0: none yet)."""
    diagnostics: list[Diagnostic] = field(default_factory=list)


class ServerConnection:
    """A server process: `spawn`, then `initialize` (both raise `ServerGone`); `exited` is
    set when it dies."""

    def __init__(self, spec: ServerSpec, root: Path, *, sandboxed: bool = False) -> None:
        self.spec = spec
        self.root = root
        self.sandboxed = sandboxed
        self.capabilities: lsp.ServerCapabilities | None = None
        self.exited = asyncio.Event()
        self.returncode: int | None = None
        self.closing = False
        self._client = LanguageClient("cody", "1", converter_factory=lsp_converter)
        self._process: asyncio.subprocess.Process | None = None
        self._stderr = bytearray()
        self._documents: dict[Path, _Document] = {}
        self._published = asyncio.Condition()
        self._tasks: list[asyncio.Task[Any]] = []
        self._stderr_task: asyncio.Task[None] | None = None
        self._stop = threading.Event()
        self._register_handlers()

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def alive(self) -> bool:
        return self._process is not None and not self.exited.is_set()

    def stderr_tail(self) -> str:
        text = bytes(self._stderr).decode("utf-8", "replace").strip()
        return text[-600:]

    async def spawn(self, launch: Launch) -> None:
        """Start the process (`initialize` is separate: the launch's fds may close now)."""
        try:
            process = await asyncio.create_subprocess_exec(
                *launch.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=launch.cwd,
                env=dict(launch.env),
                pass_fds=launch.pass_fds,
                start_new_session=True,
            )
        except OSError as exc:
            raise ServerGone(f"cannot run {launch.argv[0]}: {exc.strerror or exc}") from None
        self._process = process
        assert process.stdin is not None and process.stdout is not None
        self._client.protocol.set_writer(process.stdin)
        self._tasks = [
            asyncio.create_task(
                run_async(
                    stop_event=self._stop,
                    reader=process.stdout,
                    protocol=self._client.protocol,
                    logger=logger,
                )
            ),
            asyncio.create_task(self._watch_exit()),
        ]
        self._stderr_task = asyncio.create_task(self._drain_stderr())
        self._tasks.append(self._stderr_task)

    async def initialize(self, timeout_s: float) -> None:
        """The LSP handshake; `ServerGone` when it fails or takes longer than `timeout_s`."""
        uri = self.root.as_uri()
        params = lsp.InitializeParams(
            process_id=os.getpid(),
            root_uri=uri,
            root_path=str(self.root),
            workspace_folders=[lsp.WorkspaceFolder(uri=uri, name=self.root.name or "/")],
            initialization_options=dict(self.spec.init_options or {}) or None,
            capabilities=CLIENT_CAPABILITIES,
        )
        result = await self.request("initialize", params, timeout_s)
        self.capabilities = result.capabilities
        self._client.initialized(lsp.InitializedParams())
        if self.spec.settings:
            self._client.workspace_did_change_configuration(
                lsp.DidChangeConfigurationParams(settings=dict(self.spec.settings))
            )

    async def close(self) -> None:
        """`shutdown` and `exit`, then the process group is killed if it is still there."""
        self.closing = True
        if self.alive:
            with contextlib.suppress(ServerGone, TimeoutError):
                await self.request("shutdown", None, SHUTDOWN_GRACE_S)
                self._client.exit(None)
                await asyncio.wait_for(self.exited.wait(), SHUTDOWN_GRACE_S)
        self.kill()
        if self._process is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._process.wait(), SHUTDOWN_GRACE_S)
            if self._stderr_task is not None:  # its last words
                await asyncio.wait({self._stderr_task}, timeout=STDERR_DRAIN_S)
        self._stop.set()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def kill(self) -> None:
        """SIGKILL the process group: also what the server started (basedpyright's node runs
        under a Python launcher), even when the launcher itself has exited (a group's id is
        not reused while a member lives)."""
        if self._process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signal.SIGKILL)

    async def _drain_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        while chunk := await self._process.stderr.read(4096):
            self._stderr += chunk
            del self._stderr[:-STDERR_TAIL_BYTES]

    async def _watch_exit(self) -> None:
        assert self._process is not None
        self.returncode = await self._process.wait()
        self.exited.set()
        async with self._published:
            self._published.notify_all()

    # -- requests -------------------------------------------------------------------------

    async def request(self, method: str, params: Any, timeout_s: float) -> Any:
        """Send a request; its answer, or `ServerGone` (exited, timed out, error answer)."""
        if not self.alive:
            raise ServerGone(self.why_gone())
        future = self._client.protocol.send_request_async(method, params)
        exited = asyncio.ensure_future(self.exited.wait())
        try:
            done, _ = await asyncio.wait(
                {future, exited}, timeout=max(timeout_s, 0), return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            exited.cancel()
        if future in done:
            try:
                return future.result()
            except Exception as exc:
                raise ServerGone(f"{method} failed: {exc}") from None
        future.cancel()
        if exited in done or self.exited.is_set():
            raise ServerGone(self.why_gone())
        raise ServerGone(f"no answer to {method} in time")

    def why_gone(self) -> str:
        if self._process is None:
            return "not started"
        if not self.exited.is_set():
            return "running"
        tail = self.stderr_tail()
        code = self.returncode
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        return f"the server exited ({how})" + (f": {tail}" if tail else "")

    # -- documents and diagnostics --------------------------------------------------------

    def document_text(self, path: Path) -> str | None:
        document = self._documents.get(path)
        return document.text if document is not None else None

    def version_of(self, path: Path) -> int:
        document = self._documents.get(path)
        if document is None:
            raise ServerGone(f"{path} is not open")
        return document.version

    def open_documents(self) -> list[Path]:
        return list(self._documents)

    def sync(self, path: Path, text: str, language_id: str) -> int:
        """Send `text` as the document's content; its new version."""
        uri = path.as_uri()
        document = self._documents.get(path)
        if document is None:
            document = self._documents[path] = _Document(version=1, text=text)
            item = lsp.TextDocumentItem(uri=uri, language_id=language_id, version=1, text=text)
            self._client.text_document_did_open(lsp.DidOpenTextDocumentParams(item))
        else:
            document.version += 1
            document.text = text
            self._client.text_document_did_change(
                lsp.DidChangeTextDocumentParams(
                    text_document=lsp.VersionedTextDocumentIdentifier(
                        uri=uri, version=document.version
                    ),
                    content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
                )
            )
        self._client.text_document_did_save(
            lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(uri=uri), text=text)
        )
        return document.version

    def forget(self, path: Path) -> None:
        """`didClose` (the file was deleted)."""
        if self._documents.pop(path, None) is not None and self.alive:
            self._client.text_document_did_close(
                lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(uri=path.as_uri()))
            )

    async def diagnostics(self, path: Path, version: int, timeout_s: float) -> list[Diagnostic]:
        """The diagnostics of `path` at `version`; `ServerGone` when they do not come in time."""
        if self._pulls():
            report = await self.request(
                "textDocument/diagnostic",
                lsp.DocumentDiagnosticParams(
                    text_document=lsp.TextDocumentIdentifier(path.as_uri())
                ),
                timeout_s,
            )
            items = getattr(report, "items", None)
            if items is not None:
                return self._convert(path, items)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        async with self._published:
            while True:
                document = self._documents.get(path)
                if document is None:
                    raise ServerGone("the document was closed")
                if document.published >= version:
                    return list(document.diagnostics)
                if not self.alive:
                    raise ServerGone(self.why_gone())
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise ServerGone("no diagnostics in time")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._published.wait(), remaining)

    def _pulls(self) -> bool:
        return self.capabilities is not None and self.capabilities.diagnostic_provider is not None

    async def _on_publish(self, params: lsp.PublishDiagnosticsParams) -> None:
        path = path_of(params.uri)
        document = self._documents.get(path) if path is not None else None
        if document is None or path is None:
            return
        version = params.version if params.version is not None else document.version
        if version < document.published:
            return
        document.published = version
        document.diagnostics = self._convert(path, params.diagnostics)
        async with self._published:
            self._published.notify_all()

    def _convert(self, path: Path, items: Sequence[lsp.Diagnostic]) -> list[Diagnostic]:
        return [
            Diagnostic(
                path=str(path),
                line=item.range.start.line + 1,
                column=item.range.start.character + 1,
                end_line=item.range.end.line + 1,
                end_column=item.range.end.character + 1,
                severity=_SEVERITIES.get(int(item.severity or 2), "warning"),
                message=one_line(item.message),
                code=str(item.code) if item.code is not None else None,
                source=item.source or self.spec.name,
            )
            for item in items
        ]

    # -- what the server asks of the client -----------------------------------------------

    def _register_handlers(self) -> None:
        """Handlers take the params alone (pygls passes the client only to a first
        parameter named `ls`)."""
        client = self._client
        on: Callable[[str], Callable[[Callable[..., Any]], Any]] = client.feature

        @on("textDocument/publishDiagnostics")
        async def publish(params: lsp.PublishDiagnosticsParams) -> None:
            await self._on_publish(params)

        @on("workspace/configuration")
        def configuration(params: lsp.ConfigurationParams) -> list[Any]:
            return [section(self.spec.settings, item.section) for item in params.items]

        @on("workspace/workspaceFolders")
        def folders(_params: Any) -> list[lsp.WorkspaceFolder]:
            return [lsp.WorkspaceFolder(uri=self.root.as_uri(), name=self.root.name or "/")]

        @on("workspace/applyEdit")
        def apply_edit(_params: Any) -> lsp.ApplyWorkspaceEditResult:
            return lsp.ApplyWorkspaceEditResult(
                applied=False, failure_reason="Cody does not let language servers edit files"
            )

        for method in (
            "client/registerCapability",
            "client/unregisterCapability",
            "window/workDoneProgress/create",
            "window/showMessageRequest",
            "window/showDocument",
            "workspace/diagnostic/refresh",
            "workspace/semanticTokens/refresh",
            "workspace/inlayHint/refresh",
            "workspace/codeLens/refresh",
        ):
            on(method)(_answer_null)
        for method in ("window/logMessage", "window/showMessage", "$/progress", "telemetry/event"):
            on(method)(_ignore)


def _answer_null(_params: Any) -> None:
    return None


def _ignore(_params: Any) -> None:
    return None
