"""One file must not freeze or stall everyone (issue 20.9).

Cody's data dir, `CODEX_HOME`, `CLAUDE_CONFIG_DIR` and the config dirs are written by other
programs too: a FIFO or a `/dev/zero` symlink named like a session file, a cache or a config
file, or a huge file without a newline, must cost at most the one request that reads it (a
clear error or a skipped entry), never the event loop, never unbounded reads, and never the
worker threads the file tools and the session file's fsync share.

Huge files are sparse (`truncate`), so they cost no disk. Nothing here measures time: a hang
shows as a request that never answers (the per-request timeout), a read without end as the
daemon's read byte count (`/proc/<pid>/io`), a pool without bound as its thread count.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tests.support.daemon import CodyEnv, Daemon, expect_error
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import tool_outputs

pytestmark = pytest.mark.reliability

HANG = 15
"""Seconds a request may take here before it counts as hung (each answers in milliseconds)."""
SESSION_NAME = "rollout-2026-01-02T03-04-05-{}.jsonl"
CODEX_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures/history/codex/rollout_exec.jsonl"


def read_bytes_so_far(pid: int) -> int:
    """Bytes the process has read with read(2) and friends (`rchar`), files and pipes alike."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/<pid>/io")


def thread_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def day_dir(root: Path) -> Path:
    day = root / "2026" / "01" / "02"
    day.mkdir(parents=True, exist_ok=True)
    return day


async def test_a_fifo_or_a_dev_zero_link_named_like_a_session_file_stalls_nothing(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(text("saved"))
    real = await daemon.new_session()
    await daemon.prompt(real, "keep me")
    sessions = day_dir(daemon.env.cody_home / "sessions")
    os.mkfifo(sessions / SESSION_NAME.format("fifo-session"))
    (sessions / SESSION_NAME.format("zero-session")).symlink_to("/dev/zero")

    listed = await daemon.request("session/list", {}, timeout=HANG)
    assert [s["sessionId"] for s in listed["sessions"]] == [real]
    for bad in ("fifo-session", "zero-session"):
        params = {"sessionId": bad, "cwd": str(daemon.env.workspace), "mcpServers": []}
        error = await expect_error(daemon.request("session/load", params, timeout=HANG), -32002)
        assert "not a regular file" in error.message, error.message
        await expect_error(
            daemon.request("session/fork", params, timeout=HANG), -32002
        )  # its history is read from the file too
        await expect_error(
            daemon.request("session/delete", {"sessionId": bad}, timeout=HANG), -32002
        )
    history = await daemon.request("_cody/history/list", {"agent": "cody"}, timeout=HANG)
    assert [s["sessionId"] for s in history["sessions"]] == [real]
    model.enqueue(text("still here"))
    await daemon.prompt(real, "and now?")


async def test_a_fifo_at_the_providers_cache_or_a_config_file_stalls_nothing(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    (cody_env.cody_home / "cache").mkdir()
    os.mkfifo(cody_env.cody_home / "cache" / "providers.json")
    os.mkfifo(cody_env.root / "codex-home" / "auth.json")  # a login file read every turn
    project = cody_env.workspace / ".cody"
    project.mkdir()
    (project / "config.toml").symlink_to("/dev/zero")  # a cloned repository's config
    daemon = await Daemon.start(cody_env)
    try:
        result = await asyncio.wait_for(daemon.initialize(), HANG)
        assert result["_meta"]["cody"]["defaultProvider"] == "mock"
        error = await expect_error(
            daemon.request(
                "session/new", {"cwd": str(cody_env.workspace), "mcpServers": []}, timeout=HANG
            ),
            -32602,
        )
        assert ".cody/config.toml" in error.message and "not a regular file" in error.message
        (project / "config.toml").unlink()
        sid = await daemon.new_session()
        model.enqueue(text("answered"))
        await daemon.prompt(sid, "hello")
    finally:
        await daemon.close()

    os.unlink(cody_env.cody_home / "cache" / "providers.json")
    (cody_env.cody_home / "config.toml").unlink()
    os.mkfifo(cody_env.cody_home / "config.toml")
    daemon = await Daemon.start(cody_env)
    try:
        await asyncio.wait_for(daemon.initialize(), HANG)  # lists the defaults
        error = await expect_error(
            daemon.request(
                "session/new", {"cwd": str(cody_env.workspace), "mcpServers": []}, timeout=HANG
            ),
            -32602,
        )
        assert "config.toml" in error.message and "not a regular file" in error.message
    finally:
        await daemon.close()


async def test_history_listing_never_reads_a_huge_file_whole_nor_takes_the_shared_threads(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    codex = day_dir(daemon.env.root / "codex-home" / "sessions")
    huge = codex / SESSION_NAME.format("huge-session")
    with huge.open("wb") as handle:
        handle.truncate(8 << 30)  # 8 GiB of zeros, no newline, no disk used
    os.mkfifo(codex / SESSION_NAME.format("fifo-session"))
    claude = daemon.env.root / "claude-config" / "projects" / "-work"
    claude.mkdir(parents=True)
    (claude / "5f0c1d2e-0000-4000-8000-00000000dead.jsonl").symlink_to("/dev/zero")
    os.mkfifo(claude / "5f0c1d2e-0000-4000-8000-00000000f1f0.jsonl")
    (daemon.env.workspace / "notes.txt").write_text("the file tools still work\n")

    pid = daemon.process.process.pid
    threads, read_before = thread_count(pid), read_bytes_so_far(pid)
    lists = [
        asyncio.ensure_future(daemon.request("_cody/history/list", {}, timeout=HANG))
        for _ in range(8)
    ]
    for result in await asyncio.gather(*lists):
        assert [s["sessionId"] for s in result["sessions"]] == ["huge-session"]
    assert read_bytes_so_far(pid) - read_before < 256 << 20, "the head and tail, not 8 GiB"
    assert thread_count(pid) - threads <= 2, "history scans run in their own pool of two"

    model.enqueue(tool_call("readFile", {"file_path": "notes.txt"}, call_id="call_read"))
    model.enqueue(text("read it"))
    sid = await daemon.new_session(approval_policy="never")
    await daemon.prompt(sid, "read notes.txt")
    assert "the file tools still work" in tool_outputs(model.requests[-1])["call_read"]
    error = await expect_error(
        daemon.request(
            "_cody/history/read",
            {"path": str(claude / "5f0c1d2e-0000-4000-8000-00000000dead.jsonl")},
            timeout=HANG,
        ),
        -32602,
    )
    assert "not a regular file" in error.message


async def test_reading_a_huge_file_is_bounded_page_by_page(daemon: Daemon, tmp_path: Path) -> None:
    first = CODEX_FIXTURE.read_bytes().split(b"\n", 1)[0] + b"\n"  # a real session's start
    endless = tmp_path / "endless.jsonl"
    with endless.open("wb") as handle:
        handle.write(first)
        handle.truncate(8 << 30)  # then one 8 GiB line of zeros
    pid = daemon.process.process.pid
    before = read_bytes_so_far(pid)
    page = await daemon.request("_cody/history/read", {"path": str(endless)}, timeout=HANG)
    assert page["skippedLines"] == 1 and "nextCursor" not in page
    assert read_bytes_so_far(pid) - before < 512 << 20, "skipping ends; 8 GiB are never read"

    lines = tmp_path / "long-lines.jsonl"
    with lines.open("wb") as handle:
        handle.write(first)
        for end in range(40 << 20, 8 << 30, 40 << 20):  # a newline every 40 MiB, sparse between
            handle.seek(end)
            handle.write(b"\n")
        handle.truncate(8 << 30)
    before = read_bytes_so_far(pid)
    page = await daemon.request("_cody/history/read", {"path": str(lines)}, timeout=HANG)
    assert "nextCursor" in page, "a page ends, and says where to go on"
    assert read_bytes_so_far(pid) - before < 512 << 20
    following = await daemon.request(
        "_cody/history/read",
        {"path": str(lines), "cursor": page["nextCursor"]},
        timeout=HANG,
    )
    assert following["skippedLines"] > 0 and "nextCursor" in following


async def test_a_fifo_among_a_repositorys_git_files_stalls_nothing(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    """An unpacked archive may hold FIFOs where git keeps files: the hostile-repository check
    (policy/git_repo.py) and the sandbox's protected paths (policy/protected.py) read them."""
    repo = daemon.env.workspace
    git = repo / ".git"
    for name in ("objects", "refs"):
        (git / name).mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    os.mkfifo(git / "config")
    (repo / "sub").mkdir()
    os.mkfifo(repo / "sub" / ".git")
    model.enqueue(tool_call("exec", {"command": ["git", "status"]}, call_id="c1"))
    model.enqueue(tool_call("exec", {"command": ["ls", "sub"]}, call_id="c2"))
    model.enqueue(text("done"))
    daemon.answer("reject_once")
    sid = await daemon.new_session(approval_policy="untrusted")
    result = await daemon.request(
        "session/prompt",
        {"sessionId": sid, "prompt": [{"type": "text", "text": "status?"}]},
        timeout=HANG,
    )
    assert result["stopReason"] == "end_turn"
    asked = [p["toolCall"]["title"] for p in daemon.permission_requests]
    assert asked == ["git status"], "not known to be inert: asked, never hung"
    assert "c2" in tool_outputs(model.requests[-1])
