"""Big sessions for the resume row of `bench/run.py --peers`, in each agent's own file format.

Cody's comes from `bench/run.py` (`write_big_session`: 10,000 items, 4 per turn). For the Codex
CLI and Claude Code, the agent itself first records a real one-tool turn against the bench
model; that turn is then repeated (fresh ids per copy, the copies chained) until the file
holds 10,000 items: Codex rollout `response_item` lines (4 per turn: prompt, call, output,
answer, plus the `event_msg` lines Codex writes around them), or Claude Code session lines
(every line with a `uuid`, chained by `parentUuid`). Recording first keeps the files in the
exact format of the pinned versions.
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

__all__ = ["grow_claude_session", "grow_codex_rollout"]

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_CALL_IDS = re.compile(r'"((?:call_echo|toolu_echo|msg_bench|resp_bench)(?:_\d+)?)"')


def _renamed(block: list[str], keep: str, copy: int) -> list[str]:
    """The block's lines with every UUID but `keep` (the session id) and call id made new."""
    text = "\n".join(block)
    fresh: dict[str, str] = {}
    text = _UUID.sub(
        lambda m: (
            m.group(0) if m.group(0) == keep else fresh.setdefault(m.group(0), str(uuid.uuid4()))
        ),
        text,
    )
    text = _CALL_IDS.sub(lambda m: f'"{m.group(1)}_c{copy}"', text)
    return text.split("\n")


def grow_codex_rollout(rollout: Path, items: int) -> int:
    """Repeat the recorded turn of `rollout` in place until it has `items` response items.

    The turn runs from the `task_started` event to `task_complete`; the copies leave out the
    per-thread context items of the first turn (developer instructions, environment context,
    world state). Returns the number of response items written.
    """
    lines = rollout.read_text().splitlines()
    meta: dict[str, Any] = json.loads(lines[0])
    thread = str(meta["payload"]["id"])
    start = next(i for i, line in enumerate(lines) if '"task_started"' in line)
    end = next(i for i, line in enumerate(lines) if '"task_complete"' in line)

    def contextual(line: str) -> bool:
        record = json.loads(line)
        payload = record.get("payload") or {}
        if record.get("type") == "world_state":
            return True
        if record.get("type") != "response_item" or payload.get("type") != "message":
            return False
        said = json.dumps(payload.get("content"))
        return payload.get("role") == "developer" or "<environment_context>" in said

    block = [line for line in lines[start : end + 1] if not contextual(line)]
    per_turn = sum(
        '"type": "response_item"' in line or '"type":"response_item"' in line for line in block
    )
    count = sum(
        '"type":"response_item"' in line or '"type": "response_item"' in line for line in lines
    )
    out = list(lines)
    copy = 0
    while count < items:
        copy += 1
        out.extend(_renamed(block, thread, copy))
        count += per_turn
    with rollout.open("w") as handle:
        for ordinal, line in enumerate(out):
            record = json.loads(line)
            if "ordinal" in record:
                record["ordinal"] = ordinal
            handle.write(json.dumps(record, separators=(",", ":")) + "\n")
    return count


def grow_claude_session(session: Path, lines_wanted: int) -> int:
    """Repeat the recorded turn of a Claude Code session file until it has `lines_wanted` lines.

    Every copy gets new uuids, its first line's `parentUuid` is the previous copy's last
    `uuid`, so the file is one conversation. Returns the number of lines written.
    """
    lines = session.read_text().splitlines()
    records = [json.loads(line) for line in lines]
    session_id = next(str(r["sessionId"]) for r in records if "sessionId" in r)
    block = [line for line, r in zip(lines, records, strict=True) if "uuid" in r]
    last = next(str(r["uuid"]) for r in reversed(records) if "uuid" in r)
    out = list(lines)
    copy = 0
    while len(out) < lines_wanted:
        copy += 1
        renamed = [json.loads(line) for line in _renamed(block, session_id, copy)]
        renamed[0]["parentUuid"] = last
        last = str(renamed[-1]["uuid"])
        out.extend(json.dumps(r, separators=(",", ":")) for r in renamed)
    session.write_text("\n".join(out) + "\n")
    return len(out)
