"""engine/project_docs.py: what is read, in which order, and what is refused."""

from __future__ import annotations

import os
from pathlib import Path

from cody_daemon.engine.project_docs import global_candidates, project_root, read_project_docs


def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    return root


def test_the_git_root_bounds_the_walk_and_without_one_only_the_cwd_counts(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("ABOVE\n")
    root = repo(tmp_path)
    deep = root / "a" / "b"
    deep.mkdir(parents=True)
    (root / "a" / "AGENTS.md").write_text("A\n")
    assert project_root(deep) == root
    docs = read_project_docs(deep)
    assert "ABOVE" not in docs.text and "A\n" in docs.text

    plain = tmp_path / "plain" / "x"
    plain.mkdir(parents=True)
    (tmp_path / "plain" / "AGENTS.md").write_text("PARENT\n")
    (plain / "AGENTS.md").write_text("HERE\n")
    assert project_root(plain) == plain
    text = read_project_docs(plain).text
    assert "HERE" in text and "PARENT" not in text


def test_an_empty_override_silences_the_directory(tmp_path: Path) -> None:
    root = repo(tmp_path)
    (root / "AGENTS.override.md").write_text("")
    (root / "AGENTS.md").write_text("SILENCED\n")
    assert read_project_docs(root).files == ()


def test_the_first_global_candidate_that_exists_wins(tmp_path: Path) -> None:
    cody, codex, claude = (tmp_path / n for n in ("cody", "codex", "claude"))
    for directory in (cody, codex, claude):
        directory.mkdir()
    (codex / "AGENTS.override.md").write_text("CODEX-OVERRIDE\n")
    (codex / "AGENTS.md").write_text("CODEX\n")
    (claude / "CLAUDE.md").write_text("CLAUDE\n")
    root = repo(tmp_path)
    text = read_project_docs(root, global_paths=global_candidates(cody, codex, claude)).text
    assert "CODEX-OVERRIDE" in text and "CODEX\n" not in text and "CLAUDE" not in text
    (cody / "AGENTS.md").write_text("CODY\n")
    text = read_project_docs(root, global_paths=global_candidates(cody, codex, claude)).text
    assert "CODY" in text and "CODEX" not in text


def test_a_global_file_may_be_a_symlink_but_only_to_a_regular_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    dotfiles = tmp_path / "dotfiles.md"
    dotfiles.write_text("DOTFILES\n")
    (home / "AGENTS.md").symlink_to(dotfiles)
    root = repo(tmp_path)
    assert "DOTFILES" in read_project_docs(root, global_paths=[home / "AGENTS.md"]).text
    (home / "AGENTS.md").unlink()
    (home / "AGENTS.md").symlink_to("/dev/zero")
    docs = read_project_docs(root, global_paths=[home / "AGENTS.md"])
    assert docs.files[0].skipped == "not a regular file"


def test_a_cut_never_splits_a_character_and_zero_reads_nothing(tmp_path: Path) -> None:
    root = repo(tmp_path)
    (root / "AGENTS.md").write_text("é" * 10)  # 2 bytes each
    docs = read_project_docs(root, max_bytes=5)
    [doc] = docs.files
    assert doc.truncated and doc.bytes == 4
    assert "éé\n[Cody: cut here" in docs.text
    assert read_project_docs(root, max_bytes=0).files == ()


def test_files_past_the_cap_are_listed_as_left_out(tmp_path: Path) -> None:
    root = repo(tmp_path)
    sub = root / "sub"
    sub.mkdir()
    (root / "AGENTS.md").write_text("x" * 10)
    (sub / "AGENTS.md").write_text("LATER\n")
    docs = read_project_docs(sub, max_bytes=10)
    assert [(d.bytes, d.truncated) for d in docs.files] == [(10, False), (0, True)]
    assert "LATER" not in docs.text and "left out: project_doc_max_bytes" in docs.text


def test_unreadable_and_non_utf8_files_are_skipped_with_a_note(tmp_path: Path) -> None:
    root = repo(tmp_path)
    (root / "AGENTS.md").write_bytes("caf\xe9".encode("latin-1"))
    sub = root / "sub"
    sub.mkdir()
    (sub / "AGENTS.md").mkdir()  # a directory by that name
    docs = read_project_docs(sub)
    assert [d.skipped for d in docs.files] == ["not UTF-8 text", "not a regular file"]
    assert "skipped: not UTF-8 text" in docs.text


def test_a_fifo_reached_through_an_inside_symlink_is_never_opened_for_reading(
    tmp_path: Path,
) -> None:
    root = repo(tmp_path)
    os.mkfifo(root / "pipe")
    (root / "AGENTS.md").symlink_to(root / "pipe")
    docs = read_project_docs(root)  # would block forever if the FIFO were read
    assert docs.files[0].skipped == "not a regular file"


def test_fallback_names_are_read_in_order_after_agents_md(tmp_path: Path) -> None:
    root = repo(tmp_path)
    (root / "GUIDE.md").write_text("GUIDE\n")
    (root / "CLAUDE.md").write_text("CLAUDE\n")
    text = read_project_docs(root, fallbacks=["GUIDE.md", "CLAUDE.md"]).text
    assert "GUIDE" in text and "CLAUDE" not in text
    (root / "AGENTS.md").write_text("AGENTS\n")
    text = read_project_docs(root, fallbacks=["GUIDE.md"]).text
    assert "AGENTS" in text and "GUIDE" not in text


def test_a_directory_other_users_can_write_is_never_the_project_root(tmp_path: Path) -> None:
    """Regression: the Codex CLI's sandbox leaves an empty `/tmp/.git` mount point behind, and
    any local user can make one: every session under /tmp then took /tmp as its project root
    and read the /tmp/AGENTS.md another user wrote. A world-writable directory is never a
    root, and an instruction file in one is not read."""
    shared = tmp_path / "shared"
    (shared / ".git").mkdir(parents=True)
    (shared / "AGENTS.md").write_text("INJECTED\n")
    shared.chmod(0o1777)
    project = shared / "mine" / "sub"
    project.mkdir(parents=True)
    (project / "AGENTS.md").write_text("MINE\n")
    assert project_root(project) == project
    docs = read_project_docs(project)
    assert "MINE" in docs.text and "INJECTED" not in docs.text

    (shared / "mine" / ".git").mkdir()
    writable_here = shared / "open"
    writable_here.mkdir()
    (writable_here / "AGENTS.md").write_text("ALSO-INJECTED\n")
    writable_here.chmod(0o777)
    docs = read_project_docs(writable_here)
    assert "ALSO-INJECTED" not in docs.text
    assert [doc.skipped for doc in docs.files] == ["in a directory other users can write"]
