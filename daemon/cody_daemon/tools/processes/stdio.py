"""A command's descriptors 0-2 and the daemon's ends of them (`CommandStdio`).

Invariants: the daemon's ends are non-blocking and close-on-exec; a `tty` command gets a
pseudo-terminal of `TTY_SIZE` (its fds 0-2 the terminal, the daemon reading and writing the
other side); any other command one pipe for stdout and stderr together and, when it may
outlive its call, a pipe as stdin (else /dev/null). `close_child` runs once the command
started (the launcher has its own copies by then).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import struct
import termios
from dataclasses import dataclass

__all__ = ["TTY_SIZE", "CommandStdio"]

TTY_SIZE = (40, 120)
"""Rows and columns of the pseudo-terminal of a `tty` command."""


@dataclass(slots=True)
class CommandStdio:
    """A command's descriptors 0-2 (`child`, closed here once it started) and the daemon's
    ends: a pipe for its output and one for its input (or /dev/null), or a pseudo-terminal
    for both (`tty`, `TTY_SIZE`)."""

    child: list[int]
    output: int
    input: int | None

    @classmethod
    def make(cls, *, tty: bool, stdin: bool) -> CommandStdio:
        if tty:
            master, slave = os.openpty()
            rows, cols = TTY_SIZE
            fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
            ends = cls([slave, slave, slave], master, os.dup(master))
        else:
            out_r, out_w = os.pipe2(os.O_CLOEXEC)
            if stdin:
                in_r, in_w = os.pipe2(os.O_CLOEXEC)
                ends = cls([in_r, out_w, out_w], out_r, in_w)
            else:
                null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
                ends = cls([null, out_w, out_w], out_r, None)
        if ends.input is not None:
            os.set_blocking(ends.input, False)
        return ends

    def close_child(self) -> None:
        for fd in set(self.child):
            with contextlib.suppress(OSError):
                os.close(fd)

    def close_ours(self) -> None:
        for fd in {self.output, self.input} - {None}:
            with contextlib.suppress(OSError):
                os.close(fd)  # type: ignore[arg-type]
