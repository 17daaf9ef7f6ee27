"""How the client finds the daemon it starts (standard library only: `launch` reads it before
anything heavy is imported).

`$CODY_DAEMON` (a command line), else `cody_daemon` importable by this interpreter, else
`cody-daemon` on PATH.
"""

from __future__ import annotations

import importlib.util
import os
import sys

__all__ = ["DaemonNotFound", "daemon_command"]


class DaemonNotFound(Exception):
    """No daemon to start: neither `$CODY_DAEMON`, nor `cody_daemon`, nor `cody-daemon` on PATH."""


def daemon_command() -> list[str]:
    """How to start the daemon: `$CODY_DAEMON`, this interpreter's `cody_daemon`, or PATH."""
    override = os.environ.get("CODY_DAEMON")
    if override:
        import shlex

        return shlex.split(override)
    if importlib.util.find_spec("cody_daemon") is not None:
        return [sys.executable, "-m", "cody_daemon"]
    import shutil  # only here: `exec` reads this module before it starts its daemon

    on_path = shutil.which("cody-daemon")
    if on_path is not None:
        return [on_path]
    raise DaemonNotFound(
        "Cody's daemon is not installed: run `python3 install.py` in a Cody checkout (it puts "
        "`cody-daemon` on PATH), or install it into this environment from the checkout "
        "(`python -m pip install -c constraints.txt ./protocol ./daemon ./clients` there; "
        'README: "Cody in your own Python project"), or set CODY_DAEMON to the command '
        "that starts it."
    )
