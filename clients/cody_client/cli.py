"""`cody-client`: talk to Cody from a terminal or a script.

    cody-client [OPTIONS] [PROMPT...]      interactive chat; PROMPT is sent first
    cody-client exec [OPTIONS] PROMPT|-     one turn, then exit ("-" reads the prompt from stdin)
    cody-client sessions list|show ID|delete ID|checkpoints ID|rewind ID CHECKPOINT
    cody-client history list|show ID|import ID  Codex, Claude Code and Cody sessions (docs/history.md)
    cody-client permissions [list|remove RULE]   the permission rules (docs/protocol.md)
    cody-client web [--port P] [--no-open]   Cody in the browser (docs/web.md)
    cody-client demo                        a full session on the built-in offline model
    cody-client doctor                      check providers, sandbox, search and paths
    cody-client [OPTIONS] -- PROMPT        a prompt that looks like a subcommand

`exec` exit codes: 0 end_turn, 1 error, 2 usage, 3 cancelled (Ctrl-C, SIGTERM), 4 a call
was denied, 5 provider or auth error, 6 max_turn_requests, 7 the answer did not validate
against --output-schema.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from typing import NoReturn

from . import __version__
from .inert import install, one_line
from .process import DaemonNotFound
from .wording import for_terminal, lookup_message, session_label

__all__ = ["main", "split_subcommand"]

SUBCOMMANDS = ("exec", "sessions", "demo", "doctor", "history", "permissions", "web")
VALUE_OPTIONS = {
    "-c",
    "--config",
    "-o",
    "--output-last-message",
    "--max-turns",
    "--cwd",
    "--provider",
    "--model",
    "--approval-policy",
    "--sandbox",
    "--resume",
    "--approve",
    "--allowed-tools",
    "--backend",
    "--add-dir",
    "--output-schema",
    "-i",
    "--image",
}
OPTIONAL_VALUE_OPTIONS = {"--worktree"}
"""Options whose value may be left out (`--worktree [NAME]`): the next word is its value
unless it is an option, for argparse (`nargs="?"`) as for finding the subcommand."""


def split_subcommand(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """Find the subcommand (the first positional word), honouring `--` and option values."""
    tokens = list(argv)
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token == "--":
            return None, tokens
        if token.startswith("-"):
            if token in VALUE_OPTIONS or (
                token in OPTIONAL_VALUE_OPTIONS
                and index + 1 < len(tokens)
                and not tokens[index + 1].startswith("-")
            ):
                index += 1
            index += 1
            continue
        if token in SUBCOMMANDS:
            return token, tokens[:index] + tokens[index + 1 :]
        return None, tokens
    return None, tokens


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cwd",
        default=None,
        help="workspace directory (default: the current one); with --resume: continue the "
        "session in this directory instead of its own (e.g. when that one is gone)",
    )
    parser.add_argument("--provider", help="model provider id (see /model in the chat)")
    parser.add_argument("--model", help="model name")
    parser.add_argument(
        "--approval-policy",
        choices=("untrusted", "on-request", "on-failure", "never"),
        help="when to ask before running tools",
    )
    parser.add_argument(
        "--sandbox",
        choices=("read-only", "workspace-write", "danger-full-access"),
        help="sandbox mode",
    )
    parser.add_argument(
        "--backend",
        choices=("native", "codex", "claude"),
        help="whose agent loop runs the session: Cody's own (native), the Codex CLI or "
        "Claude Code (default: the `backend` config key)",
    )
    parser.add_argument(
        "--worktree",
        nargs="?",
        const=True,
        default=None,
        metavar="NAME",
        help="work in a new git worktree of the project, on the branch cody/NAME (a name is "
        "made up without one); at the end it is kept if anything changed, else removed. A "
        "prompt after a bare --worktree goes after `--`",
    )
    parser.add_argument(
        "--add-dir",
        action="append",
        metavar="DIR",
        help="another directory the sandbox lets the session write (repeatable)",
    )
    parser.add_argument(
        "--decisions",
        action="store_true",
        help="show what decided each tool call (a rule, a grant, the sandbox, you)",
    )
    parser.add_argument("--resume", metavar="ID", help="continue a saved session")
    parser.add_argument("--no-thoughts", action="store_true", help="hide the model's reasoning")
    parser.add_argument(
        "--no-daemon-socket",
        action="store_true",
        help="spawn a daemon for this command even when a warm one (cody-daemon --listen) "
        "is running (or set CODY_DAEMON_SOCKET=)",
    )


def build_parsers() -> dict[str, argparse.ArgumentParser]:
    chat = argparse.ArgumentParser(
        prog="cody-client",
        description=(
            "Chat with Cody. Subcommands: exec, sessions, history, permissions, web, demo, doctor "
            "(see cody-client exec --help)."
        ),
        epilog="A prompt that equals a subcommand goes after `--`: cody-client -- demo",
    )
    _common(chat)
    chat.add_argument("--version", action="version", version=f"cody-client {__version__}")
    chat.add_argument(
        "--no-notify",
        action="store_true",
        help="no bell or desktop notification (OSC 9) when a long turn ends or an approval "
        "waits while the window is in the background",
    )
    chat.add_argument("prompt", nargs="*", help="a first prompt to send")

    exec_ = argparse.ArgumentParser(
        prog="cody-client exec",
        description="Run one turn, then exit.",
        epilog="Exit codes: 0 end_turn, 1 error, 2 usage, 3 cancelled (Ctrl-C, SIGTERM), "
        "4 a call was denied, 5 provider or auth error, 6 max_turn_requests, 7 the final "
        "answer did not validate against --output-schema (after one retry).",
    )
    _common(exec_)
    exec_.add_argument(
        "--approve",
        choices=("ask", "allow", "project", "deny"),
        default="ask",
        help="answer approval requests: ask (needs a terminal; otherwise deny), allow, "
        "project (allow, and save the offered rule for the project), deny",
    )
    exec_.add_argument(
        "--json", action="store_true", help="print one JSON event per line on stdout"
    )
    exec_.add_argument(
        "--allowed-tools",
        metavar="A,B",
        help="only these tools (comma-separated), e.g. readFile,grepFiles",
    )
    exec_.add_argument(
        "-o",
        "--output-last-message",
        metavar="FILE",
        help="write the turn's last agent message to FILE when the turn completes",
    )
    exec_.add_argument(
        "-c",
        "--config",
        action="append",
        metavar="KEY=VALUE",
        help="set a config.toml key for this session (repeatable; the value is TOML, else a "
        "string), e.g. -c model_reasoning_effort=high -c tools.exec.timeout_s=60",
    )
    exec_.add_argument(
        "--max-turns",
        type=int,
        metavar="N",
        help="at most N model calls in the turn (then it stops: exit code 6)",
    )
    exec_.add_argument(
        "--ephemeral",
        action="store_true",
        help="keep no session file (the session cannot be resumed afterwards)",
    )
    exec_.add_argument(
        "--output-schema",
        metavar="FILE",
        help="a JSON Schema the final answer must follow: stdout gets only the validated "
        "answer as JSON (exit code 7 when it does not validate after one retry)",
    )
    exec_.add_argument(
        "-i",
        "--image",
        action="append",
        metavar="FILE",
        help="attach an image (PNG, JPEG, GIF, WebP) to the prompt (repeatable)",
    )
    exec_.add_argument(
        "--dry-run",
        action="store_true",
        help="print what the turn would run (the agent CLI's command line, env var names, "
        "mapped flags, tool allowlist) as JSON, and run nothing",
    )
    exec_.add_argument("prompt", nargs="+", help='the prompt ("-" reads it from stdin)')

    sessions = argparse.ArgumentParser(
        prog="cody-client sessions",
        description="Saved sessions, their checkpoints, and rewinding them (docs/checkpoints.md).",
        epilog="rewind exit codes: 0 done, 2 usage, 3 conflicts were left as they are.",
    )
    sessions.add_argument("action", choices=("list", "show", "delete", "checkpoints", "rewind"))
    sessions.add_argument(
        "session_id", nargs="?", help="the session id or a unique prefix (all but list)"
    )
    sessions.add_argument(
        "checkpoint", nargs="?", help="rewind: a checkpoint id, or its number (1 = the newest)"
    )
    sessions.add_argument("--cwd", default=None, help="only sessions of this directory (list)")
    sessions.add_argument(
        "--restore",
        choices=("files", "conversation", "both"),
        default="both",
        help="rewind: what to take back (default: both)",
    )
    sessions.add_argument(
        "--force", action="store_true", help="rewind: also overwrite files changed since"
    )
    sessions.add_argument("--json", action="store_true", help="checkpoints, rewind: JSON output")

    demo = argparse.ArgumentParser(
        prog="cody-client demo",
        description="A full agent session on the built-in offline model: no key, no network.",
    )
    return {"chat": chat, "exec": exec_, "sessions": sessions, "demo": demo}


def build_parser(command: str) -> argparse.ArgumentParser:
    """The parser of one subcommand (`chat` for none). `doctor` and `history` bring their
    own, imported only when asked for: `exec` starts its daemon without waiting for them."""
    if command == "doctor":
        from .doctor import build_parser as doctor_parser

        return doctor_parser()
    if command == "history":
        from .history_cli import build_history_parser

        return build_history_parser()
    if command == "permissions":
        from .permissions_cli import build_permissions_parser

        return build_permissions_parser()
    if command == "web":
        from .web_cli import build_web_parser

        return build_web_parser()
    return build_parsers()[command]


_LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (\w+) [\w.]+: (.*)$")


def _forward_stderr(line: str) -> None:
    """The daemon's stderr for a person: log lines without timestamp and logger name."""
    match = _LOG_LINE.match(line)
    if match is not None:
        level, message = match.groups()
        prefix = "cody-daemon: " if level in ("INFO", "DEBUG") else f"cody-daemon {level.lower()}: "
        line = prefix + message
    sys.stderr.write(line + "\n")


def main(
    argv: Sequence[str] | None = None,
    *,
    early_daemon: subprocess.Popen[bytes] | None = None,
    exec_daemon: subprocess.Popen[bytes] | None = None,
) -> None:
    """`cody-client`. `early_daemon`: the daemon `launch` started for `exec` (killed here when
    `exec` does not take it over); `exec_daemon`: exec's own warm daemon `launch` started
    (detached: it exits when idle)."""
    install()  # before anything is printed: everything below writes through inert.py's gate
    argv = list(sys.argv[1:] if argv is None else argv)
    command, rest = split_subcommand(argv)
    parser = build_parser(command or "chat")
    try:
        args = parser.parse_args(rest)
    except SystemExit:
        _discard(early_daemon)
        raise
    try:
        if command == "exec":
            code = asyncio.run(_exec_daemon_first(args, early_daemon, exec_daemon))
        elif command == "sessions":
            code = asyncio.run(run_sessions(args, parser))
        elif command == "history":
            from .history_cli import run_history

            code = asyncio.run(run_history(args, parser, _forward_stderr))
        elif command == "permissions":
            from .permissions_cli import run_permissions

            code = asyncio.run(run_permissions(args, parser, _forward_stderr))
        elif command == "web":
            from .web_cli import run_web

            code = run_web(args)
        elif command == "demo":
            from .demo import run_demo

            code = asyncio.run(run_demo())
        elif command == "doctor":
            from .doctor import run_doctor

            code = asyncio.run(run_doctor(args, _forward_stderr))
        else:
            from .chat import run_chat

            code = asyncio.run(run_chat(args, _forward_stderr))
    except KeyboardInterrupt:
        code = 130
    except DaemonNotFound as exc:
        print(f"cody-client: {exc}", file=sys.stderr)
        code = 1
    if command == "exec":
        _exit_now(code)
    sys.exit(code)


def _exit_now(code: int) -> NoReturn:
    """End `exec` without the interpreter's teardown (freeing the protocol models and the
    renderer costs tens of ms, and a script waits for it): the daemon is closed, and
    nothing is registered to run at exit; output is flushed here."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _discard(early_daemon: subprocess.Popen[bytes] | None) -> None:
    if early_daemon is not None and early_daemon.poll() is None:
        early_daemon.kill()
        early_daemon.wait()


async def _exec_daemon_first(
    args: argparse.Namespace,
    early_daemon: subprocess.Popen[bytes] | None = None,
    exec_daemon: subprocess.Popen[bytes] | None = None,
) -> int:
    """`exec`: a warm daemon at the default socket when one is there; else exec's own warm
    daemon (cody_client.exec_daemon: started when none listens for this environment);
    else (`CODY_EXEC_DAEMON_IDLE=0`, `CODY_DAEMON_SOCKET` set) a daemon of its own, started
    first (`launch` starts it before asyncio is imported), so its start overlaps this process
    importing its own stack (protocol models, renderer): two processes on two cores
    (bench/README.md). `open_daemon` falls back to spawning when a socket is stale."""
    from cody_protocol.endpoint import client_socket_path, exec_socket_path

    from .process import DaemonProcess

    path = None if args.no_daemon_socket else client_socket_path(os.environ)
    if path is not None and path.is_socket():
        _discard(early_daemon)
        from .headless import run_exec

        return await run_exec(args, _forward_stderr)
    own = None if args.no_daemon_socket else exec_socket_path(os.environ)
    if own is not None:
        _discard(early_daemon)
        from .exec_daemon import start_exec_daemon
        from .headless import run_exec

        if exec_daemon is None and not own.is_socket():
            exec_daemon = start_exec_daemon()
        return await run_exec(
            args, _forward_stderr, socket_path=own, starting=exec_daemon, start=start_exec_daemon
        )
    try:
        if early_daemon is not None:
            daemon = await DaemonProcess.adopt(early_daemon, on_stderr=_forward_stderr)
        else:
            daemon = await DaemonProcess.spawn(env=os.environ, on_stderr=_forward_stderr)
    except (DaemonNotFound, OSError) as exc:
        from .headless import report_start_failure

        return report_start_failure(args, exc)
    try:
        from .headless import run_exec
    except BaseException:
        await daemon.close()
        raise
    return await run_exec(args, _forward_stderr, daemon)


async def run_sessions(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from .client import RemoteError, SessionLookupError
    from .terminal import Style, use_color
    from .warm import open_daemon

    if args.action != "list" and not args.session_id:
        parser.error(f"sessions {args.action} needs a session id")
    try:
        async with open_daemon(on_stderr=_forward_stderr) as client:
            if args.session_id:
                args.session_id = await client.resolve_session_id(args.session_id)
            if args.action in ("checkpoints", "rewind"):
                from .rewind_cli import run_checkpoint_command

                try:
                    return await run_checkpoint_command(client, args)
                except ValueError as exc:
                    parser.error(str(exc))
            if args.action == "list":
                sessions = await client.list_sessions(args.cwd)
                if not sessions:
                    print("No saved sessions.")
                for info in sessions:
                    print(
                        f"{one_line(info.session_id)}  {one_line(info.updated_at or ''):20}  "
                        f"{one_line(info.cwd)}  {session_label(info)}"
                    )
            elif args.action == "show":
                # A read of the file, as `history show` does: no lock, no directory needed.
                from .history_cli import Transcript

                transcript = Transcript(sys.stdout, Style(use_color(sys.stdout)))
                async for message in client.history_messages(args.session_id, agent="cody"):
                    transcript.write(message)
            else:
                await client.delete_session(args.session_id)
                print(f"Deleted session {one_line(args.session_id)}.")
    except RemoteError as exc:
        sys.stderr.write(f"cody-client: {for_terminal(exc.message)}\n")
        return 2 if exc.code in (-32602, -32002) else 1
    except SessionLookupError as exc:
        sys.stderr.write(f"cody-client: {lookup_message(exc)}\n")
        for info in exc.candidates[:10]:
            sys.stderr.write(f"  {one_line(info.session_id)}  {one_line(info.title or '')}\n")
        return 2
    return 0
