"""What the model sees before and after a compaction, and where a compaction may cut."""

from __future__ import annotations

from cody_daemon.core.history import (
    FunctionCallItem,
    FunctionCallOutputItem,
    HistoryItem,
    MessageItem,
    ReasoningItem,
    SummaryPart,
    TextPart,
    user_message,
)
from cody_daemon.engine.compaction import (
    SUMMARY_HEADER,
    Compaction,
    _choose_cut,
    _response_starts,
    cap_output,
    item_key,
    model_history,
)


def assistant(item_id: str, text: str) -> MessageItem:
    return MessageItem(
        id=item_id, role="assistant", content=[TextPart(type="output_text", text=text)]
    )


def history() -> list[HistoryItem]:
    return [
        user_message("u1", "fix the build"),  # 0
        ReasoningItem(id="r1", summary=[SummaryPart(text="look first")], provider="p"),  # 1
        FunctionCallItem(call_id="c1", name="exec", arguments="{}"),  # 2
        FunctionCallOutputItem(call_id="c1", output="error in a.py"),  # 3
        assistant("a1", "Found it."),  # 4
        FunctionCallItem(call_id="c2", name="readFile", arguments="{}"),  # 5
        FunctionCallOutputItem(call_id="c2", output="x" * 100),  # 6
        FunctionCallItem(call_id="c3", name="writeFile", arguments="{}"),  # 7
        FunctionCallOutputItem(call_id="c3", output="ok"),  # 8
    ]


def test_cuts_only_where_a_model_response_starts() -> None:
    # After the user message (1), after each tool output (4, 7), and the end (9); never
    # between a thinking block and its call, or between a call and its output.
    assert _response_starts(history(), 0) == [1, 4, 7, 9]


def test_the_kept_tail_fits_the_budget_else_nothing_is_kept() -> None:
    items = history()
    assert _choose_cut(items, 0, keep_tokens=10_000, tool_output_tokens=10_000) == 1
    assert _choose_cut(items, 0, keep_tokens=15, tool_output_tokens=10_000) == 7
    assert _choose_cut(items, 0, keep_tokens=0, tool_output_tokens=10_000) == 9


def test_after_compaction_the_model_sees_the_summary_the_live_request_and_the_tail() -> None:
    items = history()
    compaction = Compaction(
        summary="Fixed a.py.", summarized_through=item_key(items[6]), item_id="s1"
    )
    view = model_history(items, compaction, 10_000)
    assert isinstance(view[0], MessageItem) and view[0].role == "user"
    assert view[0].text == SUMMARY_HEADER + "Fixed a.py."
    # The latest user message was summarised: it is put back verbatim, then the tail.
    assert view[1] == items[0]
    assert view[2:] == items[7:]


def test_a_user_message_in_the_tail_is_not_repeated() -> None:
    items = [*history(), user_message("u2", "now run the tests"), assistant("a2", "Running.")]
    compaction = Compaction(summary="S", summarized_through=item_key(items[8]), item_id="s1")
    view = model_history(items, compaction, 10_000)
    assert [getattr(i, "id", None) for i in view] == ["s1", "u2", "a2"]


def test_a_compaction_whose_item_is_gone_falls_back_to_the_whole_history() -> None:
    items = history()
    compaction = Compaction(summary="S", summarized_through="call:nope", item_id="s1")
    assert model_history(items, compaction, 10_000) == items


def test_long_tool_outputs_are_cut_in_the_middle_saying_how_much() -> None:
    item = FunctionCallOutputItem(call_id="c", output="H" * 500 + "M" * 1000 + "T" * 500)
    capped = cap_output(item, max_tokens=100)  # 400 characters
    assert isinstance(capped, FunctionCallOutputItem)
    assert capped.output.startswith("H" * 200) and capped.output.endswith("T" * 200)
    assert "1,600 characters (about 400 tokens) cut from the middle" in capped.output
    assert "M" not in capped.output
    assert item.output.count("M") == 1000  # the history item itself is unchanged
    short = FunctionCallOutputItem(call_id="c", output="fine")
    assert cap_output(short, max_tokens=100) is short


def test_a_recorded_compaction_round_trips_through_its_event() -> None:
    compaction = Compaction(summary="S", summarized_through="call:c1", item_id="s1")
    assert Compaction.from_event(compaction.event()) == compaction
    assert Compaction.from_event(None) is None
    assert Compaction.from_event({"kind": "compaction", "summary": 3}) is None
