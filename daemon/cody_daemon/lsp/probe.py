"""`cody-client doctor`'s question: does this server start here? (Started, asked to
`initialize`, shut down again: the pool's own servers are not touched.)"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from .client import ServerGone
from .launch import Unlaunchable, spawn_server
from .specs import ServerSpec

__all__ = ["probe"]


async def probe(
    spec: ServerSpec, cwd: Path, *, trusted: bool, env: Mapping[str, str], timeout_s: float
) -> tuple[Literal["started", "failed", "not started"], str | None]:
    """(`started` | `failed` | `not started`, the problem)."""
    try:
        connection = await spawn_server(spec, cwd, trusted=trusted, env=env)
    except Unlaunchable as exc:
        return "not started", str(exc)
    except ServerGone as exc:
        return "failed", str(exc)
    try:
        await connection.initialize(timeout_s)
    except ServerGone as exc:
        return "failed", str(exc)
    finally:
        await connection.close()
    return "started", None
