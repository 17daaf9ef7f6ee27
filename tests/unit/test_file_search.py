"""`fileSearch`: candidates from `rg --files` on real trees, and fzf-like ranking."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cody_daemon.policy.sandbox import SandboxPolicy
from cody_daemon.tools import file_search
from cody_daemon.tools.base import ToolArgumentError, ToolContext, ToolError, ToolResult
from cody_daemon.tools.file_search import FileSearchTool, rank, score

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None and os.environ.get("CI") != "true", reason="git is not installed"
)


def write(root: Path, rel: str, text: str = "x\n") -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(autouse=True)
def isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No user or system git config; never find a repository above the test's directory."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    write(root, ".gitignore", "*.log\nbuild/\n")
    for rel in [
        "src/main.py",
        "docs/domain_notes.md",
        "file_search.py",
        "files/s.txt",
        ".github/ci.yml",
        "deleted.py",
        "FileSearch.ts",
    ]:
        write(root, rel)
    git(root, "add", ".")
    write(root, "tracked.log")
    git(root, "add", "-f", "tracked.log")  # tracked although ignored: ignored all the same
    (root / "deleted.py").unlink()  # tracked but gone from disk: not listed
    write(root, "notes/todo.md")  # untracked
    write(root, "untracked.py")
    write(root, "debug.log")  # ignored
    write(root, "build/out.py")  # in an ignored directory
    return root


def ctx_for(cwd: Path) -> ToolContext:
    return ToolContext(
        session_id="s", call_id="c", cwd=cwd, sandbox=SandboxPolicy.create("read-only", cwd)
    )


async def search(cwd: Path, **args: Any) -> ToolResult:
    tool = FileSearchTool()
    return await tool.run(tool.parse(args), ctx_for(cwd))


async def test_candidates_are_the_files_git_does_not_ignore(repo: Path) -> None:
    result = await search(repo, query=".", limit=200)  # every path here has a dot
    assert sorted(result.output.splitlines()) == [
        ".github/ci.yml",  # hidden files are candidates; .git/ never is
        ".gitignore",
        "FileSearch.ts",
        "docs/domain_notes.md",
        "file_search.py",
        "files/s.txt",
        "notes/todo.md",
        "src/main.py",
        "untracked.py",
    ]
    assert result.raw_output is not None
    assert result.raw_output["candidatesCapped"] is False


async def test_include_ignored_lists_ignored_files_but_never_git_metadata(repo: Path) -> None:
    result = await search(repo, query=".", limit=200, includeIgnored=True)
    listed = result.output.splitlines()
    assert {"debug.log", "build/out.py", "tracked.log"} <= set(listed)
    assert not [path for path in listed if path.startswith(".git/")]
    schema = FileSearchTool().spec().parameters
    assert schema["properties"]["includeIgnored"]["type"] == "boolean"


async def test_paths_are_relative_to_a_subdirectory_cwd(repo: Path) -> None:
    result = await search(repo / "src", query="main")
    assert result.output == "main.py"


async def test_file_name_matches_beat_directory_matches(repo: Path) -> None:
    # `fs` hits word starts in both: f(ile) + s(earch) after `_`, and f(iles) + s after `/`.
    # Both alignments score the same, but in file_search.py both characters are in the file
    # name; fzf's path scheme prefers that too (its `pathname` tiebreak), so it comes first,
    # even though files/s.txt is shorter.
    lines = (await search(repo, query="fs")).output.splitlines()
    assert lines.index("file_search.py") < lines.index("files/s.txt")


async def test_word_start_run_beats_scattered_match(repo: Path) -> None:
    lines = (await search(repo, query="main")).output.splitlines()
    assert lines[0] == "src/main.py"
    assert lines.index("src/main.py") < lines.index("docs/domain_notes.md")


async def test_smart_case(repo: Path) -> None:
    insensitive = (await search(repo, query="filesearch")).output.splitlines()
    assert set(insensitive) == {"FileSearch.ts", "file_search.py"}
    assert (await search(repo, query="FS")).output == "FileSearch.ts"  # uppercase: exact case


async def test_limit_and_notes(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = await search(repo, query="s", limit=2)
    lines = result.output.splitlines()
    assert len(lines) == 4
    assert lines[2:] == [
        "",
        "[6 files matched; showing the best 2. Refine the query (or raise limit) to see others.]",
    ]
    assert (await search(repo, query="zzz")).output == "No files matched."
    monkeypatch.setattr(file_search, "MAX_CANDIDATES", 3)
    capped = await search(repo, query=".", limit=200)
    assert len(capped.output.splitlines()) == 5
    assert capped.output.endswith(
        "[Only the first 3 files were considered; results may be incomplete.]"
    )
    assert capped.raw_output is not None
    assert capped.raw_output["candidatesCapped"] is True


async def test_outside_git_ignore_files_still_apply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "plain"
    for rel in ["a/main.py", "a/.gitignore", "a/gen/main.py", ".hidden/main.py", "main.txt"]:
        write(root, rel, "gen/\n" if rel.endswith(".gitignore") else "x\n")
    (root / "link_main.py").symlink_to(root / "main.txt")  # symlinks are not followed
    result = await search(root, query="main")
    assert result.output.splitlines() == ["main.txt", "a/main.py", ".hidden/main.py"]
    monkeypatch.setattr(file_search, "MAX_CANDIDATES", 1)
    assert "[Only the first 1 files were considered" in (await search(root, query="m")).output


async def test_without_ripgrep_the_error_says_so(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODY_RG", "none")
    with pytest.raises(ToolError, match="ripgrep is not available: disabled by CODY_RG=none"):
        await search(repo, query="main")


def test_arguments_and_title() -> None:
    tool = FileSearchTool()
    assert tool.title(tool.parse({"query": "fs"})) == "Find files matching fs"
    assert tool.kind == "search"
    assert tool.requires_approval is False
    with pytest.raises(ToolArgumentError):
        tool.parse({"query": "x", "limit": 201})
    with pytest.raises(ToolArgumentError):
        tool.parse({"query": ""})


# --- scoring ---------------------------------------------------------------------------


def test_score_requires_an_in_order_subsequence() -> None:
    assert score("fsp", "file_search.py") is not None
    assert score("psf", "file_search.py") is None
    assert score("fs", "FILE_SEARCH.PY") is not None  # lowercase query: any case
    assert score("Fs", "file_search.py") is None  # uppercase in query: case-sensitive


def test_score_bonuses() -> None:
    def better(query: str, winner: str, loser: str) -> None:
        won, lost = score(query, winner), score(query, loser)
        assert won is not None and lost is not None
        assert won > lost, (query, winner, won, loser, lost)

    better("fs", "file_search.py", "files/s.txt")  # matches in the file name
    better("util", "src/lib/util.py", "utils/helpers.py")
    better("abc", "abc.txt", "a_b_c.txt")  # a consecutive run beats scattered boundaries
    better("ab", "x/a_b.txt", "x/cab.txt")  # word starts beat mid-word letters
    better("gf", "getFile.ts", "gulf.ts")  # camelCase boundary
    better("main", "src/main.py", "docs/domain_notes.md")


def test_rank_orders_by_score_then_length_then_path() -> None:
    ranked = rank(["main"], ["src/lib/main_test.py", "z/main.py", "a/main.py", "src/main.py"])
    assert [path for _, path in ranked] == [
        "a/main.py",  # equal scores: the shorter path, then the path, decides
        "z/main.py",
        "src/main.py",
        "src/lib/main_test.py",
    ]
    assert ranked[0][0] == ranked[-1][0]
    assert rank(["main", "py"], ["src/main.py", "src/main.rs"]) == [
        (score("main py", "src/main.py"), "src/main.py")
    ]
