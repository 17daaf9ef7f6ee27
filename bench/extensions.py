"""What finding a session's commands, skills and hooks costs at `session/new` (`run.py
extensions`): 100 custom commands, 200 skills and 20 hooks, half the user's and half a
trusted project's.

Measured twice, median of `runs` after a warm-up: `discover` alone in this process, and
`session/new` through the real daemon with the files there against the same daemon with
them moved aside (renamed between requests, outside the timed part), alternating so both
see the same machine load.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

COMMANDS = 100
SKILLS = 200
HOOKS = 20


def _command(folder: Path, index: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"cmd-{index:03d}.md").write_text(
        "---\n"
        f"description: Command {index}: review the change set and report\n"
        "argument-hint: [focus]\n"
        "---\n"
        f"Review the changes for $ARGUMENTS (command {index}).\n" + "More text.\n" * 30
    )


def _skill(folder: Path, index: int) -> None:
    path = folder / f"skill-{index:03d}"
    path.mkdir(parents=True, exist_ok=True)
    (path / "SKILL.md").write_text(
        "---\n"
        f"name: skill-{index:03d}\n"
        f"description: Does step {index} of the release checklist and reports what it found\n"
        "---\n" + "Instructions.\n" * 100
    )


def _hooks(path: Path, count: int, start: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    groups = [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": f"true hook-{start + i}"}]}
        for i in range(count)
    ]
    path.write_text(json.dumps({"hooks": {"PreToolUse": groups}}))


def layout(home: Path, codex: Path, claude: Path, project: Path) -> list[Path]:
    """Write the files; returns the directories that hold them (to move aside)."""
    (project / ".git").mkdir(parents=True, exist_ok=True)
    for index in range(COMMANDS // 2):
        _command(claude / "commands", index)
        _command(project / ".claude" / "commands", COMMANDS // 2 + index)
    for index in range(SKILLS // 2):
        _skill(home / ".agents" / "skills", index)
        _skill(project / ".agents" / "skills", SKILLS // 2 + index)
    _hooks(codex / "hooks.json", HOOKS // 2, 0)
    _hooks(project / ".claude" / "settings.json", HOOKS // 2, HOOKS // 2)
    return [claude, codex, home / ".agents", project / ".claude", project / ".agents"]


def discover_latency(runs: int) -> dict[str, Any]:
    from cody_daemon.extensions.discovery import Locations, discover

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home, project = root / "home", root / "ws" / "proj"
        layout(home, root / "codex", root / "claude", project)
        where = Locations(
            cody_dir=root / "cody",
            claude_dir=root / "claude",
            codex_home=root / "codex",
            home=home,
            config_file=root / "cody" / "config.toml",
        )
        found = discover(project, where, trusted=True)
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            discover(project, where, trusted=True)
            times.append((time.perf_counter() - started) * 1000)
    return {
        "commands": len(found.commands),
        "skills": len(found.skills),
        "hooks": len(found.hooks),
        "ms": _summary(times),
    }


async def session_new_latency(runs: int) -> dict[str, Any]:
    from cody_client.process import DaemonProcess

    main = sys.modules["__main__"]  # bench/run.py, which runs this scenario
    daemon_command, make_env = main.DAEMON, main.Env
    times: dict[str, list[float]] = {"with": [], "without": []}
    counts: dict[str, list[int]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        env = make_env(Path(tmp))
        home = Path(env.env["HOME"])
        project = env.workspace / "proj"
        dirs = layout(
            home, Path(env.env["CODEX_HOME"]), Path(env.env["CLAUDE_CONFIG_DIR"]), project
        )
        (env.root / "cody" / "config.toml").write_text(f'trusted_projects = ["{project}"]\n')
        process = await DaemonProcess.spawn(daemon_command, env=env.env)
        try:
            request = process.connection.request
            await request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            for index in range(runs + 1):
                for label in ("without", "with"):
                    for directory in dirs:
                        aside = directory.with_name(directory.name + ".aside")
                        if label == "without":
                            directory.rename(aside)
                        elif aside.exists():
                            aside.rename(directory)
                    started = time.perf_counter()
                    created = await request("session/new", {"cwd": str(project), "mcpServers": []})
                    if index:
                        times[label].append((time.perf_counter() - started) * 1000)
                    meta = created["_meta"]["cody"]
                    counts[label] = [len(meta["commands"]), len(meta["skills"]), len(meta["hooks"])]
                    await request("session/close", {"sessionId": created["sessionId"]})
        finally:
            await process.close()
    result: dict[str, Any] = {
        label: {"commands_skills_hooks": counts[label], "ms": _summary(values)}
        for label, values in times.items()
    }
    added = [w - o for w, o in zip(times["with"], times["without"], strict=True)]
    result["added_ms"] = _summary(added)
    return result


async def bench_extensions(runs: int) -> dict[str, Any]:
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    return {"discover": discover_latency(runs), "session_new": await session_new_latency(runs)}


def _summary(values: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(values), 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
    }
