"""Data-driven `applyPatch` scenarios from tests/fixtures/patches/NNN_name/.

Each scenario folder holds `input/` (the workspace before; may be absent), `patch.txt`, and
either `expected/` (the workspace after: the exact file set and bytes; a deleted file is
absent) or `error.txt` (a substring the error must contain; the workspace, and the outside
directory, must then be exactly as before). Optional: `links.txt` (`name -> target` symlinks
created in the workspace before the run) and `output.txt` (the exact text the model gets).

`${WORKSPACE}` and `${OUTSIDE}` in patch.txt and links.txt become the workspace and a
directory beside it that the sandbox does not allow (it holds `secret.txt`). The sandbox is
the real `workspace-write` policy; its temp root is moved to a separate directory so that
paths outside the workspace are really outside every writable root.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from cody_daemon.policy.sandbox import SandboxPolicy
from cody_daemon.tools.apply_patch import ApplyPatchTool
from cody_daemon.tools.base import ToolContext, ToolError
from cody_protocol.content import DiffToolCallContent

from tests.support.workspaces import workspace_and_outside

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "patches"
SCENARIOS = sorted(path.name for path in FIXTURES.iterdir() if path.is_dir())

Tree = dict[str, bytes | str]
"""Relative path -> file bytes, `"dir"` for a directory, or `"-> target"` for a symlink."""


def snapshot(root: Path, *, with_dirs: bool) -> Tree:
    tree: Tree = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                tree[rel] = "-> " + os.readlink(path)
            elif path.is_dir():
                if with_dirs:
                    tree[rel] = "dir"
            else:
                tree[rel] = path.read_bytes()
    return tree


def substitute(text: str, workspace: Path, outside: Path) -> str:
    return text.replace("${WORKSPACE}", str(workspace)).replace("${OUTSIDE}", str(outside))


def make_links(scenario: Path, workspace: Path, outside: Path) -> dict[str, str]:
    links: dict[str, str] = {}
    spec = scenario / "links.txt"
    if spec.exists():
        for line in substitute(spec.read_text(), workspace, outside).splitlines():
            if line.strip():
                name, target = (part.strip() for part in line.split("->", 1))
                (workspace / name).symlink_to(target)
                links[name] = "-> " + target
    return links


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    made = workspace_and_outside(tmp_path, monkeypatch)
    (made.outside / "secret.txt").write_text("original secret\n")
    made.workspace.rmdir()  # each scenario brings its own (copied from its input/)
    return tmp_path / "ws", made.outside


def test_there_are_enough_scenarios() -> None:
    assert len(SCENARIOS) >= 25
    for name in SCENARIOS:
        folder = FIXTURES / name
        assert (folder / "patch.txt").is_file(), name
        assert (folder / "expected").is_dir() != (folder / "error.txt").is_file(), name


@pytest.mark.parametrize("name", SCENARIOS)
async def test_scenario(name: str, dirs: tuple[Path, Path]) -> None:
    scenario = FIXTURES / name
    workspace, outside = dirs
    if (scenario / "input").is_dir():
        shutil.copytree(scenario / "input", workspace, symlinks=True)
    else:
        workspace.mkdir()
    workspace = workspace.resolve()
    links = make_links(scenario, workspace, outside)
    patch = substitute((scenario / "patch.txt").read_bytes().decode("utf-8"), workspace, outside)
    before = snapshot(workspace, with_dirs=True)
    outside_before = snapshot(outside, with_dirs=True)

    tool = ApplyPatchTool()
    sandbox = SandboxPolicy.create("workspace-write", workspace)
    ctx = ToolContext(session_id="s", call_id="c", cwd=workspace, sandbox=sandbox)
    args = tool.parse({"patch": patch})

    error_file = scenario / "error.txt"
    if error_file.exists():
        expected_error = error_file.read_text().rstrip("\n")
        with pytest.raises(ToolError) as caught:
            await tool.run(args, ctx)
        assert expected_error in caught.value.message
        assert snapshot(workspace, with_dirs=True) == before, "a failed patch changed files"
    else:
        result = await tool.run(args, ctx)
        assert result.success
        assert result.output.startswith("Success. Updated the following files:\n")
        expected = {**snapshot(scenario / "expected", with_dirs=False), **links}
        assert snapshot(workspace, with_dirs=False) == expected
        assert result.raw_output is not None
        assert len(result.content) == len(result.raw_output["files"])
        assert all(isinstance(item, DiffToolCallContent) for item in result.content)
        output_file = scenario / "output.txt"
        if output_file.exists():
            assert result.output == output_file.read_text().rstrip("\n")
    assert snapshot(outside, with_dirs=True) == outside_before, "a file outside was touched"
