"""What editors show of tool calls, live and on `session/load`, through the real daemon.

- `locations` (ACP `ToolCallLocation`: absolute path, 1-based line): CodeCompanion joined its
  cwd onto a path it had to guess and showed the wrong file in the diff approval; every
  file-touching call now names its files, on `tool_call`, in the approval request and on the
  final `tool_call_update`.
- Replay: `session/load` shows each call as first sent (title, kind, locations, diffs), the
  plans, the thoughts, the prompt's resources, and the same `messageId`s as live.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.support.daemon import CodyEnv, Daemon
from tests.support.mock_responses import MockResponsesServer, reasoning, text, tool_call


def real(path: Path) -> str:
    return os.path.realpath(path)


def call_updates(daemon: Daemon, sid: str, call_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The `tool_call` of `call_id` and its final `tool_call_update`."""
    updates = daemon.tool_updates(sid, call_id)
    start = next(u for u in updates if u["sessionUpdate"] == "tool_call")
    final = next(
        u
        for u in reversed(updates)
        if u["sessionUpdate"] == "tool_call_update" and u.get("status") in ("completed", "failed")
    )
    return start, final


async def test_every_file_touching_call_names_its_files_with_absolute_paths_and_lines(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    ws = daemon.env.workspace
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("one\ntwo\nthree\nfour\n")
    (ws / "src" / "old.py").write_text("keep\nme\n")
    (ws / "notes.md").write_text("alpha\nneedle here\nbeta\nneedle again\n")
    patch = (
        "*** Begin Patch\n"
        "*** Update File: src/app.py\n@@\n one\n two\n-three\n+THREE\n four\n"
        "*** Update File: src/old.py\n*** Move to: src/new.py\n@@\n keep\n-me\n+moved\n"
        "*** Add File: src/added.py\n+print('hi')\n"
        "*** End Patch\n"
    )
    model.enqueue(
        tool_call("readFile", {"filePath": "src/../src/app.py", "offset": 2}, call_id="r1"),
        tool_call("writeFile", {"filePath": "out/w.txt", "content": "a\nb\n"}, call_id="w1"),
        tool_call("applyPatch", {"patch": patch}, call_id="p1"),
        tool_call("listDir", {"dirPath": "src"}, call_id="l1"),
        tool_call("grepFiles", {"pattern": "needle"}, call_id="g1"),
        tool_call("grepFiles", {"pattern": "needle", "path": "notes.md"}, call_id="g2"),
        tool_call("fileSearch", {"query": "app"}, call_id="f1"),
    )
    model.enqueue(text("done"))
    sid = await daemon.new_session(approvalPolicy="untrusted")  # every edit asks
    daemon.answer("allow_once", "allow_once")

    result = await daemon.prompt(sid, "touch files")
    assert result["stopReason"] == "end_turn"

    start, final = call_updates(daemon, sid, "r1")
    app = real(ws / "src" / "app.py")
    assert start["locations"] == [{"path": app, "line": 2}], "resolved, absolute, at the offset"
    assert final["locations"] == [{"path": app, "line": 2}]

    w_path = real(ws) + "/out/w.txt"
    start, final = call_updates(daemon, sid, "w1")
    assert start["locations"] == [{"path": w_path}]
    assert final["locations"] == [{"path": w_path, "line": 1}]
    write_request, patch_request = daemon.permission_requests
    assert write_request["toolCall"]["locations"] == [{"path": w_path}], (
        "the approval names the absolute file, so the editor shows the right one"
    )

    start, final = call_updates(daemon, sid, "p1")
    src = real(ws / "src")
    announced = {loc["path"] for loc in start["locations"]}
    assert announced == {f"{src}/app.py", f"{src}/old.py", f"{src}/new.py", f"{src}/added.py"}
    assert {loc["path"] for loc in patch_request["toolCall"]["locations"]} == announced
    assert final["locations"] == [
        {"path": f"{src}/app.py", "line": 3},
        {"path": f"{src}/new.py", "line": 2},
        {"path": f"{src}/old.py"},
        {"path": f"{src}/added.py", "line": 1},
    ], "every path the patch touched, at its first changed line"

    start, final = call_updates(daemon, sid, "l1")
    assert start["locations"] == final["locations"] == [{"path": src}]

    notes = real(ws / "notes.md")
    start, final = call_updates(daemon, sid, "g1")
    assert start["locations"] == [{"path": real(ws)}]
    assert final["locations"] == [{"path": notes, "line": 2}, {"path": notes, "line": 4}]
    _, final = call_updates(daemon, sid, "g2")
    assert final["locations"] == [{"path": notes, "line": 2}, {"path": notes, "line": 4}]

    start, final = call_updates(daemon, sid, "f1")
    assert "locations" not in start
    assert {"path": app} in final["locations"]
    for update in daemon.tool_updates(sid):
        for loc in update.get("locations", []):
            assert os.path.isabs(loc["path"]), loc


async def test_a_path_with_a_nul_byte_fails_that_call_not_the_turn(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    """Regression: a model-sent path with a NUL byte made the policy checks raise
    `ValueError: embedded null byte`, and the whole prompt answered -32603. Now only that
    call fails (with a message the model can act on), it has no locations, and the turn goes
    on."""
    model.enqueue(
        tool_call("readFile", {"filePath": "bad\x00name"}, call_id="r1"),
        tool_call("writeFile", {"filePath": "w\x00.txt", "content": "x"}, call_id="w1"),
    )
    model.enqueue(text("ok"))
    sid = await daemon.new_session()

    result = await daemon.prompt(sid, "read it")

    assert result["stopReason"] == "end_turn"
    for call_id in ("r1", "w1"):
        start, final = call_updates(daemon, sid, call_id)
        assert final["status"] == "failed"
        assert "locations" not in start and "locations" not in final
        assert "null byte" in final["rawOutput"]["output"]
    assert daemon.permission_requests == []
    assert daemon.agent_text(sid).endswith("ok")


def _live_message_ids(daemon: Daemon, sid: str, kind: str) -> list[str]:
    ids: list[str] = []
    for update in daemon.session_updates(sid, kind):
        message_id = update.get("messageId")
        assert isinstance(message_id, str) and message_id, update
        if not ids or ids[-1] != message_id:
            ids.append(message_id)
    return ids


async def test_load_replays_calls_plans_thoughts_and_resources_as_first_sent(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    ws = cody_env.workspace
    (ws / "a.txt").write_text("old line\n")
    plan = {
        "plan": [
            {"step": "Read the file", "status": "completed"},
            {"step": "Change it", "status": "in_progress"},
        ]
    }
    model.enqueue(
        reasoning("I should edit a.txt"),
        text("Planning."),
        tool_call("updatePlan", plan, call_id="plan1"),
        tool_call("writeFile", {"filePath": "a.txt", "content": "new line\n"}, call_id="w1"),
    )
    model.enqueue(text("Edited."))
    prompt_blocks = [
        {"type": "text", "text": "Edit this file:"},
        {
            "type": "resource",
            "resource": {
                "uri": f"file://{ws}/a.txt",
                "text": "old line\n",
                "mimeType": "text/plain",
            },
        },
        {"type": "resource_link", "uri": f"file://{ws}/b.txt", "name": "b.txt"},
    ]
    first = await Daemon.start(cody_env)
    try:
        await first.initialize()
        sid = await first.new_session()
        first.answer("allow_once")
        await first.request(
            "session/prompt", {"sessionId": sid, "prompt": prompt_blocks}, timeout=60
        )
        live_start, live_final = call_updates(first, sid, "w1")
        live_plan = first.session_updates(sid, "plan")
        live_text_ids = _live_message_ids(first, sid, "agent_message_chunk")
        live_thought_ids = _live_message_ids(first, sid, "agent_thought_chunk")
    finally:
        await first.close()
    assert len(live_text_ids) == 2, "one message before the tools, one after"

    second = await Daemon.start(cody_env)
    try:
        await second.initialize()
        await second.request("session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
        updates = second.session_updates(sid)
        users = [u for u in updates if u["sessionUpdate"] == "user_message_chunk"]
        assert [u["content"] for u in users] == prompt_blocks, "the prompt's blocks, as sent"
        assert len({u["messageId"] for u in users}) == 1

        replayed = {u["toolCallId"]: u for u in updates if u["sessionUpdate"] == "tool_call"}
        write = replayed["w1"]
        assert write["kind"] == live_start["kind"] == "edit"
        assert write["title"] == live_start["title"]
        assert write["status"] == "completed"
        assert write["locations"] == live_final["locations"]
        assert write["content"] == live_final["content"]
        [diff] = write["content"]
        assert diff["type"] == "diff" and diff["oldText"] == "old line\n"
        assert diff["newText"] == "new line\n"

        kinds = [u["sessionUpdate"] for u in updates]
        plan_at = kinds.index("plan")
        assert updates[plan_at - 1].get("toolCallId") == "plan1", "the plan follows its call"
        assert [u["entries"] for u in second.session_updates(sid, "plan")] == [
            p["entries"] for p in live_plan
        ]
        thoughts = second.session_updates(sid, "agent_thought_chunk")
        assert "".join(t["content"]["text"] for t in thoughts) == "I should edit a.txt"
        assert _live_message_ids(second, sid, "agent_thought_chunk") == live_thought_ids
        assert _live_message_ids(second, sid, "agent_message_chunk") == live_text_ids, (
            "the replay's messageIds are the live ones"
        )
    finally:
        await second.close()


async def test_a_session_file_without_display_data_still_loads(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """Files written before calls kept their display: the replay describes the call again
    and shows its output text, as it did before."""
    cody_env.use_mock_provider(model.base_url)
    ws = cody_env.workspace
    model.enqueue(tool_call("writeFile", {"filePath": "n.txt", "content": "x"}, call_id="w1"))
    model.enqueue(text("done"))
    first = await Daemon.start(cody_env)
    try:
        await first.initialize()
        sid = await first.new_session()
        first.answer("allow_once")
        await first.prompt(sid, "write n.txt: x")
    finally:
        await first.close()
    [path] = list((cody_env.cody_home / "sessions").rglob("*.jsonl"))
    lines = []
    for raw in path.read_text().splitlines():
        line = json.loads(raw)
        line["payload"].pop("display", None)
        line["payload"].pop("client_content", None)
        lines.append(json.dumps(line))
    path.write_text("\n".join(lines) + "\n")

    second = await Daemon.start(cody_env)
    try:
        await second.initialize()
        await second.request("session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
        [call] = [u for u in second.session_updates(sid, "tool_call") if u["toolCallId"] == "w1"]
        assert call["kind"] == "edit" and call["status"] == "completed"
        assert call["title"] == "Write n.txt"
        assert call["content"][0]["type"] == "content"
        assert "Wrote 1 bytes" in call["content"][0]["content"]["text"]
    finally:
        await second.close()
