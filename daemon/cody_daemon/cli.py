"""`cody-daemon [--framing auto|lsp|ndjson] [--listen [PATH]] [--listen ws://HOST:PORT]
[--allow-remote] [--log-file PATH] [--stall-timeout S] [--no-warm-up] [-v]`:
serve Cody on stdio, or as a warm daemon on a unix socket and/or a WebSocket listener with
the web page (rpc/listen.py, docs/web.md).

stdout carries protocol frames only; logs go to stderr (or --log-file), redacted: no
prompts, file contents or secrets at INFO. The process ends as soon as serving ends (see
`_exit_now`).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

from . import __version__

if TYPE_CHECKING:
    import argparse
    import logging

    from .rpc.first_answer import FirstRead
    from .rpc.framing import FramingMode

__all__ = ["Options", "main", "parse_args"]


def _drop_expected_rpc_errors(record: logging.LogRecord) -> bool:
    """pygls logs a full traceback for every error a handler raises on purpose."""
    if record.exc_info and record.exc_info[1] is not None:
        from pygls.exceptions import JsonRpcException

        if isinstance(record.exc_info[1], JsonRpcException):
            return False
    return True


def _configure_logging(verbosity: int, log_file: str | None) -> None:
    import logging

    level = logging.WARNING if verbosity == 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    handler: logging.Handler = (
        logging.FileHandler(log_file, encoding="utf-8")
        if log_file
        else logging.StreamHandler(sys.stderr)
    )
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(_drop_expected_rpc_errors)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # pygls logs whole message bodies at INFO/DEBUG (prompts, file contents): keep it quiet.
    logging.getLogger("pygls").setLevel(logging.WARNING if verbosity < 3 else logging.DEBUG)


@dataclass(frozen=True, slots=True)
class Options:
    """The command line, parsed (the defaults are what `cody-daemon` alone means)."""

    framing: FramingMode = "auto"
    log_file: str | None = None
    listen: list[str] | None = None
    allow_remote: bool = False
    stall_timeout: float | None = None
    warm_up: bool = True
    verbose: int = 0
    exec_socket: bool = False
    idle_exit: float | None = None


def parse_args(argv: list[str] | None) -> Options:
    """The options; without arguments (how editors start the daemon) argparse is not even
    imported (~5 ms of the start)."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        return Options()
    return Options(**vars(_parser().parse_args(args)))


def _parser() -> argparse.ArgumentParser:
    import argparse

    defaults = Options()
    parser = argparse.ArgumentParser(
        prog="cody-daemon",
        description="Serve Cody (ACP v1 + _cody extensions) as JSON-RPC on stdin/stdout.",
    )
    parser.add_argument(
        "--framing",
        choices=("auto", "lsp", "ndjson"),
        default=defaults.framing,
        help="message framing: Content-Length (lsp), newline-delimited JSON, or detect (default)",
    )
    parser.add_argument("--log-file", help="write logs here instead of stderr")
    parser.add_argument(
        "--listen",
        nargs="?",
        const="",
        default=None,
        action="append",
        metavar="PATH|ws://HOST:PORT",
        help="keep running and serve any number of clients instead of stdio: on a unix socket "
        "(mode 0600; PATH defaults to $CODY_DAEMON_SOCKET, else a per-user one) and/or, with "
        "ws://127.0.0.1:PORT, over WebSocket with the web page (docs/web.md); give it twice "
        "for both",
    )
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="let --listen ws://HOST:PORT bind an address other machines can reach (the token "
        "is still required; the connection is not encrypted)",
    )
    parser.add_argument(
        "--exec-socket",
        action="store_true",
        help="with --listen: listen where `cody-client exec` looks for the daemon it starts "
        "for this environment (cody_protocol.endpoint.exec_socket_path)",
    )
    parser.add_argument(
        "--idle-exit",
        type=float,
        default=None,
        metavar="SECONDS",
        help="with --listen: exit once no client has been connected for this long",
    )
    parser.add_argument(
        "--stall-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="drop a client that leaves its output unread this long (default 300)",
    )
    parser.add_argument(
        "--no-warm-up",
        dest="warm_up",
        action="store_false",
        help="load nothing ahead of need (by default the modules the first session needs "
        "are imported while the client is quiet)",
    )
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more logging (-vv debug)"
    )
    parser.add_argument("--version", action="version", version=f"cody-daemon {__version__}")
    return parser


def main(argv: list[str] | None = None) -> None:
    from . import startup_gc

    startup_gc.pause()
    args = parse_args(argv)
    from .policy.programs import probe_in_background

    probe_in_background()  # bwrap and rg, checked while the stack imports
    env = dict(os.environ)
    # Started as editors start it (no arguments): `initialize` is answered before the
    # server's stack is imported (rpc/first_answer.py).
    first = _answer_first(env) if args == Options() else None
    _configure_logging(args.verbose, args.log_file)
    _prepare_imports()
    import asyncio

    from .app import DaemonApp
    from .config.paths import resolve_paths
    from .rpc.server import DEFAULT_STALL_TIMEOUT_S, serve_stdio
    from .rpc.transport import guard_stdio

    if args.listen is not None:
        from .rpc.listen import main_listen

        startup_gc.resume()  # a warm daemon starts once; its clients never wait for it

        stall = args.stall_timeout if args.stall_timeout is not None else DEFAULT_STALL_TIMEOUT_S
        _exit_now(
            main_listen(
                args.listen,
                args.framing,
                stall,
                warm_up=args.warm_up,
                allow_remote=args.allow_remote,
                exec_socket=args.exec_socket,
                idle_exit_s=args.idle_exit,
            )
        )

    channel = guard_stdio()

    async def run() -> int:
        asyncio.get_running_loop().call_later(startup_gc.RESUME_AFTER_S, startup_gc.resume)
        app = DaemonApp(env=env, paths=resolve_paths(env))
        stall = args.stall_timeout if args.stall_timeout is not None else DEFAULT_STALL_TIMEOUT_S
        return await serve_stdio(
            app, channel, args.framing, stall_timeout_s=stall, warm_up=args.warm_up, first=first
        )

    try:
        code = asyncio.run(run())
    except KeyboardInterrupt:
        code = 130
    _exit_now(code)


def _answer_first(env: dict[str, str]) -> FirstRead:
    """Read stdin's first frame and answer it when it is `initialize` (rpc/first_answer.py)."""
    from .config.paths import resolve_paths
    from .initialize_answer import initialize_answer
    from .rpc.first_answer import answer_first_initialize

    paths = resolve_paths(env)
    # A client that sends nothing keeps this read waiting: the collector comes back anyway
    # (startup_gc's invariant; the event loop does the same once it runs).
    from threading import Timer

    from . import startup_gc

    timer = Timer(startup_gc.RESUME_AFTER_S, startup_gc.resume)
    timer.daemon = True
    timer.start()
    return answer_first_initialize(lambda: initialize_answer(env, paths))


def _prepare_imports() -> None:
    """Process-wide import choices, made before the daemon imports its stack (startup time:
    bench/README.md; kept by tests/unit/test_lazy_imports.py).

    - `lsprotocol.types` is a stand-in until something needs LSP's classes
      (rpc/lazy_lsprotocol.py): pygls imports it whole, the daemon uses a handful of names.
    - httpx's command-line client (`httpx._main`: click, rich and pygments, ~45 ms at the
      first model call when they are installed) is never imported; httpx then defines a
      `main` that explains itself, and the daemon never calls it."""
    from .rpc.lazy_lsprotocol import install

    install()
    if "httpx" not in sys.modules:
        sys.modules["httpx._main"] = None  # type: ignore[assignment]


def _exit_now(code: int) -> NoReturn:
    """End the process without the interpreter's teardown.

    By now every session is persisted and closed and the protocol stream is closed; freeing
    the imported modules (lsprotocol's thousands of classes above all) would take most of a
    second more, and an editor waiting for the daemon to end after `exit` notices that (a
    VS Code window reload waited for it). The daemon registers no atexit handlers; logs and
    stdio are flushed here."""
    import contextlib
    import logging

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
