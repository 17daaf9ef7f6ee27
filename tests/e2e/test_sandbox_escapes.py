"""The sandbox escape suite (issue 8): every route out, in every sandbox mode, via the daemon.

A hostile model (the mock) sends each attempt as a tool call to the real daemon; the effects
are then checked on the real file system and on real servers running outside the sandbox
(an AF_UNIX server, an abstract unix socket, a loopback TCP server, a tmux server). Every
route must fail under `read-only` and `workspace-write` and succeed under
`danger-full-access`, which proves each attempt is a working attack and not a typo.
docs/sandbox.md describes what the sandbox isolates.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.bwrap import require_bwrap
from tests.support.daemon import CodyEnv, Daemon
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import tool_outputs
from tests.support.socket_servers import ListeningServers, TmuxServer, wait_for_path

pytestmark = [pytest.mark.reliability, pytest.mark.timeout(180)]

MODES = ("read-only", "workspace-write", "danger-full-access")
PWNED = "pwned-by-the-model"


def git(*args: str | Path) -> None:
    subprocess.run(["git", *map(str, args)], check=True, capture_output=True)


@dataclass
class World:
    """The workspace, a directory outside it and the servers an attack would reach."""

    env: CodyEnv
    servers: ListeningServers
    tmux: TmuxServer

    @property
    def ws(self) -> Path:
        return self.env.workspace

    @property
    def outside(self) -> Path:
        return self.env.root / "outside"

    def contains(self, path: Path, marker: str = PWNED) -> bool:
        return path.is_file() and marker in path.read_text(errors="replace")


@pytest.fixture
async def world(cody_env: CodyEnv) -> AsyncIterator[World]:
    require_bwrap(cody_env)
    ws = cody_env.workspace
    outside = cody_env.root / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("untouched\n")
    (outside / "hard-target.txt").write_text("untouched\n")
    (ws / "link").symlink_to(outside)
    git("init", "-q", ws)
    git("init", "-q", ws / "nested")
    git("init", "-q", f"--separate-git-dir={ws / 'sepgit'}", ws / "sep")
    (cody_env.root / "tmux").mkdir()
    with (
        ListeningServers.running(ws / "dev-server.sock") as servers,
        TmuxServer.running(cody_env.root / "tmux" / "sock", cody_env.env) as tmux,
    ):
        yield World(cody_env, servers, tmux)


@dataclass(frozen=True)
class Route:
    """One attempt: the tool call, and how to tell that it got through."""

    name: str
    tool: str
    args: dict[str, Any]
    got_through: Callable[[World], bool]
    inside: bool = False
    """A control: a plain write inside the workspace (allowed unless read-only)."""


def exec_routes(w: World) -> list[Route]:
    out, ws = w.outside, w.ws
    servers = w.servers

    def sh(name: str, command: str, check: Callable[[World], bool], **kw: Any) -> Route:
        return Route(f"exec-{name}", "exec", {"command": command}, check, **kw)

    return [
        sh(
            "inside",
            f"echo {PWNED} > inside-exec.txt",
            lambda w: w.contains(ws / "inside-exec.txt"),
            inside=True,
        ),
        sh("direct", f"echo {PWNED} > {out}/direct.txt", lambda w: w.contains(out / "direct.txt")),
        sh(
            "dotdot",
            f"echo {PWNED} > ../outside/dotdot.txt",
            lambda w: w.contains(out / "dotdot.txt"),
        ),
        sh(
            "symlink", f"echo {PWNED} > link/symlink.txt", lambda w: w.contains(out / "symlink.txt")
        ),
        sh(
            "hardlink",
            f"ln {out}/hard-target.txt hard && echo {PWNED} >> hard",
            lambda w: w.contains(out / "hard-target.txt"),
        ),
        sh(
            "proc-self-root",
            f"echo {PWNED} > /proc/self/root{out}/procroot.txt",
            lambda w: w.contains(out / "procroot.txt"),
        ),
        sh(
            "tcp-loopback",
            f"echo {PWNED} > /dev/tcp/127.0.0.1/{servers.tcp_port}",
            lambda w: w.servers.tcp.hits > 0,
        ),
        Route(
            "exec-unix-sockets",
            "exec",
            {"command": [sys.executable, "-c", servers.client_script()]},
            lambda w: w.servers.unix.hits > 0 or w.servers.abstract.hits > 0,
        ),
        sh("tmux", w.tmux.attack(out / "tmux.txt"), lambda w: (out / "tmux.txt").exists()),
        sh(
            "git-config",
            f"printf '[alias]\\n\\t{PWNED} = !true\\n' >> .git/config",
            lambda w: w.contains(ws / ".git" / "config"),
        ),
        sh(
            "git-hook",
            f"echo {PWNED} > .git/hooks/pre-commit",
            lambda w: w.contains(ws / ".git/hooks/pre-commit"),
        ),
        sh(
            "nested-git-hook",
            f"echo {PWNED} > nested/.git/hooks/pre-commit",
            lambda w: w.contains(ws / "nested/.git/hooks/pre-commit"),
        ),
        sh(
            "gitfile",
            f"echo 'gitdir: {PWNED}' > sep/.git",
            lambda w: w.contains(ws / "sep" / ".git"),
        ),
        sh(
            "gitfile-target-hook",
            f"echo {PWNED} > sepgit/hooks/pre-commit",
            lambda w: w.contains(ws / "sepgit/hooks/pre-commit"),
        ),
        sh(
            "cody-config",
            f"mkdir -p .cody && echo 'model = \"{PWNED}\"' > .cody/config.toml",
            lambda w: w.contains(ws / ".cody" / "config.toml"),
        ),
    ]


def file_routes(w: World) -> list[Route]:
    out, ws = w.outside, w.ws

    def write(name: str, path: str, target: Path, **kw: Any) -> Route:
        args = {"filePath": path, "content": f"{PWNED}\n"}
        return Route(f"writeFile-{name}", "writeFile", args, lambda w: w.contains(target), **kw)

    def patch(name: str, path: str, target: Path) -> Route:
        body = f"*** Begin Patch\n*** Add File: {path}\n+{PWNED}\n*** End Patch\n"
        return Route(
            f"applyPatch-{name}", "applyPatch", {"patch": body}, lambda w: w.contains(target)
        )

    return [
        write("inside", "inside-file.txt", ws / "inside-file.txt", inside=True),
        write("direct", str(out / "w-direct.txt"), out / "w-direct.txt"),
        write("dotdot", "../outside/w-dotdot.txt", out / "w-dotdot.txt"),
        write("symlink", "link/w-symlink.txt", out / "w-symlink.txt"),
        write("proc-self-root", f"/proc/self/root{out}/w-procroot.txt", out / "w-procroot.txt"),
        write("git-hook", ".git/hooks/post-checkout", ws / ".git/hooks/post-checkout"),
        write(
            "nested-git-hook",
            "nested/.git/hooks/post-checkout",
            ws / "nested/.git/hooks/post-checkout",
        ),
        write(
            "gitfile-target-hook", "sepgit/hooks/post-checkout", ws / "sepgit/hooks/post-checkout"
        ),
        write("cody-config", ".cody/config.toml", ws / ".cody" / "config.toml"),
        patch("dotdot", "../outside/p-dotdot.txt", out / "p-dotdot.txt"),
        patch("nested-git-hook", "nested/.git/hooks/pre-push", ws / "nested/.git/hooks/pre-push"),
        patch("cody-config", ".cody/settings.toml", ws / ".cody" / "settings.toml"),
    ]


@pytest.mark.parametrize("mode", MODES)
async def test_every_escape_route_is_refused_unless_the_mode_allows_it(
    world: World, model: MockResponsesServer, mode: str
) -> None:
    routes = exec_routes(world) + file_routes(world)
    model.enqueue(*[tool_call(r.tool, r.args, call_id=r.name) for r in routes])
    model.enqueue(text("tried every route"))
    # A trusted project: its `.cody/config.toml` could lift the sandbox, so it is protected.
    world.env.use_mock_provider(model.base_url, extra=f"trusted_projects = [{str(world.ws)!r}]")
    daemon = await Daemon.start(world.env)
    try:
        await daemon.initialize()
        sid = await daemon.new_session(approvalPolicy="never", sandboxMode=mode)
        await daemon.prompt(sid, "escape", timeout=150)
    finally:
        await daemon.close()
    outputs = tool_outputs(model.requests[-1])
    assert set(outputs) == {r.name for r in routes}
    if mode == "danger-full-access":
        await wait_for_path(world.outside / "tmux.txt")  # the tmux shell runs it later

    expected = {
        r.name: r.inside and mode != "read-only" or mode == "danger-full-access" for r in routes
    }
    actual = {r.name: r.got_through(world) for r in routes}
    assert actual == expected, {
        name: outputs[name] for name in actual if actual[name] != expected[name]
    }

    unix_output = outputs["exec-unix-sockets"]
    if mode == "danger-full-access":
        assert "path reached unix" in unix_output and "abstract reached abstract" in unix_output
    else:
        # Refused by the seccomp filter, not merely missing: the socket is visible here.
        assert "path refused: [Errno 1] Operation not permitted" in unix_output
        assert "abstract refused: [Errno 1] Operation not permitted" in unix_output
        assert (world.outside / "keep.txt").read_text() == "untouched\n"
        assert (world.ws / "sep" / ".git").read_text().startswith("gitdir: ")
    for route in exec_routes(world):
        succeeded = "Exit code: 0" in outputs[route.name]
        if expected[route.name]:
            assert succeeded, (route.name, outputs[route.name])


async def test_a_sandboxed_command_cannot_lift_the_next_sessions_sandbox(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """Issue 8 item 5, the exact attack: a trusted project, an exec under workspace-write
    writes `.cody/config.toml` with `sandbox_mode = "danger-full-access"`; the write must
    fail and the next session must still be sandboxed."""
    require_bwrap(cody_env)
    ws = cody_env.workspace
    outside = cody_env.root / "outside"
    outside.mkdir()
    cody_env.use_mock_provider(model.base_url, extra=f"trusted_projects = [{str(ws)!r}]")
    attack = (
        'mkdir -p .cody && printf \'sandbox_mode = "danger-full-access"\\n'
        'approval_policy = "never"\\n\' > .cody/config.toml; cat .cody/config.toml'
    )
    model.enqueue(tool_call("exec", {"command": attack}, call_id="lift"))
    model.enqueue(text("lifted?"))
    model.enqueue(tool_call("exec", {"command": f"touch {outside}/escaped"}, call_id="escape"))
    model.enqueue(text("escaped?"))
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        first = await daemon.new_session(approvalPolicy="never")
        await daemon.prompt(first, "lift the sandbox")
        lift = tool_outputs(model.requests[1])["lift"]
        assert "Read-only file system" in lift, lift
        assert not (ws / ".cody" / "config.toml").exists()

        second = await daemon.request("session/new", {"cwd": str(ws), "mcpServers": []})
        # "auto" is on-request + workspace-write; the planted file would have made it
        # "full-access" (never + danger-full-access).
        assert second["modes"]["currentModeId"] == "auto"
        await daemon.prompt(second["sessionId"], "now escape")
    finally:
        await daemon.close()
    assert not (outside / "escaped").exists()
    assert "Exit code: 0" not in tool_outputs(model.requests[-1])["escape"]


async def test_an_existing_project_config_cannot_be_rewritten_by_exec(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    require_bwrap(cody_env)
    ws = cody_env.workspace
    (ws / ".cody").mkdir()
    (ws / ".cody" / "config.toml").write_text('model_reasoning_effort = "low"\n')
    cody_env.use_mock_provider(model.base_url, extra=f"trusted_projects = [{str(ws)!r}]")
    rewrite = "echo 'sandbox_mode = \"danger-full-access\"' > .cody/config.toml"
    replace = "mv .cody .cody-old && mkdir .cody && touch .cody/config.toml"
    model.enqueue(
        tool_call("exec", {"command": rewrite}, call_id="rewrite"),
        tool_call("exec", {"command": replace}, call_id="replace"),
    )
    model.enqueue(text("done"))
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        sid = await daemon.new_session(approvalPolicy="never")
        await daemon.prompt(sid, "rewrite the project config")
    finally:
        await daemon.close()
    assert (ws / ".cody" / "config.toml").read_text() == 'model_reasoning_effort = "low"\n'
    assert not (ws / ".cody-old").exists()
    outputs = tool_outputs(model.requests[-1])
    assert "Read-only file system" in outputs["rewrite"]
    assert "Exit code: 0" not in outputs["replace"]


async def test_the_daemons_own_files_are_read_only_when_the_workspace_holds_them(
    tmp_path: Path, model: MockResponsesServer
) -> None:
    """A session whose cwd contains CODY_HOME (e.g. a session in ~): the user config (which
    trusts projects) and the session files (which hold grants) stay out of reach."""
    env = CodyEnv.create(tmp_path)
    require_bwrap(env)
    home = env.workspace / "cody-home"
    home.mkdir()
    env.env["CODY_HOME"] = str(home)
    env.use_mock_provider(model.base_url)
    (env.cody_home / "config.toml").rename(home / "config.toml")
    config_before = (home / "config.toml").read_text()
    model.enqueue(
        tool_call(
            "exec",
            {"command": "echo 'sandbox_mode = \"danger-full-access\"' >> cody-home/config.toml"},
            call_id="config",
        ),
        tool_call(
            "exec",
            {
                "command": "for f in $(find cody-home/sessions -name '*.jsonl'); do echo x >> $f; done; touch cody-home/new"
            },
            call_id="sessions",
        ),
        tool_call(
            "writeFile", {"filePath": "cody-home/config.toml", "content": "x"}, call_id="file"
        ),
    )
    model.enqueue(text("done"))
    daemon = await Daemon.start(env)
    try:
        await daemon.initialize()
        sid = await daemon.new_session(approvalPolicy="never")
        await daemon.prompt(sid, "edit cody's own files")
    finally:
        await daemon.close()
    assert (home / "config.toml").read_text() == config_before
    assert not (home / "new").exists()
    outputs = tool_outputs(model.requests[-1])
    assert "Read-only file system" in outputs["config"]
    assert "Read-only file system" in outputs["sessions"]
    assert "Cody's own files" in json.loads(outputs["file"])["error"]
    for session_file in (home / "sessions").rglob("*.jsonl"):
        assert "\nx\n" not in session_file.read_text()


def live_processes_with(tag: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if tag.encode() in cmdline and state not in ("Z", "X"):
            found.append(int(entry))
    return found


@pytest.mark.parametrize("setup", ["workspace-write", "danger-full-access", "no-bwrap"])
async def test_nothing_a_command_starts_outlives_it(
    cody_env: CodyEnv, model: MockResponsesServer, setup: str
) -> None:
    """setsid, a double fork, nohup with SIGTERM ignored: all gone when exec returns, with
    bubblewrap (pid namespace) and without (the subreaper helper)."""
    if setup == "no-bwrap":
        cody_env.env["CODY_BWRAP"] = "none"
        extra = 'sandbox_unavailable = "allow"'
    else:
        require_bwrap(cody_env)
        extra = ""
    cody_env.use_mock_provider(model.base_url, extra=extra)
    tag = f"39.{uuid.uuid4().int % 10**8:08d}"
    detach = (
        f"setsid sleep {tag} & (setsid sh -c 'sleep {tag}' &); ( (sleep {tag} &) & ); "
        f"nohup setsid sh -c 'trap \"\" TERM HUP; sleep {tag}' >/dev/null 2>&1 & echo launched"
    )
    model.enqueue(tool_call("exec", {"command": detach}, call_id="detach"))
    model.enqueue(text("done"))
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        mode = "danger-full-access" if setup == "danger-full-access" else "workspace-write"
        sid = await daemon.new_session(approvalPolicy="never", sandboxMode=mode)
        await daemon.prompt(sid, "start a daemon")
        output = tool_outputs(model.requests[-1])["detach"]
        assert "Exit code: 0" in output and "launched" in output
        deadline = time.monotonic() + 2
        while live_processes_with(tag) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert live_processes_with(tag) == [], "a detached process outlived the exec call"
    finally:
        await daemon.close()


async def test_an_untrusted_project_gets_no_cody_folder_from_running_commands(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """Protecting `.cody` must not litter every project: only a trusted project's config can
    set the sandbox, so only there is an empty `.cody` made to be mounted read-only."""
    require_bwrap(cody_env)
    cody_env.use_mock_provider(model.base_url)
    model.enqueue(tool_call("exec", {"command": "echo hi"}, call_id="c1"))
    model.enqueue(text("done"))
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        sid = await daemon.new_session(approvalPolicy="never")
        await daemon.prompt(sid, "say hi")
    finally:
        await daemon.close()
    assert "Exit code: 0" in tool_outputs(model.requests[-1])["c1"]
    assert not (cody_env.workspace / ".cody").exists()
