"""checkpoints/restore.py on real files and a real shadow repository: a symlink that appears
where a directory was (after the snapshot, before the write) is never followed, and paths
into `.git`, `.cody`, a git directory or out of the workspace are refused one by one."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

from cody_daemon.checkpoints.changes import Change
from cody_daemon.checkpoints.git import find_git
from cody_daemon.checkpoints.repo import ShadowRepo
from cody_daemon.checkpoints.restore import path_problem, restore_changes


def snapshot_repo(tmp_path: Path, files: dict[str, bytes]) -> tuple[ShadowRepo, list[Change]]:
    """A shadow repository holding `files`; the changes that would write them all."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for name, data in files.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_bytes(data)
    git = find_git(os.environ)
    assert git is not None
    repo = ShadowRepo(git, tmp_path / "store", Path(os.path.realpath(ws)))

    async def take() -> list[Change]:
        async with repo.locked():
            snap = await repo.snapshot("t", None, "test")
        empty = (
            subprocess.run(
                ["git", "hash-object", "-t", "tree", "--stdin"],
                input=b"",
                capture_output=True,
                check=True,
            )
            .stdout.decode()
            .strip()
        )
        return await repo.changes(empty, snap.commit)

    changes = asyncio.run(take())
    for name in files:
        (ws / name).unlink()
    return repo, changes


def test_a_symlink_swapped_in_before_the_write_is_not_followed(tmp_path: Path) -> None:
    repo, changes = snapshot_repo(tmp_path, {"src/a.py": b"a = 1\n", "top.txt": b"top\n"})
    ws = repo.work_tree
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "src").rmdir()
    os.symlink(outside, ws / "src")  # the race: a link where the directory was

    outcome = restore_changes(repo.git, ws, changes, ())

    assert outcome.restored == ["top.txt"]
    assert [path for path, _ in outcome.failed] == ["src/a.py"]
    assert "not followed" in outcome.failed[0][1]
    assert list(outside.iterdir()) == [], "nothing written through the link"


def test_paths_into_git_cody_git_directories_or_out_of_the_workspace_are_refused(
    tmp_path: Path,
) -> None:
    repo, changes = snapshot_repo(tmp_path, {"ok.txt": b"ok\n"})
    ws = repo.work_tree
    subprocess.run(["git", "init", "-q", "--bare", str(ws / "bare.git")], check=True)
    [ok] = changes
    crafted = [
        Change(name, "added", None, "100644", None, ok.new_blob)
        for name in (
            ".git/config",
            ".GIT/hooks/x",
            "a/.Cody/config.toml",
            "../escape",
            "bare.git/config",
        )
    ]

    outcome = restore_changes(repo.git, ws, [ok, *crafted], ())

    assert outcome.restored == ["ok.txt"]
    assert sorted(path for path, _ in outcome.failed) == sorted(c.path for c in crafted)
    assert not (ws / ".git").exists() and not (tmp_path / "escape").exists()
    assert b"ok" not in (ws / "bare.git" / "config").read_bytes()


def test_path_problem_names_what_is_wrong() -> None:
    assert path_problem("a/b.txt") is None
    assert path_problem("/etc/passwd") == "not a relative path"
    assert path_problem("a/../b") == "not a plain path"
    assert path_problem("a//b") == "not a plain path"
    assert path_problem("x/.git/y") is not None and path_problem(".CODY") is not None
