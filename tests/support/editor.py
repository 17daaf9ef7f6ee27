"""A fake editor on the client side of the wire: buffers, `fs/*` requests, a Zed-like init.

`Editor.attach(daemon)` serves the daemon's `fs/read_text_file` (an open buffer's text, else
the disk, as Zed does) and `fs/write_text_file` (the buffer is replaced and saved to disk, as
Zed does), checks every request against ACP's schema, and records them. `fail_writes` and
`fail_reads` name paths whose requests get a JSON-RPC error, the way an editor refuses
(a read-only buffer, a file it cannot open).

ACP: https://agentclientprotocol.com/protocol/file-system (fs/read_text_file: `{sessionId,
path, line?, limit?}` -> `{content}`; fs/write_text_file: `{sessionId, path, content}` -> null).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cody_client.connection import RemoteError

from .acp_schema import acp_errors
from .daemon import Daemon

ZED_CAPABILITIES: dict[str, Any] = {
    "fs": {"readTextFile": True, "writeTextFile": True},
    "terminal": True,
    "_meta": {"terminal_output": True, "terminal-auth": True},
}
"""What Zed declares in `initialize` (crates/agent_servers/src/acp.rs)."""


@dataclass
class Editor:
    buffers: dict[str, str] = field(default_factory=dict)
    """Open buffers by absolute path (unsaved text the disk does not have)."""
    fail_reads: set[str] = field(default_factory=set)
    fail_writes: set[str] = field(default_factory=set)
    reads: list[str] = field(default_factory=list)
    writes: list[tuple[str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def attach(self, daemon: Daemon) -> Editor:
        daemon.conn.on_request("fs/read_text_file", self._read)
        daemon.conn.on_request("fs/write_text_file", self._write)
        return self

    def open(self, path: Path, text: str) -> None:
        """An unsaved buffer: the editor shows `text`; the disk keeps what it had."""
        self.buffers[str(path)] = text

    async def _read(self, params: Any) -> Any:
        self.problems += [f"read: {p}" for p in acp_errors("ReadTextFileRequest", params)]
        path = params["path"]
        self.reads.append(path)
        if path in self.fail_reads:
            raise RemoteError(-32603, f"cannot open {path}: buffer is locked")
        if path in self.buffers:
            return {"content": self.buffers[path]}
        try:
            return {"content": Path(path).read_text(encoding="utf-8")}
        except FileNotFoundError:
            raise RemoteError(-32002, f"Resource not found: {path}") from None

    async def _write(self, params: Any) -> Any:
        self.problems += [f"write: {p}" for p in acp_errors("WriteTextFileRequest", params)]
        path, content = params["path"], params["content"]
        if path in self.fail_writes:
            raise RemoteError(-32603, f"{path} is read-only in this editor")
        self.writes.append((path, content))
        self.buffers[path] = content
        Path(path).write_text(content, encoding="utf-8")  # the editor saves the buffer
        return None
