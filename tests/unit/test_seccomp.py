"""The exec seccomp filter, decision by decision, on every ABI it knows.

The filter is run by a small classic-BPF interpreter (the subset the kernel accepts for
seccomp and the filter uses), so ABIs this machine cannot execute (aarch64, arm, riscv64,
i386, x32) are checked too. The real kernel applying it under bubblewrap is tested in
test_sandbox.py.
"""

from __future__ import annotations

import os
import socket
import struct

import pytest
from cody_daemon.policy import seccomp
from cody_daemon.policy.seccomp import SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO, build_program

ALLOW = SECCOMP_RET_ALLOW
EPERM = SECCOMP_RET_ERRNO | 1

X86_64, I386 = 0xC000003E, 0x40000003
AARCH64, ARM, RISCV64 = 0xC00000B7, 0x40000028, 0xC00000F3
X32_BIT = 0x40000000


def run_filter(program: bytes, arch: int, nr: int, *args: int) -> int:
    """Evaluate `program` on `struct seccomp_data` the way the kernel does."""
    padded = [*args, *[0] * (6 - len(args))]
    data = struct.pack("=iIQ6Q", nr, arch, 0, *padded)
    code = [struct.unpack_from("=HBBI", program, i) for i in range(0, len(program), 8)]
    pc, acc = 0, 0
    for _ in range(len(code)):
        op, jt, jf, k = code[pc]
        if op == 0x20:  # BPF_LD | BPF_W | BPF_ABS
            (acc,) = struct.unpack_from("=I", data, k)
            pc += 1
        elif op == 0x15:  # BPF_JMP | BPF_JEQ | BPF_K
            pc += 1 + (jt if acc == k else jf)
        elif op == 0x35:  # BPF_JMP | BPF_JGE | BPF_K
            pc += 1 + (jt if acc >= k else jf)
        elif op == 0x06:  # BPF_RET | BPF_K
            return int(k)
        else:
            raise AssertionError(f"unexpected opcode {op:#x}")
    raise AssertionError("the program ran off its end")


@pytest.fixture(params=["x86_64", "aarch64", "riscv64"])
def machine(request: pytest.FixtureRequest) -> tuple[str, bytes, int, int]:
    """(machine, program, native audit arch, native socket() number)."""
    native = {"x86_64": (X86_64, 41), "aarch64": (AARCH64, 198), "riscv64": (RISCV64, 198)}
    abis = seccomp.machine_arches(request.param)
    assert abis is not None
    return (request.param, build_program(abis), *native[request.param])


def test_unix_sockets_are_refused_and_ip_sockets_allowed(
    machine: tuple[str, bytes, int, int],
) -> None:
    _, program, arch, nr = machine
    assert run_filter(program, arch, nr, socket.AF_UNIX, socket.SOCK_STREAM) == EPERM
    assert run_filter(program, arch, nr, socket.AF_UNIX, socket.SOCK_DGRAM) == EPERM
    assert run_filter(program, arch, nr, 40, socket.SOCK_STREAM) == EPERM  # AF_VSOCK
    assert run_filter(program, arch, nr, 17, socket.SOCK_RAW) == EPERM  # AF_PACKET
    for family in (socket.AF_INET, socket.AF_INET6, 16):  # 16 = AF_NETLINK
        assert run_filter(program, arch, nr, family, socket.SOCK_STREAM) == ALLOW


def test_high_bits_cannot_smuggle_af_unix(machine: tuple[str, bytes, int, int]) -> None:
    # The kernel reads `domain` as an int: 0x1_00000001 is AF_UNIX, 0x1_00000002 is AF_INET.
    _, program, arch, nr = machine
    assert run_filter(program, arch, nr, (1 << 32) | socket.AF_UNIX) == EPERM
    assert run_filter(program, arch, nr, (1 << 32) | socket.AF_INET) == ALLOW


def test_io_uring_is_refused_and_ordinary_calls_pass(
    machine: tuple[str, bytes, int, int],
) -> None:
    _, program, arch, _nr = machine
    for io_uring in (425, 426, 427):
        assert run_filter(program, arch, io_uring) == EPERM
    for ordinary in (0, 1, 2, 3, 57, 59, 63, 64, 220, 221, 435):
        assert run_filter(program, arch, ordinary) == ALLOW


def test_an_unknown_abi_is_refused_everything(machine: tuple[str, bytes, int, int]) -> None:
    _, program, _arch, _nr = machine
    assert run_filter(program, 0xC0000015, 0) == EPERM  # ppc64le
    assert run_filter(program, 0, 0) == EPERM


def test_x32_system_calls_are_refused_on_x86_64() -> None:
    abis = seccomp.machine_arches("x86_64")
    assert abis is not None
    program = build_program(abis)
    assert run_filter(program, X86_64, X32_BIT | 41, socket.AF_UNIX) == EPERM
    assert run_filter(program, X86_64, X32_BIT | 0) == EPERM


@pytest.mark.parametrize(
    ("machine", "compat", "socket_nr"), [("x86_64", I386, 359), ("aarch64", ARM, 281)]
)
def test_32_bit_compat_abis_are_filtered_too(machine: str, compat: int, socket_nr: int) -> None:
    abis = seccomp.machine_arches(machine)
    assert abis is not None
    program = build_program(abis)
    assert run_filter(program, compat, socket_nr, socket.AF_UNIX) == EPERM
    assert run_filter(program, compat, socket_nr, socket.AF_INET) == ALLOW
    # socketcall(SYS_SOCKET, args): the domain is in memory, so the call is refused.
    assert run_filter(program, compat, 102, 1) == EPERM
    assert run_filter(program, compat, 102, 8) == ALLOW  # SYS_SOCKETPAIR
    assert run_filter(program, compat, 425) == EPERM
    assert run_filter(program, compat, 3) == ALLOW


def test_unknown_machines_get_no_filter() -> None:
    assert seccomp.machine_arches("s390x") is None
    assert seccomp.machine_arches("mips") is None


def test_this_machine_has_a_filter_in_ci() -> None:
    program = seccomp.filter_program()
    if program is None:
        assert os.environ.get("CI") != "true", f"no seccomp filter for {os.uname().machine}"
        pytest.skip(f"no seccomp filter for {os.uname().machine}")
    assert len(program) % 8 == 0


def test_filter_fd_holds_the_program() -> None:
    with seccomp.filter_fd() as fd:
        if fd is None:
            pytest.skip("no seccomp filter for this machine")
        assert os.read(fd, 65536) == seccomp.filter_program()
        assert os.read(fd, 1) == b"", "the write end is closed, so bubblewrap sees EOF"
