"""`cody-client web`: open Cody in the browser (docs/web.md).

    cody-client web [--port PORT] [--no-open] [--new-token]

When a daemon of these locations already serves the page (its record in `<data dir>/web/`,
its process alive, its port answering), the page's address is printed and opened: that
daemon's sessions, shared with every terminal and editor on it. Otherwise a warm daemon is
started in the foreground with `--listen ws://127.0.0.1:PORT` (and the per-user unix socket
too, when no warm daemon holds it, so terminals share its sessions) until Ctrl-C.

The address is `http://127.0.0.1:PORT/#token=<token>`: the token is in the fragment, which
the browser never sends to the server (it reaches no log); it is printed to this terminal
only. `--new-token` replaces the token first (every page opened before is locked out).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

from cody_protocol.endpoint import client_socket_path
from cody_protocol.locations import daemon_locations
from cody_protocol.web_access import (
    WebAccessError,
    ensure_token,
    new_token,
    page_url,
    read_record,
)

from .daemon_command import daemon_command

__all__ = ["build_web_parser", "run_web"]

START_TIMEOUT_S = 30.0


def build_web_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cody-client web",
        description="Open Cody in the browser: every Cody, Codex and Claude Code session, live "
        "(starts a daemon serving the page when none does).",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=0,
        help="the port to serve on when a daemon is started (default: any free one)",
    )
    parser.add_argument("--no-open", action="store_true", help="print the address only")
    parser.add_argument(
        "--new-token", action="store_true", help="replace the token first (old pages stop working)"
    )
    return parser


def _serving(data_dir: Path) -> str | None:
    """The page's base address of a live daemon of these locations, if one serves it."""
    record = read_record(data_dir)
    if record is None:
        return None
    try:
        os.kill(record["pid"], 0)
    except (ProcessLookupError, PermissionError):
        return None
    parts = urlsplit(record["url"])
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80), 2):
            pass
    except OSError:
        return None
    url: str = record["url"]
    return url


def _show(url: str, *, open_browser: bool) -> None:
    print(f"Cody in the browser: {url}", flush=True)
    if open_browser:
        import webbrowser

        if not webbrowser.open(url):
            print("(no browser found here: open the address above in yours)", flush=True)


def run_web(args: argparse.Namespace) -> int:
    data_dir = Path(daemon_locations(os.environ)["dataDir"])
    try:
        token = new_token(data_dir) if args.new_token else ensure_token(data_dir)
    except WebAccessError as exc:
        print(f"cody-client web: {exc}", file=sys.stderr)
        return 1
    running = _serving(data_dir)
    if running is not None:
        _show(page_url(running, token), open_browser=not args.no_open)
        return 0
    argv = [*daemon_command(), "--listen", f"ws://127.0.0.1:{args.port}"]
    socket_path = client_socket_path(os.environ)
    if socket_path is not None and not _answers(socket_path):
        argv.append("--listen")  # the per-user socket too: terminals share the sessions
    daemon = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + START_TIMEOUT_S
    while (running := _serving(data_dir)) is None:
        if daemon.poll() is not None:
            print("cody-client web: the daemon did not start (see above)", file=sys.stderr)
            return daemon.returncode or 1
        if time.monotonic() > deadline:
            daemon.terminate()
            print("cody-client web: the daemon did not start in time", file=sys.stderr)
            return 1
        time.sleep(0.05)
    _show(page_url(running, token), open_browser=not args.no_open)
    print("Serving until Ctrl-C.", flush=True)
    try:
        return daemon.wait()
    except KeyboardInterrupt:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait()
        return 130


def _answers(path: Path) -> bool:
    """Whether a daemon listens on the unix socket at `path`."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(2.0)
    try:
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True
