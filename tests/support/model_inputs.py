"""Reading what the daemon sent to the mock model (Responses API `input` items)."""

from __future__ import annotations

from typing import Any

from .mock_responses import RecordedRequest


def input_items(request: RecordedRequest) -> list[dict[str, Any]]:
    body = request.body
    assert isinstance(body, dict)
    items: list[dict[str, Any]] = body["input"]
    return items


def tool_outputs(request: RecordedRequest) -> dict[str, str]:
    """call_id -> output text of every function_call_output in the request (the text parts
    of an output sent as a list with images)."""
    return {
        item["call_id"]: _output_text(item["output"])
        for item in input_items(request)
        if item.get("type") == "function_call_output"
    }


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    return "".join(part.get("text", "") for part in output if part.get("type") == "input_text")


def user_texts(request: RecordedRequest) -> list[str]:
    return [
        part["text"]
        for item in input_items(request)
        if item.get("type") == "message" and item.get("role") == "user"
        for part in item["content"]
        if "text" in part
    ]


def assistant_texts(request: RecordedRequest) -> list[str]:
    return [
        part["text"]
        for item in input_items(request)
        if item.get("type") == "message" and item.get("role") == "assistant"
        for part in item["content"]
    ]
