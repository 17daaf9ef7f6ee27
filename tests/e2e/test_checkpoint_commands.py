"""`/undo` and `/rewind` as ACP slash commands (what an editor's chat sends), through the
real daemon: answered as agent text, never sent to the model."""

from __future__ import annotations

from tests.support.checkpoints import checkpoints, workspace_state
from tests.support.daemon import Daemon
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import user_texts


async def test_slash_undo_and_rewind_from_an_acp_chat(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    ws = daemon.env.workspace
    (ws / "notes.txt").write_text("v1\n")
    start = workspace_state(ws)
    model.enqueue(tool_call("writeFile", {"filePath": "notes.txt", "content": "v2\n"}, call_id="a"))
    model.enqueue(text("v2 written"))
    model.enqueue(
        tool_call("exec", {"command": "echo v3 > notes.txt && touch extra.txt"}, call_id="b")
    )
    model.enqueue(text("v3 written"))
    sid = await daemon.new_session(approvalPolicy="never")
    await daemon.prompt(sid, "make it v2")
    after_first = workspace_state(ws)
    await daemon.prompt(sid, "make it v3")
    requests = len(model.requests)

    await daemon.prompt(sid, "/undo")

    answer = daemon.agent_text(sid)
    assert "Rewound to before turn 2 “make it v3”" in answer
    assert "notes.txt" in answer and "extra.txt" in answer
    assert workspace_state(ws) == after_first
    assert len(model.requests) == requests, "the command never reached the model"

    await daemon.prompt(sid, "/rewind")

    listing = daemon.agent_text(sid)
    assert "1. rewind" in listing and "2. turn 2" in listing and "3. turn 1" in listing
    assert "“make it v2” · 1 file(s): M notes.txt" in listing

    await daemon.prompt(sid, "/rewind 3 files")

    assert workspace_state(ws) == start, "turn 1's change undone too"
    model.enqueue(text("fine"))
    await daemon.prompt(sid, "what now")
    assert user_texts(model.requests[-1]) == ["make it v2", "what now"], (
        "/undo took turn 2 out of the conversation; `/rewind 3 files` kept turn 1 in it"
    )
    assert len(await checkpoints(daemon, sid)) == 5


async def test_slash_rewind_mistakes_are_answered_as_text(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    sid = await daemon.new_session()
    await daemon.prompt(sid, "/undo")
    assert "Nothing to undo" in daemon.agent_text(sid)
    model.enqueue(text("hi"))
    await daemon.prompt(sid, "hello")
    await daemon.prompt(sid, "/rewind 7")
    assert "from 1 to 1" in daemon.agent_text(sid)
