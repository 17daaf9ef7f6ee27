"""`listDir` leaves git-ignored directories out (named in a note) unless `includeIgnored`."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cody_daemon.policy.sandbox import SandboxPolicy
from cody_daemon.tools.base import ToolContext, ToolResult
from cody_daemon.tools.list_dir import ListDirTool

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None and os.environ.get("CI") != "true", reason="git is not installed"
)


@pytest.fixture(autouse=True)
def isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No user or system git config; never find a repository above the test's directory."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))


def write(root: Path, rel: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x\n")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / ".gitignore").write_text("node_modules/\n.venv/\nbuild\n*.log\nsrc/gen/\n")
    for rel in [
        "node_modules/left-pad/index.js",
        ".venv/bin/python",
        "build/out.o",
        "debug.log",  # an ignored file, not a folder: still listed
        "src/main.py",
        "src/gen/parser.py",
        "docs/readme.md",
    ]:
        write(root, rel)
    return root


async def list_dir(cwd: Path, **args: Any) -> ToolResult:
    tool = ListDirTool()
    ctx = ToolContext(
        session_id="s", call_id="c", cwd=cwd, sandbox=SandboxPolicy.create("read-only", cwd)
    )
    return await tool.run(tool.parse({"dirPath": ".", **args}), ctx)


async def test_ignored_folders_are_left_out_and_named(repo: Path) -> None:
    result = await list_dir(repo)
    assert result.output.splitlines() == [
        f"{repo}/",
        "  .gitignore",
        "  debug.log",
        "  docs/",
        "    readme.md",
        "  src/",
        "    main.py",
        "",
        "[Not listed, git-ignored: .venv/, build/, node_modules/, src/gen/. Pass "
        "includeIgnored: true to list them.]",
    ]
    assert result.raw_output is not None
    assert result.raw_output["ignoredDirs"] == 4


async def test_include_ignored_lists_everything(repo: Path) -> None:
    result = await list_dir(repo, includeIgnored=True, depth=3)
    listed = result.output.splitlines()
    for entry in ("  node_modules/", "    left-pad/", "      index.js", "  .venv/", "    gen/"):
        assert entry in listed
    assert "git-ignored" not in result.output


async def test_listing_an_ignored_folder_itself_shows_its_contents(repo: Path) -> None:
    result = await list_dir(repo, dirPath="node_modules")
    assert result.output.splitlines() == [
        f"{repo}/node_modules/",
        "  left-pad/",
        "    index.js",
    ]


async def test_outside_a_git_work_tree_nothing_is_left_out(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    (plain / "build").mkdir(parents=True)
    (plain / ".gitignore").write_text("build/\n")
    result = await list_dir(plain)
    assert "  build/" in result.output.splitlines()


async def test_a_hostile_fsmonitor_in_the_repo_config_never_runs(repo: Path) -> None:
    marker = repo.parent / "fsmonitor-ran"
    subprocess.run(
        ["git", "config", "core.fsmonitor", f"touch {marker}; false"], cwd=repo, check=True
    )
    result = await list_dir(repo)
    assert "node_modules/" in result.output  # named in the note: git answered
    assert not marker.exists()
