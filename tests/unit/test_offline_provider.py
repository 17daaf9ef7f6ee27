"""The built-in offline provider: its grammar, its events and its summaries of tool results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cody_daemon.core.history import (
    FunctionCallItem,
    FunctionCallOutputItem,
    HistoryItem,
    MessageItem,
    TextPart,
    user_message,
)
from cody_daemon.policy.sandbox import SandboxPolicy
from cody_daemon.providers.base import (
    ModelEvent,
    ModelRequest,
    ReasoningDelta,
    ReasoningDone,
    StreamEnd,
    TextDelta,
    ToolCallRequested,
    UsageReport,
)
from cody_daemon.providers.offline import HELP_TEXT, OfflineProvider
from cody_daemon.store.reader import INTERRUPTED_OUTPUT
from cody_daemon.tools.base import ToolContext
from cody_daemon.tools.list_dir import ListDirArgs, ListDirTool

INSTRUCTIONS = "You are Cody. " * 40


async def run(history: list[HistoryItem]) -> list[ModelEvent]:
    provider = OfflineProvider(delay_s=0)
    request = ModelRequest(
        model="offline", instructions=INSTRUCTIONS, history=history, tools=[], session_id="s"
    )
    return [event async for event in provider.stream(request)]


def texts(events: list[ModelEvent]) -> list[str]:
    return [e.text for e in events if isinstance(e, TextDelta)]


def calls(events: list[ModelEvent]) -> list[ToolCallRequested]:
    return [e for e in events if isinstance(e, ToolCallRequested)]


def check_stream_shape(events: list[ModelEvent], stop: str) -> None:
    """Reasoning first, then text, calls, usage, and exactly one StreamEnd, last."""
    assert isinstance(events[0], ReasoningDelta) and events[0].text
    done = events[1]
    assert isinstance(done, ReasoningDone)
    assert done.item.text == events[0].text
    assert done.item.provider == "offline"
    kinds = [type(e).__name__ for e in events]
    assert kinds.count("StreamEnd") == 1
    assert events[-1] == StreamEnd(stop=stop)  # type: ignore[arg-type]
    assert kinds.count("UsageReport") == 1
    assert isinstance(events[-2], UsageReport)
    first_call = kinds.index("ToolCallRequested") if "ToolCallRequested" in kinds else len(kinds)
    assert all(k != "TextDelta" for k in kinds[first_call:]), "text comes before calls"


GRAMMAR = [
    ("list files", "listDir", {"dirPath": "."}),
    ("list files in src", "listDir", {"dirPath": "src"}),
    ("LIST FILES IN Src/App", "listDir", {"dirPath": "Src/App"}),
    ("read README.md", "readFile", {"filePath": "README.md"}),
    ("Read docs/My Notes.txt", "readFile", {"filePath": "docs/My Notes.txt"}),
    ("run ls -la", "exec", {"command": "ls -la"}),
    ("RUN echo 'hi there' | wc -c", "exec", {"command": "echo 'hi there' | wc -c"}),
    ("  run   pwd  \n", "exec", {"command": "pwd"}),
    (
        "write notes.txt: hello world",
        "writeFile",
        {"filePath": "notes.txt", "content": "hello world"},
    ),
    (
        "Write src/a.py: print(1)\nprint(2)\n",
        "writeFile",
        {"filePath": "src/a.py", "content": "print(1)\nprint(2)"},
    ),
    ("write empty.txt:", "writeFile", {"filePath": "empty.txt", "content": ""}),
]


@pytest.mark.parametrize(("prompt", "tool", "arguments"), GRAMMAR, ids=[g[0] for g in GRAMMAR])
async def test_grammar_asks_for_one_tool(prompt: str, tool: str, arguments: dict[str, str]) -> None:
    history: list[HistoryItem] = [user_message("msg_1", prompt)]
    events = await run(history)
    check_stream_shape(events, "tool_use")

    deltas = texts(events)
    assert deltas and all(deltas)
    (call,) = calls(events)
    assert call.name == tool
    assert json.loads(call.arguments) == arguments
    assert call.call_id

    usage = events[-2]
    assert isinstance(usage, UsageReport)
    expected_input = (len(INSTRUCTIONS) + len(history[0].text)) / 4  # type: ignore[union-attr]
    assert abs(usage.input_tokens - expected_input) <= 2
    reasoning = events[0].text  # type: ignore[union-attr]
    expected_output = (len("".join(deltas)) + len(reasoning) + len(call.arguments)) / 4
    assert abs(usage.output_tokens - expected_output) <= 2
    assert 0 < usage.reasoning_tokens <= usage.output_tokens


@pytest.mark.parametrize(
    "prompt",
    [pytest.param(g[0], id=g[0]) for g in GRAMMAR],
)
async def test_tool_reply_text_streams_in_several_deltas(prompt: str) -> None:
    deltas = texts(await run([user_message("msg_1", prompt)]))
    assert len(deltas) >= 2, deltas


async def test_each_call_gets_a_fresh_id() -> None:
    history: list[HistoryItem] = [user_message("msg_1", "list files")]
    first = calls(await run(history))[0]
    second = calls(await run(history))[0]
    assert first.call_id != second.call_id


async def test_the_latest_user_message_decides() -> None:
    history: list[HistoryItem] = [
        user_message("msg_1", "run ls"),
        MessageItem(
            id="msg_2", role="assistant", content=[TextPart(type="output_text", text="Done.")]
        ),
        user_message("msg_3", "read setup.py"),
    ]
    (call,) = calls(await run(history))
    assert (call.name, json.loads(call.arguments)) == ("readFile", {"filePath": "setup.py"})


@pytest.mark.parametrize("prompt", ["hello", "please list files", "list files in", "", "runs"])
async def test_anything_else_gets_the_help_text(prompt: str) -> None:
    events = await run([user_message("msg_1", prompt)])
    check_stream_shape(events, "end_turn")
    assert calls(events) == []
    assert len(texts(events)) >= 2
    assert "".join(texts(events)) == HELP_TEXT  # every character kept, newlines too


async def test_empty_history_gets_the_help_text() -> None:
    events = await run([])
    check_stream_shape(events, "end_turn")
    assert "".join(texts(events)) == HELP_TEXT


# --- summaries of tool results --------------------------------------------------------------


def after_call(
    name: str, arguments: dict[str, str], output: str, **kw: object
) -> list[HistoryItem]:
    return [
        user_message("msg_1", "do it"),
        FunctionCallItem(call_id="call_1", name=name, arguments=json.dumps(arguments)),
        FunctionCallOutputItem(call_id="call_1", output=output, **kw),  # type: ignore[arg-type]
    ]


async def summary(history: list[HistoryItem]) -> str:
    events = await run(history)
    check_stream_shape(events, "end_turn")
    assert calls(events) == [], "a summary never asks for another tool"
    assert "finished" in events[0].text  # type: ignore[union-attr]
    return "".join(texts(events))


async def test_exec_success_summary_shows_the_output() -> None:
    output = "Exit code: 0\nWall time: 0.01 s\nOutput:\nhello\nworld\n"
    text = await summary(after_call("exec", {"command": "echo hello"}, output))
    assert "succeeded" in text
    assert "hello\nworld" in text
    assert "Wall time" not in text


async def test_exec_failure_summary_gives_the_exit_code() -> None:
    output = "Exit code: 2\nWall time: 0.00 s\nOutput:\nls: cannot access 'x'"
    text = await summary(after_call("exec", {"command": "ls x"}, output, status="failed"))
    assert "exited with code 2" in text
    assert "cannot access 'x'" in text


async def test_exec_without_output_says_so_briefly() -> None:
    text = await summary(after_call("exec", {"command": "true"}, "Exit code: 0\nOutput:\n"))
    assert text == "The command succeeded."


async def list_output(path: Path) -> str:
    ctx = ToolContext(
        session_id="s", call_id="c", cwd=path, sandbox=SandboxPolicy.create("read-only", path)
    )
    return (await ListDirTool().run(ListDirArgs.model_validate({"dirPath": "."}), ctx)).output


async def test_list_dir_summary_names_the_entries(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("")
    output = await list_output(tmp_path)
    text = await summary(after_call("listDir", {"dirPath": "."}, output))
    assert text.startswith("I found 3 entries")
    for name in ("a.txt", "src/", "main.py"):
        assert name in text
    assert str(tmp_path) not in text


async def test_list_dir_summary_cuts_long_listings() -> None:
    output = "/w/\n" + "\n".join(f"  f{n:02}.txt" for n in range(30))
    text = await summary(after_call("listDir", {"dirPath": "."}, output))
    assert "I found 30 entries" in text
    assert "f11.txt" in text and "f12.txt" not in text
    assert text.endswith("…."), text


async def test_empty_directory_summary(tmp_path: Path) -> None:
    output = await list_output(tmp_path)
    text = await summary(after_call("listDir", {"dirPath": "."}, output))
    assert text == "The directory is empty."


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        ('{"error": "User denied approval"}', "User denied approval"),
        (INTERRUPTED_OUTPUT, "interrupted"),
        ('{"error": "file not found: x.txt"}', "file not found: x.txt"),
    ],
)
async def test_error_output_summary(output: str, reason: str) -> None:
    text = await summary(after_call("readFile", {"filePath": "x.txt"}, output, status="failed"))
    assert text == f"The readFile call did not succeed: {reason}."


async def test_read_file_summary_previews_the_start() -> None:
    output = "1\tline one\n2\tline two\n3\tline three"
    text = await summary(after_call("readFile", {"filePath": "a.txt"}, output))
    assert "line one\nline two" in text
    assert "1\t" not in text


async def test_write_file_summary() -> None:
    text = await summary(
        after_call("writeFile", {"filePath": "a.txt", "content": "x"}, "Wrote 1 bytes to a.txt")
    )
    assert text == "Done: Wrote 1 bytes to a.txt."


async def test_json_output_that_is_not_an_error_is_summarised_normally() -> None:
    text = await summary(after_call("updatePlan", {}, '{"ok": true}'))
    assert "did not succeed" not in text
    assert '{"ok": true}' in text


async def test_summaries_use_the_right_plural(tmp_path: Path) -> None:
    (tmp_path / "only.txt").write_text("x\n")
    one = await summary(after_call("listDir", {"dirPath": "."}, await list_output(tmp_path)))
    assert one == "I found 1 entry: only.txt."
    (tmp_path / "second.txt").write_text("y\n")
    two = await summary(after_call("listDir", {"dirPath": "."}, await list_output(tmp_path)))
    assert two.startswith("I found 2 entries:")
