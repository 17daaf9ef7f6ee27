"""`bench/run.py --peers`: the same workloads against Cody and its peers, in one run.

    uv run python bench/run.py --peers [--runs 9] [--rows spawn,exec,...] [--out PATH]

Peers (pinned in tests/agents, run offline with temp HOME / CODEX_HOME / CLAUDE_CONFIG_DIR and
fake keys, see tests/support/agent_clis.py): the Codex CLI (`codex app-server` JSON-RPC and
`codex exec`), codex-acp (Zed's ACP adapter around Codex) and Claude Code (`claude -p`,
stream-json). All of them talk to one loopback model, `bench/peer_model.py`, in its own
process, which gives every agent the same answers in its own tool dialect.

Each row is the median of `--runs` (9) after one warm-up, [min-max]; the agents take turns
within each repetition so the load of a shared machine drifts over all of them alike. The
ratio is Cody / peer (below 1: Cody takes less; for deltas/s above 1: Cody is faster).
Prints a table and writes the raw numbers to bench/results/peers-latest.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.peer_agents import (  # noqa: E402
    AcpAgent,
    ClaudeSession,
    CodexAppServer,
    Turn,
    end_tree,
    tree_cpu_ns,
    tree_rss_mb,
)
from bench.peer_model import FINAL_ANSWER, ONE_LINE, STREAM_DELTAS  # noqa: E402
from bench.peer_sessions import grow_claude_session, grow_codex_rollout  # noqa: E402
from tests.support.agent_clis import (  # noqa: E402
    AGENTS_DIR,
    claude,
    claude_env,
    codex,
    codex_acp,
    codex_env,
    write_codex_config,
)

CODY = "cody"
CODEX = "codex"
ACP = "codex-acp"
CLAUDE = "claude"
PEERS = (CODEX, ACP, CLAUDE)
LABELS = {
    CODY: "Cody",
    CODEX: "Codex CLI",
    ACP: "codex-acp",
    CLAUDE: "Claude Code",
}
DAEMON = [sys.executable, "-m", "cody_daemon"]
CODY_CLIENT = Path(sys.executable).parent / "cody-client"
RESUME_ITEMS = 10_000
Summary = dict[str, float]


def summary(values: list[float]) -> Summary:
    return {
        "median": round(statistics.median(values), 2),
        "min": round(min(values), 2),
        "max": round(max(values), 2),
    }


# -- the environment -------------------------------------------------------------------------


@dataclass
class World:
    """One temp tree: a workspace, each agent's home pointed at the bench model."""

    root: Path
    port: int

    def __post_init__(self) -> None:
        self.workspace = self.root / "ws"
        self.workspace.mkdir(parents=True, exist_ok=True)
        base = f"http://127.0.0.1:{self.port}"
        self.cody_home = self.root / "cody"
        self.cody_home.mkdir(exist_ok=True)
        (self.cody_home / "config.toml").write_text(
            'model_provider = "bench"\napproval_policy = "never"\n'
            'sandbox_mode = "danger-full-access"\n'
            "[model_providers.bench]\n"
            f'base_url = "{base}/v1"\nwire_api = "responses"\n'
            'env_key = "BENCH_KEY"\ndefault_model = "gpt-5.5"\nrequest_max_retries = 0\n'
        )
        (self.root / "cody-user").mkdir(exist_ok=True)
        (self.root / "tmp").mkdir(exist_ok=True)
        self.cody_env = {
            "PATH": os.environ["PATH"],
            "LANG": "C.UTF-8",
            "HOME": str(self.root / "cody-user"),
            "CODY_HOME": str(self.cody_home),
            "TMPDIR": str(self.root / "tmp"),
            "BENCH_KEY": "bench",
        }
        self.codex_home = self.root / "codex-home"
        write_codex_config(self.codex_home, f"{base}/v1")
        self.codex_env = codex_env(self.root / "codex-user", self.codex_home)
        self.acp_home = self.root / "codex-acp-home"
        write_codex_config(self.acp_home, f"{base}/v1")
        self.acp_env = codex_env(self.root / "codex-acp-user", self.acp_home)
        self.claude_config = self.root / "claude-config"
        self.claude_env = claude_env(self.root / "claude-user", self.claude_config, base)

    async def spawn_cody(self) -> tuple[AcpAgent, float]:
        def meta(approve: bool) -> dict[str, Any]:
            policy = "untrusted" if approve else "never"
            return {"cody": {"approvalPolicy": policy, "sandboxMode": "danger-full-access"}}

        return await AcpAgent.spawn(DAEMON, self.cody_env, self.workspace, session_meta=meta)

    async def spawn_acp(self, *, approve: bool = False) -> tuple[AcpAgent, float]:
        """codex-acp; its approval presets never ask before `touch`, so an approving one is
        started with Codex's `untrusted` policy (`-c approval_policy="untrusted"`)."""
        argv = [str(codex_acp())]
        if approve:
            argv += ["-c", 'approval_policy="untrusted"']
        return await AcpAgent.spawn(argv, self.acp_env, self.workspace, ndjson=True)

    async def spawn_codex(self) -> tuple[CodexAppServer, float]:
        return await CodexAppServer.spawn(codex(), self.codex_env, self.workspace)

    async def spawn_claude(
        self, *, approve: bool = False, resume: str | None = None
    ) -> tuple[ClaudeSession, float]:
        return await ClaudeSession.spawn(
            claude(), self.claude_env, self.workspace, approve=approve, resume=resume
        )


@contextlib.asynccontextmanager
async def bench_model() -> AsyncIterator[int]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(ROOT / "bench" / "peer_model.py"), stdout=asyncio.subprocess.PIPE
    )
    assert process.stdout is not None
    port = int((await process.stdout.readline()).decode())
    try:
        yield port
    finally:
        process.terminate()
        await process.wait()


# -- warm sessions: one per agent and kind -----------------------------------------------------


class Warm:
    """Every agent running, with an auto-approved session and one that asks before `touch`."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.closers: list[Callable[[], Awaitable[None]]] = []
        self.pids: dict[str, int] = {}
        self.turns: dict[tuple[str, bool], Callable[[str], Awaitable[Turn]]] = {}
        self.notes: dict[str, str] = {}

    async def start(self, peers: list[str]) -> None:
        world = self.world
        for name in [CODY, *peers]:
            if name == CLAUDE:
                for approve in (False, True):
                    session, _ = await world.spawn_claude(approve=approve)
                    self.closers.append(session.close)
                    self.turns[name, approve] = session.prompt
                    if not approve:
                        self.pids[name] = session.pid
                continue
            agent: AcpAgent | CodexAppServer
            if name == CODEX:
                agent, _ = await world.spawn_codex()
            elif name == ACP:
                agent, _ = await world.spawn_acp()
                asking, _ = await world.spawn_acp(approve=True)
                self.closers.append(asking.close)
                sid = await asking.new_session(world.workspace)
                self.turns[name, True] = _bind(asking, sid)
            else:
                agent, _ = await world.spawn_cody()
            self.closers.append(agent.close)
            self.pids[name] = agent.pid
            for approve in (False, True):
                if (name, approve) not in self.turns:
                    sid = await agent.new_session(world.workspace, approve=approve)
                    self.turns[name, approve] = _bind(agent, sid)

    async def close(self) -> None:
        for close in reversed(self.closers):
            with contextlib.suppress(Exception):
                await close()


def _bind(agent: AcpAgent | CodexAppServer, sid: str) -> Callable[[str], Awaitable[Turn]]:
    async def turn(text: str) -> Turn:
        return await agent.prompt(sid, text)

    return turn


def _check(turn: Turn, expected: str, what: str) -> None:
    if expected not in turn.text:
        raise RuntimeError(f"{what}: expected {expected!r} in the answer, got {turn.text[-300:]!r}")


# -- rows --------------------------------------------------------------------------------------

Row = dict[str, Any]


async def row_spawn(world: World, peers: list[str], runs: int) -> dict[str, Row]:
    spawners: dict[str, Callable[[], Awaitable[tuple[Any, float]]]] = {
        CODY: world.spawn_cody,
        CODEX: world.spawn_codex,
        ACP: world.spawn_acp,
        CLAUDE: world.spawn_claude,
    }
    times: dict[str, list[float]] = {name: [] for name in [CODY, *peers]}
    system_init: list[float] = []
    for index in range(runs + 1):
        for name, bucket in times.items():
            agent, elapsed = await spawners[name]()
            await agent.close()
            if index:
                bucket.append(elapsed)
            if name == CLAUDE:
                init_ms = await claude_system_init(world)
                if index:
                    system_init.append(init_ms)
    result = {"spawn_to_initialize_ms": {name: summary(v) for name, v in times.items()}}
    if system_init:
        result["claude_spawn_to_system_init_ms"] = {CLAUDE: summary(system_init)}
    return result


async def claude_system_init(world: World) -> float:
    """`claude -p PROMPT --output-format stream-json`: spawn -> its first line, `system/init`."""
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        str(claude()),
        "-p",
        "bench:hi",
        "--output-format",
        "stream-json",
        "--verbose",
        env=world.claude_env,
        cwd=world.workspace,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        limit=2**24,
    )
    assert proc.stdout is not None
    try:
        while line := await proc.stdout.readline():
            message = json.loads(line)
            if message.get("type") == "system" and message.get("subtype") == "init":
                return (time.perf_counter() - started) * 1000
        raise RuntimeError("claude -p exited without a system/init line")
    finally:
        await end_tree(proc.pid, lambda: None, grace_s=0)
        await proc.wait()


async def row_turns(world: World, peers: list[str], runs: int) -> dict[str, Row]:
    """First token, one-tool turn, approval round trip and the 5,000-delta stream, all warm."""
    warm = Warm(world)
    try:
        await warm.start(peers)
        names = [CODY, *peers]
        first: dict[str, list[float]] = {n: [] for n in names}
        tool: dict[str, list[float]] = {n: [] for n in names}
        asked: dict[str, list[float]] = {n: [] for n in names}
        approved: dict[str, list[float]] = {n: [] for n in names}
        rate: dict[str, list[float]] = {n: [] for n in names}
        cpu: dict[str, list[float]] = {n: [] for n in names}
        seen: dict[str, list[float]] = {n: [] for n in names}
        for index in range(runs + 1):
            for name in names:
                auto, ask = warm.turns[name, False], warm.turns[name, True]
                hello = await auto("bench:hi, answer in one line")
                _check(hello, ONE_LINE, f"{name} first token")
                turn = await auto("bench:tool: run echo hi")
                _check(turn, FINAL_ANSWER, f"{name} tool turn")
                approval = await ask("bench:approve: touch approved.txt")
                _check(approval, FINAL_ANSWER, f"{name} approval turn")
                pid = warm.pids[name]
                before = tree_cpu_ns(pid)
                stream = await auto("bench:stream")
                used = tree_cpu_ns(pid) - before
                if stream.text.count("tok") != STREAM_DELTAS:
                    raise RuntimeError(f"{name}: {stream.text.count('tok')} of the deltas arrived")
                if not index:
                    continue
                first[name].append(hello.first_token_ms)
                tool[name].append(turn.turn_ms)
                if approval.asked is not None:
                    asked[name].append(approval.ask_ms)
                    approved[name].append(approval.turn_ms)
                assert stream.first_delta is not None
                rate[name].append(STREAM_DELTAS / (stream.ended - stream.first_delta))
                cpu[name].append(used / STREAM_DELTAS / 1000)
                seen[name].append(float(stream.deltas))

        def rows(values: dict[str, list[float]]) -> Row:
            return {name: summary(v) for name, v in values.items() if v}

        missing = [name for name in names if not approved[name]]
        if missing:
            warm.notes["approval"] = f"no approval was asked by: {', '.join(missing)}"
        return {
            "first_token_ms": rows(first),
            "tool_turn_ms": rows(tool),
            "approval_turn_ms": rows(approved),
            "approval_request_ms": rows(asked),
            "stream_deltas_per_s": rows(rate),
            "stream_cpu_us_per_delta": rows(cpu),
            "stream_messages_to_client": rows(seen),
            **({"notes": warm.notes} if warm.notes else {}),
        }
    finally:
        await warm.close()


async def row_memory(world: World, peers: list[str], runs: int) -> dict[str, Row]:
    """RSS after 10 sessions with one turn each (claude: 10 processes, summed)."""
    rss: dict[str, list[float]] = {name: [] for name in [CODY, *peers]}
    for _ in range(runs):
        for name, bucket in rss.items():
            if name == CLAUDE:
                sessions = [await world.spawn_claude() for _ in range(10)]
                for session, _ in sessions:
                    await session.prompt("bench:hi")
                bucket.append(sum(tree_rss_mb(s.pid) for s, _ in sessions))
                for session, _ in sessions:
                    await session.close()
                continue
            agent: AcpAgent | CodexAppServer
            if name == CODEX:
                agent, _ = await world.spawn_codex()
            elif name == ACP:
                agent, _ = await world.spawn_acp()
            else:
                agent, _ = await world.spawn_cody()
            for _ in range(10):
                sid = await agent.new_session(world.workspace)
                await agent.prompt(sid, "bench:hi")
            bucket.append(tree_rss_mb(agent.pid))
            await agent.close()
    return {"rss_mb_10_sessions": {name: summary(v) for name, v in rss.items()}}


def _newest(folder: Path, pattern: str) -> Path:
    return max(folder.rglob(pattern), key=lambda p: p.stat().st_mtime)


async def row_resume(world: World, peers: list[str], runs: int) -> dict[str, Row]:
    """Resume of a 10,000-item session: Cody `session/resume`, `codex app-server`
    `thread/resume`, codex-acp `session/load` (it has no resume without replay), each in a
    running agent; `claude -p --resume` is a new process: its cost is the whole turn with
    `--resume` minus the same turn in a fresh session."""
    from bench.run import Env, write_big_session

    notes: dict[str, str] = {}
    cody_env = Env(world.root / "cody-resume")
    cody_env.use_server(world.port)
    cody_id = write_big_session(cody_env, RESUME_ITEMS)
    sizes = {CODY: sum(p.stat().st_size for p in (cody_env.root / "cody").rglob("*.jsonl"))}

    codex_id = ""
    if CODEX in peers or ACP in peers:
        server, _ = await world.spawn_codex()
        codex_id = await server.new_session(world.workspace)
        await server.prompt(codex_id, "bench:tool: run echo hi")
        await server.close()
        rollout = _newest(world.codex_home / "sessions", f"*{codex_id}*.jsonl")
        notes["codex_items"] = str(grow_codex_rollout(rollout, RESUME_ITEMS))
        sizes[CODEX] = rollout.stat().st_size
        if ACP in peers:
            target = world.acp_home / rollout.relative_to(world.codex_home)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(rollout.read_bytes())
            sizes[ACP] = sizes[CODEX]

    claude_id = ""
    if CLAUDE in peers:
        session, _ = await world.spawn_claude()
        await session.prompt("bench:tool: run echo hi")
        claude_id = session.session_id
        await session.close()
        path = _newest(world.claude_config / "projects", f"{claude_id}.jsonl")
        notes["claude_lines"] = str(grow_claude_session(path, RESUME_ITEMS))
        sizes[CLAUDE] = path.stat().st_size

    times: dict[str, list[float]] = {name: [] for name in [CODY, *peers]}
    claude_fresh: list[float] = []
    claude_resumed: list[float] = []
    for index in range(runs + 1):
        for name, bucket in times.items():
            elapsed: float
            if name == CLAUDE:
                started = time.perf_counter()
                fresh, _ = await world.spawn_claude()
                await fresh.prompt("bench:hi")
                fresh_ms = (time.perf_counter() - started) * 1000
                await fresh.close()
                started = time.perf_counter()
                resumed, _ = await world.spawn_claude(resume=claude_id)
                turn = await resumed.prompt("bench:hi")
                resumed_ms = (time.perf_counter() - started) * 1000
                await resumed.close()
                _check(turn, ONE_LINE, "claude --resume")
                elapsed = resumed_ms - fresh_ms
                if index:
                    claude_fresh.append(fresh_ms)
                    claude_resumed.append(resumed_ms)
            elif name == CODEX:
                server, _ = await world.spawn_codex()
                started = time.perf_counter()
                thread = await server.request("thread/resume", {"threadId": codex_id})
                elapsed = (time.perf_counter() - started) * 1000
                notes["codex_turns_resumed"] = str(len(thread["thread"].get("turns") or []))
                await server.close()
            else:
                agent, _ = await (world.spawn_acp() if name == ACP else _cody_for(cody_env))
                wanted = codex_id if name == ACP else cody_id
                method = "session/load" if name == ACP else "session/resume"
                started = time.perf_counter()
                await agent.request(
                    method,
                    {"sessionId": wanted, "cwd": str(world.workspace), "mcpServers": []},
                )
                elapsed = (time.perf_counter() - started) * 1000
                if name == ACP:
                    notes["codex-acp_updates_replayed"] = str(agent.updates)
                await agent.close()
            if index:
                bucket.append(elapsed)
    result: dict[str, Row] = {
        "resume_10k_ms": {name: summary(v) for name, v in times.items()},
        "resume_file_mb": {
            name: {"median": round(size / 2**20, 2)} for name, size in sizes.items()
        },
    }
    if claude_fresh:
        result["claude_turn_ms_fresh_vs_resumed"] = {
            "fresh": summary(claude_fresh),
            "resumed": summary(claude_resumed),
        }
    result["notes"] = notes
    return result


async def _cody_for(env: Any) -> tuple[AcpAgent, float]:
    return await AcpAgent.spawn(DAEMON, env.env, env.workspace)


def _exec_argv(world: World, name: str, prompt: str) -> tuple[list[str], dict[str, str]]:
    if name == CODY:
        argv = [
            str(CODY_CLIENT),
            "exec",
            "--approval-policy",
            "never",
            "--sandbox",
            "danger-full-access",
            prompt,
        ]
        return argv, world.cody_env
    if name == CODEX:
        argv = [str(codex()), "exec", "--skip-git-repo-check", "-C", str(world.workspace), prompt]
        return argv, world.codex_env
    argv = [str(claude()), "-p", prompt, "--permission-mode", "bypassPermissions"]
    return argv, world.claude_env


async def row_exec(world: World, peers: list[str], runs: int) -> dict[str, Row]:
    """The whole process of a one-tool turn: `cody-client exec`, `codex exec`, `claude -p`."""
    names = [CODY, *(p for p in peers if p != ACP)]
    times: dict[str, list[float]] = {name: [] for name in names}
    for index in range(runs + 1):
        for name in names:
            argv, env = _exec_argv(world, name, "bench:tool: run echo hi")
            started = time.perf_counter()
            done = await asyncio.to_thread(
                subprocess.run,
                argv,
                env=env,
                cwd=world.workspace,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            elapsed = (time.perf_counter() - started) * 1000
            if done.returncode != 0 or FINAL_ANSWER not in done.stdout:
                raise RuntimeError(
                    f"{name} exec: exit {done.returncode}\n{done.stdout[-500:]}\n"
                    f"{done.stderr[-1500:]}"
                )
            if index:
                times[name].append(elapsed)
    return {"exec_one_tool_turn_ms": {name: summary(v) for name, v in times.items()}}


ROWS: dict[str, Callable[[World, list[str], int], Awaitable[dict[str, Row]]]] = {
    "spawn": row_spawn,
    "turns": row_turns,
    "memory": row_memory,
    "resume": row_resume,
    "exec": row_exec,
}

# -- the table ---------------------------------------------------------------------------------

TABLE = [
    ("spawn_to_initialize_ms", "spawn -> initialize answer (ms)"),
    ("claude_spawn_to_system_init_ms", "  claude -p PROMPT: spawn -> `system/init` line (ms)"),
    ("first_token_ms", "first token of a one-line answer, warm (ms)"),
    ("tool_turn_ms", "one-tool turn (`echo hi`), warm, no approval (ms)"),
    ("approval_turn_ms", "one-tool turn with an approval answered at once (ms)"),
    ("approval_request_ms", "  prompt -> approval request (ms)"),
    ("stream_deltas_per_s", "5,000-delta stream: deltas/s (higher is better)"),
    ("stream_cpu_us_per_delta", "5,000-delta stream: agent CPU per delta (us)"),
    ("rss_mb_10_sessions", "RSS with 10 sessions (MB)"),
    ("resume_10k_ms", "resume of a 10,000-item session (ms)"),
    ("exec_one_tool_turn_ms", "exec of a one-tool turn, whole process (ms)"),
]


def _number(value: float) -> str:
    if value >= 10_000:
        return f"{value / 1000:.0f}k"
    if value >= 100:
        return f"{value:.0f}"
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def _cell(value: Summary | None) -> str:
    if value is None:
        return "-"
    if "min" not in value:
        return _number(value["median"])
    return f"{_number(value['median'])} [{_number(value['min'])}-{_number(value['max'])}]"


def render(results: dict[str, Row], peers: list[str]) -> str:
    names = [CODY, *peers]
    head = ["what", *(LABELS[n] for n in names), *(f"Cody/{LABELS[p]}" for p in peers)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, title in TABLE:
        row = results.get(key)
        if not row:
            continue
        cells = [_cell(row.get(n)) for n in names]
        cody = row.get(CODY)
        for peer in peers:
            other = row.get(peer)
            ok = cody is not None and other is not None and other["median"]
            cells.append(f"{cody['median'] / other['median']:.2f}x" if ok else "-")  # type: ignore[index]
        lines.append("| " + " | ".join([title, *cells]) + " |")
    return "\n".join(lines)


def goals(results: dict[str, Row]) -> dict[str, str]:
    """The goals of issue 24.11a (start as fast as the native CLIs: at most 1.0x) and
    issue 14, judged on this run's medians."""
    out: dict[str, str] = {}
    spawn = results.get("spawn_to_initialize_ms", {})
    if CODY in spawn and ACP in spawn:
        cody, acp = spawn[CODY]["median"], spawn[ACP]["median"]
        met = "met" if cody <= acp else "NOT met"
        out["spawn <= 1.0x codex-acp"] = f"{met}: {cody:.0f} ms vs {acp:.0f} ms"
    exe = results.get("exec_one_tool_turn_ms", {})
    if CODY in exe and CLAUDE in exe:
        cody, other = exe[CODY]["median"], exe[CLAUDE]["median"]
        met = "met" if cody < other else "NOT met"
        out["exec faster than claude -p"] = f"{met}: {cody:.0f} ms vs {other:.0f} ms"
    if CODY in exe and CODEX in exe:
        cody, other = exe[CODY]["median"], exe[CODEX]["median"]
        met = "met" if cody <= other else "NOT met"
        out["exec <= 1.0x codex exec"] = f"{met}: {cody:.0f} ms vs {other:.0f} ms"
    return out


def _versions() -> dict[str, str]:
    out = {}
    for package in ("@openai/codex", "@anthropic-ai/claude-code", "@zed-industries/codex-acp"):
        manifest = AGENTS_DIR / "node_modules" / package / "package.json"
        with contextlib.suppress(OSError, ValueError):
            out[package] = str(json.loads(manifest.read_text())["version"])
    return out


async def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="bench/run.py --peers",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--rows", default=",".join(ROWS), help=f"of {', '.join(ROWS)}")
    parser.add_argument("--agents", default=",".join(PEERS), help="peers to include")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "bench" / "results" / "peers-latest.json"
    )
    args = parser.parse_args(argv)
    rows = [r for r in args.rows.split(",") if r]
    peers = [p for p in args.agents.split(",") if p]
    from bench.run import machine

    report: dict[str, Any] = {
        "machine": {**machine(), "loadavg_at_start": " ".join(f"{v:.2f}" for v in os.getloadavg())},
        "runs": args.runs,
        "versions": _versions(),
        "results": {},
    }
    results: dict[str, Row] = report["results"]
    with tempfile.TemporaryDirectory(prefix="cody-peers-") as tmp:
        async with bench_model() as port:
            world = World(Path(tmp), port)
            for row in rows:
                started = time.perf_counter()
                results.update(await ROWS[row](world, peers, args.runs))
                took = time.perf_counter() - started
                print(f"[{row}: {took:.0f} s, load {os.getloadavg()[0]:.2f}]", flush=True)
    report["machine"]["loadavg_at_end"] = " ".join(f"{v:.2f}" for v in os.getloadavg())
    report["goals"] = goals(results)
    table = render(results, peers)
    print(table)
    for name, verdict in report["goals"].items():
        print(f"goal: {name}: {verdict}")
    print(
        f"load average: {report['machine']['loadavg_at_start']} -> "
        f"{report['machine']['loadavg_at_end']}"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
