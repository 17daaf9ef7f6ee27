"""kill -9 at random points of a turn, 20 rounds, through the real daemon (issue 8).

Each round starts a daemon on the same CODY_HOME and checks everything earlier rounds left:
every session is listed, loads with its history intact (every prompt, every finished answer,
everything the client was shown of a killed answer, every tool call closed), and goes on
with a new turn. Then it starts a turn and kills the daemon with SIGKILL at a random moment
of one of: text streaming, a running tool, a pending approval, a file being written (which
must leave no temp file and either the old content or the whole new one).

`CODY_KILL9_SEED` replays a run (the seed is printed on failure).
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.daemon import CodyEnv, Daemon
from tests.support.mock_responses import MockResponsesServer, text, tool_call

ROUNDS = 20
SCENARIOS = ("streaming", "tool", "approval", "file_write")
BIG = "".join(f"line {i:06d} of the new content\n" for i in range(20_000))  # ~640 KB


@dataclass
class Expected:
    """What a session must still hold after any number of kills."""

    prompts: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    """Complete answers and, for killed turns, what the client had been shown."""
    calls: dict[str, set[str]] = field(default_factory=dict)
    """call id -> the statuses it may have after reload: `completed` when the client saw it
    complete; when the kill came first, `failed` (killed while it ran) or `completed` (its
    result reached the file, which is written before the client is told)."""


async def kill(daemon: Daemon, *pending: asyncio.Task) -> None:
    daemon.process.process.send_signal(signal.SIGKILL)
    await asyncio.wait_for(daemon.process.process.wait(), 10)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    await daemon.process.connection.aclose()


async def check_session(daemon: Daemon, sid: str, expected: Expected, cwd: str) -> None:
    await daemon.request("session/load", {"sessionId": sid, "cwd": cwd, "mcpServers": []})
    replay = daemon.session_updates(sid)
    users = [u["content"]["text"] for u in replay if u["sessionUpdate"] == "user_message_chunk"]
    assert users == expected.prompts
    shown = daemon.agent_text(sid)
    position = 0
    for answer in expected.answers:
        found = shown.find(answer, position)
        assert found >= 0, f"lost answer text {answer[:60]!r}..."
        position = found + len(answer)
    statuses = {u["toolCallId"]: u["status"] for u in replay if u["sessionUpdate"] == "tool_call"}
    assert statuses.keys() == expected.calls.keys()
    for call_id, status in statuses.items():
        assert status in expected.calls[call_id], (call_id, status)


async def turn_killed_at_random(
    daemon: Daemon,
    model: MockResponsesServer,
    rng: random.Random,
    sid: str,
    prompt: str,
    scenario: str,
    call_id: str,
    target: Path,
) -> tuple[str, dict[str, str], str | None]:
    """Start a turn, SIGKILL the daemon at a random point of `scenario`.

    Returns the text the client was shown in this turn, the final statuses it saw, and the
    content `target` had before (for the file write)."""
    before = len(daemon.agent_text(sid))
    old = target.read_text() if target.exists() else None

    def tool_running() -> bool:
        return any(u.get("status") == "in_progress" for u in daemon.tool_updates(sid))

    turn = asyncio.create_task(daemon.prompt(sid, prompt, timeout=120))
    if scenario == "streaming":
        words = "".join(f"{call_id}w{i} " for i in range(3000))
        model.enqueue(text(words, chunks=3000), delay_s=0.001)
        enough = rng.randint(1, 20_000)
        await daemon.wait_for(lambda: len(daemon.agent_text(sid)) - before >= enough, 30)
        await asyncio.sleep(rng.random() * 0.05)
    elif scenario == "tool":
        model.enqueue(tool_call("exec", {"command": "sleep 30"}, call_id=call_id))
        await daemon.wait_for(tool_running, 30)
        await asyncio.sleep(rng.random() * 0.2)
    elif scenario == "approval":
        daemon.permission_gate = asyncio.Event()
        asked = len(daemon.permission_requests)
        model.enqueue(tool_call("exec", {"command": "touch x"}, call_id=call_id))
        await daemon.wait_for(lambda: len(daemon.permission_requests) > asked, 30)
        await asyncio.sleep(rng.random() * 0.2)
    else:
        arguments = {"file_path": target.name, "content": BIG}
        model.enqueue(tool_call("writeFile", arguments, call_id=call_id))
        model.enqueue(text("written", chunks=1), delay_s=30)
        await daemon.wait_for(tool_running, 60)
        await asyncio.sleep(rng.random() * 0.05)
    shown = daemon.agent_text(sid)[before:]
    done = {
        u["toolCallId"]: u["status"]
        for u in daemon.tool_updates(sid)
        if u.get("status") in ("completed", "failed")
    }
    await kill(daemon, turn)
    return shown, done, old


@pytest.mark.timeout(600)
async def test_kill_9_at_random_points_of_turns_loses_nothing(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    seed = int(os.environ.get("CODY_KILL9_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    # The file writes put ~640 KB per round into the history: automatic compaction would
    # (rightly) ask the model for a summary and take a scripted answer meant for a turn.
    cody_env.use_mock_provider(
        model.base_url,
        extra='approval_policy = "untrusted"\nmodel_auto_compact_token_limit = 1000000000',
    )
    cwd = str(cody_env.workspace)
    target = cody_env.workspace / "big.txt"
    sessions: dict[str, Expected] = {}
    scenarios = [SCENARIOS[i % len(SCENARIOS)] for i in range(ROUNDS)]
    rng.shuffle(scenarios)
    for round_no, scenario in enumerate(scenarios):
        where = f"seed {seed}, round {round_no} ({scenario})"
        model._script.clear()  # what a killed turn never asked for
        daemon = await Daemon.start(cody_env)
        try:
            await daemon.initialize()
            listed = await daemon.request("session/list", {})
            assert {s["sessionId"] for s in listed["sessions"]} == set(sessions), where
            for sid, expected in sessions.items():
                await check_session(daemon, sid, expected, cwd)
            leftovers = [p.name for p in cody_env.workspace.iterdir() if p.name.endswith(".tmp")]
            assert not leftovers, f"{where}: temp files left: {leftovers}"

            # Go on with an old session (the last one killed, if any), then pick one to kill.
            if sessions:
                sid = rng.choice(list(sessions))
                answer = f"continued in round {round_no}"
                model.enqueue(text(answer))
                await daemon.prompt(sid, f"continue {round_no}")
                sessions[sid].prompts.append(f"continue {round_no}")
                sessions[sid].answers.append(answer)
            if not sessions or rng.random() < 0.5:
                sid = await daemon.new_session()
                sessions[sid] = Expected()
            expected = sessions[sid]
            prompt = f"round {round_no}: {scenario}"
            expected.prompts.append(prompt)
            shown, done, old = await turn_killed_at_random(
                daemon, model, rng, sid, prompt, scenario, f"r{round_no}", target
            )
        except BaseException:
            if daemon.process.process.returncode is None:
                await kill(daemon)
            print(f"kill -9 rounds: {where}")
            raise
        # What the client saw before the kill is what must survive it.
        if shown:
            expected.answers.append(shown)
        if scenario != "streaming":
            seen = done.get(f"r{round_no}")
            racing = {"failed", "completed"} if scenario == "file_write" else {"failed"}
            expected.calls[f"r{round_no}"] = {seen} if seen else racing
        if scenario == "file_write" and target.exists():
            content = target.read_text()
            assert content in (BIG, old), f"{where}: a torn file ({len(content)} bytes)"
    model._script.clear()  # what the last round's killed turn never asked for
    last = await Daemon.start(cody_env)
    try:
        await last.initialize()
        for sid, expected in sessions.items():
            await check_session(last, sid, expected, cwd)
    finally:
        await last.close()
