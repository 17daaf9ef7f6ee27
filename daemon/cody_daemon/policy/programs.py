"""What `initialize` reports about the external programs (`_meta.cody.binaries`).

`bwrap` is the one `exec` uses (`sandbox.bwrap_status`: probed by building a sandbox);
`rg` is the one grepFiles and fileSearch use (`core.binaries.locate`: usable when
`rg --version` answers). Each check runs once per process.

`probe_in_background()` (the daemon's entry point) starts those checks in a thread while
the daemon imports its stack, so `initialize` finds them done: they are three short child
processes, waited for without the GIL. A check the thread has not finished yet is simply
run again by `initialize` (each is idempotent and cached).
"""

from __future__ import annotations

import threading
from typing import Any

from ..core import binaries
from .sandbox import bwrap_status

__all__ = ["binaries_report", "probe_in_background"]


def probe_in_background() -> None:
    threading.Thread(target=_probe, name="cody-probe-programs", daemon=True).start()


def _probe() -> None:
    status = bwrap_status()
    if status.path:
        binaries.version_of(status.path)
    located = binaries.locate("rg")
    if located.path:
        binaries.version_of(located.path)


def binaries_report() -> list[dict[str, Any]]:
    """`_meta.cody.binaries` as JSON (the shape of `cody_protocol.initialize.BinaryInfo`;
    null members left out, as the models dump): bwrap, then rg."""
    return [_bwrap(), _rg()]


def _info(**members: Any) -> dict[str, Any]:
    return {name: value for name, value in members.items() if value is not None}


def _bwrap() -> dict[str, Any]:
    status = bwrap_status()
    return _info(
        name="bwrap",
        path=status.path,
        origin=status.origin,
        version=binaries.version_of(status.path) if status.path else None,
        usable=status.usable,
        problem=status.problem,
    )


def _rg() -> dict[str, Any]:
    located = binaries.locate("rg")
    version = binaries.version_of(located.path) if located.path else None
    problem = located.problem
    if located.path is not None and version is None:
        problem = f"{located.path} does not run (`rg --version` failed)"
    return _info(
        name="rg",
        path=located.path,
        origin=located.origin,
        version=version,
        usable=version is not None,
        problem=problem,
    )
