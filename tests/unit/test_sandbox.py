"""Sandbox modes as a user notices them: which writes land, which are refused.

Real bubblewrap runs when it is usable (a test that needs it fails instead of skipping
when CI=true); the no-bwrap path is forced with `CODY_BWRAP=none`.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from cody_daemon.policy import protected
from cody_daemon.policy.sandbox import SandboxPolicy, bwrap_path
from cody_daemon.tools.base import ToolContext, ToolResult
from cody_daemon.tools.exec import ExecTool
from cody_protocol.content import ContentToolCallContent, TextContent

from tests.support.processes import session_processes
from tests.support.workspaces import Dirs, workspace_and_outside


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Dirs:
    return workspace_and_outside(tmp_path, monkeypatch)


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
    async with session_processes() as table:
        ctx = ToolContext(
            session_id="s", call_id="c", cwd=policy.cwd, sandbox=policy, processes=table
        )
        return await tool.run(tool.parse({"command": script, "timeoutMs": 10_000}), ctx)


async def any_process_left(tag: str, within_s: float = 1.0) -> bool:
    """Whether a live process with `tag` in its command line remains after `within_s`."""
    deadline = time.monotonic() + within_s
    while True:
        alive = []
        for entry in os.listdir("/proc"):
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if tag.encode() in cmdline and state not in ("Z", "X"):
                alive.append(entry)
        if not alive or time.monotonic() > deadline:
            return bool(alive)
        await asyncio.sleep(0.02)


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


# --- protected paths: .git, git dirs, .cody, Cody's own files (issue 8 items 5 and 6) -------


def git(*args: str | Path) -> None:
    subprocess.run(["git", *map(str, args)], check=True, capture_output=True)


@pytest.fixture
def repos(dirs: Dirs) -> Dirs:
    """A workspace holding every kind of git metadata a command could plant code in."""
    ws = dirs.workspace
    git("init", "-q", ws)
    git(
        "-C",
        ws,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "x",
    )
    git("init", "-q", ws / "nested")
    git("init", "-q", ws / "deep" / "a" / "b" / "repo")
    git("init", "-q", f"--separate-git-dir={ws / 'sepgit'}", ws / "sep")
    git("init", "-q", "--bare", ws / "remote.git")
    git("-C", ws, "worktree", "add", "-q", ws / "wt")
    return dirs


def test_file_tools_refuse_every_kind_of_git_metadata_and_cody(repos: Dirs) -> None:
    sandbox = policy("workspace-write", repos.workspace)
    refused = [
        ".git/hooks/pre-commit",
        "nested/.git/config",
        "deep/a/b/repo/.git/hooks/x",
        "sep/.git",
        "sepgit/hooks/pre-commit",
        "remote.git/hooks/post-receive",
        "wt/.git",
        ".cody/config.toml",
        "sub/.cody/config.toml",
    ]
    for path in refused:
        assert sandbox.check_write(path) is not None, path
    assert "git directory" in (sandbox.check_write("remote.git/hooks/post-receive") or "")
    assert "(.cody)" in (sandbox.check_write(".cody/config.toml") or "")
    for path in ("src/main.py", "sep/file.txt", "wt/file.txt", "nested/README", ".codyrc"):
        assert sandbox.check_write(path) is None, path


def test_file_tools_refuse_codys_own_files_inside_the_workspace(dirs: Dirs) -> None:
    home = dirs.workspace / ".config" / "cody"
    sandbox = SandboxPolicy.create("workspace-write", dirs.workspace, protected=(home,))
    reason = sandbox.check_write(home / "config.toml")
    assert reason is not None and "Cody's own files" in reason
    assert sandbox.check_write(dirs.workspace / ".config" / "other.toml") is None


def test_scan_finds_each_protected_path_once_and_follows_no_symlink(repos: Dirs) -> None:
    ws = repos.workspace
    (ws / "link-to-outside").symlink_to(repos.outside)
    (repos.outside / ".git").mkdir()
    result = protected.scan(ws, [ws])
    assert result.complete
    assert {p.relative_to(ws).as_posix() for p in result.paths} == {
        ".git",
        "nested/.git",
        "deep/a/b/repo/.git",
        "sep/.git",
        "sepgit",
        "remote.git",
        "wt/.git",
    }


def test_scan_stops_at_its_budget_and_says_so(dirs: Dirs) -> None:
    for index in range(30):
        (dirs.workspace / f"d{index}" / "e").mkdir(parents=True)
    (dirs.workspace / "d29" / "e" / ".git").mkdir()
    assert not protected.scan(dirs.workspace, [dirs.workspace], budget=10).complete
    full = protected.scan(dirs.workspace, [dirs.workspace])
    assert full.complete and full.paths == [dirs.workspace / "d29" / "e" / ".git"]


async def test_exec_cannot_write_any_git_metadata(repos: Dirs, bwrap: None) -> None:
    ws = repos.workspace
    targets = [
        ".git/hooks/pre-commit",
        "nested/.git/hooks/pre-commit",
        "deep/a/b/repo/.git/hooks/pre-commit",
        "sepgit/hooks/pre-commit",
        "remote.git/hooks/post-receive",
        ".git/worktrees/wt/HEAD",
    ]
    script = "; ".join(f"echo evil >> {t}" for t in targets)
    script += "; echo 'gitdir: /evil' > sep/.git; echo 'gitdir: /evil' > wt/.git"
    script += "; mv nested/.git nested/.git-old; rm -rf deep/a/b/repo; echo ok > ok.txt"
    before = {t: (ws / t).read_bytes() if (ws / t).exists() else None for t in targets}
    result = await sh(policy("workspace-write", ws), script)
    assert text_of(result).count("Read-only file system") >= len(targets) + 2, text_of(result)
    for target in targets:
        now = (ws / target).read_bytes() if (ws / target).exists() else None
        assert now == before[target], target
    assert (ws / "sep" / ".git").read_text().startswith(f"gitdir: {ws / 'sepgit'}")
    assert (ws / "nested" / ".git").is_dir() and (ws / "deep/a/b/repo/.git/HEAD").exists()
    assert (ws / "ok.txt").read_text() == "ok\n", "the rest of the workspace stays writable"
    git("-C", ws / "wt", "status")  # the worktree still works


async def test_exec_cannot_create_or_change_a_trusted_projects_config(
    dirs: Dirs, bwrap: None
) -> None:
    ws = dirs.workspace
    sandbox = SandboxPolicy.create("workspace-write", ws, guard_project_config=True)
    result = await sh(sandbox, "mkdir -p .cody && echo x > .cody/config.toml")
    assert "Read-only file system" in text_of(result)
    assert (ws / ".cody").is_dir() and list((ws / ".cody").iterdir()) == []
    result = await sh(sandbox, "rmdir .cody || mv .cody .cody2 || true; ls -a")
    assert (ws / ".cody").is_dir() and not (ws / ".cody2").exists()


async def test_an_untrusted_projects_config_is_not_guarded_and_not_created(
    dirs: Dirs, bwrap: None
) -> None:
    """Its `.cody/config.toml` cannot set the sandbox (ignored unless trusted), so no empty
    `.cody` is made in every project a command runs in."""
    ws = dirs.workspace
    result = await sh(policy("workspace-write", ws), "true")
    assert "Exit code: 0" in result.output and not (ws / ".cody").exists()


async def test_exec_cannot_write_codys_own_files(dirs: Dirs, bwrap: None) -> None:
    ws = dirs.workspace
    home = ws / "home" / ".config" / "cody"  # not there yet: created so it can be protected
    sandbox = SandboxPolicy.create("workspace-write", ws, protected=(home,))
    result = await sh(sandbox, f"mkdir -p {home} && echo x > {home}/config.toml")
    assert "Read-only file system" in text_of(result)
    assert home.is_dir() and list(home.iterdir()) == []


async def test_a_workspace_too_big_to_scan_is_flagged(
    dirs: Dirs, bwrap: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(protected, "SCAN_BUDGET", 2)
    for index in range(5):
        (dirs.workspace / f"d{index}").mkdir()
    result = await sh(policy("workspace-write", dirs.workspace), "true")
    assert "Sandbox note: the workspace has more than 2 entries" in result.output


# --- unix sockets and processes under bubblewrap (issue 8 items 2 and 11) ------------------

SOCKET_PROBE = """
import os, socket
a, b = socket.socketpair(); a.sendall(b"x"); assert b.recv(1) == b"x"
r, w = os.pipe(); os.write(w, b"y"); assert os.read(r, 1) == b"y"
server = socket.socket(); server.bind(("127.0.0.1", 0)); server.listen()
client = socket.create_connection(server.getsockname()); conn, _ = server.accept()
client.sendall(b"z"); assert conn.recv(1) == b"z"
print("socketpair, pipe and loopback tcp work")
for family in ("AF_UNIX", "AF_PACKET"):
    try:
        socket.socket(getattr(socket, family), socket.SOCK_DGRAM)
        print(family, "created")
    except OSError as exc:
        print(family, "refused:", exc.strerror)
"""


@pytest.mark.parametrize("mode", ["workspace-write", "read-only"])
async def test_unix_sockets_are_refused_and_ipc_keeps_working(
    dirs: Dirs, bwrap: None, mode: str
) -> None:
    result = await sh(policy(mode, dirs.workspace), f"{sys.executable} -c '{SOCKET_PROBE}'")
    assert text_of(result).splitlines() == [
        "socketpair, pipe and loopback tcp work",
        "AF_UNIX refused: Operation not permitted",
        "AF_PACKET refused: Operation not permitted",
    ]


async def test_abstract_unix_sockets_stay_unreachable_with_network_on(
    dirs: Dirs, bwrap: None
) -> None:
    # Without --unshare-net abstract sockets are shared; the seccomp filter still refuses.
    import socket

    name = f"cody-test-{uuid.uuid4().hex}"
    server = socket.socket(socket.AF_UNIX)
    server.bind("\0" + name)
    server.listen()
    try:
        sandbox = SandboxPolicy.create("workspace-write", dirs.workspace, network=True)
        script = f"import socket; socket.socket(socket.AF_UNIX).connect('\\0{name}')"
        result = await sh(sandbox, f'{sys.executable} -c "{script}"')
        assert "PermissionError: [Errno 1] Operation not permitted" in text_of(result)
    finally:
        server.close()


async def test_a_setsid_daemon_does_not_outlive_a_sandboxed_command(
    dirs: Dirs, bwrap: None
) -> None:
    tag = f"38.{uuid.uuid4().int % 10**8:08d}"
    result = await sh(
        policy("workspace-write", dirs.workspace),
        f"setsid sleep {tag} & (setsid sh -c 'sleep {tag}' &); nohup sleep {tag} >/dev/null 2>&1 & echo up",
    )
    assert text_of(result) == "up\n"
    assert not await any_process_left(tag)


NODE_TEST = """
const cp = require("child_process"), fs = require("fs"), http = require("http");
fs.writeFileSync("built.txt", "built");
const worker = cp.fork("worker.js");
worker.on("message", (m) => {
  console.log("ipc:", m);
  const server = http.createServer((q, r) => r.end("ok")).listen(0, "127.0.0.1", () => {
    http.get(`http://127.0.0.1:${server.address().port}`, (r) =>
      r.on("data", (d) => { console.log("http:", String(d)); server.close(); }));
  });
});
"""

PYTHON_TEST = """
import asyncio, multiprocessing, subprocess
def square(x): return x * x
if __name__ == "__main__":
    for method in ("fork", "spawn"):
        with multiprocessing.get_context(method).Pool(2) as pool:
            print(method, pool.map(square, [1, 2, 3]))
    async def child():
        proc = await asyncio.create_subprocess_exec("echo", "async", stdout=subprocess.PIPE)
        return (await proc.communicate())[0].decode().strip()
    print(asyncio.run(child()))
"""


async def test_ordinary_builds_work_in_the_sandbox(dirs: Dirs, bwrap: None) -> None:
    """git, a Python test run with multiprocessing and `npm test` with a forked worker and a
    loopback HTTP server: the seccomp filter must not get in their way."""
    ws = dirs.workspace
    (ws / "t.py").write_text(PYTHON_TEST)
    (ws / "package.json").write_text(
        '{"name": "p", "version": "1.0.0", "scripts": {"test": "node t.js"}}'
    )
    (ws / "t.js").write_text(NODE_TEST)
    (ws / "worker.js").write_text('process.send("hello"); process.exit(0);\n')
    script = (
        "git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm init "
        f"&& git log --oneline | wc -l && {sys.executable} t.py"
    )
    npm = shutil.which("npm")
    if npm is not None:
        script += f" && {npm} test --silent"
    elif os.environ.get("CI") == "true":
        pytest.fail("npm is required in CI")
    result = await sh(policy("workspace-write", dirs.workspace), script)
    assert result.success, text_of(result)
    lines = text_of(result).splitlines()
    assert lines[:4] == ["1", "fork [1, 4, 9]", "spawn [1, 4, 9]", "async"], lines
    if npm is not None:
        assert lines[4:] == ["ipc: hello", "http: ok"], lines
        assert (ws / "built.txt").read_text() == "built"


async def test_sysv_shared_memory_outside_is_invisible(dirs: Dirs, bwrap: None) -> None:
    ipcmk = shutil.which("ipcmk")
    if ipcmk is None:
        if os.environ.get("CI") == "true":
            pytest.fail("ipcmk (util-linux) is required in CI")
        pytest.skip("ipcmk (util-linux) is not installed")
    made = subprocess.run([ipcmk, "-M", "4096"], capture_output=True, text=True, check=True)
    shmid = made.stdout.split()[-1]
    try:
        result = await sh(policy("workspace-write", dirs.workspace), "ipcs -m")
        assert result.success
        listed = [line.split()[1] for line in text_of(result).splitlines() if line.startswith("0x")]
        assert shmid not in listed
    finally:
        subprocess.run(["ipcrm", "-m", shmid], check=False, capture_output=True)


async def test_read_only_mode_runs_programs_that_live_in_tmp(dirs: Dirs, bwrap: None) -> None:
    """Regression: read-only mode hid all of /tmp, so a virtualenv or checkout there (CI's
    clone under /tmp, a project's venv) could not even start its interpreter."""
    tool_dir = Path(tempfile.mkdtemp(dir="/tmp", prefix="cody-tool-"))
    try:
        script = tool_dir / "hello"
        script.write_text("#!/bin/sh\necho hello from /tmp\n")
        script.chmod(0o755)
        result = await sh(policy("read-only", dirs.workspace), f"{script}; touch {tool_dir}/x")
        assert "hello from /tmp" in result.output, result.output
        assert not (tool_dir / "x").exists(), "still read-only"
    finally:
        shutil.rmtree(tool_dir, ignore_errors=True)
