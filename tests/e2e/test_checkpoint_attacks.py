"""Checkpoints and rewind against a hostile repository, model and session file.

The shadow repository's git must run nothing a repository (or the user's git config, or
the daemon's environment) names; a rewind writes only inside the workspace, never through a
symlink, never into `.git`, `.cody` or a git directory; the store is invisible to sandboxed
commands. Each fixture is first shown to be real.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.support.checkpoints import checkpoints, require_bwrap, rewind, workspace_state
from tests.support.daemon import CodyEnv, Daemon, expect_error
from tests.support.hostile_repo import hostile_repository, markers_in, prove_it_runs
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import tool_outputs


def exec_call(command: str, call_id: str) -> object:
    return tool_call("exec", {"command": command}, call_id=call_id)


async def test_a_hostile_repository_user_config_and_environment_run_nothing_and_bytes_round_trip(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    markers = cody_env.root / "markers"
    repo = hostile_repository(cody_env.workspace / "repo", markers)  # filters, hooks, fsmonitor
    assert prove_it_runs(repo, markers), "the repository really runs programs through git"
    with (repo / ".gitattributes").open("a") as attributes:
        attributes.write("*.bin text eol=crlf ident working-tree-encoding=UTF-16LE\n")
    (repo / "data.bin").write_bytes(b"x\r\ny\n$Id$\n\xff\xfe")
    (repo / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    home = Path(cody_env.env["HOME"])
    (home / ".gitconfig").write_text(
        f'[core]\n\tfsmonitor = "touch {markers}/PWNED-user-config; false"\n'
    )
    cody_env.env |= {  # a hostile environment for the daemon's own git
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "core.fsmonitor",
        "GIT_CONFIG_VALUE_0": f"touch {markers}/PWNED-env; false",
        "GIT_DIR": str(repo / ".git"),
    }
    cody_env.use_mock_provider(model.base_url)
    git_dir_before = workspace_state(repo / ".git", skip=())
    before = workspace_state(repo)
    model.enqueue(
        exec_call(
            "printf 'changed\\r\\n' > crlf.txt && printf 'z' >> data.bin && echo 3 > a.txt"
            " && echo new > new.txt",
            "e",
        )
    )
    model.enqueue(text("done"))
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        sid = await daemon.new_session(cwd=repo, approvalPolicy="never")
        await daemon.prompt(sid, "change the files")
        [checkpoint] = await checkpoints(daemon, sid)
        changed = {f["path"] for f in checkpoint["files"]}
        assert changed == {"crlf.txt", "data.bin", "a.txt", "new.txt"}
        diff = await daemon.request(
            "_cody/session/checkpointDiff",
            {"sessionId": sid, "checkpointId": checkpoint["checkpointId"]},
        )
        assert "+new" in diff["diff"] and "textconv" not in diff["diff"]

        result = await rewind(daemon, sid, checkpoint["checkpointId"], "files")

        assert result["conflicts"] == [] and result["failed"] == []
        assert workspace_state(repo) == before, "every byte as it was: no filter or eol applied"
    finally:
        await daemon.close()
    assert markers_in(markers) == [], "nothing ran: no filter, driver, hook, fsmonitor"
    assert workspace_state(repo / ".git", skip=()) == git_dir_before, "the repo's .git untouched"


async def test_a_symlink_swapped_in_for_a_directory_is_never_followed(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    require_bwrap(daemon.env)
    ws = daemon.env.workspace
    outside = daemon.env.root / "outside"
    outside.mkdir()
    (outside / "keep.py").write_text("outside, not ours\n")
    (ws / "src").mkdir()
    (ws / "src" / "keep.py").write_text("x = 1\n")
    (ws / "src" / "gone.py").write_text("y = 2\n")
    before = workspace_state(ws)
    outside_before = workspace_state(outside)
    model.enqueue(exec_call(f"rm -rf src && ln -s {outside} src", "e"))
    model.enqueue(text("swapped"))
    sid = await daemon.new_session(approvalPolicy="never")
    await daemon.prompt(sid, "swap src for a link")
    assert (ws / "src").is_symlink()
    [checkpoint] = await checkpoints(daemon, sid)

    result = await rewind(daemon, sid, checkpoint["checkpointId"], "files")

    assert result["failed"] == [] and result["conflicts"] == []
    assert workspace_state(ws) == before, "src is a directory again, with its files"
    assert workspace_state(outside) == outside_before, "nothing written through the link"


async def test_a_symlink_someone_swaps_in_later_is_a_conflict_and_force_still_does_not_follow_it(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    ws = daemon.env.workspace
    outside = daemon.env.root / "outside"
    outside.mkdir()
    (ws / "src").mkdir()
    (ws / "src" / "a.py").write_text("a = 1\n")
    model.enqueue(
        tool_call("writeFile", {"filePath": "src/a.py", "content": "a = 2\n"}, call_id="w")
    )
    model.enqueue(text("edited"))
    sid = await daemon.new_session(approvalPolicy="never")
    await daemon.prompt(sid, "edit a.py")
    # Someone else (not this session) replaces src with a link out of the workspace.
    os.rename(ws / "src", daemon.env.root / "moved-src")
    os.symlink(outside, ws / "src")
    [checkpoint] = await checkpoints(daemon, sid)

    result = await rewind(daemon, sid, checkpoint["checkpointId"], "files")

    assert "src/a.py" in result["conflicts"] and result["restored"] == []
    assert list(outside.iterdir()) == []
    forced = await rewind(daemon, sid, checkpoint["checkpointId"], "files", force=True)
    assert list(outside.iterdir()) == [], "force restores, but never through the link"
    assert (ws / "src").is_dir() and not (ws / "src").is_symlink()
    assert (ws / "src" / "a.py").read_text() == "a = 1\n"
    assert "src/a.py" in forced["restored"]


async def test_a_tampered_store_or_session_file_cannot_write_into_git_cody_or_outside(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """A session file naming a crafted snapshot (entries `.git/hooks/...`, `.GIT`, `.cody`,
    `..`, a git directory's config): those paths fail, nothing is written there."""
    cody_env.use_mock_provider(model.base_url)
    ws = cody_env.workspace
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    subprocess.run(["git", "init", "-q", "--bare", str(ws / "inner.git")], check=True)
    inner_config = (ws / "inner.git" / "config").read_bytes()
    (ws / "keep.txt").write_text("keep\n")
    model.enqueue(tool_call("writeFile", {"filePath": "new.txt", "content": "n\n"}, call_id="w"))
    model.enqueue(text("done"))
    first = await Daemon.start(cody_env)
    await first.initialize()
    sid = await first.new_session(approvalPolicy="never")
    await first.prompt(sid, "write")
    [checkpoint] = await checkpoints(first, sid)
    await first.close()

    store = next((cody_env.cody_home / "checkpoints").iterdir())
    env = {
        "GIT_DIR": str(store),
        "PATH": os.environ["PATH"],
        "HOME": str(cody_env.root),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }

    def git(*args: str, stdin: bytes | None = None) -> str:
        done = subprocess.run(["git", *args], env=env, input=stdin, capture_output=True, check=True)
        return done.stdout.decode().strip()

    session_file = next((cody_env.cody_home / "sessions").rglob("*.jsonl"))
    lines = [json.loads(line) for line in session_file.read_text().splitlines()]
    before = next(
        line["payload"]["before"]
        for line in lines
        if line["payload"].get("checkpointId") == checkpoint["checkpointId"]
        and line["payload"].get("kind") == "checkpoint"
    )
    evil = git("hash-object", "-w", "--stdin", stdin=b"#!/bin/sh\ntouch PWNED\n")
    hook = git("mktree", stdin=f"100755 blob {evil}\tpost-checkout\n".encode())
    hooks = git("mktree", stdin=f"040000 tree {hook}\thooks\n".encode())
    config = git(
        "mktree", stdin=f"100644 blob {evil}\tconfig.toml\n100644 blob {evil}\tconfig\n".encode()
    )
    listing = git("ls-tree", f"{before}^{{tree}}")
    crafted = (
        f"{listing}\n"
        f"040000 tree {hooks}\t.git\n"
        f"040000 tree {hooks}\t.GIT\n"
        f"040000 tree {config}\t.cody\n"
        f"040000 tree {config}\tinner.git\n"
        f"100644 blob {evil}\t..\n"
    )
    tree = git("mktree", stdin=crafted.encode())
    commit = git("commit-tree", tree, "-m", "crafted")
    tampered = {
        "type": "event",
        "timestamp": "2026-11-27T00:00:00Z",
        "payload": {
            "kind": "checkpoint",
            "checkpointId": "cp_crafted",
            "reason": "turn",
            "turn": 9,
            "time": "2026-11-27T00:00:00Z",
            "prompt": "crafted",
            "before": commit,
            "after": commit,
            "files": [],
        },
    }
    missing = json.loads(json.dumps(tampered))
    missing["payload"] |= {"checkpointId": "cp_missing", "before": "1" * 40, "after": "1" * 40}
    with session_file.open("a") as handle:
        handle.write(json.dumps(tampered) + "\n")
        handle.write(json.dumps(missing) + "\n")

    around = sorted(os.listdir(cody_env.root))
    second = await Daemon.start(cody_env)
    try:
        await second.initialize()
        await second.request("session/resume", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
        result = await rewind(second, sid, "cp_crafted", "files", force=True)
        error = await expect_error(rewind(second, sid, "cp_missing", "files"), -32602)
        assert "does not have the snapshot" in error.message
    finally:
        await second.close()
    failed = {entry["path"] for entry in result["failed"]}
    assert {
        ".git/hooks/post-checkout",
        ".GIT/hooks/post-checkout",
        ".cody/config",
        ".cody/config.toml",
        "inner.git/config",
        "..",
    } <= failed
    assert not (ws / ".git" / "hooks" / "post-checkout").exists()
    assert not (ws / ".cody").exists()
    assert (ws / "inner.git" / "config").read_bytes() == inner_config
    assert sorted(os.listdir(cody_env.root)) == around, "nothing written next to the workspace"
    assert "new.txt" in result["restored"], "the rest of the crafted state was restored"


async def test_sandboxed_commands_cannot_see_the_checkpoint_store(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    require_bwrap(daemon.env)
    store = daemon.env.cody_home / "checkpoints"
    model.enqueue(
        tool_call("writeFile", {"filePath": "a.txt", "content": "secret-ish\n"}, call_id="w")
    )
    model.enqueue(text("one"))
    sid = await daemon.new_session()
    await daemon.prompt(sid, "write a")
    assert any(store.iterdir()), "the store exists and holds a repository"
    model.enqueue(exec_call(f"ls -A {store}; grep -rl secret-ish {store} || echo NOTHING", "e"))
    model.enqueue(text("two"))

    await daemon.prompt(sid, "look at the store")

    output = tool_outputs(model.requests[-1])["e"]
    assert "NOTHING" in output
    for repo in store.iterdir():
        assert repo.name not in output


async def test_an_untrusted_project_cannot_turn_checkpoints_off_but_the_user_can(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    ws = cody_env.workspace
    (ws / ".cody").mkdir()
    (ws / ".cody" / "config.toml").write_text("checkpoints = false\n")
    cody_env.use_mock_provider(model.base_url)
    model.enqueue(tool_call("writeFile", {"filePath": "a.txt", "content": "a\n"}, call_id="w"))
    model.enqueue(text("done"))
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        sid = await daemon.new_session(approvalPolicy="never")
        await daemon.prompt(sid, "write a")
        [checkpoint] = await checkpoints(daemon, sid)
        assert checkpoint["files"] == [{"path": "a.txt", "change": "added"}]
    finally:
        await daemon.close()

    cody_env.use_mock_provider(model.base_url, extra="checkpoints = false")
    model.enqueue(tool_call("writeFile", {"filePath": "b.txt", "content": "b\n"}, call_id="w2"))
    model.enqueue(text("done"))
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        sid = await daemon.new_session(approvalPolicy="never")
        await daemon.prompt(sid, "write b")
        assert await checkpoints(daemon, sid) == [], "the user's own config turns them off"
    finally:
        await daemon.close()
