"""The session file's line format (one JSONL file per session; docs/architecture.md "Persistence").

Every line is one JSON object `{"timestamp": ISO-8601 UTC, "type": T, "payload": {...}}`
terminated by `\n`, where T is one of:

- `session_meta`: once, first: `{id, cwd, created, cliVersion, settings}`
- `turn_context`: at each turn start: `{turnId, provider, model, approvalPolicy, ...}`
- `response_item`: a history item (core/history.py). Streamed assistant text and
  reasoning are written as *segments*: several consecutive lines with the same item `id`
  whose texts concatenate (coalesced: at most one line per 50 ms, plus one at item end; each segment
  is written before its text is sent to the client).
- `event`: `{kind, ...}` with kind `approval` (decision + reason), `usage`, `config`
  (settings change), `turn_end`, `title`, `interrupted` (calls closed on load), `backend`
  (`{backend, resumeId}`: the agent CLI's own id for the conversation, codex/claude sessions).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

import orjson

__all__ = ["LineType", "encode_line", "utc_timestamp"]

LineType = Literal["session_meta", "turn_context", "response_item", "event"]


def utc_timestamp() -> str:
    """Current time as `2026-11-22T04:01:05.259Z`."""
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def encode_line(line_type: LineType, payload: dict[str, Any]) -> bytes:
    """One complete line, ready for a single `write()`."""
    return orjson.dumps(
        {"timestamp": utc_timestamp(), "type": line_type, "payload": payload},
        option=orjson.OPT_APPEND_NEWLINE,
    )
