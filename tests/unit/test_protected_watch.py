"""The watched workspace scan (policy/protected_watch.py) finds exactly what a fresh
`protected.scan` finds, after every kind of change, by anyone, between two commands."""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cody_daemon.policy import protected, protected_watch


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    protected_watch.forget_all()
    yield
    protected_watch.forget_all()


def same(root: Path) -> list[Path]:
    """The cached result, checked against a fresh scan."""
    roots = (root,)
    cached = protected_watch.cached_scan(root, roots)
    fresh = protected.scan(root, roots)
    assert cached.paths == fresh.paths
    assert cached.entries == fresh.entries
    return cached.paths


def git_dir(path: Path) -> None:
    (path / "objects").mkdir(parents=True)
    (path / "refs").mkdir()
    (path / "HEAD").write_text("ref: refs/heads/main\n")


def test_every_change_between_two_commands_is_seen(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "src" / "deep" / "er").mkdir(parents=True)
    git_dir(root / ".git")
    assert same(root) == [root / ".git"]

    (root / "src" / "deep" / "er" / ".git").mkdir()  # a nested repository
    assert root / "src" / "deep" / "er" / ".git" in same(root)

    git_dir(root / "vendor" / "bare")  # a git directory by content, any name
    assert root / "vendor" / "bare" in same(root)

    (root / "src" / ".cody").write_text("")  # a file named .cody
    assert root / "src" / ".cody" in same(root)

    os.rename(root / "vendor", root / "src" / "moved")  # moved within the tree
    found = same(root)
    assert root / "src" / "moved" / "bare" in found and root / "vendor" / "bare" not in found

    outside = tmp_path / "outside"
    git_dir(outside / "repo")
    os.rename(outside / "repo", root / "src" / "came-in")  # moved in from outside
    assert root / "src" / "came-in" in same(root)

    target = root / "src" / "moved" / "bare"
    (root / "wt").mkdir()
    (root / "wt" / ".git").write_text(f"gitdir: {target}\n")  # a worktree's .git file
    assert {root / "wt" / ".git", target} <= set(same(root))
    (root / "elsewhere").mkdir()
    git_dir(root / "elsewhere" / "store")
    (root / "wt" / ".git").write_text(f"gitdir: {root / 'elsewhere' / 'store'}\n")
    assert root / "elsewhere" / "store" in same(root)  # retargeted: content, no new entry

    (root / "link").mkdir()
    (root / "link" / ".git").symlink_to(root / "src" / "deep")
    assert root / "src" / "deep" in same(root)

    shutil.rmtree(root / "src")
    found = same(root)
    assert not any(path.is_relative_to(root / "src") and path.exists() for path in found)
    os.rename(root / "elsewhere", outside / "gone")  # moved out of the tree
    same(root)


def test_random_changes_never_make_the_cache_differ(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    rng = random.Random(26)
    dirs = [root]

    def mkdir() -> None:
        path = rng.choice(dirs) / f"d{rng.randrange(1000)}"
        path.mkdir(exist_ok=True)
        dirs.append(path)

    def protect() -> None:
        parent = rng.choice(dirs)
        name = rng.choice([".git", ".cody"])
        if not (parent / name).exists():
            (parent / name).mkdir()

    def gitify() -> None:
        path = rng.choice(dirs)
        if path != root:
            for name in ("objects", "refs"):
                (path / name).mkdir(exist_ok=True)
            (path / "HEAD").write_text("x")

    def remove() -> None:
        path = rng.choice(dirs)
        if path != root:
            shutil.rmtree(path, ignore_errors=True)
            dirs[:] = [d for d in dirs if d.exists()]

    def move() -> None:
        source, parent = rng.choice(dirs), rng.choice(dirs)
        target = parent / f"m{rng.randrange(1000)}"
        if source != root and not target.is_relative_to(source) and not target.exists():
            os.rename(source, target)
            dirs[:] = [d for d in [*dirs, target] if d.exists()]
            dirs[:] = list(dict.fromkeys(d for p in dirs for d in [p, *p.rglob("*")] if d.is_dir()))

    actions: list[Callable[[], None]] = [mkdir, mkdir, mkdir, protect, gitify, remove, move]
    same(root)
    for _ in range(150):
        for _ in range(rng.randrange(1, 4)):
            rng.choice(actions)()
        same(root)


def test_a_tree_too_large_to_watch_is_scanned_at_each_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(protected_watch, "_watch_budget", lambda: 3)
    root = tmp_path / "ws"
    for name in "abcdef":
        (root / name).mkdir(parents=True)
    assert same(root) == []
    (root / "c" / ".git").mkdir()
    assert same(root) == [root / "c" / ".git"]


def test_the_workspace_itself_replaced_is_walked_again(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "a").mkdir(parents=True)
    assert same(root) == []
    shutil.rmtree(root)
    (root / "b" / ".git").mkdir(parents=True)
    assert same(root) == [root / "b" / ".git"]
