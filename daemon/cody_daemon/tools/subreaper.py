"""Run one command and make sure nothing it started outlives it (exec without bubblewrap).

Usage (stdlib only; `exec` runs it as `python -I -S subreaper.py PARENT_PID GRACE_S -- ARGV`):

The helper makes itself a *child subreaper* (`prctl(PR_SET_CHILD_SUBREAPER)`): a process its
command starts and abandons (`setsid cmd &`, a double fork, a daemon) is re-parented to the
helper instead of to init, so every descendant stays findable however it detached from the
process group. Then:

- When the command exits, every remaining descendant is killed (SIGKILL) and reaped; the
  helper exits with the command's status (`128 + N` when signal N killed it).
- SIGTERM, SIGINT or SIGHUP (the exec tool's timeout, or the daemon dying: the helper asks
  for SIGTERM with `PR_SET_PDEATHSIG`): SIGTERM goes to every descendant, and what is still
  alive `GRACE_S` later is killed.
- SIGUSR1 (the exec tool's cancel): every descendant is killed at once.

Killing walks the helper's children repeatedly (killed processes' children are re-parented
to it) until it has none left. Outside the helper's reach: processes started by someone
else on the command's behalf (an existing tmux server, systemd, docker), and a fork bomb
faster than the kill loop. Only Linux has child subreapers; elsewhere the helper still runs
the command and kills what it can see.
"""

from __future__ import annotations

import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1)
_POLL_S = 0.02


class _Stop(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_stop(signum: int, _frame: object) -> None:
    raise _Stop(signum)


def _prctl(option: int, value: int) -> bool:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _children(pid: int) -> list[int]:
    """Pids whose parent is `pid` (zombies included)."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        tasks = []
    listed = False
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as handle:
                found += [int(child) for child in handle.read().split()]
            listed = True
        except OSError:
            continue
    if listed:
        return found
    for entry in os.listdir("/proc"):  # kernels without CONFIG_PROC_CHILDREN
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields and int(fields[1]) == pid:
            found.append(int(entry))
    return found


def _signal_all(me: int, signum: int) -> None:
    for child in _children(me):
        try:
            os.kill(child, signum)
        except (ProcessLookupError, PermissionError):
            continue


def _status_code(status: int) -> int:
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.waitstatus_to_exitcode(status)


def _kill_everything(me: int, command: int, code: int | None) -> int | None:
    """SIGKILL every descendant until none is left; the command's exit code if reaped here."""
    while True:
        _signal_all(me, signal.SIGKILL)
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return code
        if pid == command:
            code = _status_code(status)


def _wait(command: int, grace_s: float) -> int | None:
    """Reap children until the command exits (its code) or a stop signal says to kill."""
    deadline: float | None = None
    me = os.getpid()
    while True:
        try:
            if deadline is None:
                pid, status = os.waitpid(-1, 0)
            else:
                pid, status = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    if time.monotonic() >= deadline:
                        return None
                    time.sleep(_POLL_S)
                    continue
        except ChildProcessError:
            return None
        except _Stop as stop:
            if stop.signum == signal.SIGUSR1:
                return None
            if deadline is None:
                _signal_all(me, signal.SIGTERM)
                deadline = time.monotonic() + grace_s
            continue
        if pid == command:
            return _status_code(status)


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: subreaper.py PARENT_PID GRACE_S -- PROGRAM [ARGS...]", file=sys.stderr)
        return 2
    parent, grace_s, command_argv = int(argv[0]), float(argv[1]), argv[3:]
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    for signum in _STOP_SIGNALS:
        signal.signal(signum, _raise_stop)
    signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    if os.getppid() != parent:  # the daemon died before PR_SET_PDEATHSIG took effect
        return 128 + signal.SIGTERM
    command = os.fork()
    if command == 0:
        for signum in _STOP_SIGNALS:
            signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
        try:
            os.execvp(command_argv[0], command_argv)
        except OSError as exc:
            os.write(2, f"cannot run {command_argv[0]}: {exc.strerror or exc}\n".encode())
        os._exit(127)
    code: int | None = None
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
        code = _wait(command, grace_s)
    except _Stop:
        pass  # a stop signal between two waits: kill everything below
    finally:
        signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
        code = _kill_everything(os.getpid(), command, code)
    return 128 + signal.SIGKILL if code is None else code


if __name__ == "__main__":
    # Without the interpreter's teardown (a few ms per command): nothing is buffered here, the
    # command's output never passes through this process.
    exit_code = main(sys.argv[1:])
    sys.stderr.flush()
    os._exit(exit_code)
