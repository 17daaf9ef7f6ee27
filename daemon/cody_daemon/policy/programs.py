"""What `initialize` reports about the external programs (`_meta.cody.binaries`).

`bwrap` is the one `exec` uses (`sandbox.bwrap_status`: probed by building a sandbox);
`rg` is the one grepFiles and fileSearch use (`core.binaries.locate`: usable when
`rg --version` answers). Each check runs once per process.
"""

from __future__ import annotations

from cody_protocol.initialize import BinaryInfo

from ..core import binaries
from .sandbox import bwrap_status

__all__ = ["binaries_report"]


def binaries_report() -> list[BinaryInfo]:
    return [_bwrap(), _rg()]


def _bwrap() -> BinaryInfo:
    status = bwrap_status()
    return BinaryInfo(
        name="bwrap",
        path=status.path,
        origin=status.origin,
        version=binaries.version_of(status.path) if status.path else None,
        usable=status.usable,
        problem=status.problem,
    )


def _rg() -> BinaryInfo:
    located = binaries.locate("rg")
    version = binaries.version_of(located.path) if located.path else None
    problem = located.problem
    if located.path is not None and version is None:
        problem = f"{located.path} does not run (`rg --version` failed)"
    return BinaryInfo(
        name="rg",
        path=located.path,
        origin=located.origin,
        version=version,
        usable=version is not None,
        problem=problem,
    )
