"""What starting a command costs, and the protected-path scan of a large workspace (issue 26).

    uv run python bench/run.py processes [--runs 9]

- `command_start_ms`: starting `/bin/true` through the daemon's launcher until its exit is
  known (a message to the spare reaper, `posix_spawn`), against `python_start_ms`: one
  Python start (`python -I -S -c pass`), what the per-command subreaper helper cost before.
- The protected-path scan of a workspace with a generated `node_modules` tree (900 packages,
  ~185,000 entries): a fresh walk (`protected.scan`, what every sandboxed command paid
  before), the watched scan's first walk, and a later call (policy/protected_watch.py).
- `sandboxed_turn_ms[node_modules]`: a one-tool turn (`echo` under bubblewrap) through the
  daemon in that workspace, after the first.

Medians of `runs` [min, max]; the fresh walk and the first watched walk are run 3 times.
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cody_daemon.policy import protected, protected_watch
from cody_daemon.tools.processes.host import ProcessHost
from cody_daemon.tools.processes.launcher_client import SpawnRequest
from cody_daemon.tools.processes.process import ProcessFacts


def _summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def make_tree(root: Path) -> int:
    """A workspace with a git directory and a `node_modules` of 900 packages."""
    rng = random.Random(26)
    (root / ".git" / "objects").mkdir(parents=True)
    (root / ".git" / "refs").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    entries = 0
    for package in range(900):
        base = root / "node_modules" / f"pkg{package}"
        for directory in range(rng.randint(8, 60)):
            depth = rng.randint(0, 3)
            sub = base.joinpath(*[f"d{directory}_{k}" for k in range(depth)])
            sub.mkdir(parents=True, exist_ok=True)
            for name in range(rng.randint(2, 8)):
                (sub / f"f{name}.js").touch()
                entries += 1
    return entries


async def command_start(runs: int) -> dict[str, Any]:
    host = ProcessHost()
    table = host.table("bench")
    launcher = await host.launcher()
    facts = ProcessFacts(
        command="true",
        title="true",
        cwd="/",
        started_at="",
        background=False,
        may_outlive=False,
        tty=False,
        isolation="not-needed",
        turn_id=None,
        call_id=None,
    )
    request = SpawnRequest(argv=["/bin/true"], cwd="/", env={"PATH": os.defpath})
    spawned, interpreter = [], []
    try:
        for index in range(runs + 1):
            await asyncio.sleep(0.05)  # the spare reaper is forked again meanwhile
            started = time.perf_counter()
            process = await table.start(request, facts, launcher=launcher)
            await process.wait_exit(10)
            elapsed = (time.perf_counter() - started) * 1000
            table.forget(process)
            started = time.perf_counter()
            python = await asyncio.create_subprocess_exec(sys.executable, "-I", "-S", "-c", "pass")
            await python.wait()
            if index:
                spawned.append(elapsed)
                interpreter.append((time.perf_counter() - started) * 1000)
    finally:
        await host.close()
    return {"command_start_ms": _summary(spawned), "python_start_ms": _summary(interpreter)}


def protected_scan(root: Path, runs: int) -> dict[str, Any]:
    roots = (root,)
    fresh, first = [], []
    for _ in range(3):
        started = time.perf_counter()
        result = protected.scan(root, roots)
        fresh.append((time.perf_counter() - started) * 1000)
        protected_watch.forget_all()
        started = time.perf_counter()
        protected_watch.cached_scan(root, roots)
        first.append((time.perf_counter() - started) * 1000)
    later = []
    for _ in range(runs):
        started = time.perf_counter()
        protected_watch.cached_scan(root, roots)
        later.append((time.perf_counter() - started) * 1000)
    protected_watch.forget_all()
    return {
        "workspace_entries": result.entries,
        "protected_scan_fresh_ms": _summary(fresh),
        "protected_scan_watched_first_ms": _summary(first),
        "protected_scan_watched_later_ms": _summary(later),
    }


async def sandboxed_turns(root: Path, runs: int) -> dict[str, Any]:
    from bench.run import Env, daemon, new_session, prompt, sse_server

    with tempfile.TemporaryDirectory() as tmp:
        env = Env(Path(tmp))
        env.workspace = root
        times = []
        async with sse_server("tool-turn") as port:
            env.use_server(port)
            async with daemon(env) as process:
                sid = await new_session(process, env, sandboxMode="workspace-write")
                for index in range(runs + 1):
                    started = time.perf_counter()
                    result = await prompt(process, sid, "run echo")
                    assert result["stopReason"] == "end_turn", result
                    if index:
                        times.append((time.perf_counter() - started) * 1000)
    return {"sandboxed_turn_ms[node_modules]": _summary(times)}


async def bench_processes(runs: int) -> dict[str, Any]:
    results: dict[str, Any] = await command_start(runs)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        make_tree(root)
        results.update(await asyncio.to_thread(protected_scan, root, runs))
        results.update(await sandboxed_turns(root, runs))
    return results
