"""`exec`: run a command (an argv list, or a shell string via `bash -c`) in the sandbox.

Invariants:
- The child never inherits the daemon's stdin (the protocol channel): stdin is /dev/null.
- The child runs in its own session and process group. When `run` returns or raises,
  everything the command started has been killed and the command reaped: nothing (background
  jobs, grandchildren, `setsid`/double-forked daemons) keeps running, on timeout, on
  cancellation, or after a normal exit. Under bubblewrap the pid namespace guarantees it;
  without, the command runs under `subreaper.py`, which collects every orphan.
- Under bubblewrap the command runs under the seccomp filter of `policy/seccomp.py`.
- Memory is bounded whatever the command prints: the model sees the first `HEAD_BYTES`
  and the last `TAIL_BYTES` of the combined output; live output stops after
  `STREAM_LIMIT_BYTES`; pipes are read in `READ_CHUNK` pieces with back-pressure.
- Credentials are not passed: the child environment is `ctx.secrets.child_environment()`
  (names with KEY, SECRET, TOKEN, PASSWORD..., every configured `env_key`, any value that
  holds a known secret; policy/secrets.py).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import os
import shlex
import shutil
import signal
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any

from cody_protocol.content import ContentToolCallContent, TextContent, ToolCallContent
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, field_validator, model_validator

from ..core.command_text import command_lines
from ..policy import seccomp
from ..policy.approval import Escalation
from ..policy.command_parts import loose_parts, split_command
from ..policy.commands import normalize_command
from ..policy.rules import CommandSubject, RuleSubject
from ..policy.safe_commands import is_known_safe
from ..policy.sandbox import ExecPlan, resolve_path
from ..policy.secrets import SecretGuard
from .base import (
    OWN_DEADLINE_MARGIN_S,
    GrantKey,
    LiveOutputEnd,
    Tool,
    ToolContext,
    ToolError,
    ToolResult,
)

__all__ = ["ExecArgs", "ExecTool", "OutputBuffer", "child_environment"]

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 3_600_000
HEAD_BYTES = 32 * 1024
TAIL_BYTES = 32 * 1024
STREAM_LIMIT_BYTES = 1024 * 1024
"""Live output (`ctx.on_output`) stops after this much; the result still has head + tail."""
READ_CHUNK = 64 * 1024
KILL_GRACE_S = 2.0
"""After SIGTERM on timeout, how long the process group gets before SIGKILL."""
DRAIN_S = 2.0
"""After the command exits, how long to wait for the rest of its output."""
_POLL_S = 0.05

_SUBREAPER = Path(__file__).with_name("subreaper.py")


def child_environment(
    base: Mapping[str, str] | None = None, secrets: SecretGuard | None = None
) -> dict[str, str]:
    """`base` (default: the daemon's environment) minus every credential `secrets` knows
    (without a guard: minus variables whose names look like credentials)."""
    guard = secrets if secrets is not None else SecretGuard()
    return guard.child_environment(os.environ if base is None else base)


class ExecArgs(BaseModel):
    model_config = ConfigDict(
        extra="forbid", validate_by_name=True, validate_by_alias=True, defer_build=True
    )

    command: list[str] | str = Field(
        description=(
            "The command to run. An array of strings runs that program directly with those "
            'arguments (e.g. ["git", "status"]); a string runs through `bash -c`, so pipes, '
            '`&&` and quoting work (e.g. "ls -la | head"). The command cannot read stdin.'
        )
    )
    cwd: Annotated[str | None, WithJsonSchema({"type": "string"})] = Field(
        default=None,
        description=(
            "Working directory for the command; relative paths are resolved against the "
            "session's working directory (the default)."
        ),
    )
    timeout_ms: Annotated[
        int | None,
        WithJsonSchema({"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_MS}),
    ] = Field(
        default=None,
        alias="timeoutMs",
        ge=1,
        le=MAX_TIMEOUT_MS,
        description=(
            f"Kill the command after this many milliseconds (default {DEFAULT_TIMEOUT_MS}, "
            f"maximum {MAX_TIMEOUT_MS})."
        ),
    )

    escalate: bool = Field(
        default=False,
        description=(
            "Ask the user to run this command outside the sandbox (with the network and "
            "write access to everything). Only when it cannot work inside: the sandbox "
            "blocked it (no network, a read-only path). Give the reason in justification."
        ),
    )
    justification: Annotated[str | None, WithJsonSchema({"type": "string"})] = Field(
        default=None,
        max_length=2000,
        description="With escalate: one sentence the user reads, why the command must run "
        "outside the sandbox.",
    )

    @model_validator(mode="after")
    def _justified(self) -> ExecArgs:
        if self.escalate and not (self.justification or "").strip():
            raise ValueError(
                "justification is required with escalate: say why the command must run "
                "outside the sandbox"
            )
        return self

    @field_validator("command")
    @classmethod
    def _not_empty(cls, value: list[str] | str) -> list[str] | str:
        if isinstance(value, str):
            if not value.strip():
                raise ValueError("command must not be empty")
        elif not value or not value[0]:
            raise ValueError("command must be a non-empty array whose first item is a program")
        return value


class OutputBuffer:
    """Keeps the first `head_limit` and the last `tail_limit` bytes of a stream.

    Memory stays below `head_limit + 2 * tail_limit` bytes whatever is appended.
    """

    def __init__(self, head_limit: int = HEAD_BYTES, tail_limit: int = TAIL_BYTES) -> None:
        self.head_limit = head_limit
        self.tail_limit = tail_limit
        self.total = 0
        self._head = bytearray()
        self._tail = bytearray()

    def append(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_limit - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data:
            self._tail += data
            if len(self._tail) > 2 * self.tail_limit:
                del self._tail[: -self.tail_limit]

    @property
    def truncated(self) -> bool:
        return self.total > self.head_limit + self.tail_limit

    def text(self) -> str:
        """The kept output, with a `[... N bytes omitted ...]` line where bytes were dropped."""
        if not self.truncated:
            return bytes(self._head + self._tail).decode("utf-8", errors="replace")
        tail = bytes(self._tail[-self.tail_limit :])
        omitted = self.total - len(self._head) - len(tail)
        head_text = bytes(self._head).decode("utf-8", errors="replace")
        tail_text = tail.decode("utf-8", errors="replace")
        return f"{head_text}\n[... {omitted} bytes omitted ...]\n{tail_text}"


class _LiveOutput:
    """Forwards decoded output chunks to `on_output`, up to `STREAM_LIMIT_BYTES`."""

    def __init__(self, on_output: Callable[[str], None] | None) -> None:
        self._on_output = on_output
        self._sent = 0
        self.stopped = False
        """True once the limit cut the stream short."""
        self._decoders = [codecs.getincrementaldecoder("utf-8")(errors="replace") for _ in "12"]

    def feed(self, stream: int, data: bytes) -> None:
        if self._on_output is None:
            return
        if self._sent >= STREAM_LIMIT_BYTES:
            return
        self._sent += len(data)
        text = self._decoders[stream].decode(data)
        if self._sent >= STREAM_LIMIT_BYTES:
            self.stopped = True
            text += f"\n[... live output stops after {STREAM_LIMIT_BYTES} bytes ...]\n"
        if text:
            try:
                self._on_output(text)
            except Exception:
                log.exception("exec output callback failed; live output disabled")
                self._on_output = None


async def _pump(reader: asyncio.StreamReader | None, sink: Callable[[bytes], None]) -> None:
    if reader is None:
        return
    while chunk := await reader.read(READ_CHUNK):
        sink(chunk)


def _kill_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _wait_exit(
    proc: asyncio.subprocess.Process, waiter: asyncio.Future[Any], limit_s: float
) -> bool:
    """Wait until the command itself exits (its pipes may still be held open by children)."""
    deadline = time.monotonic() + limit_s
    while proc.returncode is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        await asyncio.wait({waiter}, timeout=min(_POLL_S, remaining))
    return True


class _Running:
    """A started command: its process group, pipe readers and the collected output.

    With `reaper` the process is `subreaper.py`, which owns the kill policy of everything
    below it: it is asked to stop (SIGTERM, graceful; SIGUSR1, at once) rather than killed,
    so that it can still collect and kill descendants that left the process group.
    """

    def __init__(
        self, proc: asyncio.subprocess.Process, live: _LiveOutput, *, reaper: bool = False
    ) -> None:
        self.proc = proc
        self.reaper = reaper
        self.output = OutputBuffer()
        self._live = live
        self._waiter: asyncio.Future[Any] = asyncio.ensure_future(proc.wait())
        self._readers = [
            asyncio.ensure_future(_pump(proc.stdout, lambda data: self._feed(0, data))),
            asyncio.ensure_future(_pump(proc.stderr, lambda data: self._feed(1, data))),
        ]

    def _feed(self, stream: int, data: bytes) -> None:
        self.output.append(data)
        self._live.feed(stream, data)

    async def finish(self, timeout_s: float, kill_grace_s: float) -> bool:
        """Wait for the command (killing it on timeout); returns whether it timed out."""
        timed_out = not await _wait_exit(self.proc, self._waiter, timeout_s)
        if timed_out:
            _kill_group(self.proc.pid, signal.SIGTERM)
            if not await _wait_exit(self.proc, self._waiter, kill_grace_s):
                _kill_group(self.proc.pid, signal.SIGKILL)
                await _wait_exit(self.proc, self._waiter, DRAIN_S)
        # Background jobs die with the command; then the pipes close and we read the rest.
        _kill_group(self.proc.pid, signal.SIGKILL)
        await asyncio.wait({self._waiter, *self._readers}, timeout=DRAIN_S)
        await self.close()
        return timed_out

    async def kill(self) -> None:
        """Kill the whole process group at once and reap the command (used on cancel)."""
        if self.reaper and self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGUSR1)
            await _wait_exit(self.proc, self._waiter, DRAIN_S)
        _kill_group(self.proc.pid, signal.SIGKILL)
        await _wait_exit(self.proc, self._waiter, DRAIN_S)
        await asyncio.wait({self._waiter}, timeout=DRAIN_S)
        await self.close()

    async def close(self) -> None:
        """Stop the readers; close the pipes if something outside the group still holds them."""
        pending = [task for task in (self._waiter, *self._readers) if not task.done()]
        for task in pending:
            task.cancel()
        await asyncio.gather(self._waiter, *self._readers, return_exceptions=True)
        if pending:
            transport = getattr(self.proc, "_transport", None)
            if isinstance(transport, asyncio.BaseTransport):
                transport.close()


def _exit_code(returncode: int | None) -> int:
    """Shell convention: a command killed by signal N exits 128 + N."""
    if returncode is None:
        return -1
    return 128 - returncode if returncode < 0 else returncode


class ExecTool(Tool[ExecArgs]):
    name = "exec"
    description = (
        "Run a command and return its exit code and combined stdout/stderr. Pass an array "
        "to run a program directly, or a string to run it through bash. Commands run in the "
        "session's working directory with no stdin, inside the session's sandbox (depending "
        "on the sandbox mode, writes outside the workspace and network access fail; when the "
        "sandbox is in the way, set escalate with a justification to ask the user to run it "
        "outside), and are killed after timeoutMs, together with anything they started. Long "
        "output is cut in the middle: the first and last 32 KiB are kept."
    )
    kind = "execute"
    requires_approval = True
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
        """exec keeps its own limit (`timeoutMs`); the engine's is a backstop past it."""
        own = (args.timeout_ms or DEFAULT_TIMEOUT_MS) / 1000
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

    def _reaped(self, argv: list[str]) -> ExecPlan:
        """`argv` under `subreaper.py` (no bubblewrap: nothing else contains the command)."""
        if not sys.executable or not _SUBREAPER.is_file():
            return ExecPlan(list(argv))
        grace = f"{self.kill_grace_s / 2:g}"
        helper = [sys.executable, "-I", "-S", str(_SUBREAPER), str(os.getpid()), grace, "--"]
        return ExecPlan([*helper, *argv])

    @staticmethod
    def _cwd(args: ExecArgs, ctx: ToolContext) -> Path:
        if args.cwd is None:
            return ctx.cwd
        return resolve_path(os.path.expanduser(args.cwd), ctx.cwd)

    async def run(self, args: ExecArgs, ctx: ToolContext) -> ToolResult:
        cwd = self._cwd(args, ctx)
        if not cwd.exists():
            raise ToolError(f"cannot run the command: working directory {cwd} does not exist")
        if not cwd.is_dir():
            raise ToolError(f"cannot run the command: {cwd} is not a directory")
        env = child_environment(secrets=ctx.secrets)
        argv = _argv(args.command, cwd, env)
        timeout_s = (args.timeout_ms or DEFAULT_TIMEOUT_MS) / 1000
        sandboxed = ctx.sandbox.exec_isolation() == "bwrap" and not ctx.outside_sandbox

        started = time.monotonic()
        with seccomp.filter_fd() if sandboxed else contextlib.nullcontext() as filter_fd:
            if sandboxed:
                plan = await asyncio.to_thread(
                    ctx.sandbox.plan_exec, argv, cwd, seccomp_fd=filter_fd
                )
            else:
                plan = self._reaped(argv)
            reaper = plan.argv != argv and not sandboxed
            try:
                proc = await asyncio.create_subprocess_exec(
                    *plan.argv,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                    start_new_session=True,
                    pass_fds=() if filter_fd is None else (filter_fd,),
                    cwd=cwd,
                    env=env,
                )
            except OSError as exc:
                raise ToolError(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
        for note in plan.notes:
            log.warning("exec isolation: %s", note)
        live = _LiveOutput(ctx.on_output)
        running = _Running(proc, live, reaper=reaper)
        try:
            timed_out = await running.finish(timeout_s, self.kill_grace_s)
        except BaseException:  # cancelled: kill, reap, and let the cancellation go on
            await running.kill()
            raise
        duration = time.monotonic() - started

        exit_code = _exit_code(proc.returncode)
        output = running.output
        text = output.text()
        lines = [f"Exit code: {exit_code}", f"Wall time: {duration:.2f} s"]
        if timed_out:
            lines.append(f"Timed out: the command was killed after {timeout_s:g} s")
        if output.truncated:
            lines.append(
                f"Output truncated: {output.total} bytes in total; showing the first "
                f"{output.head_limit} and the last {output.tail_limit} bytes"
            )
        lines += [f"Sandbox note: {note}" for note in plan.notes]
        lines += ["Output:", text]
        return ToolResult(
            output="\n".join(lines),
            success=exit_code == 0 and not timed_out,
            raw_output={
                "exitCode": exit_code,
                "durationMs": round(duration * 1000),
                "timedOut": timed_out,
                "truncated": output.truncated,
                "sandboxed": sandboxed,
            },
            content=[ContentToolCallContent(content=TextContent(text=text))],
            live_end=LiveOutputEnd(
                exit_code=exit_code,
                signal=_signal_name(proc.returncode),
                complete=not live.stopped,
            ),
        )


def _signal_name(returncode: int | None) -> str | None:
    """`SIGKILL` for a process killed by signal 9 (a negative return code), else None."""
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


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
