"""`applyPatch` as the engine and clients see it: spec, grant key, sandbox, preview, result,
and all-or-nothing commits (rollback when a write fails midway). Also the matching order
of `seek` and a few parser details the scenarios do not pin down."""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from cody_daemon.tools.apply_patch import ApplyPatchTool
from cody_daemon.tools.base import ToolArgumentError, ToolError
from cody_daemon.tools.patch import (
    FileChange,
    FileOp,
    PatchError,
    PatchParseError,
    commit_changes,
    parse_patch,
    plan_changes,
    seek,
)
from cody_protocol.content import ContentToolCallContent, DiffToolCallContent, TextContent

from tests.support.workspaces import Dirs, ctx_for, workspace_and_outside

TOOL = ApplyPatchTool()


def outside_reason(tool: Any, args: Any, ctx: Any) -> str | None:
    """Why the call needs more than the sandbox (it then asks, or is refused under never)."""
    needs = tool.escalation(args, ctx)
    assert needs is None or needs[0] == "write"
    return needs[1] if needs is not None else None


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Dirs:
    return workspace_and_outside(tmp_path, monkeypatch)


def patch(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"]) + "\n"


def tree(root: Path) -> dict[str, bytes | None]:
    """Every file (bytes) and directory (None) under root."""
    result: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            result[os.path.relpath(Path(dirpath) / name, root)] = None
        for name in filenames:
            path = Path(dirpath) / name
            result[os.path.relpath(path, root)] = path.read_bytes()
    return result


MIXED = patch(
    "*** Add File: new/added.txt",
    "+fresh",
    "*** Update File: edit.txt",
    "@@",
    "-before",
    "+after",
    "*** Delete File: gone.txt",
    "*** Update File: src.txt",
    "*** Move to: dst/moved.txt",
    "@@",
    "-m",
    "+M",
)


def seed_mixed(workspace: Path) -> None:
    (workspace / "edit.txt").write_text("before\n")
    (workspace / "gone.txt").write_text("bye\n")
    (workspace / "src.txt").write_text("m\n")


# --- spec, arguments, title ------------------------------------------------------------------


def test_spec_advertises_patch_argument() -> None:
    spec = TOOL.spec()
    assert spec.name == "applyPatch"
    assert spec.parameters["required"] == ["patch"]
    assert spec.parameters["additionalProperties"] is False
    assert "*** Begin Patch" in spec.description
    assert TOOL.kind == "edit"
    assert TOOL.requires_approval


def test_bad_arguments_are_reported() -> None:
    with pytest.raises(ToolArgumentError, match="patch"):
        TOOL.parse({})
    with pytest.raises(ToolArgumentError, match="extra"):
        TOOL.parse({"patch": "x", "extra": 1})


def test_title_names_the_files() -> None:
    assert TOOL.title(TOOL.parse({"patch": MIXED})) == (
        "Patch new/added.txt, edit.txt, gone.txt and 1 more"
    )
    assert TOOL.title(TOOL.parse({"patch": "nonsense"})) == "Apply patch"


# --- grant key and sandbox -------------------------------------------------------------------


def test_grant_key_is_sorted_real_paths_including_move_targets(dirs: Dirs) -> None:
    ws = dirs.workspace
    (ws / "real").mkdir()
    (ws / "alias").symlink_to(ws / "real")
    text = patch(
        "*** Update File: alias/a.txt",
        "*** Move to: b/c.txt",
        "*** Delete File: ./z.txt",
        "*** Add File: real/../m.txt",
        "+x",
    )
    key = TOOL.grant_key(TOOL.parse({"patch": text}), ctx_for(ws))
    assert key == (
        "paths",
        *sorted(str(p) for p in [ws / "real/a.txt", ws / "b/c.txt", ws / "z.txt", ws / "m.txt"]),
    )


def test_grant_key_of_an_unparseable_patch_is_the_canonical_arguments(dirs: Dirs) -> None:
    key = TOOL.grant_key(TOOL.parse({"patch": "not a patch"}), ctx_for(dirs.workspace))
    assert key[:2] == ("tool", "applyPatch")


def test_escalation_allows_workspace_paths(dirs: Dirs) -> None:
    args = TOOL.parse({"patch": MIXED})
    assert outside_reason(TOOL, args, ctx_for(dirs.workspace)) is None


def test_escalation_refuses_a_move_target_outside(dirs: Dirs) -> None:
    text = patch("*** Update File: a.txt", f"*** Move to: {dirs.outside}/a.txt")
    reason = outside_reason(TOOL, TOOL.parse({"patch": text}), ctx_for(dirs.workspace))
    assert reason is not None
    assert f"{dirs.outside}/a.txt is outside the writable roots" in reason


def test_escalation_refuses_everything_when_read_only(dirs: Dirs) -> None:
    reason = outside_reason(
        TOOL, TOOL.parse({"patch": MIXED}), ctx_for(dirs.workspace, "read-only")
    )
    assert reason is not None
    assert reason.endswith(": the sandbox is read-only: no file may be written")


def test_escalation_leaves_parse_errors_to_run(dirs: Dirs) -> None:
    assert outside_reason(TOOL, TOOL.parse({"patch": "junk"}), ctx_for(dirs.workspace)) is None


async def test_run_rechecks_the_sandbox(dirs: Dirs) -> None:
    """A directory swapped for a symlink after approval cannot carry the write outside."""
    ws = dirs.workspace
    (ws / "sub").mkdir()
    ctx = ctx_for(ws)
    args = TOOL.parse({"patch": patch("*** Add File: sub/new.txt", "+x")})
    assert outside_reason(TOOL, args, ctx) is None
    (ws / "sub").rmdir()
    (ws / "sub").symlink_to(dirs.outside)
    with pytest.raises(ToolError, match="the sandbox does not allow writing .*outside/new.txt"):
        await TOOL.run(args, ctx)
    assert sorted(os.listdir(dirs.outside)) == ["secret.txt"]


async def test_full_access_allows_absolute_paths_outside(dirs: Dirs) -> None:
    text = patch(f"*** Update File: {dirs.outside}/secret.txt", "@@", "-original", "+changed")
    result = await TOOL.run(
        TOOL.parse({"patch": text}), ctx_for(dirs.workspace, "danger-full-access")
    )
    assert (dirs.outside / "secret.txt").read_text() == "changed\n"
    assert result.output.endswith(f"M {dirs.outside}/secret.txt")


# --- preview and result ----------------------------------------------------------------------


async def test_preview_shows_each_file_and_matches_the_result(dirs: Dirs) -> None:
    ws = dirs.workspace
    seed_mixed(ws)
    ctx = ctx_for(ws)
    args = TOOL.parse({"patch": MIXED})
    before = tree(ws)
    preview = TOOL.preview(args, ctx)
    assert tree(ws) == before, "the preview must not write"
    assert preview == [
        DiffToolCallContent(path=str(ws / "new/added.txt"), old_text=None, new_text="fresh\n"),
        DiffToolCallContent(path=str(ws / "edit.txt"), old_text="before\n", new_text="after\n"),
        DiffToolCallContent(path=str(ws / "gone.txt"), old_text="bye\n", new_text=""),
        DiffToolCallContent(path=str(ws / "dst/moved.txt"), old_text="m\n", new_text="M\n"),
    ]
    result = await TOOL.run(args, ctx)
    assert result.content == preview
    assert result.success
    assert result.output == (
        "Success. Updated the following files:\n"
        "A new/added.txt\nM edit.txt\nD gone.txt\nM dst/moved.txt"
    )
    assert result.raw_output == {
        "files": [
            {"path": str(ws / "new/added.txt"), "op": "add"},
            {"path": str(ws / "edit.txt"), "op": "update"},
            {"path": str(ws / "gone.txt"), "op": "delete"},
            {"path": str(ws / "dst/moved.txt"), "op": "move", "from": str(ws / "src.txt")},
        ]
    }
    assert tree(ws) == {
        "new": None,
        "new/added.txt": b"fresh\n",
        "edit.txt": b"after\n",
        "dst": None,
        "dst/moved.txt": b"M\n",
    }


def test_diff_content_on_the_wire(dirs: Dirs) -> None:
    (dirs.workspace / "a.txt").write_text("x\n")
    args = TOOL.parse({"patch": patch("*** Update File: a.txt", "@@", "-x", "+y")})
    [diff] = TOOL.preview(args, ctx_for(dirs.workspace))
    assert diff.model_dump(mode="json", by_alias=True) == {
        "type": "diff",
        "path": str(dirs.workspace / "a.txt"),
        "oldText": "x\n",
        "newText": "y\n",
    }


def test_preview_of_a_patch_that_does_not_apply_explains_why(dirs: Dirs) -> None:
    (dirs.workspace / "a.txt").write_text("x\n")
    args = TOOL.parse({"patch": patch("*** Update File: a.txt", "@@", "-nope", "+y")})
    [content] = TOOL.preview(args, ctx_for(dirs.workspace))
    assert isinstance(content, ContentToolCallContent)
    assert isinstance(content.content, TextContent)
    assert content.content.text.startswith("This patch cannot be applied; nothing would change.")
    assert "a.txt: hunk 1 of 1 (patch line 3) did not apply" in content.content.text


def test_preview_of_an_unparseable_patch(dirs: Dirs) -> None:
    [content] = TOOL.preview(TOOL.parse({"patch": "oops"}), ctx_for(dirs.workspace))
    assert isinstance(content, ContentToolCallContent)
    assert isinstance(content.content, TextContent)
    assert "expected '*** Begin Patch'" in content.content.text


async def test_modes_are_kept_by_updates_and_moves(dirs: Dirs) -> None:
    ws = dirs.workspace
    for name in ("run.sh", "tool.sh"):
        (ws / name).write_text("echo hi\n")
        (ws / name).chmod(0o751)
    text = patch(
        "*** Update File: run.sh",
        "@@",
        "-echo hi",
        "+echo hello",
        "*** Update File: tool.sh",
        "*** Move to: bin/tool.sh",
    )
    await TOOL.run(TOOL.parse({"patch": text}), ctx_for(ws))
    assert stat.S_IMODE((ws / "run.sh").stat().st_mode) == 0o751
    assert stat.S_IMODE((ws / "bin/tool.sh").stat().st_mode) == 0o751
    assert (ws / "run.sh").read_text() == "echo hello\n"


async def test_pure_move_keeps_non_utf8_bytes(dirs: Dirs) -> None:
    data = b"\xff\xfe binary \x00 data"
    (dirs.workspace / "blob.bin").write_bytes(data)
    text = patch("*** Update File: blob.bin", "*** Move to: blob2.bin")
    await TOOL.run(TOOL.parse({"patch": text}), ctx_for(dirs.workspace))
    assert (dirs.workspace / "blob2.bin").read_bytes() == data
    assert not (dirs.workspace / "blob.bin").exists()


async def test_hunks_on_non_utf8_file_are_refused(dirs: Dirs) -> None:
    (dirs.workspace / "blob.bin").write_bytes(b"\xff\n")
    text = patch("*** Update File: blob.bin", "@@", "-x", "+y")
    with pytest.raises(ToolError, match="cannot update blob.bin: it is not UTF-8 text"):
        await TOOL.run(TOOL.parse({"patch": text}), ctx_for(dirs.workspace))


async def test_deleting_a_symlink_is_refused(dirs: Dirs) -> None:
    (dirs.workspace / "target.txt").write_text("t\n")
    (dirs.workspace / "link.txt").symlink_to(dirs.workspace / "target.txt")
    text = patch("*** Delete File: link.txt")
    with pytest.raises(ToolError, match="cannot delete link.txt: it is a symbolic link"):
        await TOOL.run(TOOL.parse({"patch": text}), ctx_for(dirs.workspace))
    assert (dirs.workspace / "target.txt").read_text() == "t\n"


async def test_updating_through_a_symlink_edits_the_target(dirs: Dirs) -> None:
    (dirs.workspace / "target.txt").write_text("t\n")
    (dirs.workspace / "link.txt").symlink_to("target.txt")
    text = patch("*** Update File: link.txt", "@@", "-t", "+u")
    await TOOL.run(TOOL.parse({"patch": text}), ctx_for(dirs.workspace))
    assert (dirs.workspace / "link.txt").is_symlink()
    assert (dirs.workspace / "target.txt").read_text() == "u\n"


# --- all or nothing --------------------------------------------------------------------------


async def test_write_failure_midway_rolls_back_everything(
    dirs: Dirs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last operation's target turns into a directory after planning, so its
    `os.replace` fails after the add, update, delete and move before it were done."""
    ws = dirs.workspace
    seed_mixed(ws)
    (ws / "last.txt").write_text("last\n")
    text = MIXED.replace(
        "*** End Patch", "*** Update File: last.txt\n@@\n-last\n+LAST\n*** End Patch"
    )

    def plan_then_sabotage(ops: Sequence[FileOp], cwd: Path) -> list[FileChange]:
        changes = plan_changes(ops, cwd)
        (ws / "last.txt").unlink()
        (ws / "last.txt").mkdir()
        return changes

    monkeypatch.setattr("cody_daemon.tools.apply_patch.plan_changes", plan_then_sabotage)
    before = tree(ws)
    before["last.txt"] = None  # the sabotage, not the patch
    with pytest.raises(ToolError) as caught:
        await TOOL.run(TOOL.parse({"patch": text}), ctx_for(ws))
    assert caught.value.message.startswith("could not write last.txt: Is a directory")
    assert "the files already changed were restored, so no change was made" in caught.value.message
    assert "WARNING" not in caught.value.message
    assert tree(ws) == before, "no temp file, backup, new file or new directory may remain"


def test_commit_rolls_back_when_an_added_file_target_is_a_directory(dirs: Dirs) -> None:
    ws = dirs.workspace
    seed_mixed(ws)
    (ws / "edit.txt").chmod(0o640)
    changes = plan_changes(parse_patch(MIXED.replace("new/added.txt", "added.txt")), ws)
    order = [change.kind for change in changes]
    assert order == ["add", "update", "delete", "move"]
    # Put the failing step last by moving the add to the end, then block its target.
    changes = [*changes[1:], changes[0]]
    (ws / "added.txt").mkdir()
    before = tree(ws)
    with pytest.raises(PatchError, match=r"could not create added.txt: Is a directory"):
        commit_changes(changes)
    assert tree(ws) == before
    assert stat.S_IMODE((ws / "edit.txt").stat().st_mode) == 0o640


def test_plan_reads_only(dirs: Dirs) -> None:
    seed_mixed(dirs.workspace)
    before = tree(dirs.workspace)
    changes = plan_changes(parse_patch(MIXED), dirs.workspace)
    assert [c.kind for c in changes] == ["add", "update", "delete", "move"]
    assert tree(dirs.workspace) == before


# --- matching order and parser details -------------------------------------------------------


def test_seek_prefers_a_stricter_pass_over_an_earlier_position() -> None:
    lines = ["  foo", "foo  ", "foo"]
    assert seek(lines, ["foo"], 0) == (2, "exact")
    assert seek(lines[:2], ["foo"], 0) == (1, "ignoring trailing whitespace")
    assert seek(lines[:1], ["foo"], 0) == (0, "ignoring leading and trailing whitespace")
    assert seek(["it\u2019s \u2014 ok"], ["it's - ok"], 0) == (0, "with normalised punctuation")
    assert seek(lines, ["bar"], 0) is None


def test_seek_searches_forward_and_anchors_end_of_file() -> None:
    lines = ["x", "y", "x", "y", "", ""]
    assert seek(lines, ["x", "y"], 1) == (2, "exact")
    assert seek(lines, ["x", "y"], 0, end_of_file=True) == (2, "exact")
    assert seek(lines, ["x"], 0, end_of_file=True) is None
    assert seek(lines, ["x", "y"], 3, end_of_file=True) is None


def test_parse_keeps_line_numbers_of_the_original_text() -> None:
    text = "\n\n<<'EOF'\n*** Begin Patch\n*** Update File: a\n@@ ctx\n-x\n+y\n*** End Patch\nEOF\n"
    [op] = parse_patch(text)
    assert op.line == 5
    assert op.hunks[0].line == 6  # type: ignore[union-attr]
    with pytest.raises(PatchParseError, match="line 6: a hunk of a has no lines"):
        parse_patch("\n\n<<'EOF'\n*** Begin Patch\n*** Update File: a\n@@\n*** End Patch\nEOF")


def test_parse_does_not_split_on_unicode_line_separators() -> None:
    [op] = parse_patch(patch("*** Add File: a", "+one\u2028still one\r"))
    assert op.contents == "one\u2028still one\n"  # type: ignore[union-attr]


def test_parse_collects_several_context_lines() -> None:
    [op] = parse_patch(patch("*** Update File: a", "@@ class A", "@@   def f():", " x"))
    assert op.hunks[0].contexts == ("class A", "  def f():")  # type: ignore[union-attr]


async def test_a_path_the_user_approved_is_written_outside_and_no_other(dirs: Dirs) -> None:
    """`write_anywhere`: the real paths approved outside the sandbox may be written; a path
    that resolves elsewhere at run time (a directory swapped for a link) is still refused."""
    ws = dirs.workspace
    target = dirs.outside / "approved.txt"
    args = TOOL.parse({"patch": patch(f"*** Add File: {target}", "+ok")})
    ctx = ctx_for(ws)
    assert outside_reason(TOOL, args, ctx) is not None
    ctx.write_anywhere = frozenset({target})
    await TOOL.run(args, ctx)
    assert target.read_text() == "ok\n"
    (ws / "sub").symlink_to(dirs.outside)
    other = TOOL.parse({"patch": patch("*** Add File: sub/other.txt", "+no")})
    with pytest.raises(ToolError, match="the sandbox does not allow writing"):
        await TOOL.run(other, ctx)
    assert not (dirs.outside / "other.txt").exists()
