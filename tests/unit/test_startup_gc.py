"""The cyclic GC is paused while the daemon starts and always comes back (startup_gc.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path


def run(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=30
    ).stdout.strip()


def test_resume_freezes_start_up_objects_and_collects_again() -> None:
    code = (
        "import gc\n"
        "from cody_daemon import startup_gc\n"
        "startup_gc.pause(); paused = gc.isenabled()\n"
        "startup_gc.resume(); frozen = gc.get_freeze_count()\n"
        "startup_gc.resume()\n"
        "print(paused, gc.isenabled(), frozen > 0)"
    )
    assert run(code) == "False True True"


WATCHED_DAEMON = """
import gc, sys, threading, time
from cody_daemon import cli

def watch():
    while gc.isenabled():  # until start-up pauses it
        time.sleep(0.001)
    while not gc.isenabled():
        time.sleep(0.01)
    print("collector on", file=sys.stderr, flush=True)

threading.Thread(target=watch, daemon=True).start()
cli.main()
"""


def watched_daemon(tmp_path: Path, send: bytes) -> str:
    """Run the real daemon, send `send`, and return its stderr once the collector is on."""
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "CODY_HOME": str(tmp_path / "c")}
    process = subprocess.Popen(
        [sys.executable, "-c", WATCHED_DAEMON],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert process.stdin is not None and process.stderr is not None
    try:
        process.stdin.write(send)
        process.stdin.flush()
        deadline = time.monotonic() + 20
        lines = []
        while time.monotonic() < deadline:
            line = process.stderr.readline().decode()
            lines.append(line)
            if "collector on" in line or not line:
                break
        return "".join(lines)
    finally:
        process.kill()
        process.communicate()


def test_the_daemon_collects_cycles_again_after_initialize(tmp_path: Path) -> None:
    body = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}'
    frame = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    assert "collector on" in watched_daemon(tmp_path, frame)


def test_a_daemon_that_is_never_initialized_collects_cycles_again(tmp_path: Path) -> None:
    assert "collector on" in watched_daemon(tmp_path, b"")
