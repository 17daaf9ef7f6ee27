"""Benchmark of checkpoints on a 20,000-file, 200 MB workspace.

    uv run python bench/checkpoints.py [--files 20000] [--mb 200] [--runs 9] [--parts ...]

Builds a workspace of `files` files (200 directories of 100, about `mb` MB in all: source-like
text, every file different), then measures, median of `runs` (min-max):
- `first`: the first snapshot into a new store (creating it, hashing and storing every file);
- `incremental, nothing changed`: a snapshot right after another (what a turn that changes
  nothing costs; it runs concurrently with the model call anyway);
- `incremental, 12 files changed`: 10 modified, 1 added, 1 deleted since the last snapshot;
- disk use of the store after the first snapshot and per incremental snapshot of 12 files;
- the warm-up (`ShadowRepo.warm`: the first snapshot's hashing done ahead, niced, in
  batches) into a new store, and a snapshot right after it;
- through the real daemon (`python -m cody_daemon`, a canned model server): a turn running one
  `echo` (so a checkpoint before and after it) and a turn answering text only, in this
  workspace, with checkpoints on and with `checkpoints = false`;
- through the real daemon, the first turn in a workspace that has no store yet (a new data
  dir per run): sent at once after `session/new` (the warm-up has barely begun: the turn
  waits for its batch, then stages the rest itself), 5 s after it (a user typing), and once
  the warm-up is done (polled every 0.5 s with git's own `ls-files`); and how long the
  warm-up takes in the daemon.
The load average is recorded before and after each part.
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


async def bench_warm_up(ws: Path, store_root: Path, runs: int) -> dict[str, Any]:
    git = find_git(os.environ)
    assert git, "git is needed"
    warm, after = [], []
    for run in range(runs):
        repo = ShadowRepo(git, store_root / f"warm{run}", ws)
        started = time.perf_counter()
        await repo.warm()
        warm.append((time.perf_counter() - started) * 1000)
        elapsed, _ = await timed_snapshot(repo, None)
        after.append(elapsed)
        shutil.rmtree(repo.root)
    return {"warm_up_ms": summary(warm), "snapshot_after_warm_up_ms": summary(after)}


def left_to_stage(store_root: Path, tree: Path) -> int | None:
    """Files a snapshot would still stage in the daemon's store (None: no store yet)."""
    stores = [path for path in store_root.glob("*") if (path / "cody-checkpoints").is_file()]
    if not stores or not (stores[0] / "index").is_file():
        return None
    env = {
        "PATH": os.environ["PATH"],
        "GIT_DIR": str(stores[0]),
        "GIT_WORK_TREE": str(tree),
        "GIT_INDEX_FILE": str(stores[0] / "index"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
    }
    out = subprocess.run(
        ["git", "ls-files", "-z", "-m", "-d", "-o", "--exclude-standard"],
        env=env,
        cwd=stores[0],
        capture_output=True,
        check=True,
    ).stdout
    return out.count(b"\0")


async def staged(store_root: Path, tree: Path) -> None:
    """Until the daemon's warm-up staged the whole tree (polled every 0.5 s, 10 min at most)."""
    for _ in range(1200):
        if left_to_stage(store_root, tree) == 0:
            return
        await asyncio.sleep(0.5)
    raise RuntimeError("the warm-up did not finish")


async def bench_first_turn(tree: Path, runs: int) -> dict[str, Any]:
    """The first turn in a workspace without a store, by how long after `session/new` it
    is sent: at once, after 5 s, after the warm-up is done."""
    results: dict[str, Any] = {}
    waits: dict[str, list[float]] = {"at_once": [], "after_5s": [], "after_warm_up": []}
    warm_up: list[float] = []
    for run in range(runs):
        for when, times in waits.items():
            with tempfile.TemporaryDirectory() as tmp:
                env = Env(Path(tmp))
                env.workspace.rmdir()
                os.symlink(tree, env.workspace)
                store_root = env.root / "cody" / "checkpoints"
                async with sse_server("tool-turn") as port:
                    env.use_server(port)
                    async with daemon(env) as process:
                        opened = time.perf_counter()
                        sid = await new_session(process, env)
                        if when == "after_5s":
                            await asyncio.sleep(5)
                        elif when == "after_warm_up":
                            await staged(store_root, tree)
                            warm_up.append((time.perf_counter() - opened) * 1000)
                        started = time.perf_counter()
                        result = await prompt(process, sid, "go")
                        times.append((time.perf_counter() - started) * 1000)
                        assert result["stopReason"] == "end_turn", result
        print(f"first turn, run {run + 1}/{runs} done", file=sys.stderr, flush=True)
    for when, values in waits.items():
        results[f"first_echo_turn_ms[{when}]"] = summary(values)
    results["warm_up_in_daemon_ms"] = summary(warm_up)
    return results


def load() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


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
    parser.add_argument(
        "--parts",
        default="snapshots,warm-up,turns,first-turn",
        help="which parts to run (comma-separated)",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "checkpoints.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cody-bench-checkpoints-") as tmp:
        root = Path(tmp)
        ws = root / "ws"
        ws.mkdir()
        written = make_tree(ws, args.files, args.mb)
        result: dict[str, Any] = {"tree": {"files": args.files, "bytes": written}}
        parts = args.parts.split(",")
        loads: dict[str, list[list[float]]] = {}
        benches = {
            "snapshots": lambda: bench_snapshots(ws, root / "stores", args.runs),
            "warm-up": lambda: bench_warm_up(ws, root / "stores", args.runs),
            "turns": lambda: bench_turns(ws, args.runs),
            "first-turn": lambda: bench_first_turn(ws, args.runs),
        }
        for name, bench in benches.items():
            if name in parts:
                before = load()
                result |= await bench()
                loads[name] = [before, load()]
        result["load_average_before_after"] = loads
    report = {"machine": machine(), "runs": args.runs, "results": {"checkpoints": result}}
    print(json.dumps(report, indent=1), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    asyncio.run(main())
