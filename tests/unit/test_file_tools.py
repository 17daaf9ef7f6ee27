"""`readFile`, `writeFile`, `listDir` and the tool registry, on real temp directories."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
from cody_daemon.tools.base import Tool, ToolArgumentError, ToolContext, ToolError, ToolResult
from cody_daemon.tools.exec import ExecTool
from cody_daemon.tools.list_dir import MAX_ENTRIES, ListDirTool
from cody_daemon.tools.read_file import MAX_FILE_BYTES, MAX_LINE_CHARS, ReadFileTool
from cody_daemon.tools.registry import ToolRegistry
from cody_daemon.tools.write_file import WriteFileTool
from cody_protocol.content import DiffToolCallContent

from tests.support.workspaces import Dirs, ctx_for, workspace_and_outside


def outside_reason(tool: Any, args: Any, ctx: Any) -> str | None:
    """Why the call needs more than the sandbox (it then asks, or is refused under never)."""
    needs = tool.escalation(args, ctx)
    assert needs is None or needs[0] == "write"
    return needs[1] if needs is not None else None


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Dirs:
    return workspace_and_outside(tmp_path, monkeypatch)


async def call(tool: Tool[Any], raw: dict[str, object], ctx: ToolContext) -> ToolResult:
    return await tool.run(tool.parse(raw), ctx)


# --- readFile ------------------------------------------------------------------------------


async def test_read_numbers_lines(dirs: Dirs) -> None:
    (dirs.workspace / "a.txt").write_text("one\ntwo\r\n\tthree\n")
    result = await call(ReadFileTool(), {"filePath": "a.txt"}, ctx_for(dirs.workspace))
    assert result.output == "     1\tone\n     2\ttwo\n     3\t\tthree"
    assert result.success
    assert result.raw_output == {
        "path": str(dirs.workspace / "a.txt"),
        "totalLines": 3,
        "startLine": 1,
        "endLine": 3,
        "truncated": False,
    }


async def test_read_last_line_without_newline(dirs: Dirs) -> None:
    (dirs.workspace / "a.txt").write_text("one\ntwo")
    result = await call(ReadFileTool(), {"filePath": "a.txt"}, ctx_for(dirs.workspace))
    assert result.output == "     1\tone\n     2\ttwo"


async def test_read_pages_with_offset_and_limit(dirs: Dirs) -> None:
    (dirs.workspace / "n.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    ctx = ctx_for(dirs.workspace)
    result = await call(ReadFileTool(), {"filePath": "n.txt", "offset": 3, "limit": 4}, ctx)
    assert result.output.splitlines()[:4] == [
        "     3\tline 3",
        "     4\tline 4",
        "     5\tline 5",
        "     6\tline 6",
    ]
    assert "Showing lines 3-6 of 10. Use offset=7 to read more." in result.output
    result = await call(ReadFileTool(), {"filePath": "n.txt", "offset": 7}, ctx)
    assert result.output.splitlines()[-1] == "    10\tline 10"
    assert "offset=" not in result.output


async def test_read_default_limit_is_2000_lines(dirs: Dirs) -> None:
    (dirs.workspace / "big.txt").write_text("x\n" * 2500)
    result = await call(ReadFileTool(), {"filePath": "big.txt"}, ctx_for(dirs.workspace))
    assert "  2000\tx" in result.output
    assert "  2001\t" not in result.output
    assert "Use offset=2001" in result.output


async def test_read_cuts_long_lines(dirs: Dirs) -> None:
    (dirs.workspace / "long.txt").write_text("a" * (MAX_LINE_CHARS + 500) + "\nshort\n")
    result = await call(ReadFileTool(), {"filePath": "long.txt"}, ctx_for(dirs.workspace))
    first, second = result.output.splitlines()
    assert first.startswith("     1\t" + "a" * MAX_LINE_CHARS)
    assert "a" * (MAX_LINE_CHARS + 1) not in first
    assert "500 more characters" in first
    assert second == "     2\tshort"


async def test_read_outside_the_workspace_is_allowed(dirs: Dirs) -> None:
    ctx = ctx_for(dirs.workspace, "read-only")
    result = await call(ReadFileTool(), {"filePath": "../outside/secret.txt"}, ctx)
    assert result.output == "     1\toriginal"


@pytest.mark.parametrize(
    ("setup", "args", "message"),
    [
        (None, {"filePath": "missing.txt"}, "file not found: missing.txt"),
        ("dir", {"filePath": "d"}, "is a directory"),
        ("binary", {"filePath": "bin.dat"}, "binary file"),
        ("huge", {"filePath": "huge.txt"}, "too large"),
        ("small", {"filePath": "small.txt", "offset": 5}, "past the end"),
    ],
)
async def test_read_errors_are_clear(
    dirs: Dirs, setup: str | None, args: dict[str, object], message: str
) -> None:
    ws = dirs.workspace
    if setup == "dir":
        (ws / "d").mkdir()
    elif setup == "binary":
        (ws / "bin.dat").write_bytes(b"ELF\x00\x01\x02")
    elif setup == "huge":
        with open(ws / "huge.txt", "wb") as handle:
            handle.truncate(MAX_FILE_BYTES + 1)
    elif setup == "small":
        (ws / "small.txt").write_text("1\n2\n")
    with pytest.raises(ToolError, match=message):
        await call(ReadFileTool(), args, ctx_for(ws))


async def test_read_empty_file(dirs: Dirs) -> None:
    (dirs.workspace / "e.txt").write_text("")
    result = await call(ReadFileTool(), {"filePath": "e.txt"}, ctx_for(dirs.workspace))
    assert result.output == "(empty file)"


def test_read_file_metadata_and_schema() -> None:
    tool = ReadFileTool()
    assert (tool.name, tool.kind, tool.requires_approval) == ("readFile", "read", False)
    params = tool.spec().parameters
    assert set(params["properties"]) == {"filePath", "offset", "limit"}
    assert params["required"] == ["filePath"]
    assert tool.title(tool.parse({"filePath": "src/x.py"})) == "Read src/x.py"
    with pytest.raises(ToolArgumentError, match="offset"):
        tool.parse({"filePath": "x", "offset": 0})


# --- writeFile -----------------------------------------------------------------------------


async def test_write_creates_a_file_and_parents(dirs: Dirs) -> None:
    ctx = ctx_for(dirs.workspace)
    result = await call(WriteFileTool(), {"filePath": "a/b/new.txt", "content": "héllo\n"}, ctx)
    path = dirs.workspace / "a" / "b" / "new.txt"
    assert path.read_text() == "héllo\n"
    assert result.output == f"Wrote 7 bytes to {path} (created new file)"
    assert result.raw_output == {"path": str(path), "bytes": 7, "created": True}
    assert result.content == [
        DiffToolCallContent(path=str(path), old_text=None, new_text="héllo\n")
    ]
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~current_umask()


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


async def test_write_replaces_atomically_and_keeps_mode(dirs: Dirs) -> None:
    path = dirs.workspace / "run.sh"
    path.write_text("old\n")
    path.chmod(0o751)
    result = await call(
        WriteFileTool(), {"filePath": "run.sh", "content": "new\n"}, ctx_for(dirs.workspace)
    )
    assert path.read_text() == "new\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert "replaced existing file" in result.output
    assert result.content == [
        DiffToolCallContent(path=str(path), old_text="old\n", new_text="new\n")
    ]
    assert sorted(p.name for p in dirs.workspace.iterdir()) == ["run.sh"]  # no temp file left


async def test_write_preview_is_the_diff(dirs: Dirs) -> None:
    (dirs.workspace / "f.txt").write_text("before\n")
    tool = WriteFileTool()
    ctx = ctx_for(dirs.workspace)
    args = tool.parse({"filePath": "f.txt", "content": "after\n"})
    assert tool.preview(args, ctx) == [
        DiffToolCallContent(
            path=str(dirs.workspace / "f.txt"), old_text="before\n", new_text="after\n"
        )
    ]
    new = tool.parse({"filePath": "g.txt", "content": "x"})
    assert tool.preview(new, ctx) == [
        DiffToolCallContent(path=str(dirs.workspace / "g.txt"), old_text=None, new_text="x")
    ]
    assert (dirs.workspace / "f.txt").read_text() == "before\n"  # preview writes nothing
    assert not (dirs.workspace / "g.txt").exists()


@pytest.mark.parametrize(
    "file_path",
    ["../outside/secret.txt", "link/secret.txt", "file-link", "sub/../../outside/secret.txt"],
)
async def test_write_refuses_escapes(dirs: Dirs, file_path: str) -> None:
    (dirs.workspace / "link").symlink_to(dirs.outside)
    (dirs.workspace / "file-link").symlink_to(dirs.outside / "secret.txt")
    tool = WriteFileTool()
    ctx = ctx_for(dirs.workspace)
    args = tool.parse({"filePath": file_path, "content": "pwned\n"})
    reason = outside_reason(tool, args, ctx)
    assert reason is not None and "outside the writable roots" in reason
    with pytest.raises(ToolError, match="sandbox does not allow"):
        await tool.run(args, ctx)
    assert (dirs.outside / "secret.txt").read_text() == "original\n"


async def test_write_rechecks_the_sandbox_when_it_runs(dirs: Dirs) -> None:
    tool = WriteFileTool()
    ctx = ctx_for(dirs.workspace)
    args = tool.parse({"filePath": "later/secret.txt", "content": "pwned\n"})
    assert outside_reason(tool, args, ctx) is None  # approved while `later` did not exist
    (dirs.workspace / "later").symlink_to(dirs.outside)  # ... then the file system changed
    with pytest.raises(ToolError, match="outside the writable roots"):
        await tool.run(args, ctx)
    assert (dirs.outside / "secret.txt").read_text() == "original\n"


async def test_write_refuses_git_metadata_and_read_only(dirs: Dirs) -> None:
    (dirs.workspace / ".git").mkdir()
    tool = WriteFileTool()
    args = tool.parse({"filePath": ".git/config", "content": "x"})
    assert "git metadata" in (outside_reason(tool, args, ctx_for(dirs.workspace)) or "")
    ro = ctx_for(dirs.workspace, "read-only")
    args = tool.parse({"filePath": "a.txt", "content": "x"})
    assert "read-only" in (outside_reason(tool, args, ro) or "")
    with pytest.raises(ToolError, match="read-only"):
        await tool.run(args, ro)
    assert not (dirs.workspace / "a.txt").exists()


async def test_write_within_workspace_through_symlink_writes_the_target(dirs: Dirs) -> None:
    (dirs.workspace / "real.txt").write_text("old\n")
    (dirs.workspace / "alias.txt").symlink_to("real.txt")
    tool = WriteFileTool()
    ctx = ctx_for(dirs.workspace)
    args = tool.parse({"filePath": "alias.txt", "content": "new\n"})
    assert tool.grant_key(args, ctx) == ("paths", str(dirs.workspace / "real.txt"))
    await tool.run(args, ctx)
    assert (dirs.workspace / "real.txt").read_text() == "new\n"
    assert (dirs.workspace / "alias.txt").is_symlink()


async def test_write_to_a_directory_is_an_error(dirs: Dirs) -> None:
    (dirs.workspace / "d").mkdir()
    with pytest.raises(ToolError, match="is a directory"):
        await call(WriteFileTool(), {"filePath": "d", "content": "x"}, ctx_for(dirs.workspace))


def test_write_file_metadata_and_schema(dirs: Dirs) -> None:
    tool = WriteFileTool()
    assert (tool.name, tool.kind, tool.requires_approval) == ("writeFile", "edit", True)
    params = tool.spec().parameters
    assert set(params["properties"]) == {"filePath", "content"}
    assert sorted(params["required"]) == ["content", "filePath"]
    args = tool.parse({"filePath": "x/../y.txt", "content": ""})
    assert tool.title(args) == "Write x/../y.txt"
    assert tool.grant_key(args, ctx_for(dirs.workspace)) == ("paths", str(dirs.workspace / "y.txt"))


# --- listDir -------------------------------------------------------------------------------


def make_tree(root: Path, spec: dict[str, object]) -> None:
    for name, value in spec.items():
        if isinstance(value, dict):
            (root / name).mkdir()
            make_tree(root / name, value)
        else:
            (root / name).write_text(str(value))


async def test_list_dir_tree(dirs: Dirs) -> None:
    make_tree(
        dirs.workspace,
        {
            "src": {"b.py": "", "a.py": "", "pkg": {"deep.py": ""}},
            "README.md": "",
            ".git": {"HEAD": ""},
            ".hg": {},
            "Zeta.txt": "",
        },
    )
    result = await call(ListDirTool(), {"dirPath": "."}, ctx_for(dirs.workspace))
    assert result.output.splitlines() == [
        f"{dirs.workspace}/",
        "  README.md",
        "  src/",
        "    a.py",
        "    b.py",
        "    pkg/",
        "  Zeta.txt",
    ]
    deeper = await call(ListDirTool(), {"dirPath": "src", "depth": 2}, ctx_for(dirs.workspace))
    assert deeper.output.splitlines()[1:] == ["  a.py", "  b.py", "  pkg/", "    deep.py"]
    shallow = await call(ListDirTool(), {"dirPath": ".", "depth": 1}, ctx_for(dirs.workspace))
    assert shallow.output.splitlines()[1:] == ["  README.md", "  src/", "  Zeta.txt"]


async def test_list_dir_caps_entries_breadth_first(dirs: Dirs) -> None:
    big = dirs.workspace / "a-big"
    big.mkdir()
    for n in range(MAX_ENTRIES + 200):
        (big / f"f{n:05d}").touch()
    (dirs.workspace / "z-last.txt").touch()
    result = await call(ListDirTool(), {"dirPath": "."}, ctx_for(dirs.workspace))
    lines = result.output.splitlines()
    assert "  z-last.txt" in lines  # every top-level entry is shown
    entries = [line for line in lines[1:] if line.startswith("  ")]
    assert len(entries) == MAX_ENTRIES
    assert "at least 202 more not shown" in result.output
    assert result.raw_output == {
        "path": str(dirs.workspace),
        "entries": MAX_ENTRIES,
        "truncated": True,
    }


async def test_list_dir_shows_symlinks_without_following(dirs: Dirs) -> None:
    (dirs.workspace / "sub").mkdir()
    (dirs.workspace / "sub" / "inner.txt").touch()
    (dirs.workspace / "loop").symlink_to(".")
    (dirs.workspace / "to-sub").symlink_to("sub")
    result = await call(ListDirTool(), {"dirPath": ".", "depth": 5}, ctx_for(dirs.workspace))
    assert result.output.splitlines()[1:] == [
        "  loop/ -> .",
        "  sub/",
        "    inner.txt",
        "  to-sub/ -> sub",
    ]


async def test_list_dir_empty(dirs: Dirs) -> None:
    result = await call(ListDirTool(), {"dirPath": str(dirs.workspace)}, ctx_for(dirs.workspace))
    assert result.output.splitlines() == [f"{dirs.workspace}/", "  (empty)"]


async def test_list_dir_errors(dirs: Dirs) -> None:
    (dirs.workspace / "f.txt").touch()
    ctx = ctx_for(dirs.workspace)
    with pytest.raises(ToolError, match="directory not found: nope"):
        await call(ListDirTool(), {"dirPath": "nope"}, ctx)
    with pytest.raises(ToolError, match="is not a directory"):
        await call(ListDirTool(), {"dirPath": "f.txt"}, ctx)
    with pytest.raises(ToolArgumentError, match="depth"):
        ListDirTool().parse({"dirPath": ".", "depth": 6})


def test_list_dir_metadata_and_schema() -> None:
    tool = ListDirTool()
    assert (tool.name, tool.kind, tool.requires_approval) == ("listDir", "read", False)
    params = tool.spec().parameters
    assert set(params["properties"]) == {"dirPath", "depth", "includeIgnored"}
    assert params["required"] == ["dirPath"]
    assert params["properties"]["depth"]["maximum"] == 5


# --- registry ------------------------------------------------------------------------------


def test_builtin_registry() -> None:
    registry = ToolRegistry.builtin()
    # docs/protocol.md "Which tools ask": these need approval, the rest do not.
    asking = {"exec", "writeFile", "applyPatch", "webSearch", "perplexitySearch", "fetchUrl"}
    quiet = {"readFile", "listDir", "grepFiles", "fileSearch", "updatePlan"}
    assert set(registry.names()) == asking | quiet
    for name in registry.names():
        tool = registry.get(name)
        assert tool is not None and tool.requires_approval == (name in asking), name
    assert isinstance(registry.get("exec"), ExecTool)
    assert registry.get("nope") is None
    assert [spec.name for spec in registry.specs()] == registry.names()


def test_registry_filters_by_allowlist_in_order() -> None:
    registry = ToolRegistry.builtin()
    allowed = {"listDir", "readFile", "unknownTool"}
    assert [tool.name for tool in registry.tools(allowed)] == ["readFile", "listDir"]
    assert [spec.name for spec in registry.specs(["listDir"])] == ["listDir"]
    assert registry.tools([]) == []


def test_registry_rejects_duplicate_names() -> None:
    registry = ToolRegistry.builtin()
    with pytest.raises(ValueError, match="already registered"):
        registry.register(ReadFileTool())
