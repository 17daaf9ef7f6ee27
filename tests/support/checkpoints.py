"""Helpers for checkpoint and rewind tests: the workspace's exact state, and the three
`_cody/session/*` checkpoint methods through a test daemon."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.daemon import CodyEnv, Daemon

State = dict[str, tuple[str, bytes, int]]
"""path -> (kind "file" | "link", content or link target, permission bits)."""


def workspace_state(root: Path, skip: tuple[str, ...] = (".git", ".cody")) -> State:
    """Every file and symlink under `root` (without following links) with its content and
    mode: two equal states are byte- and mode-identical trees."""
    state: State = {}
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [
            d for d in dirs if d not in skip and not os.path.islink(os.path.join(dirpath, d))
        ]
        names = files + [d for d in os.listdir(dirpath) if os.path.islink(os.path.join(dirpath, d))]
        for name in set(names):
            path = os.path.join(dirpath, name)
            info = os.lstat(path)
            rel = os.path.relpath(path, root)
            if stat.S_ISLNK(info.st_mode):
                state[rel] = ("link", os.fsencode(os.readlink(path)), 0)
            elif stat.S_ISREG(info.st_mode):
                with open(path, "rb") as handle:
                    state[rel] = ("file", handle.read(), stat.S_IMODE(info.st_mode))
    return state


async def checkpoints(daemon: Daemon, session_id: str) -> list[dict[str, Any]]:
    result = await daemon.request("_cody/session/checkpoints", {"sessionId": session_id})
    return list(result["checkpoints"])


async def rewind(
    daemon: Daemon, session_id: str, checkpoint_id: str, restore: str, *, force: bool = False
) -> dict[str, Any]:
    params: dict[str, Any] = {
        "sessionId": session_id,
        "checkpointId": checkpoint_id,
        "restore": restore,
    }
    if force:
        params["force"] = True
    result: dict[str, Any] = await daemon.request("_cody/session/rewind", params)
    return result


def turn_checkpoint(listing: list[dict[str, Any]], turn: int) -> dict[str, Any]:
    """The checkpoint of the conversation's `turn`-th prompt (the newest such)."""
    return next(c for c in listing if c.get("turn") == turn and c.get("reason") == "turn")


def require_bwrap(env: CodyEnv) -> None:
    """exec must run sandboxed for these tests; CI must have bubblewrap."""
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "from cody_daemon.policy.sandbox import bwrap_path as p; print(p())",
        ],
        env=env.env,
        capture_output=True,
        text=True,
        check=True,
    )
    if probe.stdout.strip() == "None":
        if os.environ.get("CI") == "true":
            pytest.fail("bubblewrap is required in CI but is not usable")
        pytest.skip("bubblewrap (bwrap) is not usable on this machine")
