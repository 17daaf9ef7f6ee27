"""The launcher: one long-lived helper that starts commands for the daemon (stdlib only).

Run as `python -I -S launcher.py` with a `SOCK_SEQPACKET` unix socket as its stdin (the
control socket). The daemon starts one in its own namespaces (for commands without
bubblewrap, and sandboxed ones with the network) and one per session inside a private
network namespace (bubblewrap `--unshare-net`: the session's sandboxed commands share its
loopback). Starting a command costs a message to the spare reaper and one `posix_spawn`,
never an interpreter: the launcher is started once.

Protocol (`launcher_client.py` is the daemon's side):
- The launcher sends `{"ready": PID}` once it is set up.
- Each `spawn` message carries file descriptors: a memfd with the request as JSON
  (`argv`, `cwd`, `env`, `fds`: how many descriptors follow for the command, `tty`,
  `grace_s`), the command's *control socket* (a `SOCK_SEQPACKET` pair whose other end the
  daemon keeps), then the descriptors that become the command's fds 0, 1, 2, 3...
- For each, a *reaper* (a fork of the launcher: one is forked ahead and waits as the
  spare, so a command's start waits for no fork of Python) starts the command with
  `posix_spawn` and answers on the control socket: `{"pid": N}` once the exec succeeded
  (or `{"error": TEXT}`), and `{"exit": CODE, "signal": N | null}` when it is over. The daemon may send `term` (SIGTERM
  to everything the command started, SIGKILL to what is left `grace_s` later) or `kill`
  (SIGKILL now); closing the socket counts as `term`.

Invariants (no orphans):
- A reaper is a *child subreaper* (`PR_SET_CHILD_SUBREAPER`): whatever the command starts and
  abandons (`setsid`, a double fork, `nohup`) is re-parented to it, not to init. When the
  command exits, or on `term`/`kill`, every remaining descendant is killed and reaped before
  the exit is reported: nothing a command starts outlives it.
- The launcher is a subreaper too: a process that escapes a reaper killed by someone else is
  re-parented to the launcher, which kills it.
- When the daemon dies, the launcher dies (`PR_SET_PDEATHSIG` SIGKILL, and its control
  socket's end of file); every reaper then gets SIGTERM (`PR_SET_PDEATHSIG` on the launcher)
  and its control socket's end of file, and stops its command as for `term`.
- The launcher never reads a request's payload itself (its forked reaper does), so no
  request can stall it; it holds no descriptor of a command after the fork.

Outside its reach: processes started on the command's behalf by someone else (an existing
tmux server, systemd, docker), and a fork bomb faster than the kill loop. Linux only, like the
rest of the sandbox: `SOCK_SEQPACKET` unix sockets, `memfd_create`, `prctl`.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import select
import signal
import socket
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
MAX_FDS = 16
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class _Libc:
    """libc's `prctl`, looked up once in the launcher (its forks inherit it)."""

    prctl: Callable[..., int] | None = None
    looked_up = False


def _prctl(option: int, value: int) -> bool:
    if not _Libc.looked_up:
        _Libc.looked_up = True
        try:
            import ctypes

            _Libc.prctl = ctypes.CDLL(None, use_errno=True).prctl
        except (OSError, AttributeError):
            _Libc.prctl = None
    if _Libc.prctl is None:
        return False
    return int(_Libc.prctl(option, value, 0, 0, 0)) == 0


def _send(sock: socket.socket, message: dict[str, object]) -> None:
    try:
        sock.send(json.dumps(message).encode())
    except OSError:
        pass  # the daemon is gone: nothing to tell


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


def _descendants(pid: int) -> list[int]:
    """Every process below `pid`, parents before their children."""
    found: list[int] = []
    queue = [pid]
    while queue and len(found) < 100_000:
        children = _children(queue.pop(0))
        found += children
        queue += children
    return found


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def _kill(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _status(status: int) -> tuple[int, int | None]:
    """(exit code in the shell's convention, the signal that killed it or None)."""
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status), os.WTERMSIG(status)
    return os.waitstatus_to_exitcode(status), None


# -- the reaper: one per command -----------------------------------------------------------


class _Stop:
    """Set by SIGTERM/SIGINT/SIGHUP in a reaper (the launcher died: PR_SET_PDEATHSIG)."""

    flag = False


def _on_stop(signum: int, frame: object) -> None:
    _Stop.flag = True


def _ignore(signum: int, frame: object) -> None:
    pass


class _Reaper:
    def __init__(self, request: dict[str, object], control: socket.socket | None) -> None:
        self.request = request
        self.control = control
        self.command = 0
        self.result: tuple[int, int | None] | None = None
        self.me = os.getpid()
        self.termed_bubblewrap = False

    def _group(self, signum: int) -> None:
        """Signal the command's process group, only while the command is not reaped (its pid,
        and so the group's id, cannot be reused before)."""
        if self.result is None:
            try:
                os.killpg(self.command, signum)
            except (ProcessLookupError, PermissionError):
                pass

    def term(self) -> None:
        """SIGTERM to the command's process group and every process below the reaper except
        bubblewrap itself (it would SIGKILL its sandbox at once; its command gets the
        signal instead, and its grace time). A sandboxed command *is* bubblewrap, the leader
        of its own process group: that group is left out then, or the SIGTERM would reach
        bubblewrap through it; unless nothing runs inside yet (bubblewrap is still starting
        it), when stopping bubblewrap loses nothing."""
        inside = [pid for pid in _descendants(self.me) if _comm(pid) != "bwrap"]
        self.termed_bubblewrap = bool(inside) and _comm(self.command) == "bwrap"
        if not self.termed_bubblewrap:
            self._group(signal.SIGTERM)
        for pid in inside:
            _kill(pid, signal.SIGTERM)

    def _outcome(self, status: int) -> tuple[int, int | None]:
        """The command's status; bubblewrap exits with 128 + N when what it ran was killed by
        signal N: after `term` signalled what runs inside, that is the signal it died of."""
        code, signum = _status(status)
        if signum is None and self.termed_bubblewrap and 128 < code < 128 + signal.NSIG:
            return code, code - 128
        return code, signum

    def kill_everything(self) -> None:
        """SIGKILL every descendant until none is left (the killed ones' children are
        re-parented here); records the command's status if it is reaped here."""
        while True:
            self._group(signal.SIGKILL)
            for child in _children(self.me):
                _kill(child, signal.SIGKILL)
            try:
                pid, status = os.waitpid(-1, 0)
            except ChildProcessError:
                return
            except InterruptedError:
                continue
            if pid == self.command and self.result is None:
                self.result = self._outcome(status)

    def reap(self) -> bool:
        """Reap what has exited; True once the command has."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return True
            if pid == 0:
                return self.result is not None
            if pid == self.command:
                self.result = self._outcome(status)

    def run(self, wakeup: int) -> None:
        """Until the command exits, or `kill`, or `grace_s` after `term` (or a stop signal,
        or the daemon closing the control socket)."""
        grace = float(self.request.get("grace_s", 2.0))  # type: ignore[arg-type]
        deadline: float | None = None
        while True:
            if self.reap():
                return
            if _Stop.flag and deadline is None:
                self.term()
                deadline = time.monotonic() + grace
            if deadline is not None and time.monotonic() >= deadline:
                return
            watched: list[Any] = [wakeup] if self.control is None else [self.control, wakeup]
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                ready, _, _ = select.select(watched, [], [], timeout)
            except InterruptedError:
                continue
            if wakeup in ready:
                try:
                    os.read(wakeup, 512)
                except BlockingIOError:
                    pass
            if self.control is not None and self.control in ready:
                try:
                    message = self.control.recv(64)
                except OSError:
                    message = b""
                if message == b"kill":
                    return
                if not message:  # nobody listens any more: stop as for `term`
                    self.control.close()
                    self.control = None
                if deadline is None and message in (b"term", b""):
                    self.term()
                    deadline = time.monotonic() + grace


_FLOOR = 64
"""Descriptors are moved above this before being put in place (targets are below MAX_FDS)."""
_DEFAULT_SIGNALS = (*_STOP_SIGNALS, signal.SIGCHLD, signal.SIGPIPE, signal.SIGXFSZ)
"""Back to their default in the command (Python ignores SIGPIPE and SIGXFSZ)."""


def _which(program: str, path: str | None) -> str:
    """`program` found on the command's own PATH (posix_spawnp would search ours)."""
    if "/" in program:
        return program
    for directory in (path if path is not None else os.defpath).split(os.pathsep):
        candidate = os.path.join(directory or ".", program)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError(errno.ENOENT, "command not found", program)


def _start_command(request: dict[str, object], fds: list[int]) -> int:
    """Start the command with `fds` as its descriptors 0, 1, 2... in its own session (and
    with fd 0 as its controlling terminal for `tty`); its pid. posix_spawn (vfork and exec,
    no Python in the child): the reaper's own directory is the command's."""
    argv = [str(word) for word in request["argv"]]  # type: ignore[attr-defined]
    env = {str(k): str(v) for k, v in request["env"].items()}  # type: ignore[attr-defined]
    os.chdir(str(request["cwd"]))
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, _FLOOR) for fd in fds]
    for fd in fds:
        os.close(fd)
    actions: list[tuple[object, ...]] = []
    terminal = None
    if request.get("tty") and moved:
        try:
            terminal = os.ttyname(moved[0])
        except OSError:
            terminal = None
    for target, fd in enumerate(moved):
        if target < 3 and terminal is not None:
            # Opened by path after setsid: the terminal becomes the controlling one.
            if target == 0:
                actions.append((os.POSIX_SPAWN_OPEN, 0, terminal, os.O_RDWR, 0))
            else:
                actions.append((os.POSIX_SPAWN_DUP2, 0, target))
            continue
        actions.append((os.POSIX_SPAWN_DUP2, fd, target))
    try:
        return os.posix_spawn(
            _which(argv[0], env.get("PATH")),
            argv,
            env,
            file_actions=actions,
            setsid=True,
            setsigmask=(),
            setsigdef=_DEFAULT_SIGNALS,
        )
    finally:
        for fd in moved:
            os.close(fd)


def _reaper(payload_fd: int, control_fd: int, fds: list[int], launcher: int) -> None:
    """In the forked reaper (never returns)."""
    control = socket.socket(fileno=control_fd)
    control.setblocking(True)
    try:
        request = json.loads(os.pread(payload_fd, 64 * 1024 * 1024, 0))
        os.close(payload_fd)
    except (OSError, ValueError) as exc:
        _send(control, {"error": f"bad request: {exc}"})
        os._exit(1)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != launcher:  # the launcher died before PR_SET_PDEATHSIG took effect
        _Stop.flag = True
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)
    try:
        command = _start_command(request, fds)
    except OSError as exc:
        program = str(request["argv"][0])
        _send(control, {"error": f"cannot run {program}: {exc.strerror or exc}"})
        os._exit(0)
    reaper = _Reaper(request, control)
    reaper.command = command
    _send(control, {"pid": command})
    try:
        reaper.run(wake_r)
    finally:
        signal.pthread_sigmask(signal.SIG_BLOCK, (*_STOP_SIGNALS, signal.SIGCHLD))
        reaper.kill_everything()
    code, signum = reaper.result if reaper.result is not None else (128 + signal.SIGKILL, None)
    if reaper.control is not None:
        _send(reaper.control, {"exit": code, "signal": signum})
    os._exit(0)


# -- the launcher ----------------------------------------------------------------------------


class _Launcher:
    """The main loop's state: the control socket, the reapers, and one spare reaper forked
    ahead of time (it waits for the next command's descriptors), so a command's start never
    waits for a fork of Python."""

    def __init__(self, control: socket.socket, wakeup: tuple[int, int]) -> None:
        self.control = control
        self.wakeup = wakeup
        self.me = os.getpid()
        self.reapers: set[int] = set()
        self.spare: tuple[int, socket.socket] | None = None

    def fork_reaper(self, fds: list[int] | None) -> int:
        """A reaper for `fds` (a spawn message's descriptors), or the spare (fds None)."""
        spare_ends = (
            socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET) if fds is None else None
        )
        pid = os.fork()
        if pid == 0:
            self.control.close()
            signal.set_wakeup_fd(-1)
            for fd in self.wakeup:
                os.close(fd)
            if self.spare is not None:
                self.spare[1].close()
            signal.signal(signal.SIGCHLD, _ignore)
            for signum in _STOP_SIGNALS:
                signal.signal(signum, _on_stop)
            if spare_ends is not None:
                spare_ends[0].close()
                fds = _wait_as_spare(spare_ends[1], self.me)
            assert fds is not None
            _reaper(fds[0], fds[1], fds[2:], self.me)
        self.reapers.add(pid)
        if spare_ends is not None:
            spare_ends[1].close()
            self.spare = (pid, spare_ends[0])
        return pid

    def spawn(self) -> bool:
        """Handle one message; False at end of file (the daemon is gone)."""
        try:
            message, fds, _flags, _addr = socket.recv_fds(
                self.control, 64, MAX_FDS, socket.MSG_CMSG_CLOEXEC
            )
        except InterruptedError:
            return True
        except OSError:
            return False
        try:
            if not message:
                return False
            if message != b"spawn" or len(fds) < 2:
                return True
            if not self._hand_to_spare(fds):
                self.fork_reaper(fds)
            return True
        finally:
            for fd in fds:
                os.close(fd)
            if message and self.spare is None:
                self.fork_reaper(None)  # the next command's, while this one starts

    def _hand_to_spare(self, fds: list[int]) -> bool:
        spare, self.spare = self.spare, None
        if spare is None:
            return False
        pid, channel = spare
        try:
            socket.send_fds(channel, [b"spawn"], fds)
        except OSError:  # it died: it is reaped like any reaper
            return False
        finally:
            channel.close()
        return pid in self.reapers

    def reap(self) -> None:
        """Reap finished reapers; kill what was re-parented here (escaped a dead reaper)."""
        while True:
            try:
                pid, _status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            self.reapers.discard(pid)
            if self.spare is not None and self.spare[0] == pid:
                self.spare[1].close()
                self.spare = None
        for child in _children(self.me):
            if child not in self.reapers:
                _kill(child, signal.SIGKILL)


def _wait_as_spare(channel: socket.socket, launcher: int) -> list[int]:
    """In the spare reaper: set up, then wait for a command's descriptors (never returns
    without them: the launcher's end closing ends the spare)."""
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != launcher:
        os._exit(0)
    while True:
        try:
            message, fds, _flags, _addr = socket.recv_fds(
                channel, 64, MAX_FDS, socket.MSG_CMSG_CLOEXEC
            )
        except InterruptedError:
            continue
        except OSError:
            os._exit(0)
        channel.close()
        if not message or len(fds) < 2:
            os._exit(0)
        return fds


def main() -> int:
    control = socket.socket(fileno=os.dup(0))
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.close(null)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, _ignore)
    for signum in _STOP_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)
    import gc

    gc.freeze()  # forks touch fewer pages (no collection walks the launcher's objects)
    state = _Launcher(control, (wake_r, wake_w))
    state.fork_reaper(None)
    _send(control, {"ready": state.me})
    while True:
        try:
            ready, _, _ = select.select([control, wake_r], [], [])  # type: ignore[type-var]
        except InterruptedError:
            continue
        if wake_r in ready:
            try:
                os.read(wake_r, 512)
            except OSError as exc:
                if exc.errno != errno.EAGAIN:
                    raise
            state.reap()
        if control in ready and not state.spawn():
            return 0


if __name__ == "__main__":
    # Without the interpreter's teardown: nothing is buffered here.
    code = main()
    sys.stderr.flush()
    os._exit(code)
