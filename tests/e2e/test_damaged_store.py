"""Bad data in one session file or one argument affects only that file or call (issue 8.10).

Sessions are made by the real daemon; copies of their files are then damaged the ways a
crash, a full disk, a bad editor or a hostile tool could damage them. `session/list` must
still list every session whose header is readable, each damaged session loads (skipping
what it cannot read) or fails alone with a clear error, and the undamaged ones are intact.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from tests.support.daemon import CodyEnv, Daemon, expect_error
from tests.support.mock_responses import MockResponsesServer, text

Damage = Callable[[list[bytes]], list[bytes]]


def insert_after_meta(line: bytes) -> Damage:
    return lambda lines: [lines[0], line, *lines[1:]]


def replace_payloads(kind: str, payload: object) -> Damage:
    def damage(lines: list[bytes]) -> list[bytes]:
        out = []
        for raw in lines:
            line = json.loads(raw)
            if line["type"] == kind:
                line["payload"] = payload
            out.append(json.dumps(line).encode() + b"\n")
        return out

    return damage


def corrupt_user_message(lines: list[bytes]) -> list[bytes]:
    out = []
    for raw in lines:
        line = json.loads(raw)
        payload = line["payload"]
        if line["type"] == "response_item" and payload.get("role") == "user":
            payload["content"] = "a string, not a list of parts"
        out.append(json.dumps(line).encode() + b"\n")
    return out


# name -> (damage, listed afterwards?)
DAMAGES: dict[str, tuple[Damage, bool]] = {
    "a_json_array_line": (insert_after_meta(b"[1, 2, 3]\n"), True),
    "a_json_string_line": (insert_after_meta(b'"just a string"\n'), True),
    "a_json_null_line": (insert_after_meta(b"null\n"), True),
    "a_number_line": (insert_after_meta(b"42\n"), True),
    "binary_garbage": (insert_after_meta(bytes(range(256)) + b"\n"), True),
    "nul_bytes": (insert_after_meta(b"\x00" * 64 + b"\n"), True),
    "payload_not_an_object": (insert_after_meta(b'{"type":"response_item","payload":[1]}\n'), True),
    "user_content_not_a_list": (corrupt_user_message, True),
    "usage_with_absurd_numbers": (
        insert_after_meta(
            b'{"type":"event","payload":{"kind":"usage","total":{"input":1e308,"x":"y"}}}\n'
        ),
        True,
    ),
    "grant_key_of_objects": (
        insert_after_meta(
            b'{"type":"event","payload":{"kind":"approval","decision":"allow_session",'
            b'"grantKey":[{"a":1}]}}\n'
        ),
        True,
    ),
    "settings_not_an_object": (replace_payloads("turn_context", "x"), True),
    "meta_settings_a_string": (
        lambda lines: [
            lines[0].replace(b'"settings":{', b'"settings":"bad","old":{'),
            *lines[1:],
        ],
        True,
    ),
    "meta_line_is_an_array": (lambda lines: [b"[]\n", *lines[1:]], False),
    "meta_payload_is_a_string": (replace_payloads("session_meta", "x"), False),
    "empty_file": (lambda lines: [], False),
    "only_a_torn_line": (lambda lines: [lines[0][:20]], False),
}


async def make_session(daemon: Daemon, model: MockResponsesServer, label: str) -> str:
    sid = await daemon.new_session()
    model.enqueue(text(f"answer for {label}"))
    await daemon.prompt(sid, f"question for {label}")
    return sid


def file_of(env: CodyEnv, sid: str) -> Path:
    [path] = (env.cody_home / "sessions").glob(f"*/*/*/rollout-*-{sid}.jsonl")
    return path


async def test_damaged_session_files_affect_only_themselves(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        healthy = await make_session(daemon, model, "healthy")
        template = await make_session(daemon, model, "template")
        await daemon.request("session/close", {"sessionId": template})
        template_path = file_of(cody_env, template)
        template_lines = template_path.read_bytes().splitlines(keepends=True)
        damaged: dict[str, str] = {}
        for index, (name, (damage, _)) in enumerate(DAMAGES.items()):
            sid = f"{template}-d{index:02d}"
            copy = template_path.with_name(template_path.name.replace(template, sid))
            lines = [line.replace(template.encode(), sid.encode()) for line in template_lines]
            copy.write_bytes(b"".join(damage(lines)))
            damaged[name] = sid
        # Not a file at all, and a file that cannot be decoded.
        (template_path.parent / f"rollout-2020-01-01T00-00-00-{template}-dir.jsonl").mkdir()
        (template_path.parent / "rollout-broken.jsonl").write_bytes(b"\xff\xfe\x00garbage")

        listed = await daemon.request("session/list", {})
        ids = {s["sessionId"] for s in listed["sessions"]}
        assert {healthy, template} <= ids
        for name, sid in damaged.items():
            assert (sid in ids) == DAMAGES[name][1], name

        for name, sid in damaged.items():
            load = daemon.request(
                "session/load", {"sessionId": sid, "cwd": str(cody_env.workspace), "mcpServers": []}
            )
            if DAMAGES[name][1]:
                await load  # the bad line is skipped; the rest of the session is there
                assert "answer for template" in daemon.agent_text(sid), name
            else:
                await expect_error(load, -32002)

        # The healthy session is untouched and goes on.
        await daemon.request("session/close", {"sessionId": healthy})
        await daemon.request(
            "session/load", {"sessionId": healthy, "cwd": str(cody_env.workspace), "mcpServers": []}
        )
        assert "answer for healthy" in daemon.agent_text(healthy)
        model.enqueue(text("still fine"))
        assert (await daemon.prompt(healthy, "again"))["stopReason"] == "end_turn"
    finally:
        await daemon.close()
    shutil.rmtree(cody_env.cody_home / "sessions", ignore_errors=True)


async def test_a_nul_byte_in_a_path_fails_only_that_call(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """Issue 8.10: a NUL in a path failed the whole turn (writeFile) or gave -32603."""
    from tests.support.mock_responses import tool_call

    cody_env.use_mock_provider(model.base_url, extra='approval_policy = "never"')
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        workspace = str(cody_env.workspace)
        for params in (
            {"cwd": workspace + "\x00/x", "mcpServers": []},
            {"cwd": "/\x00", "mcpServers": []},
        ):
            error = await expect_error(daemon.request("session/new", params), -32602)
            assert error.data["errors"][0]["key"] == "cwd"
        error = await expect_error(daemon.request("session/list", {"cwd": "/tmp\x00"}), -32602)
        assert error.data["errors"][0]["key"] == "cwd"
        # Found by the fuzz suite: the NUL check itself failed on an explicit null (-32603).
        assert (await daemon.request("session/list", {"cwd": None}))["sessions"] == []

        sid = await daemon.new_session()
        await expect_error(
            daemon.request("session/load", {"sessionId": sid, "cwd": "/a\x00b", "mcpServers": []}),
            -32602,
        )
        model.enqueue(
            tool_call("writeFile", {"file_path": "bad\x00name.txt", "content": "x"}, call_id="w1")
        )
        model.enqueue(
            tool_call("writeFile", {"file_path": "good.txt", "content": "ok"}, call_id="w2")
        )
        model.enqueue(text("done"))
        assert (await daemon.prompt(sid, "write")).get("stopReason") == "end_turn"
        [failed] = [u for u in daemon.tool_updates(sid, "w1") if u.get("status") == "failed"]
        assert "NUL" in json.dumps(failed)
        assert (cody_env.workspace / "good.txt").read_text() == "ok"
        assert (await daemon.request("session/list", {}))["sessions"]
    finally:
        await daemon.close()
