"""The seccomp filter `exec` runs under (passed to bubblewrap with `--seccomp FD`).

What it refuses, with `EPERM`, and why (measurements in docs/sandbox.md):
- `socket()` for every address family except `AF_INET`, `AF_INET6` (confined by bubblewrap's
  network namespace) and `AF_NETLINK` (interface queries, e.g. by `getaddrinfo`). This is
  what keeps a sandboxed command away from unix sockets of processes outside the sandbox
  (tmux, ssh-agent, D-Bus, docker, X11): a read-only mount does not stop `connect()` on a
  socket file, and seccomp cannot read the address `connect()` is given, so the socket is
  refused when it is created. `socketpair()` (a connected pair, no address) stays allowed, as
  do pipes. `AF_VSOCK` (not namespaced) is refused too.
- `socketcall(SYS_SOCKET, ...)` on 32-bit ABIs (its arguments are in memory, unreadable).
- `io_uring_setup/enter/register`: io_uring can create and connect sockets without a
  `socket()` system call, past this filter.
- Every system call of the x32 ABI and of an ABI this filter does not know.

Invariants:
- `filter_program()` is deterministic classic BPF (`struct sock_filter` in native byte order)
  for the machine the daemon runs on, or None when the architecture is not in `_ARCHES`
  (then no filter is applied; callers log it, docs/sandbox.md says so).
- Only the low 32 bits of the `domain` argument are compared: the kernel reads it as an `int`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = [
    "ALLOWED_SOCKET_FAMILIES",
    "Abi",
    "build_program",
    "filter_fd",
    "filter_program",
    "machine_arches",
]

# Classic BPF opcodes (linux/bpf_common.h) and seccomp return values (linux/seccomp.h).
_BPF_LD_W_ABS = 0x00 | 0x00 | 0x20
_BPF_JEQ_K = 0x05 | 0x10 | 0x00
_BPF_JGE_K = 0x05 | 0x30 | 0x00
_BPF_RET_K = 0x06 | 0x00
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
_EPERM = 1
_DENY = SECCOMP_RET_ERRNO | _EPERM

# Offsets in `struct seccomp_data { int nr; __u32 arch; __u64 ip; __u64 args[6]; }`.
_OFFSET_NR = 0
_OFFSET_ARCH = 4
_OFFSET_ARG0_LOW = 16 if sys.byteorder == "little" else 20

AF_INET = 2
AF_INET6 = 10
AF_NETLINK = 16
ALLOWED_SOCKET_FAMILIES = (AF_INET, AF_INET6, AF_NETLINK)
_SYS_SOCKET = 1
"""`socketcall`'s call number for `socket()`."""
_X32_SYSCALL_BIT = 0x40000000
_IO_URING = (425, 426, 427)
"""io_uring_setup, io_uring_enter, io_uring_register: the same numbers on every ABI here."""


@dataclass(frozen=True, slots=True)
class Abi:
    """One system call ABI the kernel may see from a sandboxed process."""

    audit_arch: int
    socket: int
    socketcall: int | None = None
    deny_from: int | None = None
    """Refuse every system call numbered at or above this (the x32 ABI on x86_64)."""


_I386 = Abi(0x40000003, socket=359, socketcall=102)
_ARM = Abi(0x40000028, socket=281, socketcall=102)
_ARCHES: dict[str, tuple[Abi, ...]] = {
    "x86_64": (Abi(0xC000003E, socket=41, deny_from=_X32_SYSCALL_BIT), _I386),
    "aarch64": (Abi(0xC00000B7, socket=198), _ARM),
    "riscv64": (Abi(0xC00000F3, socket=198),),
}
"""Native ABI first, then the compat ABIs the same kernel also runs."""


def machine_arches(machine: str | None = None) -> tuple[Abi, ...] | None:
    """The ABIs of `machine` (default: this kernel's, `uname -m`), or None if unknown."""
    return _ARCHES.get(machine or os.uname().machine)


class _Assembler:
    """Classic BPF with forward jumps to labels (resolved when the program is built)."""

    def __init__(self) -> None:
        self._code: list[tuple[int, int, str | int, str | int]] = []
        self._labels: dict[str, int] = {}

    def label(self, name: str) -> None:
        self._labels[name] = len(self._code)

    def load(self, offset: int) -> None:
        self._code.append((_BPF_LD_W_ABS, offset, 0, 0))

    def ret(self, value: int) -> None:
        self._code.append((_BPF_RET_K, value, 0, 0))

    def jump(self, op: int, value: int, if_true: str | int = 0, if_false: str | int = 0) -> None:
        """Compare the accumulator with `value`; a target is a label or 0 (the next one)."""
        self._code.append((op, value, if_true, if_false))

    def build(self) -> bytes:
        out = bytearray()
        for index, (code, k, if_true, if_false) in enumerate(self._code):
            out += struct.pack(
                "=HBBI", code, self._offset(index, if_true), self._offset(index, if_false), k
            )
        return bytes(out)

    def _offset(self, index: int, target: str | int) -> int:
        if isinstance(target, int):
            return target
        offset = self._labels[target] - index - 1
        if not 0 <= offset <= 255:
            raise ValueError(f"jump to {target} is not a short forward jump")
        return offset


def build_program(abis: tuple[Abi, ...]) -> bytes:
    """The filter for these ABIs (see the module docstring for what it refuses)."""
    asm = _Assembler()
    asm.load(_OFFSET_ARCH)
    for number, abi in enumerate(abis):
        asm.jump(_BPF_JEQ_K, abi.audit_arch, f"abi{number}")
    asm.ret(_DENY)  # an ABI we do not know: refuse everything
    for number, abi in enumerate(abis):
        asm.label(f"abi{number}")
        asm.load(_OFFSET_NR)
        if abi.deny_from is not None:
            asm.jump(_BPF_JGE_K, abi.deny_from, "deny")
        asm.jump(_BPF_JEQ_K, abi.socket, "socket")
        if abi.socketcall is not None:
            asm.jump(_BPF_JEQ_K, abi.socketcall, "socketcall")
        for nr in _IO_URING:
            asm.jump(_BPF_JEQ_K, nr, "deny")
        asm.ret(SECCOMP_RET_ALLOW)
    # Shared tails (classic BPF jumps only forward, so they come last).
    asm.label("socketcall")
    asm.load(_OFFSET_ARG0_LOW)
    asm.jump(_BPF_JEQ_K, _SYS_SOCKET, "deny")
    asm.ret(SECCOMP_RET_ALLOW)
    asm.label("socket")
    asm.load(_OFFSET_ARG0_LOW)
    for family in ALLOWED_SOCKET_FAMILIES:
        asm.jump(_BPF_JEQ_K, family, "allow")
    asm.label("deny")
    asm.ret(_DENY)
    asm.label("allow")
    asm.ret(SECCOMP_RET_ALLOW)
    return asm.build()


@functools.cache
def filter_program() -> bytes | None:
    """The filter for this machine, or None when its architecture is not supported."""
    abis = machine_arches()
    return None if abis is None else build_program(abis)


@contextlib.contextmanager
def filter_fd() -> Iterator[int | None]:
    """A readable fd holding `filter_program()` (None when there is none), closed on exit.

    Pass it to the child (`pass_fds`) and to bubblewrap as `--seccomp FD`; bubblewrap reads
    it to the end, so the write end is closed before the child starts.
    """
    program = filter_program()
    if program is None:
        yield None
        return
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, program)  # a few hundred bytes: far below the pipe's capacity
        os.close(write_end)
        write_end = -1
        yield read_end
    finally:
        os.close(read_end)
        if write_end != -1:
            os.close(write_end)
