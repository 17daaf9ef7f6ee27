"""`cody-client exec`: one turn, then exit; human output or `--json` event lines.

Exit codes: 0 end_turn, 1 error, 2 usage, 3 cancelled (Ctrl-C, SIGTERM, SIGHUP), 4 a call
was denied, 5 provider or auth error, 6 max_turn_requests, 7 the final answer did not
validate against `--output-schema` (after one retry). Approvals follow `--approve`:
`allow`, `deny`, or `ask` (a terminal prompt; without a terminal it denies and says so on
stderr). Never hangs on an approval. With `--json` the last line is always exactly one
`turn.completed` or `error` event. CI options (`-c`, `--max-turns`, `-o`, `--ephemeral`):
exec_options.py.

`--output-schema FILE` (a JSON Schema): the daemon makes the final answer follow it
(engine/final_answer.py); stdout then holds only the validated answer as one line of JSON
(the turn's text goes to stderr), and `turn.completed.output` carries it with `--json`.
`-i/--image FILE` (repeatable) attaches images to the prompt (attachments.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

from cody_protocol.permission import RequestPermissionParams
from cody_protocol.prompt import PromptResult

from .approvals import ApprovalMode, TerminalApprover, automatic_answer
from .attachments import AttachmentError, image_block
from .client import ClientSession, RemoteError, SessionLookupError
from .connection import ConnectionClosed
from .daemon_command import DaemonNotFound
from .elicitation import TerminalElicitor
from .exec_options import (
    ConfigOverrideError,
    FinalText,
    config_overrides,
    read_output_schema,
    write_last_message,
)
from .extensions_view import hook_status_line
from .inert import json_document, one_line
from .json_events import JsonEvents
from .process import DaemonProcess
from .processes import stop_left_running
from .progress import Spinner
from .project_docs import project_docs_line
from .subagents_view import ChildActivity
from .terminal import Renderer, Style, use_color
from .termination import Termination
from .warm import open_daemon
from .wording import for_terminal, lookup_message

__all__ = ["EXIT_CODES", "exit_code_for", "report_start_failure", "run_exec", "run_turn"]

EXIT_CODES = {
    "end_turn": 0,
    "error": 1,
    "usage": 2,
    "cancelled": 3,
    "denied": 4,
    "provider": 5,
    "max_turn_requests": 6,
    "output_invalid": 7,
}


def exit_code_for(result: PromptResult, denied: bool) -> int:
    if result.stop_reason == "cancelled":
        return EXIT_CODES["cancelled"]
    if result.stop_reason == "max_turn_requests":
        return EXIT_CODES["max_turn_requests"]
    output = result.meta.cody.output if result.meta is not None else None
    if output is not None and not output.valid:
        return EXIT_CODES["output_invalid"]
    if denied:
        return EXIT_CODES["denied"]
    return 0 if result.stop_reason == "end_turn" else EXIT_CODES["error"]


def error_exit_code(exc: RemoteError) -> int:
    if exc.code in (-32010, -32000):
        return EXIT_CODES["provider"]
    if exc.code in (-32602, -32002):
        return EXIT_CODES["usage"]
    return EXIT_CODES["error"]


def session_settings(args: argparse.Namespace) -> dict[str, Any]:
    allowed = getattr(args, "allowed_tools", None)
    return {
        "provider": args.provider,
        "model": args.model,
        "approval_policy": args.approval_policy,
        "sandbox_mode": args.sandbox,
        "allowed_tools": [name.strip() for name in allowed.split(",") if name.strip()]
        if allowed
        else None,
        "backend": getattr(args, "backend", None),
        "worktree": getattr(args, "worktree", None),
        "writable_roots": getattr(args, "add_dir", None) or None,
    }


async def run_turn(
    session: ClientSession,
    prompt: str | list[dict[str, Any]],
    on_update: Any,
    spinner: Spinner | None = None,
    *,
    interrupted: list[bool] | None = None,
    after_turn: Callable[[], None] | None = None,
    output_schema: dict[str, Any] | None = None,
) -> PromptResult:
    """One prompt; the first Ctrl-C cancels the turn, a second one quits (KeyboardInterrupt).

    `interrupted[0]` is set when the turn was cancelled by Ctrl-C (the chat then quits on the
    next Ctrl-C at its prompt: the second press may arrive after the turn has ended).
    `after_turn` becomes the SIGINT handler when the turn ends (the chat's own between-turns
    handler), so that no Ctrl-C ever meets Python's default handler in between."""
    loop = asyncio.get_running_loop()

    def update(event: Any) -> None:
        if spinner is not None:
            spinner.stop()
        on_update(event)
        status = getattr(event, "status", None)
        if spinner is not None and status in ("completed", "failed"):
            spinner.start()

    run = session.prompt(prompt, on_update=update, output_schema=output_schema)
    task = asyncio.ensure_future(run)
    presses = 0

    def on_interrupt() -> None:
        nonlocal presses
        presses += 1
        if presses == 1:
            if interrupted is not None:
                interrupted[:] = [True]
            session.cancel()
            sys.stderr.write("\n^C cancelling the turn (press Ctrl-C again to quit)\n")
        else:
            task.cancel()

    installed = True
    try:
        loop.add_signal_handler(signal.SIGINT, on_interrupt)
    except (NotImplementedError, RuntimeError):
        installed = False
    if spinner is not None:
        spinner.start()
    try:
        return await task
    except asyncio.CancelledError:
        raise KeyboardInterrupt from None
    finally:
        if spinner is not None:
            spinner.stop()
        if installed:
            if after_turn is not None:
                loop.add_signal_handler(signal.SIGINT, after_turn)
            else:
                loop.remove_signal_handler(signal.SIGINT)


class _JsonApprover:
    """Answers approvals by `--approve` and reports each decision as an event."""

    def __init__(self, events: JsonEvents, terminal: TerminalApprover, mode: ApprovalMode) -> None:
        self.events = events
        self.terminal = terminal
        self.mode = mode
        self._told = False

    async def __call__(self, request: RequestPermissionParams) -> str:
        call = request.tool_call
        if self.mode == "ask" and self.terminal.interactive:
            decision, reason = await self.terminal(request), "asked on the terminal"
        elif self.mode in ("allow", "project"):
            decision, reason = automatic_answer(self.mode, request), f"--approve {self.mode}"
        else:
            decision = "reject_once"
            reason = "--approve deny" if self.mode == "deny" else "no terminal to ask"
            if self.mode == "ask" and not self._told:
                self._told = True
                sys.stderr.write(
                    f"cody-client: rejected {one_line(call.title)}: no terminal to ask "
                    "(--approve allow runs such calls without asking)\n"
                )
        self.events.approval(call.tool_call_id, call.title, decision, reason)
        return decision


async def run_exec(
    args: argparse.Namespace,
    forward_stderr: Any,
    daemon: DaemonProcess | None = None,
    **own_daemon: Any,
) -> int:
    """One turn. `daemon`: one already started (cli.py starts it before importing this);
    `own_daemon`: exec's own warm daemon (`socket_path`, `starting`, `start` of
    `open_daemon`).

    With `--json` the output ends with exactly one `turn.completed` or `error` event, whatever
    happens (see cody_protocol.exec_events and termination.py)."""
    prompt = " ".join(args.prompt)
    if prompt == "-":
        prompt = sys.stdin.read()
    json_mode = bool(args.json)
    events = JsonEvents(sys.stdout) if json_mode else None
    problem = None if prompt.strip() else "cody-client exec: the prompt is empty"
    overrides: dict[str, Any] = {}
    schema: dict[str, Any] | None = None
    blocks: list[dict[str, Any]] = []
    try:
        overrides = config_overrides(args.config or [], args.max_turns)
        schema = read_output_schema(args.output_schema) if args.output_schema else None
        blocks = [image_block(path) for path in args.image or []]
    except (ConfigOverrideError, AttachmentError) as exc:
        problem = f"cody-client exec: {exc}"
    if args.resume and (overrides or args.ephemeral):
        problem = (
            "cody-client exec: -c, --max-turns and --ephemeral apply to a new session, not --resume"
        )
    if problem is not None:
        if daemon is not None:
            await daemon.close()
        return _fail(events, problem, EXIT_CODES["usage"])
    renderer = Renderer(
        out=sys.stderr if json_mode or schema is not None else sys.stdout,
        info=sys.stderr,
        style=Style(use_color(sys.stderr)),
        show_thoughts=not args.no_thoughts,
        show_decisions=args.decisions,
    )
    terminal = TerminalApprover(renderer, args.approve)
    cwd = args.cwd or os.getcwd()
    spinner = None if json_mode else Spinner(sys.stderr)
    final = FinalText()
    task = asyncio.current_task()
    assert task is not None
    termination = Termination(task)
    termination.install()
    try:
        async with open_daemon(
            use_socket=not args.no_daemon_socket,
            on_stderr=forward_stderr,
            process=daemon,
            **own_daemon,
        ) as client:
            client.on_permission = (
                _JsonApprover(events, terminal, args.approve) if events else terminal
            )
            client.on_hook_status = lambda status: renderer.line(
                renderer.style.yellow(f"hook: {hook_status_line(status)}")
            )
            client.on_elicitation = TerminalElicitor(renderer, interactive=False)
            if args.resume:
                session_id = await client.resolve_session_id(args.resume)
                session = await client.resume_session(
                    session_id, cwd, relocate=args.cwd is not None
                )
            else:
                session = await client.new_session(
                    cwd,
                    **session_settings(args),
                    config=overrides or None,
                    ephemeral=args.ephemeral,
                )
            if getattr(args, "dry_run", False):
                report = await session.dry_run(prompt)
                report_json = json.dumps(report.wire(), indent=2, ensure_ascii=False)
                sys.stdout.write(json_document(report_json) + "\n")
                return 0
            if events is not None:
                meta = session.meta
                events.session_started(
                    session_id=session.id,
                    cwd=cwd,
                    provider=session.option("provider"),
                    model=session.option("model"),
                    resumed=bool(args.resume),
                    session_file=meta.session_file if meta else None,
                    warnings=list(meta.warnings) if meta else [],
                    ephemeral=args.ephemeral,
                )
                events.turn_started(prompt)
            else:
                children = ChildActivity(client, renderer, spinner)  # subagents' activity
                children.parent_id = session.id
                renderer.on_child = children.watch
                for warning in session.meta.warnings if session.meta else []:
                    renderer.line(renderer.style.yellow(f"warning: {for_terminal(warning)}"))
                docs = project_docs_line(session.meta.project_docs if session.meta else [], cwd)
                if docs is not None:
                    renderer.line(renderer.style.dim(docs))
            show = events.on_update if events else renderer.on_update

            def on_update(update: Any) -> None:
                final.add(update)
                show(update)

            termination.turn_started(session.cancel)
            content = [{"type": "text", "text": prompt}, *blocks] if blocks else prompt
            result = await run_turn(session, content, on_update, spinner, output_schema=schema)
            termination.turn_ended()
            for line in await stop_left_running(session):  # a one-shot run leaves nothing
                sys.stderr.write(f"cody-client: {line}\n")
            denied = events.denied if events is not None else renderer.denied
            code = exit_code_for(result, denied)
            output = result.meta.cody.output if result.meta is not None else None
            answer = final.text
            if output is not None and output.valid:
                answer = json.dumps(output.value, ensure_ascii=False)
                if events is None:
                    sys.stdout.write(json_document(answer) + "\n")
            elif output is not None and events is None:
                sys.stderr.write(
                    "cody-client: the final answer does not follow --output-schema "
                    f"(after a retry): {for_terminal('; '.join(output.errors))}\n"
                )
            if args.output_last_message:
                try:
                    write_last_message(args.output_last_message, answer)
                except OSError as exc:  # the turn's result is still reported
                    sys.stderr.write(f"cody-client: cannot write --output-last-message: {exc}\n")
                    code = EXIT_CODES["error"]
            if events is not None:
                events.turn_completed(result, code, final.text, output)
            else:
                renderer.turn_finished(result, model=session.option("model"))
            return code
    except RemoteError as exc:
        sys.stderr.write(f"cody-client: {for_terminal(exc.message)}\n")
        code = error_exit_code(exc)
        if events is not None:
            events.error(exc.message, code, exc.code, exc.data)
        return code
    except SessionLookupError as exc:
        if events is not None:
            events.error(exc.message, EXIT_CODES["usage"])
        sys.stderr.write(f"cody-client: {lookup_message(exc)}\n")
        return EXIT_CODES["usage"]
    except (OSError, ConnectionError, ConnectionClosed, DaemonNotFound) as exc:
        reason = await _daemon_gone(daemon) if isinstance(exc, ConnectionError) else None
        return _fail(events, f"cody-client: {reason or exc}", EXIT_CODES["error"])
    except (asyncio.CancelledError, KeyboardInterrupt):
        if termination.received is None:  # Ctrl-C twice
            _fail(events, "cody-client: interrupted", 130)
            raise KeyboardInterrupt from None
        when = (
            "the turn did not stop in time" if termination.turn_was_running else "before the turn"
        )
        return _fail(
            events,
            f"cody-client: stopped by {termination.received} ({when})",
            EXIT_CODES["cancelled"],
        )
    except Exception as exc:  # a bug of ours: said, and still one final event
        logging.getLogger(__name__).exception("exec failed")
        return _fail(events, f"cody-client: internal error: {exc!r}", EXIT_CODES["error"])
    finally:
        termination.uninstall()


async def _daemon_gone(daemon: DaemonProcess | None) -> str | None:
    """Why writing to the daemon failed, when it is because the daemon exited."""
    if daemon is None:
        return None
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(daemon.process.wait(), 2)
    return daemon.describe_exit() if daemon.process.returncode is not None else None


def _fail(events: JsonEvents | None, message: str, code: int) -> int:
    """Say why the run failed (stderr, and the final `error` event with `--json`)."""
    sys.stderr.write(message + "\n")
    if events is not None:
        events.error(message.removeprefix("cody-client: ").removeprefix("cody-client exec: "), code)
    return code


def report_start_failure(args: argparse.Namespace, exc: BaseException) -> int:
    """The daemon could not be started (not installed, not executable): exit code 1, and the
    final `error` event with `--json` (the only line of the run)."""
    events = JsonEvents(sys.stdout) if getattr(args, "json", False) else None
    return _fail(events, f"cody-client: {exc}", EXIT_CODES["error"])
