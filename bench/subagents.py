"""What a subagent and a worktree session cost, through the real daemon (not a test).

    uv run python bench/subagents.py [--runs 9] [--files 2000]

Measured as the median of `runs` runs (min-max), after one warm-up, against the canned model
server of bench/sse_server.py (no pacing):
- a one-tool turn (`echo`, 2 model calls) and a turn whose one call is `task` (3 model calls:
  the parent's, the child's, the parent's again; a child session created with its file, its
  profiles read, its turn run and its answer returned), interleaved run by run; the difference
  is what delegating adds;
- `session/new` with `_meta.cody.worktree` in a repository of `files` committed files (the
  worktree checked out), and `session/close` of that unchanged session (its worktree and
  branch removed), against a plain `session/new` and `session/close`.
Results: bench/results/subagents.json; the table is in bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cody_client.process import DaemonProcess  # noqa: E402
from run import ROOT, Env, daemon, machine, new_session, sse_server, summary  # noqa: E402


async def timed(coro: Any) -> float:
    start = time.perf_counter()
    await coro
    return (time.perf_counter() - start) * 1000


async def bench_task(runs: int) -> dict[str, Any]:
    """A one-tool turn (`echo`) against a turn whose one call is `task` (a child session made,
    its one-call turn, its answer returned), each daemon on its canned model server,
    interleaved run by run."""
    direct, delegated = [], []
    with tempfile.TemporaryDirectory() as tmp_a, tempfile.TemporaryDirectory() as tmp_b:
        env_a, env_b = Env(Path(tmp_a)), Env(Path(tmp_b))
        async with sse_server("tool-turn") as port_a, sse_server("task-turn") as port_b:
            env_a.use_server(port_a)
            env_b.use_server(port_b)
            async with daemon(env_a) as one, daemon(env_b) as two:
                session_a = await new_session(one, env_a)
                session_b = await new_session(two, env_b)
                await prompt(one, session_a)
                await prompt(two, session_b)
                for _ in range(runs):
                    direct.append(await timed(prompt(one, session_a)))
                    delegated.append(await timed(prompt(two, session_b)))
    overhead = [b - a for a, b in zip(direct, delegated, strict=True)]
    return {
        "one_tool_turn_ms": summary(direct),
        "task_turn_ms": summary(delegated),
        "delegation_overhead_ms": summary(overhead),
    }


async def prompt(process: DaemonProcess, session_id: str) -> None:
    await process.connection.request(
        "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}
    )


def make_repo(root: Path, files: int) -> None:
    for index in range(files):
        path = root / f"pkg{index % 40}" / f"module_{index}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"VALUE = {index}\n" * 20)
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@b"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "."], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "files"], cwd=root, check=True)


async def bench_worktree(runs: int, files: int) -> dict[str, Any]:
    plain_new, plain_close, tree_new, tree_close = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        env = Env(Path(tmp))
        make_repo(env.workspace, files)
        async with daemon(env) as process:
            conn = process.connection

            async def cycle(
                meta: dict[str, Any] | None, into: tuple[list[float], list[float]]
            ) -> None:
                params: dict[str, Any] = {"cwd": str(env.workspace), "mcpServers": []}
                if meta:
                    params["_meta"] = {"cody": meta}
                start = time.perf_counter()
                new = await conn.request("session/new", params)
                into[0].append((time.perf_counter() - start) * 1000)
                start = time.perf_counter()
                closed = await conn.request("session/close", {"sessionId": new["sessionId"]})
                into[1].append((time.perf_counter() - start) * 1000)
                if meta:
                    assert closed["_meta"]["cody"]["worktree"]["kept"] is False

            await cycle(None, ([], []))
            await cycle({"worktree": True}, ([], []))
            for _ in range(runs):
                await cycle(None, (plain_new, plain_close))
                await cycle({"worktree": True}, (tree_new, tree_close))
    return {
        "files": files,
        "session_new_ms": summary(plain_new),
        "session_close_ms": summary(plain_close),
        "worktree_session_new_ms": summary(tree_new),
        "worktree_session_close_ms": summary(tree_close),
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--files", type=int, default=2000)
    args = parser.parse_args()
    results = {
        "machine": machine(),
        "task": await bench_task(args.runs),
        "worktree": await bench_worktree(args.runs, args.files),
    }
    text = json.dumps(results, indent=2)
    print(text)
    out = ROOT / "bench" / "results" / "subagents.json"
    out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    asyncio.run(main())
