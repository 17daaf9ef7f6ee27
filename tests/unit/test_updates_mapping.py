"""Engine events -> `session/update` payloads, checked against ACP's schema and our models."""

from __future__ import annotations

import typing
from typing import Any

import pytest
from cody_daemon.engine.events import (
    AgentText,
    AgentThought,
    CommandsAvailable,
    Compacted,
    ConfigChanged,
    DiagnosticsReported,
    EngineEvent,
    McpStatusChanged,
    PlanChanged,
    TitleChanged,
    ToolCallOpened,
    ToolCallOutput,
    ToolCallOutputEnd,
    ToolCallProgress,
    UsageChanged,
    UserImage,
    UserText,
)
from cody_daemon.rpc.live_output import TerminalView
from cody_daemon.rpc.updates import chunk_update, event_updates
from cody_protocol.content import (
    ContentToolCallContent,
    DiffToolCallContent,
    TextContent,
    ToolCallContent,
)
from cody_protocol.session import ConfigOptionValue, SessionConfigOption
from cody_protocol.updates import (
    AgentMessageChunk,
    AgentThoughtChunk,
    SessionUpdate,
    ToolCallLocation,
    UserMessageChunk,
)
from pydantic import TypeAdapter

from tests.support.acp_schema import acp_errors

UPDATE: TypeAdapter[Any] = TypeAdapter(SessionUpdate)

OPTIONS = [
    SessionConfigOption(
        id="approval_policy",
        name="Approval policy",
        current_value="on-request",
        options=[
            ConfigOptionValue(value=v, name=v)
            for v in ("untrusted", "on-request", "on-failure", "never")
        ],
    ),
    SessionConfigOption(
        id="model",
        name="Model",
        description="The model for the next turn",
        category="model",
        current_value="gpt-5",
        options=[ConfigOptionValue(value="gpt-5", name="GPT-5", description="default")],
    ),
]

OUTPUT: list[ToolCallContent] = [ContentToolCallContent(content=TextContent(text="a.txt\nb.txt\n"))]
DIFF: list[ToolCallContent] = [
    DiffToolCallContent(path="/w/a.py", old_text="x = 1\n", new_text="x = 2\n")
]
NEW_FILE: list[ToolCallContent] = [DiffToolCallContent(path="/w/new.py", new_text="print('hi')\n")]

# (event, expected sessionUpdate kinds, fields every update must carry)
EVENTS: list[tuple[str, EngineEvent, list[str], dict[str, Any]]] = [
    ("agent text", AgentText("Hello ✓"), ["agent_message_chunk"], {}),
    ("agent thought", AgentThought("hmm\n"), ["agent_thought_chunk"], {}),
    ("user text (replay)", UserText("list files"), ["user_message_chunk"], {}),
    (
        "user image (replay)",
        UserImage(data="iVBORw0KGgo=", mime_type="image/png"),
        ["user_message_chunk"],
        {"content": {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}},
    ),
    (
        "agent text with its message id",
        AgentText("Hi", message_id="msg_1"),
        ["agent_message_chunk"],
        {"messageId": "msg_1"},
    ),
    (
        "thought with its message id",
        AgentThought("hmm", message_id="rs_1"),
        ["agent_thought_chunk"],
        {"messageId": "rs_1"},
    ),
    (
        "user message replayed with its resource blocks",
        UserText(
            "flattened",
            message_id="msg_2",
            blocks=(
                {"type": "text", "text": "look"},
                {"type": "resource", "resource": {"uri": "file:///w/a.py", "text": "x = 1\n"}},
                {"type": "resource_link", "uri": "file:///w/b.py", "name": "b.py"},
            ),
        ),
        ["user_message_chunk", "user_message_chunk", "user_message_chunk"],
        {"messageId": "msg_2"},
    ),
    (
        "tool call with locations",
        ToolCallOpened(
            call_id="call_9",
            title="Read a.py",
            kind="read",
            raw_input={"filePath": "a.py"},
            locations=[ToolCallLocation(path="/w/a.py", line=3)],
        ),
        ["tool_call"],
        {"locations": [{"path": "/w/a.py", "line": 3}]},
    ),
    (
        "final update with locations",
        ToolCallProgress(
            call_id="call_9",
            status="completed",
            locations=[ToolCallLocation(path="/w/a.py"), ToolCallLocation(path="/w/b.py", line=1)],
        ),
        ["tool_call_update"],
        {"locations": [{"path": "/w/a.py"}, {"path": "/w/b.py", "line": 1}]},
    ),
    (
        "tool call pending",
        ToolCallOpened(
            call_id="call_1", title="Run ls -la", kind="execute", raw_input={"command": "ls -la"}
        ),
        ["tool_call"],
        {"toolCallId": "call_1", "status": "pending", "rawInput": {"command": "ls -la"}},
    ),
    (
        "tool call replayed completed",
        ToolCallOpened(
            call_id="call_2",
            title="List .",
            kind="read",
            raw_input={"dirPath": "."},
            status="completed",
            content=list(OUTPUT),
            raw_output={"entries": 2, "truncated": False},
        ),
        ["tool_call"],
        {"status": "completed", "rawOutput": {"entries": 2, "truncated": False}},
    ),
    (
        "tool call replayed failed with a diff",
        ToolCallOpened(
            call_id="call_3",
            title="Write a.py",
            kind="edit",
            raw_input={"filePath": "a.py", "content": "x = 2\n"},
            status="failed",
            content=[*DIFF, *NEW_FILE],
        ),
        ["tool_call"],
        {"status": "failed", "kind": "edit"},
    ),
    (
        "tool call with a string raw input",
        ToolCallOpened(call_id="call_4", title="t", kind="other", raw_input="not json {"),
        ["tool_call"],
        {"rawInput": "not json {"},
    ),
    (
        "progress in_progress",
        ToolCallProgress(call_id="call_1", status="in_progress"),
        ["tool_call_update"],
        {"toolCallId": "call_1", "status": "in_progress"},
    ),
    (
        "progress with live output only",
        ToolCallProgress(call_id="call_1", content=list(OUTPUT)),
        ["tool_call_update"],
        {"toolCallId": "call_1"},
    ),
    (
        "live output increment (appended text for clients without a terminal)",
        ToolCallOutput("call_1", "line 2\n"),
        ["tool_call_update"],
        {
            "content": [{"type": "content", "content": {"type": "text", "text": "line 2\n"}}],
            "_meta": {"cody": {"appendOutput": True}},
        },
    ),
    (
        "live output end (only a terminal shows it)",
        ToolCallOutputEnd(call_id="call_1", exit_code=0),
        [],
        {},
    ),
    (
        "progress completed",
        ToolCallProgress(
            call_id="call_1",
            status="completed",
            content=list(OUTPUT),
            raw_output={"exitCode": 0, "durationMs": 12},
        ),
        ["tool_call_update"],
        {"status": "completed", "rawOutput": {"exitCode": 0, "durationMs": 12}},
    ),
    (
        "progress failed with an edit diff",
        ToolCallProgress(call_id="call_3", status="failed", content=list(DIFF)),
        ["tool_call_update"],
        {"status": "failed"},
    ),
    (
        "plan",
        PlanChanged(
            (("Read the code", "completed"), ("Fix it", "in_progress"), ("Test", "pending"))
        ),
        ["plan"],
        {},
    ),
    ("empty plan", PlanChanged(()), ["plan"], {"entries": []}),
    (
        "usage without cost",
        UsageChanged(used=1200, size=272_000),
        ["usage_update"],
        {"used": 1200, "size": 272_000},
    ),
    (
        "usage with cost",
        UsageChanged(used=1200, size=272_000, cost_usd=0.0123),
        ["usage_update"],
        {"cost": {"amount": 0.0123, "currency": "USD"}},
    ),
    (
        "usage with zero cost",
        UsageChanged(used=0, size=8192, cost_usd=0.0),
        ["usage_update"],
        {"cost": {"amount": 0.0, "currency": "USD"}},
    ),
    (
        "config change",
        ConfigChanged(options=list(OPTIONS), mode_id="auto", mode_changed=False),
        ["config_option_update"],
        {},
    ),
    (
        "config change with a mode change",
        ConfigChanged(options=list(OPTIONS), mode_id="full-access", mode_changed=True),
        ["config_option_update", "current_mode_update"],
        {},
    ),
    (
        "available commands",
        CommandsAvailable((("compact", "Summarise", None), ("model", "Switch", "model name"))),
        ["available_commands_update"],
        {
            "availableCommands": [
                {"name": "compact", "description": "Summarise"},
                {"name": "model", "description": "Switch", "input": {"hint": "model name"}},
            ]
        },
    ),
    ("title", TitleChanged("Fix the build"), ["session_info_update"], {"title": "Fix the build"}),
    (
        "mcp status (not a session update)",
        McpStatusChanged(server="demo", state="ready", tools=2),
        [],
        {},
    ),
    (
        "diagnostics (not a session update: `_cody/diagnostics`)",
        DiagnosticsReported(call_id="c1", path="/w/a.py", diagnostics=(), servers=("ruff",)),
        [],
        {},
    ),
    (
        "compaction notice (a session_info_update with _meta.cody)",
        Compacted(
            reason="auto", tokens_before=9000, tokens_after=2100, summarized_items=40, kept_items=6
        ),
        ["session_info_update"],
        {
            "_meta": {
                "cody": {
                    "compaction": {
                        "reason": "auto",
                        "tokensBefore": 9000,
                        "tokensAfter": 2100,
                        "summarizedItems": 40,
                        "keptItems": 6,
                    }
                }
            }
        },
    ),
]


@pytest.mark.parametrize(("name", "event", "kinds", "fields"), EVENTS, ids=[e[0] for e in EVENTS])
def test_event_maps_to_valid_updates(
    name: str, event: EngineEvent, kinds: list[str], fields: dict[str, Any]
) -> None:
    updates = event_updates(event)
    assert [u["sessionUpdate"] for u in updates] == kinds
    for update in updates:
        assert acp_errors("SessionUpdate", update) == [], update
        model = UPDATE.validate_python(update)
        assert model.wire() == update, "the dict and the protocol model must agree"
        assert not any(value is None for value in update.values()), "no null fields on the wire"
    for key, value in fields.items():
        assert updates[0][key] == value, key


def test_every_engine_event_type_is_covered() -> None:
    covered = {type(event) for _, event, _, _ in EVENTS}
    assert covered == set(typing.get_args(EngineEvent))


def test_text_chunks_carry_the_text_exactly() -> None:
    text = "  two  spaces\n\ttab ünï 🎉 "
    assert event_updates(AgentText(text))[0]["content"] == {"type": "text", "text": text}


def test_plan_keeps_steps_in_order_with_medium_priority() -> None:
    (update,) = event_updates(PlanChanged((("b", "pending"), ("a", "completed"))))
    assert update["entries"] == [
        {"content": "b", "priority": "medium", "status": "pending"},
        {"content": "a", "priority": "medium", "status": "completed"},
    ]


def test_config_update_lists_every_option_and_the_new_mode() -> None:
    updates = event_updates(ConfigChanged(options=OPTIONS, mode_id="read-only", mode_changed=True))
    assert [o["id"] for o in updates[0]["configOptions"]] == ["approval_policy", "model"]
    assert updates[0]["configOptions"][0]["currentValue"] == "on-request"
    assert updates[1] == {"sessionUpdate": "current_mode_update", "currentModeId": "read-only"}


def test_diff_for_a_new_file_has_no_old_text() -> None:
    (update,) = event_updates(ToolCallProgress(call_id="c", status="completed", content=NEW_FILE))
    assert update["content"] == [{"type": "diff", "path": "/w/new.py", "newText": "print('hi')\n"}]


def test_unknown_event_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="unknown engine event"):
        event_updates(object())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kind", "model"),
    [
        ("agent_message_chunk", AgentMessageChunk),
        ("agent_thought_chunk", AgentThoughtChunk),
        ("user_message_chunk", UserMessageChunk),
    ],
)
@pytest.mark.parametrize("text", ["", "hi", "multi\nline\r\n", "ünï 🎉", '{"json": true}'])
def test_chunk_fast_path_equals_the_model(kind: str, model: type[Any], text: str) -> None:
    fast = chunk_update(kind, text)
    assert fast == model(content=TextContent(text=text)).wire()
    assert acp_errors("SessionUpdate", fast) == []


def test_mcp_status_is_sent_as_its_own_notification() -> None:
    from cody_daemon.rpc.updates import mcp_status_params
    from cody_protocol.extensions import McpStatusNotification

    event = McpStatusChanged(server="demo", state="failed", reason="timed out after 1 s")
    params = mcp_status_params("s1", event)
    assert params == {
        "sessionId": "s1",
        "server": "demo",
        "state": "failed",
        "reason": "timed out after 1 s",
        "tools": 0,
    }
    assert McpStatusNotification.model_validate(params).reason == "timed out after 1 s"


def _valid(update: dict[str, Any]) -> dict[str, Any]:
    assert acp_errors("SessionUpdate", update) == [], update
    assert UPDATE.validate_python(update).wire() == update
    return update


def test_a_terminal_client_gets_info_output_increments_and_one_exit() -> None:
    view = TerminalView()
    opened = ToolCallOpened(
        call_id="c1", title="make", kind="execute", raw_input={"command": "make"}, live_cwd="/w"
    )
    (start,) = view.updates("s", opened) or []
    assert _valid(start)["content"] == [{"type": "terminal", "terminalId": "c1"}]
    assert start["_meta"] == {"terminal_info": {"terminal_id": "c1", "cwd": "/w"}}
    (running,) = view.updates("s", ToolCallProgress(call_id="c1", status="in_progress")) or []
    assert _valid(running)["content"] == [{"type": "terminal", "terminalId": "c1"}]
    outputs = [view.updates("s", ToolCallOutput("c1", piece)) or [] for piece in ("a\n", "b\n")]
    assert [_valid(u)["_meta"]["terminal_output"]["data"] for (u,) in outputs] == ["a\n", "b\n"]
    assert view.updates("s", ToolCallOutputEnd(call_id="c1", exit_code=2)) == []
    final = ToolCallProgress(call_id="c1", status="failed", content=list(OUTPUT), raw_output={})
    (done,) = view.updates("s", final) or []
    assert _valid(done)["_meta"] == {
        "terminal_exit": {"terminal_id": "c1", "exit_code": 2, "signal": None}
    }
    assert done["content"] == [{"type": "terminal", "terminalId": "c1"}], "the stream was whole"
    assert view.updates("s", ToolCallOutput("c1", "late")) is None, "the terminal is closed"


def test_a_cut_stream_or_a_refused_call_shows_the_final_text_and_still_exits() -> None:
    view = TerminalView()
    for call in ("cut", "refused"):
        view.updates(
            "s",
            ToolCallOpened(call_id=call, title="t", kind="execute", raw_input={}, live_cwd="/w"),
        )
    view.updates("s", ToolCallProgress(call_id="cut", status="in_progress"))
    view.updates("s", ToolCallOutputEnd(call_id="cut", exit_code=0, complete=False))
    (cut,) = view.updates("s", ToolCallProgress(call_id="cut", status="completed", content=OUTPUT))
    assert _valid(cut)["content"][0] == {"type": "terminal", "terminalId": "cut"}
    assert cut["content"][1:] == [o.wire() for o in OUTPUT], "head + tail after the terminal"
    refused = ToolCallProgress(call_id="refused", status="failed", content=OUTPUT)
    (no_run,) = view.updates("s", refused) or []
    assert _valid(no_run)["content"] == [o.wire() for o in OUTPUT]
    assert no_run["_meta"]["terminal_exit"] == {
        "terminal_id": "refused",
        "exit_code": None,
        "signal": None,
    }


def test_a_terminal_client_keeps_the_diagnostics_added_after_the_command() -> None:
    view = TerminalView()
    view.updates(
        "s", ToolCallOpened(call_id="c", title="t", kind="execute", raw_input={}, live_cwd="/w")
    )
    view.updates("s", ToolCallProgress(call_id="c", status="in_progress"))
    view.updates("s", ToolCallOutputEnd(call_id="c", exit_code=0))
    found = ContentToolCallContent(content=TextContent(text="Diagnostics (ruff): ..."))
    final = ToolCallProgress(call_id="c", status="completed", content=[*OUTPUT, found])
    (done,) = view.updates("s", final) or []
    assert _valid(done)["content"] == [{"type": "terminal", "terminalId": "c"}, found.wire()]


def test_replayed_and_ordinary_calls_are_not_terminals() -> None:
    view = TerminalView()
    replayed = ToolCallOpened(
        call_id="r", title="t", kind="execute", raw_input={}, status="completed", live_cwd="/w"
    )
    assert view.updates("s", replayed) is None
    plain = ToolCallOpened(call_id="p", title="t", kind="read", raw_input={})
    assert view.updates("s", plain) is None
    assert view.updates("s", ToolCallProgress(call_id="p", status="completed")) is None


def test_diagnostics_are_sent_as_their_own_notification_in_the_models_shape() -> None:
    from cody_daemon.core.code_intel import Diagnostic
    from cody_daemon.rpc.updates import diagnostics_params
    from cody_protocol.extensions import DiagnosticsNotification

    found = Diagnostic(
        path="/w/a.py",
        line=5,
        column=12,
        end_line=5,
        end_column=26,
        severity="error",
        message="Undefined name `x`",
        code="F821",
        source="Ruff",
    )
    event = DiagnosticsReported(
        call_id="c1", path="/w/a.py", diagnostics=(found,), servers=("ruff",), late=("x (slow)",)
    )
    params = diagnostics_params("s1", event)
    assert DiagnosticsNotification.model_validate(params).wire() == params
    assert params == {
        "sessionId": "s1",
        "toolCallId": "c1",
        "path": "/w/a.py",
        "diagnostics": [
            {
                "line": 5,
                "column": 12,
                "endLine": 5,
                "endColumn": 26,
                "severity": "error",
                "message": "Undefined name `x`",
                "code": "F821",
                "source": "Ruff",
            }
        ],
        "servers": ["ruff"],
        "late": ["x (slow)"],
    }
