"""Slash commands over ACP (issue 13.7): advertised with `available_commands_update` after
session/new, load and resume, run by the daemon when a prompt starts with them.

ACP: https://agentclientprotocol.com/protocol/slash-commands (the agent sends
`available_commands_update`; the client sends the command as ordinary prompt text).
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from tests.support.acp_schema import acp_errors
from tests.support.daemon import CodyEnv, Daemon
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import user_texts

NAMES = ["compact", "model", "approvals", "fork", "history", "init", "review"]


def commands_sent(daemon: Daemon, sid: str) -> list[list[str]]:
    return [
        [c["name"] for c in u["availableCommands"]]
        for u in daemon.session_updates(sid, "available_commands_update")
    ]


async def ask(daemon: Daemon, sid: str, prompt: str) -> tuple[dict[str, Any], str]:
    """Prompt; (the result, the agent text of this prompt only)."""
    before = len(daemon.agent_text(sid))
    result = await daemon.prompt(sid, prompt)
    return result, daemon.agent_text(sid)[before:]


async def test_commands_are_advertised_after_new_load_and_resume_each_after_its_response(
    offline_daemon: Daemon,
) -> None:
    daemon = offline_daemon
    sid = await daemon.new_session()
    await daemon.wait_for(lambda: len(commands_sent(daemon, sid)) == 1)
    await daemon.prompt(sid, "list files")
    await daemon.request("session/close", {"sessionId": sid})
    await daemon.request("session/load", {"sessionId": sid, "cwd": str(daemon.env.workspace)})
    await daemon.wait_for(lambda: len(commands_sent(daemon, sid)) == 2)
    await daemon.request("session/close", {"sessionId": sid})
    await daemon.request("session/resume", {"sessionId": sid, "cwd": str(daemon.env.workspace)})
    await daemon.wait_for(lambda: len(commands_sent(daemon, sid)) == 3)

    assert commands_sent(daemon, sid) == [NAMES] * 3
    (update, *_) = daemon.session_updates(sid, "available_commands_update")
    model = next(c for c in update["availableCommands"] if c["name"] == "model")
    assert model["input"] == {"hint": "model, or provider and model"}
    assert "input" not in next(c for c in update["availableCommands"] if c["name"] == "compact")
    # The client learns the session id from the response: the update must follow it.
    frames = daemon.received
    response_at = next(
        i for i, m in enumerate(frames) if m.get("result", {}).get("sessionId") == sid
    )
    update_at = next(
        i
        for i, m in enumerate(frames)
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "available_commands_update"
    )
    assert response_at < update_at


async def test_model_lists_and_switches_through_the_config_options(cody_env: CodyEnv) -> None:
    cody_env.env["OPENAI_API_KEY"] = "sk-test-not-real"  # a provider switched to needs a key
    daemon = await Daemon.start(cody_env)
    await daemon.initialize()
    try:
        await _model_lists_and_switches(daemon)
    finally:
        await daemon.close()


async def _model_lists_and_switches(daemon: Daemon) -> None:
    sid = await daemon.new_session(provider="offline")

    _, listing = await ask(daemon, sid, "/model")
    result, switched = await ask(daemon, sid, "/model openai gpt-5.4")
    _, bad = await ask(daemon, sid, "/model nosuchprovider x")
    _, keyless = await ask(daemon, sid, "/model anthropic claude-opus-4-8")

    assert "Model: offline/offline" in listing and "- anthropic (no credentials)" in listing
    assert "gpt-5.5" in listing
    assert result["stopReason"] == "end_turn"
    assert "Now using openai/gpt-5.4" in switched
    options = daemon.session_updates(sid, "config_option_update")[-1]["configOptions"]
    assert {o["id"]: o["currentValue"] for o in options}["model"] == "gpt-5.4"
    assert "/model:" in bad and "nosuchprovider" in bad
    assert "Now using" not in bad
    assert "No credentials for provider 'anthropic'" in keyless and "Now using" not in keyless


async def test_approvals_shows_and_sets_a_mode_or_a_policy(offline_daemon: Daemon) -> None:
    daemon = offline_daemon
    sid = await daemon.new_session()

    _, shown = await ask(daemon, sid, "/approvals")
    _, to_mode = await ask(daemon, sid, "/approvals read-only")
    _, to_policy = await ask(daemon, sid, "/approvals untrusted")
    _, wrong = await ask(daemon, sid, "/approvals sometimes")

    assert "Mode: auto" in shown and "- full-access:" in shown
    assert "Mode: read-only" in to_mode
    assert daemon.session_updates(sid, "current_mode_update")[0]["currentModeId"] == "read-only"
    assert "approval policy untrusted" in to_policy
    assert "unknown mode or approval policy 'sometimes'" in wrong


async def test_fork_and_history(offline_daemon: Daemon) -> None:
    daemon = offline_daemon
    sid = await daemon.new_session()
    await daemon.prompt(sid, "list files")
    await daemon.prompt(sid, "read nothing.txt")

    _, forked = await ask(daemon, sid, "/fork 0")
    fork_id = forked.split("into session ")[1].split(".")[0]
    before = len(daemon.session_updates(sid, "user_message_chunk"))
    _, history = await ask(daemon, sid, "/history 1")
    replayed = daemon.session_updates(sid, "user_message_chunk")[before:]
    _, bad = await ask(daemon, sid, "/fork first")

    assert "up to user message 0" in forked
    fork_text = await daemon.request("_cody/session/history", {"sessionId": fork_id})
    users = [m for m in fork_text["messages"] if m["role"] == "user"]
    texts = [b["text"] for u in users for b in u["content"] if b["type"] == "text"]
    assert texts == ["list files"], users
    assert [u["content"]["text"] for u in replayed] == ["read nothing.txt"]
    assert "the last 1 turn(s)" in history
    assert "/fork takes a user message number" in bad


async def test_a_fork_made_by_slash_fork_is_not_left_locked(
    cody_env: CodyEnv, offline_daemon: Daemon
) -> None:
    """Regression: the fork stayed open (and its file locked) in the daemon that made it, so
    another daemon opening it got -32011 "in use by another Cody daemon" until the first
    one exited (a warm daemon: until it stopped)."""
    daemon = offline_daemon
    empty = await daemon.new_session()
    _, nothing = await ask(daemon, empty, "/fork")
    sid = await daemon.new_session()
    await daemon.prompt(sid, "list files")
    _, forked = await ask(daemon, sid, "/fork")
    fork_id = forked.split("into session ")[1].split(".")[0]

    other = await Daemon.start(cody_env)
    try:
        await other.initialize()
        params = {"sessionId": fork_id, "cwd": str(cody_env.workspace), "mcpServers": []}
        await other.request("session/load", params)
        result = await other.prompt(fork_id, "list files")
        await other.request("session/close", {"sessionId": fork_id})
    finally:
        await other.close()
    await daemon.request("session/resume", params)  # and it opens again where it was made

    assert "Nothing to fork yet" in nothing
    assert result["stopReason"] == "end_turn"
    listed = await daemon.request("session/list", {})
    assert fork_id in {s["sessionId"] for s in listed["sessions"]}


async def test_history_shows_the_calls_again_under_new_tool_call_ids(
    offline_daemon: Daemon,
) -> None:
    """Issue 24.14: `/history` re-sent the session's tool calls under the toolCallIds they
    already had, so a client (ids are unique per session) updated the calls it had shown
    instead of showing them again. Every `tool_call` of a session now has its own id, and a
    replayed message its own messageId."""
    daemon = offline_daemon
    sid = await daemon.new_session()
    await daemon.prompt(sid, "list files")
    first_calls = [u["toolCallId"] for u in daemon.session_updates(sid, "tool_call")]
    first_messages = {u.get("messageId") for u in daemon.session_updates(sid)} - {None}
    before = len(daemon.session_updates(sid))
    await daemon.prompt(sid, "/history")
    await daemon.prompt(sid, "/history")

    calls = [u["toolCallId"] for u in daemon.session_updates(sid, "tool_call")]
    assert first_calls and len(calls) == 3 * len(first_calls), calls
    assert len(set(calls)) == len(calls), f"a toolCallId was sent twice: {calls}"
    replayed = daemon.session_updates(sid)[before:]
    replayed_messages = {u.get("messageId") for u in replayed} - {None}
    assert replayed_messages and not replayed_messages & first_messages
    replayed_texts = [
        u["content"]["text"] for u in replayed if u["sessionUpdate"] == "user_message_chunk"
    ]
    assert replayed_texts.count("list files") == 2, "the conversation is still shown"


async def test_unknown_slash_words_go_to_the_model_as_text(offline_daemon: Daemon) -> None:
    daemon = offline_daemon
    sid = await daemon.new_session()
    _, answer = await ask(daemon, sid, "/usr/bin/env is what?")
    assert "offline model" in answer, "the model answered (its help text): it saw the prompt"


async def test_compact_init_and_review(cody_env: CodyEnv, model: MockResponsesServer) -> None:
    cody_env.use_mock_provider(model.base_url)
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        sid = await daemon.new_session(approvalPolicy="never")
        _, nothing = await ask(daemon, sid, "/compact")
        model.enqueue(text("Hello."))
        await daemon.prompt(sid, "hello")
        model.enqueue(text("Summary: the user said hello."))
        _, compacted = await ask(daemon, sid, "/compact")
        model.enqueue(
            tool_call("writeFile", {"filePath": "AGENTS.md", "content": "# Agents\n"}, call_id="a")
        )
        model.enqueue(text("Wrote AGENTS.md."))
        await daemon.prompt(sid, "/init keep it short")
        model.enqueue(tool_call("exec", {"command": "git diff"}, call_id="d"))
        model.enqueue(text("No findings."))
        await daemon.prompt(sid, "/review")
    finally:
        await daemon.close()
    assert "Nothing to compact yet" in nothing
    assert "Compacted: " in compacted and "The session file keeps everything" in compacted
    assert len(model.requests) == 6, "/compact without history asked no model"
    init_prompt = user_texts(model.requests[3])[-1]
    assert init_prompt.startswith("/init: write this project's `AGENTS.md`")
    assert "keep everything in it that is still true" in init_prompt
    assert init_prompt.endswith("The user adds: keep it short")
    assert (cody_env.workspace / "AGENTS.md").read_text() == "# Agents\n"
    review_prompt = user_texts(model.requests[5])[-1]
    assert "git diff --staged" in review_prompt and "Do not change any file" in review_prompt
    calls = daemon.tool_updates(sid, "d")
    assert calls[-1]["status"] in ("completed", "failed"), "the review's git ran as a tool"
    for update in daemon.session_updates(sid, "available_commands_update"):
        assert acp_errors("SessionUpdate", update) == []
    assert json.dumps(model.requests[-1].body).count("/init: write this") == 1


async def test_the_chat_client_sends_init_and_review_to_the_daemon(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """cody-client runs its own /model, /compact...; /init and /review go through, as from an
    editor, so the terminal and the editors get the same prompts."""
    cody_env.use_mock_provider(model.base_url)
    model.enqueue(text("Nothing to review."))
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cody_client",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=cody_env.env,
        cwd=cody_env.workspace,
    )
    out, err = await asyncio.wait_for(process.communicate(b"/review the tests\n"), 60)
    assert process.returncode == 0, err.decode()
    assert "Nothing to review." in out.decode()
    assert "Unknown command" not in out.decode()
    prompt = user_texts(model.requests[0])[-1]
    assert prompt.startswith("/review: review the uncommitted changes")
    assert prompt.endswith("The user adds: the tests")


async def test_session_cancel_stops_a_compact_which_answers_cancelled(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        sid = await daemon.new_session()
        model.enqueue(text("Hello."))
        await daemon.prompt(sid, "hello")
        model.enqueue(text("Summary that never finishes", chunks=50), delay_s=0.2)
        compacting = asyncio.ensure_future(daemon.prompt(sid, "/compact"))
        await daemon.wait_for(lambda: len(model.requests) == 2)
        daemon.conn.notify("session/cancel", {"sessionId": sid})
        result = await compacting
        model.enqueue(text("Still here."))
        after = await daemon.prompt(sid, "still there?")
    finally:
        await daemon.close()
    assert result["stopReason"] == "cancelled"
    assert "Compaction cancelled; nothing was changed." in daemon.agent_text(sid)
    assert after["stopReason"] == "end_turn"
    assert user_texts(model.requests[-1]) == ["hello", "still there?"], "nothing was summarised"
