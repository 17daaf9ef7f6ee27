"""The locations a daemon reads: what a warm daemon and its client must share.

A daemon's behaviour depends on where it reads from: its config file (approval policy,
sandbox, providers, trusted projects), its data directory (sessions, caches), the Codex and
Claude Code homes (logins, their sessions) and `HOME` (the `~` of every command it runs). A
client whose environment names other locations (another `HOME`, `XDG_CONFIG_HOME`,
`CODY_HOME`, `CODEX_HOME` or `CLAUDE_CONFIG_DIR`) must not be served by a daemon started with
these: it would get another config (say `never` instead of `untrusted`) and write into another
store. So the warm daemon's socket name derives from them (cody_protocol.endpoint), the
daemon reports what it really uses in `initialize` `_meta.cody.locations`, and a client uses
a warm daemon only when that equals `daemon_locations(its own environment)` (cody_client.warm).

`daemon_locations` follows the daemon's own resolution (cody_daemon/config/paths.py, which
uses platformdirs; providers/catalog.py for the agent homes) with the standard library only,
so a client computes it without importing the daemon. Where the two could ever differ, the
client sees a mismatch and starts its own daemon: never the wrong one.

Every value is an absolute, normalised path (not resolved: a symlinked path is another
location here, which errs on the side of a daemon of one's own).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

__all__ = ["LOCATION_NAMES", "daemon_locations", "differences", "home_dir"]

LOCATION_NAMES = ("home", "configDir", "dataDir", "codexHome", "claudeConfigDir")
"""The keys of `daemon_locations`, as `initialize` reports them."""


def _clean(path: str) -> str:
    return os.path.normpath(os.path.abspath(path))


def home_dir(env: Mapping[str, str]) -> str:
    """`$HOME` when it is absolute, else the user's home from the password database."""
    home = env.get("HOME", "")
    if home and os.path.isabs(home):
        return _clean(home)
    try:
        import pwd

        return _clean(pwd.getpwuid(os.getuid()).pw_dir or "/")
    except (ImportError, KeyError):
        return _clean(home or "/")


def _under_home(value: str, home: str) -> str:
    """`value` with a leading `~` meaning `home` (as expanduser does with that HOME)."""
    if value == "~" or value.startswith("~/"):
        return home + value[1:]
    return value


def _xdg(env: Mapping[str, str], name: str, default: str) -> str:
    value = env.get(name, "")
    return value if os.path.isabs(value) else default


def daemon_locations(env: Mapping[str, str]) -> dict[str, str]:
    """The locations a daemon started with `env` reads (see the module docstring)."""
    home = home_dir(env)
    cody_home = env.get("CODY_HOME", "")
    if cody_home:
        config_dir = data_dir = _under_home(cody_home, home)
    elif sys.platform == "darwin":
        support = os.path.join(home, "Library", "Application Support")
        config_dir = os.path.join(_xdg(env, "XDG_CONFIG_HOME", support), "cody")
        data_dir = os.path.join(_xdg(env, "XDG_DATA_HOME", support), "cody")
    else:
        config_dir = os.path.join(
            _xdg(env, "XDG_CONFIG_HOME", os.path.join(home, ".config")), "cody"
        )
        data_dir = os.path.join(
            _xdg(env, "XDG_DATA_HOME", os.path.join(home, ".local", "share")), "cody"
        )
    codex_home = _under_home(env.get("CODEX_HOME") or "~/.codex", home)
    claude_dir = _under_home(env.get("CLAUDE_CONFIG_DIR") or "~/.claude", home)
    values = (home, config_dir, data_dir, codex_home, claude_dir)
    return {name: _clean(value) for name, value in zip(LOCATION_NAMES, values, strict=True)}


def differences(ours: Mapping[str, str], theirs: Mapping[str, object] | None) -> list[str]:
    """`name: theirs (ours here)` for every location that differs; a report without
    locations (an older daemon) differs in all of them."""
    found = []
    for name in LOCATION_NAMES:
        value = None if theirs is None else theirs.get(name)
        if value != ours[name]:
            found.append(
                f"{name} {value if isinstance(value, str) else '(not said)'} (here {ours[name]})"
            )
    return found
