"""checkpoints/repo.py on a real git: an unchanged tree costs no new commit, and a workspace
with too many files gets a clear error instead of minutes of hashing."""

from __future__ import annotations

import asyncio
import os
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
