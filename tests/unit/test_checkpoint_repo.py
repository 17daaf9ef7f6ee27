"""checkpoints/repo.py on a real git: an unchanged tree costs no new commit, a workspace with
too many files gets a clear error instead of minutes of hashing, and the warm-up (the first
snapshot's work done ahead, niced, in batches) never changes what a snapshot holds."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest
from cody_daemon.checkpoints import repo as repo_module
from cody_daemon.checkpoints.git import CheckpointError, find_git
from cody_daemon.checkpoints.repo import ShadowRepo


def make_repo(tmp_path: Path, count: int) -> ShadowRepo:
    ws = tmp_path / "ws"
    ws.mkdir()
    for index in range(count):
        (ws / f"f{index}.txt").write_text(f"{index}\n")
    git = find_git(os.environ)
    assert git is not None
    return ShadowRepo(git, tmp_path / "store", ws)


async def snap(repo: ShadowRepo, parent: str | None) -> str:
    async with repo.locked():
        return (await repo.snapshot("t", parent, "test")).commit


def test_an_unchanged_tree_reuses_the_last_commit_and_a_change_makes_a_new_one(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path, 3)

    async def run() -> tuple[str, str, str]:
        first = await snap(repo, None)
        again = await snap(repo, first)
        (repo.work_tree / "f1.txt").write_text("changed\n")
        changed = await snap(repo, again)
        return first, again, changed

    first, again, changed = asyncio.run(run())
    assert again == first
    assert changed != first
    paths = asyncio.run(repo.changes(first, changed))
    assert [(c.path, c.change) for c in paths] == [("f1.txt", "modified")]


def test_too_many_files_is_a_clear_error_every_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(repo_module, "MAX_NEW_FILES", 5)
    repo = make_repo(tmp_path, 10)
    for _ in range(2):
        with pytest.raises(CheckpointError, match="more than 5 files"):
            asyncio.run(snap(repo, None))


def tree_of(repo: ShadowRepo, commit: str) -> dict[str, str]:
    """path -> content of every file of a snapshot commit."""
    listed = subprocess.run(
        [*repo.git.argv(["ls-tree", "-r", "-z", "--name-only", commit])],
        env=repo.git.environment(),
        cwd=repo.root,
        capture_output=True,
        check=True,
    ).stdout
    files = {}
    for raw in listed.split(b"\0"):
        if raw:
            blob = subprocess.run(
                [*repo.git.argv(["cat-file", "blob", f"{commit}:{raw.decode()}"])],
                env=repo.git.environment(),
                cwd=repo.root,
                capture_output=True,
                check=True,
            ).stdout
            files[raw.decode()] = blob.decode()
    return files


def test_a_warm_up_makes_no_commit_and_the_next_snapshot_is_the_tree_as_it_is_then(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path, 5)

    async def run() -> str:
        await repo.warm()
        refs = [ref for ref in (repo.root / "refs").rglob("*") if ref.is_file()]
        assert refs == [], "a warm-up makes no ref"
        # Changed after the warm-up, before the turn: the snapshot has the new content.
        (repo.work_tree / "f1.txt").write_text("edited after the warm-up\n")
        (repo.work_tree / "f2.txt").unlink()
        (repo.work_tree / "new.txt").write_text("new\n")
        return await snap(repo, None)

    commit = asyncio.run(run())
    assert tree_of(repo, commit) == {
        "f0.txt": "0\n",
        "f1.txt": "edited after the warm-up\n",
        "f3.txt": "3\n",
        "f4.txt": "4\n",
        "new.txt": "new\n",
    }


def test_a_snapshot_asked_for_during_a_warm_up_stops_its_batch_and_stages_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The snapshot does not wait for niced work: the warm-up's running batch is stopped,
    the snapshot stages what the finished batches did not and holds the whole tree; the
    warm-up then finds nothing left to stage."""
    monkeypatch.setattr(repo_module, "WARM_BATCH_FILES", 3)
    repo = make_repo(tmp_path, 20)
    staged: list[tuple[str, int]] = []
    update = repo._update

    async def run() -> str:
        asked = asyncio.Event()

        async def recording(drop: list[bytes], add: list[bytes], *, background: bool) -> None:
            staged.append(("warm-up" if background else "snapshot", len(add)))
            if len(staged) == 2:
                await asked.wait()  # the second batch is running when the snapshot is asked
            await update(drop, add, background=background)

        monkeypatch.setattr(repo, "_update", recording)
        warm = asyncio.create_task(repo.warm())
        while len(staged) < 2:
            await asyncio.sleep(0.01)
        commit = await snap(repo, None)
        asked.set()
        await warm
        return commit

    commit = asyncio.run(run())
    assert set(tree_of(repo, commit)) == {f"f{index}.txt" for index in range(20)}
    assert staged == [("warm-up", 3), ("warm-up", 3), ("snapshot", 17)]
    assert not (repo.root / "index.lock").exists()


def test_the_warm_up_runs_its_gits_niced_and_a_snapshot_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path, 3)
    niced: list[int] = []
    real = os.setpriority

    def recording(which: int, who: int, priority: int) -> None:
        niced.append(priority)
        real(which, who, priority)

    monkeypatch.setattr(os, "setpriority", recording)
    asyncio.run(repo.warm())
    assert niced and set(niced) == {10}
    niced.clear()
    (repo.work_tree / "f0.txt").write_text("changed\n")
    asyncio.run(snap(repo, None))
    assert niced == []
