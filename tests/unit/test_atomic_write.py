"""core/atomic_write.py: readers see old or whole new content, and nothing is left behind.

A child process writes through `write_atomic` and is killed with SIGKILL at the worst
moment, while the new content sits in the temp file (at its fsync). Before, a
`.<name>.<random>.tmp` file stayed in the workspace for every such kill (issue 8.11). A real
full disk (a small tmpfs) must leave neither litter nor a truncated target, with and without
`O_TMPFILE`.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cody_daemon.core import atomic_write
from cody_daemon.core.atomic_write import replace_file, write_atomic

from tests.support.small_fs import fill_until_full, small_tmpfs

CHILD = """
import os, signal, sys
from pathlib import Path
from cody_daemon.core import atomic_write

def killed_at_fsync(fd):
    os.kill(os.getpid(), signal.SIGKILL)

atomic_write.os.fsync = killed_at_fsync
atomic_write.write_atomic(Path(sys.argv[1]), b"new content " * 10000)
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


def test_replace_file_keeps_an_existing_mode_and_gives_a_new_file_the_one_asked(
    tmp_path: Path,
) -> None:
    existing = tmp_path / "run.sh"
    existing.write_text("old")
    existing.chmod(0o750)
    replace_file(existing, b"new", new_file_mode=0o600)
    assert (existing.read_bytes(), existing.stat().st_mode & 0o777) == (b"new", 0o750)
    fresh = tmp_path / "secret.json"
    replace_file(fresh, b"{}", new_file_mode=0o600)
    assert fresh.stat().st_mode & 0o777 == 0o600


@pytest.fixture(params=["unnamed", "named"])
def temp_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways of making the temp file: `O_TMPFILE`, and the named fallback."""
    if request.param == "named":
        monkeypatch.setattr(atomic_write, "_open_unnamed", lambda directory, mode: None)
    return str(request.param)


def test_a_full_disk_leaves_the_old_content_and_no_temp_file(
    tmp_path: Path, temp_kind: str
) -> None:
    with small_tmpfs(tmp_path / "disk", 256 * 1024) as disk:
        target = disk / "notes.txt"
        target.write_text("old content")
        filler = fill_until_full(disk)
        with pytest.raises(OSError) as caught:
            write_atomic(target, b"new content " * 100_000, mode=0o644)
        assert caught.value.errno == errno.ENOSPC
        assert target.read_text() == "old content"
        assert sorted(p.name for p in disk.iterdir()) == sorted([target.name, filler.name])


def test_a_named_temp_file_for_a_private_file_is_never_readable_by_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without `O_TMPFILE` the temp file has a name while the secret is written into it: it
    is created 0600, not with the default mode, when a mode is to be set (a secret written
    before the chmod would be readable by others for that while)."""
    monkeypatch.setattr(atomic_write, "_open_unnamed", lambda directory, mode: None)
    seen: list[int] = []
    real_open = os.open

    def open_and_look(path: str, flags: int, mode: int = 0o777) -> int:
        fd = real_open(path, flags, mode)
        seen.append(os.stat(path).st_mode & 0o777)  # the moment the name appears
        return fd

    monkeypatch.setattr(atomic_write.os, "open", open_and_look)
    old_mask = os.umask(0)
    try:
        write_atomic(tmp_path / "auth.json", b'{"token": "x"}', mode=0o600)
    finally:
        os.umask(old_mask)
    assert seen == [0o600]
    assert (tmp_path / "auth.json").stat().st_mode & 0o777 == 0o600


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
