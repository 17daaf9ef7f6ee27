"""Real servers outside the sandbox for escape tests: AF_UNIX, loopback TCP and tmux.

Each runs in the test process (or, for tmux, as a real tmux server), so it is a process
outside any sandbox the daemon builds; each records who reached it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["ListeningServers", "TmuxServer", "require_tmux", "wait_for_path"]


class _Acceptor:
    """Accepts connections on `sock` in a thread; each one is greeted and recorded."""

    def __init__(self, sock: socket.socket, name: str) -> None:
        self.sock = sock
        self.name = name
        self.hits = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                self.hits += 1
                with contextlib.suppress(OSError):
                    conn.sendall(f"reached {self.name}\n".encode())

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self._thread.join(timeout=5)


class ListeningServers:
    """A unix socket at `unix_path`, an abstract unix socket and a TCP port on 127.0.0.1."""

    def __init__(self, unix_path: Path) -> None:
        self.unix_path = unix_path
        self.abstract_name = f"cody-escape-test-{uuid.uuid4().hex}"
        unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        unix.bind(str(unix_path))
        unix.listen(16)
        abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        abstract.bind("\0" + self.abstract_name)
        abstract.listen(16)
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.bind(("127.0.0.1", 0))
        tcp.listen(16)
        self.tcp_port = int(tcp.getsockname()[1])
        self.unix = _Acceptor(unix, "unix")
        self.abstract = _Acceptor(abstract, "abstract")
        self.tcp = _Acceptor(tcp, "tcp")

    def client_script(self) -> str:
        """Python code that tries both unix sockets and prints what happened to each."""
        return (
            "import socket\n"
            f"for name, addr in (('path', {str(self.unix_path)!r}), "
            f"('abstract', '\\0{self.abstract_name}')):\n"
            "    try:\n"
            "        s = socket.socket(socket.AF_UNIX)\n"
            "        s.connect(addr)\n"
            "        print(name, s.recv(100).decode().strip())\n"
            "    except OSError as exc:\n"
            "        print(name, 'refused:', exc)\n"
        )

    def close(self) -> None:
        for acceptor in (self.unix, self.abstract, self.tcp):
            acceptor.close()

    @classmethod
    @contextlib.contextmanager
    def running(cls, unix_path: Path) -> Iterator[ListeningServers]:
        servers = cls(unix_path)
        try:
            yield servers
        finally:
            servers.close()


def require_tmux() -> str:
    tmux = shutil.which("tmux")
    if tmux is None:
        if os.environ.get("CI") == "true":
            pytest.fail("tmux is required in CI but is not installed")
        pytest.skip("tmux is not installed")
    return tmux


class TmuxServer:
    """A real tmux server on socket `path` with a shell in session `victim`."""

    session = "victim"

    def __init__(self, path: Path, env: dict[str, str]) -> None:
        self.tmux = require_tmux()
        self.path = path
        self.env = env
        subprocess.run(
            [self.tmux, "-f", "/dev/null", "-S", str(path), "new-session", "-d"]
            + ["-s", self.session, "-x", "80", "-y", "24", "sh"],
            env=env,
            check=True,
            timeout=20,
        )

    def attack(self, target: Path) -> str:
        """The command a hostile model would run: make the outside shell create `target`."""
        return f"{self.tmux} -S {self.path} send-keys -t {self.session} 'touch {target}' Enter"

    def close(self) -> None:
        subprocess.run(
            [self.tmux, "-S", str(self.path), "kill-server"],
            env=self.env,
            check=False,
            timeout=20,
            capture_output=True,
        )

    @classmethod
    @contextlib.contextmanager
    def running(cls, path: Path, env: dict[str, str]) -> Iterator[TmuxServer]:
        server = cls(path, env)
        try:
            yield server
        finally:
            server.close()


async def wait_for_path(path: Path, within_s: float = 5.0) -> bool:
    """Whether `path` appears within `within_s` (work done asynchronously by a server)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if path.exists():
            return True
        await asyncio.sleep(0.05)
    return path.exists()
