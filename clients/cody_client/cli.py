"""`cody-client`: talk to Cody from a terminal or a script.

    cody-client [OPTIONS] [PROMPT...]      interactive chat; PROMPT is sent first
    cody-client exec [OPTIONS] PROMPT|-     one turn, then exit ("-" reads the prompt from stdin)
    cody-client sessions list|show ID|delete ID
    cody-client demo                        a full session on the built-in offline model
    cody-client [OPTIONS] -- PROMPT        a prompt that looks like a subcommand

`exec` exit codes: 0 end_turn, 1 error, 2 usage, 3 cancelled, 4 a call was denied,
5 provider or auth error, 6 max_turn_requests.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from . import __version__

__all__ = ["EXIT_CODES", "main", "split_subcommand"]

SUBCOMMANDS = ("exec", "sessions", "demo")
VALUE_OPTIONS = {
    "--cwd",
    "--provider",
    "--model",
    "--approval-policy",
    "--sandbox",
    "--resume",
    "--approve",
}
EXIT_CODES = {
    "end_turn": 0,
    "error": 1,
    "usage": 2,
    "cancelled": 3,
    "denied": 4,
    "provider": 5,
    "max_turn_requests": 6,
}


def split_subcommand(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """Find the subcommand (the first positional word), honouring `--` and option values."""
    tokens = list(argv)
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token == "--":
            return None, tokens
        if token.startswith("-"):
            if token in VALUE_OPTIONS:
                index += 1
            index += 1
            continue
        if token in SUBCOMMANDS:
            return token, tokens[:index] + tokens[index + 1 :]
        return None, tokens
    return None, tokens


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cwd", default=None, help="workspace directory (default: the current one)"
    )
    parser.add_argument("--provider", help="model provider id (see `_cody/models/list`)")
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
    parser.add_argument("--resume", metavar="ID", help="continue a saved session")
    parser.add_argument("--no-thoughts", action="store_true", help="hide the model's reasoning")


def build_parsers() -> dict[str, argparse.ArgumentParser]:
    chat = argparse.ArgumentParser(
        prog="cody-client",
        description="Chat with Cody. Subcommands: exec, sessions, demo (see cody-client exec --help).",
        epilog="A prompt that equals a subcommand goes after `--`: cody-client -- demo",
    )
    _common(chat)
    chat.add_argument("--version", action="version", version=f"cody-client {__version__}")
    chat.add_argument("prompt", nargs="*", help="a first prompt to send")

    exec_ = argparse.ArgumentParser(prog="cody-client exec", description="Run one turn, then exit.")
    _common(exec_)
    exec_.add_argument(
        "--approve",
        choices=("ask", "allow", "deny"),
        default="ask",
        help="answer approval requests: ask (needs a terminal; otherwise deny), allow, deny",
    )
    exec_.add_argument("prompt", nargs="+", help='the prompt ("-" reads it from stdin)')

    sessions = argparse.ArgumentParser(prog="cody-client sessions", description="Saved sessions.")
    sessions.add_argument("action", choices=("list", "show", "delete"))
    sessions.add_argument("session_id", nargs="?", help="the session id (show, delete)")
    sessions.add_argument("--cwd", default=None, help="only sessions of this directory (list)")

    demo = argparse.ArgumentParser(
        prog="cody-client demo",
        description="A full agent session on the built-in offline model: no key, no network.",
    )
    return {"chat": chat, "exec": exec_, "sessions": sessions, "demo": demo}


def _meta(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "provider": args.provider,
        "model": args.model,
        "approvalPolicy": args.approval_policy,
        "sandboxMode": args.sandbox,
    }


def _forward_stderr(line: str) -> None:
    sys.stderr.write(line + "\n")


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    command, rest = split_subcommand(argv)
    parsers = build_parsers()
    parser = parsers[command or "chat"]
    args = parser.parse_args(rest)
    try:
        if command == "exec":
            code = asyncio.run(run_exec(args))
        elif command == "sessions":
            code = asyncio.run(run_sessions(args, parser))
        elif command == "demo":
            from .demo import run_demo

            code = asyncio.run(run_demo())
        else:
            code = asyncio.run(run_chat(args))
    except KeyboardInterrupt:
        code = 130
    sys.exit(code)


# -- exec ------------------------------------------------------------------------------------


async def run_exec(args: argparse.Namespace) -> int:
    from .approvals import TerminalApprover
    from .client import CodyClient, RemoteError
    from .terminal import Renderer, Style, use_color

    prompt = " ".join(args.prompt)
    if prompt == "-":
        prompt = sys.stdin.read()
    if not prompt.strip():
        sys.stderr.write("cody-client exec: the prompt is empty\n")
        return EXIT_CODES["usage"]
    renderer = Renderer(
        out=sys.stdout,
        info=sys.stderr,
        style=Style(use_color(sys.stderr)),
        show_thoughts=not args.no_thoughts,
    )
    approve = args.approve
    if approve == "ask" and not sys.stdin.isatty():
        sys.stderr.write(
            "cody-client: no terminal to ask for approvals; they will be rejected (use --approve allow to run them)\n"
        )
    cwd = args.cwd or os.getcwd()
    try:
        async with CodyClient.spawn(on_stderr=_forward_stderr) as client:
            client.on_permission = TerminalApprover(renderer, approve)
            if args.resume:
                session = await client.resume_session(args.resume, cwd)
            else:
                session = await client.new_session(cwd, **_meta(args))
            result = await _run_turn(session, prompt, renderer)
    except RemoteError as exc:
        sys.stderr.write(f"cody-client: {exc.message}\n")
        if exc.code in (-32010, -32000):
            return EXIT_CODES["provider"]
        return EXIT_CODES["usage"] if exc.code == -32602 else EXIT_CODES["error"]
    except (OSError, ConnectionError) as exc:
        sys.stderr.write(f"cody-client: {exc}\n")
        return EXIT_CODES["error"]
    renderer.turn_finished(result, model=session.option("model"))
    if result.stop_reason == "cancelled":
        return EXIT_CODES["cancelled"]
    if result.stop_reason == "max_turn_requests":
        return EXIT_CODES["max_turn_requests"]
    if renderer.denied:
        return EXIT_CODES["denied"]
    return 0 if result.stop_reason == "end_turn" else EXIT_CODES["error"]


async def _run_turn(session: Any, prompt: str, renderer: Any) -> Any:
    """One prompt; the first Ctrl-C cancels the turn, a second one quits."""
    loop = asyncio.get_running_loop()
    task = asyncio.create_task(session.prompt(prompt, on_update=renderer.on_update))
    presses = 0

    def on_interrupt() -> None:
        nonlocal presses
        presses += 1
        if presses == 1:
            session.cancel()
            renderer.line("^C cancelling the turn (press Ctrl-C again to quit)")
        else:
            task.cancel()

    installed = True
    try:
        loop.add_signal_handler(signal.SIGINT, on_interrupt)
    except (NotImplementedError, RuntimeError):
        installed = False
    try:
        return await task
    except asyncio.CancelledError:
        raise KeyboardInterrupt from None
    finally:
        if installed:
            loop.remove_signal_handler(signal.SIGINT)


# -- chat ------------------------------------------------------------------------------------

HELP = """Commands: /help, /quit. Ctrl-C interrupts a running turn (twice quits); Ctrl-D quits.
Approvals: y allow once · a allow for this session · n reject · r reject for this session · c cancel the turn"""


async def _read_line(prompt: str) -> str | None:
    if sys.stdin.isatty():
        from prompt_toolkit import PromptSession

        session: PromptSession[str] = PromptSession()
        while True:
            try:
                return await session.prompt_async(prompt)
            except KeyboardInterrupt:
                sys.stdout.write("(Ctrl-D or /quit to leave)\n")
            except EOFError:
                return None
    line = await asyncio.to_thread(sys.stdin.readline)
    return line.rstrip("\n") if line else None


async def run_chat(args: argparse.Namespace) -> int:
    from .approvals import TerminalApprover
    from .client import CodyClient, RemoteError
    from .terminal import Renderer, Style, use_color

    renderer = Renderer(
        out=sys.stdout,
        info=sys.stdout,
        style=Style(use_color(sys.stdout)),
        show_thoughts=not args.no_thoughts,
    )
    cwd = args.cwd or os.getcwd()
    pending = " ".join(args.prompt).strip() or None
    try:
        async with CodyClient.spawn(on_stderr=_forward_stderr) as client:
            client.on_permission = TerminalApprover(renderer, "ask")
            if args.resume:
                session = await client.load_session(args.resume, cwd, on_update=renderer.on_update)
            else:
                session = await client.new_session(cwd, **_meta(args))
            renderer.line(
                renderer.style.dim(
                    f"Cody · {session.option('provider')}/{session.option('model')} · "
                    f"sandbox {session.option('sandbox_mode')} · approvals {session.option('approval_policy')} · "
                    f"session {session.id}"
                )
            )
            renderer.line(
                renderer.style.dim("Ctrl-C interrupts a turn, Ctrl-D quits, /help for help.")
            )
            while True:
                text = pending if pending is not None else await _read_line("› ")
                pending = None
                if text is None or text.strip() in ("/quit", "/exit"):
                    break
                if not text.strip():
                    continue
                if text.strip() == "/help":
                    renderer.line(HELP)
                    continue
                try:
                    result = await _run_turn(session, text, renderer)
                except RemoteError as exc:
                    renderer.line(renderer.style.red(f"error: {exc.message}"))
                    continue
                renderer.turn_finished(result, model=session.option("model"))
            renderer.line(
                renderer.style.dim(f"Session saved. Resume with: cody-client --resume {session.id}")
            )
    except RemoteError as exc:
        sys.stderr.write(f"cody-client: {exc.message}\n")
        return EXIT_CODES["usage"] if exc.code in (-32602, -32002) else EXIT_CODES["error"]
    return 0


# -- sessions --------------------------------------------------------------------------------


async def run_sessions(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from .client import CodyClient, RemoteError
    from .terminal import Renderer, Style, use_color

    if args.action in ("show", "delete") and not args.session_id:
        parser.error(f"sessions {args.action} needs a session id")
    try:
        async with CodyClient.spawn(on_stderr=_forward_stderr) as client:
            if args.action == "list":
                sessions = await client.list_sessions(args.cwd)
                if not sessions:
                    print("No saved sessions.")
                for info in sessions:
                    print(
                        f"{info.session_id}  {info.updated_at or '':20}  {info.cwd}  {info.title or ''}"
                    )
            elif args.action == "show":
                renderer = Renderer(
                    out=sys.stdout, info=sys.stdout, style=Style(use_color(sys.stdout))
                )
                await client.load_session(
                    args.session_id, os.getcwd(), on_update=renderer.on_update
                )
                renderer.line("")
            else:
                await client.delete_session(args.session_id)
                print(f"Deleted session {args.session_id}.")
    except RemoteError as exc:
        sys.stderr.write(f"cody-client: {exc.message}\n")
        return EXIT_CODES["usage"] if exc.code in (-32602, -32002) else EXIT_CODES["error"]
    return 0
