"""Benchmark of the unified history on a 100 MB Codex rollout, through the real daemon.

    uv run python bench/history.py [--size-mb 100] [--runs 9]

Writes a realistic rollout (session meta with long instructions, turn contexts, user
prompts, reasoning with encrypted content, shell calls with outputs of 0.2-8 KB, answers,
token counts) into a temp CODEX_HOME, spawns `python -m cody_daemon` and measures, as the
median of `runs` runs (min-max):
- `_cody/history/list` with a cold summary cache (the file is touched before each run) and warm;
- the first `_cody/history/read` page (200 messages), and a page in the middle of the file
  (its cursor re-reads at most one chunk);
- a walk through every page (1,000 messages each): time, messages/s, MB/s, and the daemon's
  RSS before, at its highest during, and after the walk (memory flat = growth independent
  of the file size).
Results: bench/results/history.json; the table is in bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import ROOT, Env, daemon, machine, rss_mb, summary  # noqa: E402

SESSION_ID = "01a20000-bench-7000-8000-000000000100"


def write_rollout(path: Path, size_mb: int) -> int:
    """A Codex-like rollout of about `size_mb` MB; returns the number of turns."""
    rng = random.Random(7)
    path.parent.mkdir(parents=True, exist_ok=True)
    instructions = "You are Codex, a coding agent. " * 700
    meta = {"id": SESSION_ID, "cwd": "/home/dev/project", "timestamp": "2026-01-01T00:00:00.000Z",
            "originator": "codex_exec", "cli_version": "0.169.0", "base_instructions": {"text": instructions}}  # fmt: skip
    turns = 0
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(
            json.dumps(
                {"timestamp": "2026-01-01T00:00:00.000Z", "type": "session_meta", "payload": meta}
            )
            + "\n"
        )
        while handle.tell() < size_mb * 1024 * 1024:
            seconds = turns * 7
            stamp = _stamps(seconds)
            lines: list[tuple[str, str, dict[str, Any]]] = [
                (stamp(0), "turn_context", {"turn_id": f"t{turns}", "model": "gpt-5.5", "cwd": "/home/dev/project"}),
                (stamp(0), "response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"Step {turns}: " + "please fix the failing test " * rng.randint(1, 20)}]}),
            ]  # fmt: skip
            for call in range(rng.randint(1, 4)):
                encrypted = base64.b64encode(rng.randbytes(rng.randint(600, 2400))).decode()
                raw = base64.b64encode(rng.randbytes(rng.randint(150, 6000))).decode()
                output = "\n".join(raw[i : i + 76] for i in range(0, len(raw), 76))
                call_id = f"call_{turns}_{call}"
                lines += [
                    (stamp(1), "response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Looking at the test output."}], "encrypted_content": encrypted}),
                    (stamp(1), "response_item", {"type": "function_call", "name": "exec_command", "arguments": json.dumps({"cmd": f"pytest -q tests/test_{call}.py"}), "call_id": call_id}),
                    (stamp(2), "event_msg", {"type": "token_count", "info": {"last_token_usage": {"input_tokens": 1000 + turns, "cached_input_tokens": 800, "output_tokens": 60, "reasoning_output_tokens": 20}}}),
                    (stamp(3), "response_item", {"type": "function_call_output", "call_id": call_id, "output": output}),
                ]  # fmt: skip
            lines.append((stamp(5), "response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Fixed: " + "the assertion now matches. " * rng.randint(1, 12)}]}))  # fmt: skip
            for timestamp, kind, payload in lines:
                handle.write(
                    json.dumps({"timestamp": timestamp, "type": kind, "payload": payload}) + "\n"
                )
            turns += 1
    return turns


def _stamps(seconds: int) -> Any:
    def stamp(offset: int) -> str:
        total = seconds + offset
        day, hour, minute, second = (
            1 + total // 86400,
            total // 3600 % 24,
            total // 60 % 60,
            total % 60,
        )
        return f"2026-01-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}.{offset * 37 % 1000:03d}Z"

    return stamp


async def timed(call: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = await call
    return (time.perf_counter() - started) * 1000, result


async def bench(size_mb: int, runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="cody-history-bench-") as tmp:
        env = Env(Path(tmp))
        codex_home = Path(env.env["CODEX_HOME"])
        path = (
            codex_home
            / "sessions"
            / "2026"
            / "01"
            / "01"
            / f"rollout-2026-01-01T00-00-00-{SESSION_ID}.jsonl"
        )
        started = time.perf_counter()
        turns = write_rollout(path, size_mb)
        size = path.stat().st_size
        print(
            f"wrote {size / 1e6:.1f} MB ({turns} turns) in {time.perf_counter() - started:.1f} s",
            flush=True,
        )
        async with daemon(env) as process:
            conn = process.connection
            pid = process.process.pid
            cold, warm = [], []
            info: dict[str, Any] = {}
            for _ in range(runs):
                os.utime(path)  # a changed file: the summary cache misses
                ms, result = await timed(conn.request("_cody/history/list", {"agent": "codex"}))
                cold.append(ms)
                info = result["sessions"][0]
                ms, _ = await timed(conn.request("_cody/history/list", {"agent": "codex"}))
                warm.append(ms)
            first_page, middle_page = [], []
            read = {"sessionId": SESSION_ID, "includeOriginal": False}
            for _ in range(runs):
                ms, page = await timed(conn.request("_cody/history/read", {**read, "limit": 200}))
                first_page.append(ms)
            walks, rss = [], []
            messages = 0
            middle_cursor = None
            for run in range(max(1, runs // 3)):
                cursor = None
                messages = 0
                pages = 0
                before = rss_mb(pid)
                peak = before
                started = time.perf_counter()
                while True:
                    params = {**read, "limit": 1000, **({"cursor": cursor} if cursor else {})}
                    page = await conn.request("_cody/history/read", params)
                    messages += len(page["messages"])
                    pages += 1
                    peak = max(peak, rss_mb(pid))
                    cursor = page.get("nextCursor")
                    if run == 0 and pages == 40:
                        middle_cursor = cursor
                    if cursor is None:
                        break
                walks.append(time.perf_counter() - started)
                rss.append({"before": before, "peak": peak, "after": rss_mb(pid)})
            for _ in range(runs):
                ms, _ = await timed(
                    conn.request(
                        "_cody/history/read", {**read, "limit": 200, "cursor": middle_cursor}
                    )
                )
                middle_page.append(ms)
            exact = (await conn.request("_cody/history/list", {"agent": "codex"}))["sessions"][0]
    walk = summary(walks)
    return {
        "file_mb": round(size / 1e6, 1),
        "turns": turns,
        "messages": messages,
        "listed_count": {"estimated": info["messageCount"], "after_a_full_read": exact["messageCount"], "exact": exact["messageCountExact"]},
        "list_cold_ms": summary(cold),
        "list_warm_ms": summary(warm),
        "first_page_200_ms": summary(first_page),
        "middle_page_200_ms": summary(middle_page),
        "full_walk_s": walk,
        "full_walk_messages_per_s": round(messages / walk["median"]),
        "full_walk_mb_per_s": round(size / 1e6 / walk["median"], 1),
        "rss_mb": rss,
    }  # fmt: skip


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size-mb", type=int, default=100)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "history.json")
    args = parser.parse_args()
    result = await bench(args.size_mb, args.runs)
    report = {"machine": machine(), "runs": args.runs, "results": {"history": result}}
    print(json.dumps(report, indent=1), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    asyncio.run(main())
