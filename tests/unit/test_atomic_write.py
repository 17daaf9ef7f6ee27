"""tools/atomic.py: a kill -9 in the middle of a write leaves no litter (issue 8.11).

A child process writes through `write_atomic` and is killed with SIGKILL at the worst
moment, while the new content sits in the temp file (at its fsync). Before, a
`.<name>.<random>.tmp` file stayed in the workspace for every such kill.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cody_daemon.tools.atomic import write_atomic

CHILD = """
import os, signal, sys
from pathlib import Path
from cody_daemon.tools import atomic

def killed_at_fsync(fd):
    os.kill(os.getpid(), signal.SIGKILL)

atomic.os.fsync = killed_at_fsync
atomic.write_atomic(Path(sys.argv[1]), b"new content " * 10000)
"""


@pytest.mark.parametrize("existing", [True, False], ids=["replace", "create"])
def test_kill_9_during_a_write_leaves_no_temp_file(tmp_path: Path, existing: bool) -> None:
    target = tmp_path / "file.txt"
    if existing:
        target.write_text("old content")
    child = subprocess.run([sys.executable, "-c", CHILD, str(target)], check=False)
    assert child.returncode == -signal.SIGKILL
    assert sorted(p.name for p in tmp_path.iterdir()) == (["file.txt"] if existing else [])
    if existing:
        assert target.read_text() == "old content"


def test_writes_replace_atomically_and_keep_a_given_mode(tmp_path: Path) -> None:
    target = tmp_path / "script.sh"
    target.write_text("old")
    write_atomic(target, b"new", mode=0o755)
    assert target.read_bytes() == b"new"
    assert target.stat().st_mode & 0o777 == 0o755
    write_atomic(tmp_path / "fresh.txt", b"x")
    assert (tmp_path / "fresh.txt").stat().st_mode & 0o777 == 0o666 & ~_umask()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh.txt", "script.sh"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
