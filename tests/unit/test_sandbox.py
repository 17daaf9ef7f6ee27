"""Sandbox modes as a user notices them: which writes land, which are refused.

Real bubblewrap runs when it is usable (a test that needs it fails instead of skipping
when CI=true); the no-bwrap path is forced with `CODY_BWRAP=none`.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cody_daemon.policy.sandbox import SandboxPolicy, bwrap_path
from cody_daemon.tools.base import ToolContext, ToolResult
from cody_daemon.tools.exec import ExecTool
from cody_protocol.content import ContentToolCallContent, TextContent


@dataclass
class Dirs:
    workspace: Path
    outside: Path
    temp_root: Path


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Dirs:
    """A workspace and an outside dir, neither under the sandbox's temp root."""
    temp_root = tmp_path / "tmp"
    temp_root.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp_root))
    monkeypatch.setattr(tempfile, "tempdir", str(temp_root))
    workspace = tmp_path / "ws"
    outside = tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("original\n")
    return Dirs(workspace.resolve(), outside.resolve(), temp_root.resolve())


@pytest.fixture
def bwrap(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("CODY_BWRAP", raising=False)
    bwrap_path.cache_clear()
    if bwrap_path() is None:
        if os.environ.get("CI") == "true":
            pytest.fail("bubblewrap is required in CI but is not usable")
        pytest.skip("bubblewrap (bwrap) is not usable on this machine")
    yield
    bwrap_path.cache_clear()


@pytest.fixture
def no_bwrap(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("CODY_BWRAP", "none")
    bwrap_path.cache_clear()
    yield
    bwrap_path.cache_clear()


def policy(mode: str, cwd: Path, unavailable: str = "ask") -> SandboxPolicy:
    return SandboxPolicy.create(mode, cwd, unavailable)  # type: ignore[arg-type]


async def sh(policy: SandboxPolicy, script: str) -> ToolResult:
    tool = ExecTool()
    ctx = ToolContext(session_id="s", call_id="c", cwd=policy.cwd, sandbox=policy)
    return await tool.run(tool.parse({"command": script, "timeoutMs": 10_000}), ctx)


def text_of(result: ToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, ContentToolCallContent)
    assert isinstance(block.content, TextContent)
    return block.content.text


# --- check_write (file tools) ---------------------------------------------------------------


def test_workspace_write_allows_the_workspace_and_temp_root(dirs: Dirs) -> None:
    sandbox = policy("workspace-write", dirs.workspace)
    assert sandbox.check_write("new.txt") is None
    assert sandbox.check_write(dirs.workspace / "a" / "b" / "c.txt") is None
    assert sandbox.check_write(dirs.temp_root / "scratch.txt") is None


@pytest.mark.parametrize("path", ["../outside/secret.txt", "sub/../../outside/x", "/etc/passwd"])
def test_workspace_write_refuses_paths_outside(dirs: Dirs, path: str) -> None:
    reason = policy("workspace-write", dirs.workspace).check_write(path)
    assert reason is not None and "outside the writable roots" in reason


def test_symlinks_cannot_escape_the_workspace(dirs: Dirs) -> None:
    (dirs.workspace / "file-link").symlink_to(dirs.outside / "secret.txt")
    (dirs.workspace / "dir-link").symlink_to(dirs.outside)
    (dirs.workspace / "dangling").symlink_to(dirs.outside / "new.txt")
    sandbox = policy("workspace-write", dirs.workspace)
    for path in ("file-link", "dir-link/secret.txt", "dir-link/new/deep.txt", "dangling"):
        reason = sandbox.check_write(path)
        assert reason is not None and str(dirs.outside) in reason, path


def test_git_metadata_is_protected(dirs: Dirs) -> None:
    (dirs.workspace / ".git").mkdir()
    sandbox = policy("workspace-write", dirs.workspace)
    for path in (".git/config", ".git/hooks/pre-commit", "sub/.git/HEAD"):
        reason = sandbox.check_write(path)
        assert reason is not None and "git metadata" in reason
    assert sandbox.check_write(".gitignore") is None


def test_read_only_refuses_every_write(dirs: Dirs) -> None:
    sandbox = policy("read-only", dirs.workspace)
    for path in ("x.txt", dirs.temp_root / "x", dirs.outside / "x"):
        reason = sandbox.check_write(path)
        assert reason is not None and "read-only" in reason


def test_danger_full_access_allows_everything(dirs: Dirs) -> None:
    sandbox = policy("danger-full-access", dirs.workspace)
    assert sandbox.check_write(dirs.outside / "x") is None
    assert sandbox.check_write("/etc/x") is None
    assert sandbox.exec_isolation() == "not-needed"
    assert sandbox.wrap_argv(["true"], dirs.workspace) == ["true"]


# --- exec under bubblewrap -----------------------------------------------------------------


async def test_workspace_write_exec_cannot_write_outside(dirs: Dirs, bwrap: None) -> None:
    sandbox = policy("workspace-write", dirs.workspace)
    root_file = Path(f"/cody-sandbox-test-{uuid.uuid4().hex}")
    try:
        result = await sh(sandbox, f"touch {root_file}")
        assert not result.success
        assert "Read-only file system" in text_of(result)
        assert not root_file.exists()
    finally:
        root_file.unlink(missing_ok=True)

    result = await sh(
        sandbox,
        f"echo changed > {dirs.outside}/secret.txt; touch {dirs.outside}/new; "
        f"touch ../outside/rel; echo done",
    )
    assert text_of(result).count("Read-only file system") == 3
    assert (dirs.outside / "secret.txt").read_text() == "original\n"
    assert sorted(p.name for p in dirs.outside.iterdir()) == ["secret.txt"]
    assert result.raw_output is not None and result.raw_output["sandboxed"] is True


async def test_workspace_write_exec_writes_in_cwd_and_temp(dirs: Dirs, bwrap: None) -> None:
    sandbox = policy("workspace-write", dirs.workspace)
    result = await sh(sandbox, 'mkdir -p sub && echo hello > sub/a.txt && echo t > "$TMPDIR/t"')
    assert result.success, result.output
    assert (dirs.workspace / "sub" / "a.txt").read_text() == "hello\n"
    assert (dirs.temp_root / "t").read_text() == "t\n"


async def test_workspace_write_exec_cannot_follow_symlink_out(dirs: Dirs, bwrap: None) -> None:
    (dirs.workspace / "link").symlink_to(dirs.outside)
    result = await sh(policy("workspace-write", dirs.workspace), "echo x > link/secret.txt")
    assert not result.success
    assert (dirs.outside / "secret.txt").read_text() == "original\n"


async def test_git_dir_is_read_only_inside_exec(dirs: Dirs, bwrap: None) -> None:
    git = dirs.workspace / ".git"
    git.mkdir()
    (git / "config").write_text("[core]\n")
    result = await sh(
        policy("workspace-write", dirs.workspace),
        "echo evil >> .git/config; touch .git/hooks-new; touch ok.txt",
    )
    assert text_of(result).count("Read-only file system") == 2
    assert (git / "config").read_text() == "[core]\n"
    assert sorted(p.name for p in git.iterdir()) == ["config"]
    assert (dirs.workspace / "ok.txt").exists()


async def test_git_dir_stays_read_only_when_workspace_is_in_temp_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bwrap: None
) -> None:
    # The temp root is mounted writable too; it must not hide the read-only .git mount.
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    result = await sh(policy("workspace-write", workspace), "touch .git/x; touch y")
    assert "Read-only file system" in text_of(result)
    assert not (workspace / ".git" / "x").exists()
    assert (workspace / "y").exists()


async def test_exec_has_no_network(dirs: Dirs, bwrap: None) -> None:
    result = await sh(policy("workspace-write", dirs.workspace), "cat /proc/net/dev")
    interfaces = {
        line.split(":")[0].strip() for line in text_of(result).splitlines() if ":" in line
    }
    assert interfaces == {"lo"}


async def test_read_only_exec_writes_nothing(dirs: Dirs, bwrap: None) -> None:
    (dirs.workspace / "keep.txt").write_text("keep\n")
    sandbox = policy("read-only", dirs.workspace)
    result = await sh(
        sandbox,
        'cat keep.txt; echo x > keep.txt; touch new.txt; echo t > "$TMPDIR/t"; '
        f"touch {dirs.outside}/x",
    )
    assert text_of(result).startswith("keep\n")
    assert text_of(result).count("Read-only file system") >= 2
    assert sorted(p.name for p in dirs.workspace.iterdir()) == ["keep.txt"]
    assert (dirs.workspace / "keep.txt").read_text() == "keep\n"
    assert list(dirs.temp_root.iterdir()) == []  # the temp dir is private and discarded
    assert sorted(p.name for p in dirs.outside.iterdir()) == ["secret.txt"]


async def test_read_only_exec_works_when_workspace_is_under_tmp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bwrap: None
) -> None:
    # The private /tmp must not hide a workspace that lives under it.
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "hello.txt").write_text("hi\n")
    result = await sh(policy("read-only", workspace), "cat hello.txt; touch x")
    assert text_of(result).startswith("hi\n")
    assert "Read-only file system" in text_of(result)
    assert sorted(p.name for p in workspace.iterdir()) == ["hello.txt"]


async def test_no_child_survives_the_sandbox(dirs: Dirs, bwrap: None) -> None:
    result = await sh(policy("workspace-write", dirs.workspace), "echo $$; ps -e -o pid= | wc -l")
    assert result.success
    # Its own pid namespace: the shell is one of very few processes it can see.
    assert int(text_of(result).split()[1]) < 10


# --- without bubblewrap --------------------------------------------------------------------


def test_without_bwrap_exec_is_unsandboxed_and_says_so(dirs: Dirs, no_bwrap: None) -> None:
    sandbox = policy("workspace-write", dirs.workspace)
    assert sandbox.exec_isolation() == "unavailable"
    assert sandbox.wrap_argv(["ls"], dirs.workspace) == ["ls"]
    tool = ExecTool()
    ctx = ToolContext(session_id="s", call_id="c", cwd=dirs.workspace, sandbox=sandbox)
    args = tool.parse({"command": "make test"})
    assert tool.runs_unsandboxed(args, ctx)
    assert tool.sandbox_check(args, ctx) is None
    [block] = tool.preview(args, ctx)
    assert isinstance(block, ContentToolCallContent)
    assert isinstance(block.content, TextContent)
    assert "$ make test" in block.content.text
    assert "WITHOUT a sandbox" in block.content.text
    assert "bubblewrap" in block.content.text


@pytest.mark.parametrize("unavailable", ["ask", "allow"])
def test_without_bwrap_ask_and_allow_do_not_refuse(
    dirs: Dirs, no_bwrap: None, unavailable: str
) -> None:
    sandbox = policy("read-only", dirs.workspace, unavailable)
    tool = ExecTool()
    ctx = ToolContext(session_id="s", call_id="c", cwd=dirs.workspace, sandbox=sandbox)
    assert tool.sandbox_check(tool.parse({"command": "ls"}), ctx) is None


def test_without_bwrap_refuse_explains_how_to_fix(dirs: Dirs, no_bwrap: None) -> None:
    sandbox = policy("workspace-write", dirs.workspace, "refuse")
    tool = ExecTool()
    ctx = ToolContext(session_id="s", call_id="c", cwd=dirs.workspace, sandbox=sandbox)
    reason = tool.sandbox_check(tool.parse({"command": "ls"}), ctx)
    assert reason is not None
    assert 'sandbox_unavailable = "refuse"' in reason
    assert "Install bubblewrap" in reason


async def test_without_bwrap_exec_still_runs(dirs: Dirs, no_bwrap: None) -> None:
    result = await sh(policy("workspace-write", dirs.workspace), "echo hi > f && cat f")
    assert text_of(result) == "hi\n"
    assert result.raw_output is not None and result.raw_output["sandboxed"] is False


def test_danger_full_access_needs_no_sandbox_and_warns_nothing(dirs: Dirs, no_bwrap: None) -> None:
    sandbox = policy("danger-full-access", dirs.workspace, "refuse")
    tool = ExecTool()
    ctx = ToolContext(session_id="s", call_id="c", cwd=dirs.workspace, sandbox=sandbox)
    args = tool.parse({"command": "ls"})
    assert not tool.runs_unsandboxed(args, ctx)
    assert tool.sandbox_check(args, ctx) is None
    [block] = tool.preview(args, ctx)
    assert isinstance(block, ContentToolCallContent)
    assert isinstance(block.content, TextContent)
    assert "WITHOUT" not in block.content.text


def test_preview_has_no_warning_when_bwrap_is_used(dirs: Dirs, bwrap: None) -> None:
    sandbox = policy("workspace-write", dirs.workspace)
    tool = ExecTool()
    ctx = ToolContext(session_id="s", call_id="c", cwd=dirs.workspace, sandbox=sandbox)
    args = tool.parse({"command": "ls"})
    assert not tool.runs_unsandboxed(args, ctx)
    [block] = tool.preview(args, ctx)
    assert isinstance(block, ContentToolCallContent)
    assert isinstance(block.content, TextContent)
    assert "WITHOUT" not in block.content.text
