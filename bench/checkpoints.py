"""Benchmark of checkpoints on a 20,000-file, 200 MB workspace.

    uv run python bench/checkpoints.py [--files 20000] [--mb 200] [--runs 9]

Builds a workspace of `files` files (200 directories of 100, about `mb` MB in all: source-like
text, every file different), then measures, median of `runs` (min-max):
- `first`: the first snapshot into a new store (creating it, hashing and storing every file);
- `incremental, nothing changed`: a snapshot right after another (what a turn that changes
  nothing costs; it runs concurrently with the model call anyway);
- `incremental, 12 files changed`: 10 modified, 1 added, 1 deleted since the last snapshot;
- disk use of the store after the first snapshot and per incremental snapshot of 12 files;
- through the real daemon (`python -m cody_daemon`, a canned model server): a turn running one
  `echo` (so a checkpoint before and after it) and a turn answering text only, in this
  workspace, with checkpoints on and with `checkpoints = false`.
Snapshots are timed through the package's own API (checkpoints/repo.py, the code a turn runs).
Results: bench/results/checkpoints.json; the table is in bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cody_daemon.checkpoints.git import find_git  # noqa: E402
from cody_daemon.checkpoints.repo import ShadowRepo  # noqa: E402
from run import ROOT, Env, daemon, machine, new_session, prompt, sse_server, summary  # noqa: E402

WORDS = [
    "def",
    "return",
    "self",
    "import",
    "from",
    "class",
    "if",
    "else",
    "for",
    "in",
    "while",
    "try",
    "except",
    "with",
    "as",
    "yield",
    "async",
    "await",
    "value",
    "result",
    "items",
    "config",
    "path",
    "name",
    "index",
    "count",
    "data",
    "node",
    "parent",
    "child",
    "buffer",
    "stream",
    "event",
    "handler",
    "request",
    "response",
    "error",
    "message",
    "status",
    "token",
    "session",
    "cursor",
]


def make_tree(root: Path, files: int, total_mb: int) -> int:
    """`files` files of about `total_mb` MB in all; returns the bytes written."""
    rng = random.Random(25)
    size = total_mb * 1_000_000 // files
    blocks = []
    for _ in range(64):
        lines = []
        while sum(len(line) for line in lines) < size:
            indent = "    " * rng.randint(0, 3)
            lines.append(indent + " ".join(rng.choices(WORDS, k=rng.randint(3, 12))) + "\n")
        blocks.append("".join(lines)[:size])
    written = 0
    for index in range(files):
        folder = root / f"pkg{index // 100:03d}"
        folder.mkdir(exist_ok=True)
        text = f"# file {index}\n" + blocks[index % len(blocks)]
        (folder / f"mod{index % 100:02d}.py").write_text(text)
        written += len(text)
    return written


def du(path: Path) -> int:
    out = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0])


async def timed_snapshot(repo: ShadowRepo, parent: str | None) -> tuple[float, str]:
    started = time.perf_counter()
    async with repo.locked():
        snapshot = await repo.snapshot("bench", parent, "bench")
    return (time.perf_counter() - started) * 1000, snapshot.commit


def change_files(ws: Path, run: int) -> None:
    for index in range(10):
        path = ws / f"pkg{index:03d}" / f"mod{run % 100:02d}.py"
        path.write_text(path.read_text() + f"# change {run}\n")
    (ws / f"added{run}.py").write_text(f"print({run})\n")
    victim = ws / f"pkg{100 + run:03d}" / "mod00.py"
    victim.unlink(missing_ok=True)


async def bench_snapshots(ws: Path, store_root: Path, runs: int) -> dict[str, Any]:
    git = find_git(os.environ)
    assert git, "git is needed"
    first, disk_first = [], 0
    for run in range(runs):
        store = store_root / f"first{run}"
        repo = ShadowRepo(git, store, ws)
        elapsed, _ = await timed_snapshot(repo, None)
        first.append(elapsed)
        disk_first = du(store)
        if run < runs - 1:
            shutil.rmtree(store)
    repo = ShadowRepo(git, store_root / f"first{runs - 1}", ws)  # a new daemon: no caches
    unchanged, changed = [], []
    _, parent = await timed_snapshot(repo, None)
    for _ in range(runs + 1):
        elapsed, parent = await timed_snapshot(repo, parent)
        unchanged.append(elapsed)
    before = du(repo.root)
    for run in range(runs):
        change_files(ws, run)
        elapsed, parent = await timed_snapshot(repo, parent)
        changed.append(elapsed)
    growth = (du(repo.root) - before) / runs
    return {
        "first_ms": summary(first),
        "incremental_unchanged_ms": summary(unchanged[1:]),
        "incremental_12_files_ms": summary(changed),
        "store_bytes_after_first": disk_first,
        "store_bytes_per_incremental_12_files": growth,
    }


async def bench_turns(tree: Path, runs: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for scenario, label in (("tool-turn", "echo_turn_ms"), ("short", "text_turn_ms")):
        for enabled in (True, False):
            with tempfile.TemporaryDirectory() as tmp:
                env = Env(Path(tmp))
                env.workspace.rmdir()
                os.symlink(tree, env.workspace)
                times = []
                async with sse_server(scenario) as port:
                    env.use_server(port)
                    if not enabled:
                        config = env.root / "cody" / "config.toml"
                        config.write_text("checkpoints = false\n" + config.read_text())
                    async with daemon(env) as process:
                        sid = await new_session(process, env)
                        for index in range(runs + 1):
                            started = time.perf_counter()
                            result = await prompt(process, sid, "go")
                            elapsed = time.perf_counter() - started
                            assert result["stopReason"] == "end_turn", result
                            if index:  # the first builds the store: see first_ms
                                times.append(elapsed * 1000)
                key = f"{label}[checkpoints {'on' if enabled else 'off'}]"
                results[key] = summary(times)
    return results


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "checkpoints.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cody-bench-checkpoints-") as tmp:
        root = Path(tmp)
        ws = root / "ws"
        ws.mkdir()
        written = make_tree(ws, args.files, args.mb)
        result: dict[str, Any] = {"tree": {"files": args.files, "bytes": written}}
        result |= await bench_snapshots(ws, root / "stores", args.runs)
        result |= await bench_turns(ws, args.runs)
    report = {"machine": machine(), "runs": args.runs, "results": {"checkpoints": result}}
    print(json.dumps(report, indent=1), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    asyncio.run(main())
