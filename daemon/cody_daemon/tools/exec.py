"""`exec`: run a command (an argv list, or a shell string via `bash -c`) in the sandbox.

Invariants:
- Every command starts through the session's launcher (tools/processes/launcher.py: no
  interpreter per command), in its own session and process group, under a reaper that kills
  whatever it started when it ends: nothing (background jobs, grandchildren,
  `setsid`/double-forked daemons) outlives the command. Under bubblewrap the pid namespace
  guarantees it too.
- A command the call waits for (no `background`, no `yieldMs`, or one that ends within its
  `yieldMs`) has stdin at /dev/null and is killed with everything it started on timeout or
  cancellation; its result has its exit code. One that outlives its call (started with
  `background`, or still running after `yieldMs`) gets a pipe (or, with `tty`, a
  pseudo-terminal) as its input, stays in the session's process table with a `processId`
  (readOutput, writeStdin, killProcess), runs until it ends, `timeoutMs` if given, killProcess,
  a cancelled turn (unless `background`) or the session's end; at most `PER_SESSION` such
  processes per session (tools/processes/host.py).
- Sandboxed commands run under the seccomp filter of `policy/seccomp.py`, and (unless the
  sandbox lets them use the network) in the session's own network namespace, shared by its
  sandboxed commands: a server one starts is reachable by the next, by nothing outside.
- Memory is bounded whatever the command prints: the model sees the first `HEAD_BYTES`
  and the last `TAIL_BYTES` of the combined output; live output stops after
  `STREAM_LIMIT_BYTES`; a process that outlives its call keeps its latest 1 MiB.
- Credentials are not passed: the child environment is `ctx.secrets.child_environment()`
  (names with KEY, SECRET, TOKEN, PASSWORD..., every configured `env_key`, any value that
  holds a known secret; policy/secrets.py).
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import time
from collections.abc import Mapping
from pathlib import Path

from cody_protocol.content import ContentToolCallContent, TextContent, ToolCallContent

from ..core.command_text import command_lines
from ..policy.approval import Escalation
from ..policy.command_parts import loose_parts, split_command
from ..policy.commands import normalize_command
from ..policy.rules import CommandSubject, RuleSubject
from ..policy.safe_commands import is_known_safe
from ..policy.sandbox import resolve_path
from ..policy.secrets import SecretGuard
from .base import (
    OWN_DEADLINE_MARGIN_S,
    GrantKey,
    LiveOutputEnd,
    Tool,
    ToolContext,
    ToolError,
    ToolFacts,
    ToolResult,
)
from .exec_args import DEFAULT_TIMEOUT_MS, ExecArgs, wait_s
from .processes.buffers import HEAD_BYTES, TAIL_BYTES, OutputBuffer
from .processes.process import DRAIN_S, Isolation, LiveFeed, ManagedProcess, ProcessFacts
from .processes.start import start_command
from .processes.table import ProcessLimitError, ProcessTable, started_at

__all__ = [
    "HEAD_BYTES",
    "STREAM_LIMIT_BYTES",
    "TAIL_BYTES",
    "ExecArgs",
    "ExecTool",
    "OutputBuffer",
    "child_environment",
]

log = logging.getLogger(__name__)

STREAM_LIMIT_BYTES = 1024 * 1024
"""Live output (`ctx.on_output`) stops after this much; the result still has head + tail."""
KILL_GRACE_S = 2.0
"""After SIGTERM (timeout, killProcess, the session's end), how long before SIGKILL."""
TTY_TERM = "dumb"
"""`TERM` of a command under a pseudo-terminal: no colours or cursor movement for the model
to read through (a command may set its own)."""


def child_environment(
    base: Mapping[str, str] | None = None, secrets: SecretGuard | None = None
) -> dict[str, str]:
    """`base` (default: the daemon's environment) minus every credential `secrets` knows
    (without a guard: minus variables whose names look like credentials)."""
    guard = secrets if secrets is not None else SecretGuard()
    return guard.child_environment(os.environ if base is None else base)


class ExecTool(Tool[ExecArgs]):
    name = "exec"
    description = (
        "Run a command and return its exit code and combined stdout/stderr. Pass an array "
        "to run a program directly, or a string to run it through bash. Commands run in the "
        "session's working directory inside the session's sandbox (depending on the sandbox "
        "mode, writes outside the workspace and network access fail; when the sandbox is in "
        "the way, set escalate with a justification to ask the user to run it outside), and "
        "are killed after timeoutMs, together with anything they started. Long output is cut "
        "in the middle: the first and last 32 KiB are kept. For what does not end by itself "
        "(a server, a watcher) set background; for what may take long or wait for input, set "
        "yieldMs; then use readOutput, writeStdin and killProcess."
    )
    kind = "execute"
    facts = ToolFacts(changes="programs")
    args_model = ExecArgs
    live_output = True
    file_effects = "any"

    def __init__(self, *, kill_grace_s: float = KILL_GRACE_S) -> None:
        self.kill_grace_s = kill_grace_s

    def title(self, args: ExecArgs) -> str:
        return args.command if isinstance(args.command, str) else shlex.join(args.command)

    def grant_key(self, args: ExecArgs, ctx: ToolContext) -> GrantKey:
        """The normalised command; run in another directory than the session's, the key
        reads as `cd <dir> && <command>`, so a grant never covers another directory."""
        key = normalize_command(args.command)
        cwd = self._cwd(args, ctx)
        if cwd != ctx.cwd:
            return ("exec", "cd", str(cwd), "&&", *key)
        return ("exec", *key)

    def known_safe(self, args: ExecArgs, ctx: ToolContext) -> bool:
        """On the known-safe list, checked where it will run; never while `PATH` holds a
        relative directory (then `ls` could be the workspace's own `./ls`)."""
        env = child_environment(secrets=ctx.secrets)
        search = env.get("PATH", os.defpath).split(os.pathsep)
        if any(not os.path.isabs(entry) for entry in search):
            return False
        return is_known_safe(args.command, cwd=self._cwd(args, ctx), env=env)

    def runs_unsandboxed(self, args: ExecArgs, ctx: ToolContext) -> bool:
        return ctx.sandbox.exec_isolation() == "unavailable"

    def escalation(self, args: ExecArgs, ctx: ToolContext) -> tuple[Escalation, str] | None:
        """A command runs in the sandbox unless the model asks to leave it (`escalate`);
        under `danger-full-access` there is nothing to leave."""
        if not args.escalate or ctx.sandbox.exec_isolation() == "not-needed":
            return None
        return "escalate", "the command asks to run outside the sandbox"

    def permission_subject(self, args: ExecArgs, ctx: ToolContext) -> RuleSubject:
        """The command's parts (policy/command_parts.py); a redirection counts as writable
        only where the sandbox lets file tools write."""
        cwd = self._cwd(args, ctx)
        parts = split_command(
            args.command, cwd=cwd, may_write=lambda path: ctx.sandbox.check_write(path) is None
        )
        return CommandSubject(parts, tuple(loose_parts(args.command)), cwd)

    def time_limit_s(self, args: ExecArgs, ctx: ToolContext) -> float:
        """exec keeps its own limit (`timeoutMs`, or `yieldMs` for a command that may outlive
        the call); the engine's is a backstop past it."""
        own = wait_s(args)
        return own + self.kill_grace_s + 2 * DRAIN_S + OWN_DEADLINE_MARGIN_S

    def time_limit_setting(self) -> str:
        return "the call's timeoutMs"

    def sandbox_check(self, args: ExecArgs, ctx: ToolContext) -> str | None:
        if args.escalate:
            return None  # it asks to run outside the sandbox anyway
        if ctx.sandbox.exec_isolation() == "unavailable" and ctx.sandbox.unavailable == "refuse":
            return (
                "bubblewrap (bwrap) is not available, so this command cannot be sandboxed, and "
                'sandbox_unavailable = "refuse" forbids running it without a sandbox. Install '
                'bubblewrap, or set sandbox_unavailable to "ask" or "allow".'
            )
        return None

    def preview(self, args: ExecArgs, ctx: ToolContext) -> list[ToolCallContent]:
        lines = [*command_lines(self.title(args)), f"cwd: {self._cwd(args, ctx)}"]
        if args.background:
            lines.append("(in the background: it keeps running after this call)")
        if self.escalation(args, ctx) is not None:
            lines += [
                "",
                "OUTSIDE THE SANDBOX: the model asks to run this command with full access to "
                "your files and the network.",
                f"Reason given: {args.justification}",
            ]
        elif ctx.sandbox.exec_isolation() == "unavailable":
            lines += [
                "",
                "WARNING: this command will run WITHOUT a sandbox, with full access to your "
                "files and the network, because bubblewrap (bwrap) is not available.",
            ]
        return [ContentToolCallContent(content=TextContent(text="\n".join(lines)))]

    @staticmethod
    def _cwd(args: ExecArgs, ctx: ToolContext) -> Path:
        if args.cwd is None:
            return ctx.cwd
        return resolve_path(os.path.expanduser(args.cwd), ctx.cwd)

    @staticmethod
    def _isolation(ctx: ToolContext) -> Isolation:
        isolation = ctx.sandbox.exec_isolation()
        if isolation == "not-needed":
            return "not-needed"
        if ctx.outside_sandbox:  # the user let it out (escalate, or on-failure's re-run)
            return "outside"
        return "sandbox" if isolation == "bwrap" else "unavailable"

    async def run(self, args: ExecArgs, ctx: ToolContext) -> ToolResult:
        cwd = self._cwd(args, ctx)
        if not cwd.exists():
            raise ToolError(f"cannot run the command: working directory {cwd} does not exist")
        if not cwd.is_dir():
            raise ToolError(f"cannot run the command: {cwd} is not a directory")
        table = ctx.processes
        if table is None:
            raise ToolError("commands cannot run here: the session has no process table")
        may_outlive = args.background or args.yield_ms is not None
        if may_outlive:
            try:
                table.check_room()
            except ProcessLimitError as exc:
                raise ToolError(str(exc)) from None
        env = child_environment(secrets=ctx.secrets)
        if args.tty:
            env["TERM"] = TTY_TERM
        argv = _argv(args.command, cwd, env)
        started = time.monotonic()
        facts = ProcessFacts(
            command=args.command,
            title=self.title(args),
            cwd=str(cwd),
            started_at=started_at(),
            background=args.background,
            may_outlive=may_outlive,
            tty=args.tty,
            isolation=self._isolation(ctx),
            turn_id=ctx.turn_id,
            call_id=ctx.call_id,
            stdin="tty" if args.tty else "pipe" if may_outlive else "none",
        )
        process, notes = await start_command(
            table,
            ctx.sandbox,
            argv,
            facts=facts,
            env=env,
            grace_s=self.kill_grace_s,
            guard=ctx.secrets,
        )
        for note in notes:
            log.warning("exec isolation: %s", note)
        process.result = OutputBuffer()
        if ctx.on_output is not None:
            note = f"live output stops after {STREAM_LIMIT_BYTES} bytes"
            process.feed = LiveFeed(ctx.on_output, STREAM_LIMIT_BYTES, note)
        limit_s = args.timeout_ms / 1000 if args.timeout_ms else None
        if not may_outlive:
            limit_s = limit_s or DEFAULT_TIMEOUT_MS / 1000
        waiting = wait_s(args)
        timed_out = False
        try:
            ended = await process.wait_exit(waiting)
            if not ended and (not may_outlive or (limit_s is not None and limit_s <= waiting)):
                timed_out = True
                await process.stop(self.kill_grace_s, by="its timeoutMs")
                ended = True
        except BaseException:  # cancelled: kill everything at once, and let it go on
            process.kill(by="the call's cancellation")
            await process.wait_exit(DRAIN_S)
            process.dispose()
            table.forget(process)
            raise
        live = process.feed
        process.feed = None  # the call's stream ends here; the session's may continue it
        duration = time.monotonic() - started
        if ended:
            table.forget(process)
            return _ended_result(
                process,
                live=live,
                duration=duration,
                timed_out=timed_out,
                limit_s=limit_s,
                notes=notes,
            )
        return self._running_result(
            args, table, process, duration=duration, limit_s=limit_s, notes=notes
        )

    def _running_result(
        self,
        args: ExecArgs,
        table: ProcessTable,
        process: ManagedProcess,
        *,
        duration: float,
        limit_s: float | None,
        notes: list[str],
    ) -> ToolResult:
        """The command outlives the call: it joins the session's processes, the model gets
        its id and its output so far (the next read starts after it)."""
        output = process.result or OutputBuffer()
        process.result = None
        live_from = process.read_cursor = process.ring.total
        table.keep(process)
        if limit_s is not None:
            process.stop_later(limit_s - duration, self.kill_grace_s, by="its timeoutMs")
        ident = f"process {process.id} (pid {process.pid})"
        if args.background and args.yield_ms is None:
            first = f"Started in the background as {ident}; it is running."
        else:
            first = f"Still running after {duration:.2f} s as {ident}; it keeps running."
        lines = [
            first,
            f'Read its new output with readOutput {{"processId": {process.id}}} (waitMs to '
            "wait for more), send it input with writeStdin, and stop it with killProcess when "
            "it is no longer needed; the session's end stops it.",
        ]
        if limit_s is not None:
            lines.append(f"It is killed {limit_s:g} s after it started (timeoutMs).")
        lines += [f"Sandbox note: {note}" for note in notes]
        text = output.text()
        lines += ["Output so far:", text] if output.total else ["No output yet."]
        return ToolResult(
            output="\n".join(lines),
            raw_output={
                "processId": process.id,
                "pid": process.pid,
                "running": True,
                "background": args.background,
                "durationMs": round(duration * 1000),
                "truncated": output.truncated,
                "sandboxed": process.facts.isolation == "sandbox",
            },
            content=[ContentToolCallContent(content=TextContent(text="\n".join(lines)))],
            continues=lambda: table.stream(process, live_from),
        )


def _ended_result(
    process: ManagedProcess,
    *,
    live: LiveFeed | None,
    duration: float,
    timed_out: bool,
    limit_s: float | None,
    notes: list[str],
) -> ToolResult:
    exit_code = process.exit_code if process.exit_code is not None else -1
    output = process.result or OutputBuffer()
    text = output.text()
    lines = [f"Exit code: {exit_code}", f"Wall time: {duration:.2f} s"]
    if timed_out:
        lines.append(f"Timed out: the command was killed after {limit_s:g} s")
    elif process.stopped_by is not None:
        lines.append(f"Stopped by {process.stopped_by}")
    if output.truncated:
        lines.append(
            f"Output truncated: {output.total} bytes in total; showing the first "
            f"{output.head_limit} and the last {output.tail_limit} bytes"
        )
    lines += [f"Sandbox note: {note}" for note in notes]
    lines += ["Output:", text]
    return ToolResult(
        output="\n".join(lines),
        success=exit_code == 0 and not timed_out,
        raw_output={
            "exitCode": exit_code,
            "durationMs": round(duration * 1000),
            "timedOut": timed_out,
            "truncated": output.truncated,
            "sandboxed": process.facts.isolation == "sandbox",
        },
        content=[ContentToolCallContent(content=TextContent(text=text))],
        live_end=LiveOutputEnd(
            exit_code=exit_code,
            signal=process.signal_name,
            complete=live is None or not live.cut,
        ),
    )


def _argv(command: list[str] | str, cwd: Path, env: Mapping[str, str]) -> list[str]:
    """The argv to run; raises ToolError when the program cannot be found."""
    if isinstance(command, str):
        shell = shutil.which("bash") or shutil.which("sh")
        if shell is None:
            raise ToolError("cannot run a shell command: neither bash nor sh is installed")
        return [shell, "-c", command]
    program = command[0]
    if "/" in program:
        path = cwd / program
        if not path.is_file():
            raise ToolError(f"command not found: {program} (no such file)")
        if not os.access(path, os.X_OK):
            raise ToolError(f"cannot run {program}: permission denied (not executable)")
    elif shutil.which(program, path=env.get("PATH", os.defpath)) is None:
        raise ToolError(f"command not found: {program} (not on PATH)")
    return list(command)
