"""`bench/run.py diagnostics`: the time language servers add to an edit turn, and their memory.

An edit turn (model -> writeFile main.py -> model, bench/sse_server.py's `edit-turn`) in a
trusted workspace with language servers off, with ruff, and with ruff + basedpyright (default
`[lsp]`, bound 1.5 s). `first`: the first edit of a fresh daemon (pool import, server start);
`later`: the following edits (a warm server). Memory: the daemon's RSS and that of every
process below it (the servers and their helpers).
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.run import Env, daemon, new_session, prompt, rss_mb, sse_server, summary


def edit_project(env: Env) -> None:
    """A small Python project for the `diagnostics` scenario (main.py is what the model edits)."""
    ws = env.workspace
    (ws / "pyproject.toml").write_text('[project]\nname = "shop"\nversion = "0"\n')
    (ws / "shop").mkdir(exist_ok=True)
    (ws / "shop" / "__init__.py").write_text("")
    (ws / "shop" / "prices.py").write_text(
        "def total(prices: list[float]) -> float:\n    return sum(prices)\n"
    )


def descendants_rss_mb(pid: int) -> float:
    """RSS of every process below `pid` (the language servers and their helpers)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                children.setdefault(parent, []).append(int(entry.name))
    total, todo = 0.0, list(children.get(pid, []))
    while todo:
        child = todo.pop()
        with contextlib.suppress(OSError):
            total += rss_mb(child)
        todo += children.get(child, [])
    return total


LSP_VARIANTS = {
    "off": "",
    "ruff": "[lsp.basedpyright]\nenabled = false\n[lsp.pyright]\nenabled = false\n",
    "ruff+basedpyright": "",
}


async def bench_diagnostics(runs: int) -> dict[str, Any]:
    """An edit turn (model -> writeFile main.py -> model) with language servers off, with
    ruff, and with ruff + basedpyright (default `[lsp]`, bound 1.5 s; the workspace is
    trusted). `first`: the first edit of a fresh daemon (pool import, server start);
    `later`: the following edits (a warm server), each one a change (break, fix, break...).
    Memory: the daemon's RSS and the servers' (every process below the daemon)."""
    results: dict[str, Any] = {}
    for variant, extra in LSP_VARIANTS.items():
        first, later, late_first = [], [], 0
        daemon_rss, servers_rss = [], []
        for run in range(runs):
            with tempfile.TemporaryDirectory() as tmp:
                env = Env(Path(tmp))
                edit_project(env)
                if variant == "off":
                    env.env["CODY_LSP"] = "off"
                async with sse_server("edit-turn") as port:
                    env.use_server(port)
                    config = env.root / "cody" / "config.toml"
                    config.write_text(
                        f'trusted_projects = ["{env.workspace}"]\n' + config.read_text() + extra
                    )
                    async with daemon(env) as process:
                        late: list[Any] = []
                        process.connection.on_notification(
                            "_cody/diagnostics",
                            lambda params, late=late: late.extend(params.get("late", [])),
                        )
                        sid = await new_session(process, env)
                        started = time.perf_counter()
                        await prompt(process, sid, "edit")
                        first.append((time.perf_counter() - started) * 1000)
                        late_first += bool(late)
                        count = runs if run == 0 else 0
                        for _ in range(count):
                            started = time.perf_counter()
                            await prompt(process, sid, "edit")
                            later.append((time.perf_counter() - started) * 1000)
                        daemon_rss.append(rss_mb(process.process.pid))
                        servers_rss.append(descendants_rss_mb(process.process.pid))
        results[f"edit_turn_ms[{variant}]"] = {
            "first": summary(first),
            "later": summary(later),
            "first_edits_with_a_late_server": late_first,
            "daemon_rss_mb": summary(daemon_rss),
            "servers_rss_mb": summary(servers_rss),
        }
    return results
