"""Images in a session are bounded on every path they enter (issue 20.10).

Every image of a session's history is sent to the model again on every turn, so the rules of
core/image_rules.py (type, size, at most 20 images and 20 MB per prompt, at most 100 images
and 24 MiB per session) hold for a prompt, an imported session, the load of an edited or
damaged session file, and a fork. A prompt that breaks them is refused with nothing stored;
an imported or loaded image that breaks them is left out (a note in its message).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.daemon import Daemon, expect_error
from tests.support.mock_responses import MockResponsesServer, input_images, text

pytestmark = pytest.mark.reliability

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()
PNG_URL = f"data:image/png;base64,{PNG}"
HTML = base64.b64encode(b"<script>alert(1)</script>").decode()
MiB = 1024 * 1024


def zeros(size: int) -> str:
    """`size` bytes (decoded) of image data, as base64."""
    return base64.b64encode(bytes(size)).decode()


def prompt(sid: str, *images: str, words: str = "look") -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": words}]
    blocks += [{"type": "image", "data": data, "mimeType": "image/png"} for data in images]
    return {"sessionId": sid, "prompt": blocks}


def session_text(daemon: Daemon) -> str:
    return "".join(p.read_text() for p in (daemon.env.cody_home / "sessions").rglob("*.jsonl"))


async def test_one_prompt_carries_at_most_20_images_and_20_mb(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    sid = await daemon.new_session()
    many = await expect_error(
        daemon.request("session/prompt", prompt(sid, *[PNG] * 21, words="twenty-one")), -32602
    )
    assert "at most 20 images" in many.message and many.data["errors"][0]["key"] == "prompt[21]"
    heavy = await expect_error(
        daemon.request("session/prompt", prompt(sid, *[zeros(8 * MiB)] * 3, words="heavy")),
        -32602,
    )
    assert "more than 20,971,520 bytes" in heavy.message
    assert heavy.data["errors"][0]["key"] == "prompt[3]"
    assert "twenty-one" not in session_text(daemon) and "heavy" not in session_text(daemon)
    assert model.requests == [], "refused before any model call"
    model.enqueue(text("twenty"))
    await daemon.request("session/prompt", prompt(sid, *[PNG] * 20))
    assert input_images(model.requests[-1]) == [PNG_URL] * 20


async def test_a_session_holds_at_most_100_images_and_24_mib(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    sid = await daemon.new_session()
    for _ in range(5):
        model.enqueue(text("ok"))
        await daemon.request("session/prompt", prompt(sid, *[PNG] * 20))
    assert len(input_images(model.requests[-1])) == 100, "every turn sends them all again"
    full = await expect_error(
        daemon.request("session/prompt", prompt(sid, PNG, words="one more")), -32602
    )
    assert "already holds 100 images" in full.message and "new session" in full.message

    heavy = await daemon.new_session()
    for _ in range(2):
        model.enqueue(text("ok"))
        await daemon.request("session/prompt", prompt(heavy, zeros(10 * MiB)))
    over = await expect_error(
        daemon.request("session/prompt", prompt(heavy, zeros(5 * MiB), words="third")), -32602
    )
    assert "at most 100 images of 25,165,824 bytes" in over.message
    model.enqueue(text("text still works"))
    await daemon.prompt(heavy, "no image this time")


def claude_image(media_type: str, data: str) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def claude_session(path: Path, blocks: list[dict[str, Any]]) -> Path:
    line = {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": "5f0c1d2e-0000-4000-8000-00000000cafe",
        "cwd": "/",
        "timestamp": "2026-11-22T04:14:33.059Z",
        "message": {"role": "user", "content": [{"type": "text", "text": "see"}, *blocks]},
    }
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    return path


async def test_an_imported_sessions_images_pass_the_same_rules(
    daemon: Daemon, model: MockResponsesServer, tmp_path: Path
) -> None:
    hostile = claude_session(
        tmp_path / "images.jsonl",
        [
            claude_image("text/html", HTML),  # not an image
            claude_image("image/png", zeros(21 * MiB)),  # over the 20 MB per image
            *[claude_image("image/png", PNG)] * 21,  # one more than a prompt may carry
        ],
    )
    result = await daemon.request(
        "_cody/history/import", {"path": str(hostile), "cwd": str(daemon.env.workspace)}
    )
    assert result["imported"]["imagesLeftOut"] == 3
    model.enqueue(text("seen"))
    await daemon.prompt(result["sessionId"], "what did I show you?")
    request = model.requests[-1]
    assert input_images(request) == [PNG_URL] * 20
    sent = json.dumps(request.body)
    assert "text/html" not in sent and HTML not in sent
    assert sent.count("[image left out:") == 3


async def test_a_damaged_session_files_images_are_checked_on_load_and_fork(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    sid = await daemon.new_session()
    model.enqueue(text("first"))
    await daemon.prompt(sid, "hello")
    await daemon.request("session/close", {"sessionId": sid})
    [path] = (daemon.env.cody_home / "sessions").rglob(f"*{sid}.jsonl")
    damaged = {
        "type": "message",
        "id": "msg_damaged",
        "role": "user",
        "content": [
            {"type": "input_text", "text": "edited in"},
            {"type": "input_image", "image_url": f"data:text/html;base64,{HTML}"},
            *[{"type": "input_image", "image_url": PNG_URL}] * 30,
        ],
        "client_content": [{"type": "image", "data": HTML, "mimeType": "text/html"}],
    }
    with path.open("a", encoding="utf-8") as handle:
        line = {"timestamp": "2026-01-01T00:00:00.000Z", "type": "response_item"}
        handle.write(json.dumps({**line, "payload": damaged}) + "\n")

    cwd = str(daemon.env.workspace)
    before = len(daemon.updates)
    await daemon.request("session/load", {"sessionId": sid, "cwd": cwd, "mcpServers": []})
    replayed = json.dumps(daemon.updates[before:])
    assert "text/html" not in replayed, "the damaged file's blocks are not replayed unchecked"
    model.enqueue(text("loaded"))
    await daemon.prompt(sid, "go on")
    assert input_images(model.requests[-1]) == [PNG_URL] * 20
    assert "text/html" not in json.dumps(model.requests[-1].body)
    await daemon.request("session/close", {"sessionId": sid})

    fork = await daemon.request(
        "session/fork", {"sessionId": sid, "cwd": cwd, "mcpServers": []}
    )  # from the file, the session being closed
    model.enqueue(text("forked"))
    await daemon.prompt(fork["sessionId"], "and in the fork?")
    assert input_images(model.requests[-1]) == [PNG_URL] * 20
