"""Benchmarks of the real daemon over stdio (not tests). Median of 9 runs after a warm-up.

    uv run python bench/run.py [startup|stream|turn|memory|resume|concurrent|stall|backends|warm|diagnostics|prompt|web|extensions|all] [--runs 9]
    uv run python bench/run.py --peers [--runs 9]   (or `peers`: against the Codex CLI, codex-acp
                                                     and Claude Code; see bench/peers.py)

Each scenario spawns `python -m cody_daemon` with temp HOME/CODY_HOME and no keys, talks
to it with the project's client library, and points it at `bench/sse_server.py` (a canned
Responses-API server in its own process) where a model is needed. Daemon CPU comes from
/proc/<pid>/task/*/schedstat (ns resolution); memory from /proc/<pid>/status VmRSS.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cody_client.process import DaemonProcess  # noqa: E402

DAEMON = [sys.executable, "-m", "cody_daemon"]


def cpu_ns(pid: int) -> int:
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            total += int((task / "schedstat").read_text().split()[0])
    return total


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Env:
    def __init__(self, root: Path) -> None:
        self.root = root
        for name in ("home", "cody", "ws", "tmp"):
            (root / name).mkdir(parents=True, exist_ok=True)
        self.workspace = root / "ws"
        self.env = {
            "PATH": os.environ["PATH"],
            "LANG": "C.UTF-8",
            "HOME": str(root / "home"),
            "CODY_HOME": str(root / "cody"),
            "CODEX_HOME": str(root / "home" / ".codex"),
            "CLAUDE_CONFIG_DIR": str(root / "home" / ".claude"),
            "TMPDIR": str(root / "tmp"),
            "BENCH_KEY": "bench",
        }

    def use_server(self, port: int) -> None:
        (self.root / "cody" / "config.toml").write_text(
            'model_provider = "bench"\napproval_policy = "never"\n'
            "[model_providers.bench]\n"
            f'base_url = "http://127.0.0.1:{port}/v1"\nwire_api = "responses"\n'
            'env_key = "BENCH_KEY"\ndefault_model = "bench-model"\nrequest_max_retries = 0\n'
        )


@contextlib.asynccontextmanager
async def sse_server(scenario: str) -> AsyncIterator[int]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(ROOT / "bench" / "sse_server.py"),
        scenario,
        stdout=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    port = int((await process.stdout.readline()).decode())
    try:
        yield port
    finally:
        process.terminate()
        await process.wait()


@contextlib.asynccontextmanager
async def daemon(env: Env) -> AsyncIterator[DaemonProcess]:
    process = await DaemonProcess.spawn(DAEMON, env=env.env)
    try:
        await process.connection.request(
            "initialize", {"protocolVersion": 1, "clientCapabilities": {}}
        )
        yield process
    finally:
        await process.close()


async def new_session(process: DaemonProcess, env: Env, **meta: Any) -> str:
    params: dict[str, Any] = {"cwd": str(env.workspace), "mcpServers": []}
    if meta:
        params["_meta"] = {"cody": meta}
    result = await process.connection.request("session/new", params)
    return str(result["sessionId"])


async def prompt(process: DaemonProcess, session_id: str, text: str) -> dict[str, Any]:
    result: dict[str, Any] = await process.connection.request(
        "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
    )
    return result


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


# -- scenarios ---------------------------------------------------------------------------------


async def bench_startup(runs: int) -> dict[str, Any]:
    """Spawn -> `initialize` answer, spawn -> `session/new` answer (an editor's first
    start), and `cody-client exec` of a one-tool turn, whole process, end to end."""
    init_times, new_times, entry_times = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        env = Env(Path(tmp))
        for index in range(runs + 1):
            started = time.perf_counter()
            process = await DaemonProcess.spawn(DAEMON, env=env.env)
            await process.connection.request("initialize", {"protocolVersion": 1})
            initialized = time.perf_counter()
            await new_session(process, env)
            created = time.perf_counter()
            await process.close()
            started_entry = time.perf_counter()
            process = await DaemonProcess.spawn([DAEMON_ENTRY_POINT], env=env.env)
            await process.connection.request("initialize", {"protocolVersion": 1})
            initialized_entry = time.perf_counter()
            await process.close()
            if index:
                init_times.append((initialized - started) * 1000)
                new_times.append((created - started) * 1000)
                entry_times.append((initialized_entry - started_entry) * 1000)
    return {
        "spawn_to_initialize_ms": summary(init_times),
        "spawn_to_session_new_ms": summary(new_times),
        "cody_daemon_entry_point_spawn_to_initialize_ms": summary(entry_times),
        **await bench_exec(runs),
    }


CLIENT = str(Path(sys.executable).parent / "cody-client")
DAEMON_ENTRY_POINT = str(Path(sys.executable).parent / "cody-daemon")


async def bench_exec(runs: int) -> dict[str, Any]:
    """`cody-client exec "run echo"`: the model asks for `echo`, then answers; the client
    starts a daemon of its own (this interpreter's) for each command: the start this row
    measures (`CODY_EXEC_DAEMON_IDLE=0`; by default `exec` keeps one warm, `--peers`)."""
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        env = Env(Path(tmp))
        env.env["CODY_EXEC_DAEMON_IDLE"] = "0"
        async with sse_server("tool-turn") as port:
            env.use_server(port)
            for index in range(runs + 1):
                started = time.perf_counter()
                process = await asyncio.create_subprocess_exec(
                    CLIENT,
                    "exec",
                    "--sandbox",
                    "danger-full-access",
                    "run echo",
                    env=env.env,
                    cwd=env.workspace,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                )
                out, err = await process.communicate()
                elapsed = time.perf_counter() - started
                assert process.returncode == 0, (out, err)
                if index:
                    times.append(elapsed * 1000)
    return {"cody_client_exec_one_tool_turn_ms": summary(times)}


async def bench_stream(runs: int) -> dict[str, Any]:
    deltas = 20_000
    rates, cpu_per_delta, notifications = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        env = Env(Path(tmp))
        async with sse_server("stream") as port:
            env.use_server(port)
            async with daemon(env) as process:
                received: list[int] = []
                process.connection.on_notification("session/update", lambda _p: received.append(1))
                for index in range(runs + 1):
                    sid = await new_session(process, env)
                    received.clear()
                    cpu_before = cpu_ns(process.process.pid)
                    started = time.perf_counter()
                    await prompt(process, sid, "stream")
                    elapsed = time.perf_counter() - started
                    cpu = cpu_ns(process.process.pid) - cpu_before
                    if index:
                        rates.append(deltas / elapsed)
                        cpu_per_delta.append(cpu / deltas / 1000)
                        notifications.append(len(received))
    return {
        "deltas": deltas,
        "deltas_per_s": summary(rates),
        "daemon_cpu_us_per_delta": summary(cpu_per_delta),
        "notifications_sent": summary([float(n) for n in notifications]),
    }


async def bench_turn(runs: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for sandbox in ("danger-full-access", "workspace-write"):
        times = []
        with tempfile.TemporaryDirectory() as tmp:
            env = Env(Path(tmp))
            async with sse_server("tool-turn") as port:
                env.use_server(port)
                async with daemon(env) as process:
                    sid = await new_session(process, env, sandboxMode=sandbox)
                    for index in range(runs + 1):
                        started = time.perf_counter()
                        result = await prompt(process, sid, "run echo")
                        elapsed = time.perf_counter() - started
                        assert result["stopReason"] == "end_turn", result
                        if index:
                            times.append(elapsed * 1000)
        results[f"tool_turn_ms[{sandbox}]"] = summary(times)
    return results


async def bench_memory(runs: int) -> dict[str, Any]:
    idle, ten = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            env = Env(Path(tmp))
            async with sse_server("short") as port:
                env.use_server(port)
                async with daemon(env) as process:
                    idle.append(rss_mb(process.process.pid))
                    for _ in range(10):
                        sid = await new_session(process, env)
                        await prompt(process, sid, "hi")
                    ten.append(rss_mb(process.process.pid))
    return {"rss_mb_after_initialize": summary(idle), "rss_mb_10_idle_sessions": summary(ten)}


def write_big_session(env: Env, items: int) -> str:
    session_id = "01a20000-0000-7000-8000-00000000b16b"
    path = env.root / "cody" / "sessions" / "2026" / "11" / "22"
    path.mkdir(parents=True, exist_ok=True)
    lines = [
        {
            "type": "session_meta",
            "payload": {
                "id": session_id,
                "cwd": str(env.workspace),
                "created": "2026-11-22T00:00:00Z",
                "settings": {"model_provider": "offline", "model": "offline"},
            },
        }
    ]
    count = 0
    turn = 0
    while count < items:
        turn += 1
        lines.append({"type": "turn_context", "payload": {"turnId": f"t{turn}"}})
        batch = [
            {
                "type": "message",
                "id": f"m{turn}",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": f"question {turn}: please look at the code"}
                ],
            },
            {
                "type": "function_call",
                "call_id": f"c{turn}",
                "name": "exec",
                "arguments": json.dumps({"command": ["rg", "-n", "TODO", "src"]}),
            },
            {
                "type": "function_call_output",
                "call_id": f"c{turn}",
                "status": "completed",
                "output": "Exit code: 0\nWall time: 0.01 s\nOutput:\n" + "src/a.py:1: TODO\n" * 5,
            },
            {
                "type": "message",
                "id": f"a{turn}",
                "role": "assistant",
                "content": [
                    {"type": "output_text", "text": "I found five TODO markers in src/a.py. " * 3}
                ],
            },
        ]
        for item in batch:
            lines.append({"type": "response_item", "payload": item})
        count += len(batch)
    stamp = "2026-11-22T00:00:00.000Z"
    with open(path / f"rollout-2026-11-22T00-00-00-{session_id}.jsonl", "w") as handle:
        for line in lines:
            handle.write(json.dumps({"timestamp": stamp, **line}) + "\n")
    return session_id


async def bench_resume(runs: int) -> dict[str, Any]:
    resume_ms, load_ms, rss_growth, size_mb = [], [], [], 0.0
    with tempfile.TemporaryDirectory() as tmp:
        env = Env(Path(tmp))
        session_id = write_big_session(env, 10_000)
        size_mb = sum(p.stat().st_size for p in (env.root / "cody").rglob("*.jsonl")) / 2**20
        for index in range(runs + 1):
            for method, bucket in (("session/resume", resume_ms), ("session/load", load_ms)):
                async with daemon(env) as process:
                    before = rss_mb(process.process.pid)
                    started = time.perf_counter()
                    await process.connection.request(
                        method,
                        {"sessionId": session_id, "cwd": str(env.workspace), "mcpServers": []},
                    )
                    elapsed = time.perf_counter() - started
                    if index:
                        bucket.append(elapsed * 1000)
                        if method == "session/resume":
                            rss_growth.append(rss_mb(process.process.pid) - before)
    return {
        "items": 10_000,
        "file_mb": round(size_mb, 2),
        "resume_ms": summary(resume_ms),
        "load_with_replay_ms": summary(load_ms),
        "rss_growth_mb_on_resume": summary(rss_growth),
    }


async def bench_backends(runs: int) -> dict[str, Any]:
    """The daemon's overhead on Codex CLI / Claude Code turns (bench/backends.py)."""
    from bench.backends import bench_backends as run

    return await run(runs)


async def bench_prompt(runs: int) -> dict[str, Any]:
    """The prompt's size per model family, and what reading AGENTS.md files on a
    50-directory-deep cwd adds (bench/prompt.py)."""
    from bench.prompt import bench_prompt as run

    return await run(runs)


async def bench_extensions(runs: int) -> dict[str, Any]:
    """What finding 100 commands, 200 skills and 20 hooks adds to `session/new`
    (bench/extensions.py)."""
    from bench.extensions import bench_extensions as run

    return await run(runs)


async def bench_concurrent(runs: int) -> dict[str, Any]:
    """50 sessions streaming at once: per-delta latency from the model server to the client.

    The model server stamps each delta with `time.time_ns()` when it writes it; the client
    subtracts that from the time the `session/update` carrying it arrives (same machine).
    """
    from bench.sse_server import PACED_DELTAS

    sessions = 50
    p50, p95, worst, lost = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        env = Env(Path(tmp))
        async with sse_server("concurrent") as port:
            env.use_server(port)
            async with daemon(env) as process:
                latencies: list[float] = []
                seen: dict[str, int] = {}

                def on_update(params: dict[str, Any]) -> None:
                    now = time.time_ns()
                    update = params.get("update", {})
                    if update.get("sessionUpdate") != "agent_message_chunk":
                        return
                    stamps = re.findall(r"<(\d+)>", update["content"]["text"])
                    seen[params["sessionId"]] = seen.get(params["sessionId"], 0) + len(stamps)
                    latencies.extend((now - int(stamp)) / 1e6 for stamp in stamps)

                process.connection.on_notification("session/update", on_update)
                for index in range(runs + 1):
                    sids = [await new_session(process, env) for _ in range(sessions)]
                    latencies.clear()
                    seen.clear()
                    await asyncio.gather(*(prompt(process, sid, "stream") for sid in sids))
                    if index:
                        ordered = sorted(latencies)
                        p50.append(ordered[len(ordered) // 2])
                        p95.append(ordered[int(len(ordered) * 0.95)])
                        worst.append(ordered[-1])
                        lost.append(float(sessions * PACED_DELTAS - sum(seen.values())))
    return {
        "sessions": sessions,
        "deltas_per_session": PACED_DELTAS,
        "delta_latency_ms_p50": summary(p50),
        "delta_latency_ms_p95": summary(p95),
        "delta_latency_ms_max": summary(worst),
        "deltas_lost": summary(lost),
    }


async def bench_stall(runs: int) -> dict[str, Any]:
    """A client that stops reading while a turn streams 1.7 MB of text (issue 8.11).

    The client pauses reading for 2 s, then reads again. Reported: how much the daemon's
    RSS grew while nobody read (output is bounded at 1 MiB; the turn waits), and that the
    whole answer then arrives.
    """
    growth, complete = [], []
    with tempfile.TemporaryDirectory() as tmp:
        env = Env(Path(tmp))
        async with sse_server("flood") as port:
            env.use_server(port)
            async with daemon(env) as process:
                text: list[str] = []
                process.connection.on_notification(
                    "session/update",
                    lambda p: text.append(p["update"].get("content", {}).get("text", "")),
                )
                pipe = process.process._transport.get_pipe_transport(1)  # type: ignore[attr-defined]
                for index in range(runs + 1):
                    sid = await new_session(process, env)
                    text.clear()
                    baseline = rss_mb(process.process.pid)
                    pipe.pause_reading()
                    turn = asyncio.create_task(prompt(process, sid, "flood"))
                    peak = baseline
                    for _ in range(40):
                        await asyncio.sleep(0.05)
                        peak = max(peak, rss_mb(process.process.pid))
                    pipe.resume_reading()
                    await turn
                    if index:
                        growth.append(peak - baseline)
                        complete.append(float(len("".join(text)) == 100_000 * 17))
    return {
        "rss_growth_mb_while_stalled": summary(growth),
        "answer_complete_after_resume": summary(complete),
    }


async def run_exec(env: dict[str, str], cwd: Path) -> float:
    """Seconds for one `cody-client exec` process of a one-tool turn, start to exit."""
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cody_client", "exec", "--approve", "allow", "run echo",
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE, env=env, cwd=cwd,
    )  # fmt: skip
    _, err = await process.communicate()
    elapsed = time.perf_counter() - started
    assert process.returncode == 0, err.decode()
    return elapsed


async def bench_warm(runs: int) -> dict[str, Any]:
    """`cody-client exec` on a warm daemon (`cody-daemon --listen`) vs. spawning its own,
    interleaved run by run so the machine's load drifts over both alike."""
    warm: list[float] = []
    spawned: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory(dir="/tmp") as run:
        env = Env(Path(tmp))
        os.chmod(run, 0o700)
        env.env["XDG_RUNTIME_DIR"] = run
        async with sse_server("tool-turn") as port:
            env.use_server(port)
            listener = await asyncio.create_subprocess_exec(
                *DAEMON, "--listen", env=env.env, stderr=asyncio.subprocess.PIPE
            )
            assert listener.stderr is not None
            line = (await listener.stderr.readline()).decode()
            assert "listening on" in line, line
            try:
                for index in range(runs + 1):
                    warm_s = await run_exec(env.env, env.workspace)
                    spawn_s = await run_exec({**env.env, "CODY_DAEMON_SOCKET": ""}, env.workspace)
                    if index:
                        warm.append(warm_s * 1000)
                        spawned.append(spawn_s * 1000)
            finally:
                listener.terminate()
                await listener.wait()
    return {"exec_warm_ms": summary(warm), "exec_spawned_ms": summary(spawned)}


async def bench_diagnostics(runs: int) -> dict[str, Any]:
    """An edit turn with language servers off, with ruff, with ruff + basedpyright
    (bench/diagnostics.py)."""
    from bench.diagnostics import bench_diagnostics as run

    return await run(runs)


async def bench_processes(runs: int) -> dict[str, Any]:
    """Starting a command through the launcher; the protected-path scan of a large
    workspace, fresh and watched; a sandboxed turn there (bench/processes.py)."""
    from bench.processes import bench_processes as run

    return await run(runs)


async def bench_web(runs: int) -> dict[str, Any]:
    """The same streamed turn over stdio and over the WebSocket listener (bench/web.py)."""
    from bench.web import bench_web as run

    return await run(runs)


SCENARIOS: dict[str, Callable[[int], Any]] = {
    "startup": bench_startup,
    "stream": bench_stream,
    "turn": bench_turn,
    "memory": bench_memory,
    "resume": bench_resume,
    "concurrent": bench_concurrent,
    "stall": bench_stall,
    "backends": bench_backends,
    "warm": bench_warm,
    "diagnostics": bench_diagnostics,
    "prompt": bench_prompt,
    "extensions": bench_extensions,
    "web": bench_web,
    "processes": bench_processes,
}


def machine() -> dict[str, str]:
    cpu = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "cpu": cpu,
        "cores": str(os.cpu_count()),
        "python": platform.python_version(),
        "bwrap": subprocess.run(
            ["sh", "-c", "command -v bwrap"], check=False, capture_output=True, text=True
        ).stdout.strip()
        or "none",
    }


async def main() -> None:
    if "--peers" in sys.argv[1:] or sys.argv[1:2] == ["peers"]:
        from bench.peers import main as peers

        rest = sys.argv[1:]
        rest.remove("--peers" if "--peers" in rest else "peers")
        return await peers(rest)
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("scenario", nargs="?", default="all", choices=[*SCENARIOS, "all"])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "latest.json")
    args = parser.parse_args()
    names = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    report: dict[str, Any] = {"machine": machine(), "runs": args.runs, "results": {}}
    for name in names:
        report["results"][name] = await SCENARIOS[name](args.runs)
        print(name, json.dumps(report["results"][name], indent=1), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.scenario == "all":
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    asyncio.run(main())
