"""Daemon errors in the terminal's words.

The daemon's messages serve every client, so they name protocol fields (`_meta.cody.model`,
`session/set_config_option`, `session/list`); in a terminal the same advice is a flag, a chat
command or a `cody-client` subcommand. Unknown text passes through unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from .inert import one_line

if TYPE_CHECKING:
    from cody_protocol.session import SessionInfo

__all__ = ["for_terminal", "lookup_message", "session_label"]

_FLAGS = {
    "provider": "--provider",
    "model": "--model",
    "approvalPolicy": "--approval-policy",
    "sandboxMode": "--sandbox",
    "allowedTools": "--allowed-tools",
}
"""`_meta.cody` fields that cody-client sets from its flags."""

_PHRASES = (
    (
        "pick another provider with model_provider / session/set_config_option provider",
        "pick another provider with --provider (or /model PROVIDER MODEL in a chat, or "
        "model_provider in config.toml)",
    ),
    (
        "Use session/list (or `cody-client sessions list`) to see known sessions.",
        "Run `cody-client sessions list` to see the saved sessions.",
    ),
    (
        "Use _cody/history/list (`cody-client history list`) to see the sessions on this machine.",
        "Run `cody-client history list` to see the sessions on this machine.",
    ),
    ("use session/load or session/resume first.", "resume it with `cody-client --resume ID`."),
    ("(the `provider` config option)", "(/model PROVIDER MODEL)"),
    ("session/set_config_option", "/model or /approvals"),
    ("session/list", "`cody-client sessions list`"),
    ("see where each provider looks in initialize's providers", "`cody-client doctor` lists them"),
)

_RELOCATE = re.compile(
    r"session/load or session/resume of (\S+) with `_meta\.cody\.relocate` and that "
    r"directory as `cwd`"
)
"""The daemon's advice for a session whose directory is gone (engine/workdir.py)."""
_META_FIELD = re.compile(r"_meta\.cody\.(\w+)")
_FLAG_VALUE = re.compile(r"(--[a-z][a-z-]*) = ")
_META_SOURCE = re.compile(r"\((?:in |from )?_meta\.cody\)")


def for_terminal(message: str) -> str:
    message = _RELOCATE.sub(r"`cody-client --resume \1 --cwd DIR`", message)
    for protocol, terminal in _PHRASES:
        message = message.replace(protocol, terminal)
    message = _META_FIELD.sub(lambda m: _FLAGS.get(m.group(1), m.group(0)), message)
    message = _FLAG_VALUE.sub(r"\1 ", message)  # `--provider = "x"` -> `--provider "x"`
    return _META_SOURCE.sub("(from the command line)", message)


class _Lookup(Protocol):
    message: str

    @property
    def candidates(self) -> Sequence[object]: ...


def lookup_message(error: _Lookup) -> str:
    """A failed session-id lookup, with where to find the ids when nothing matched."""
    if error.candidates:
        return error.message
    return f"{error.message} Run `cody-client sessions list` to see the saved sessions."


def session_label(info: SessionInfo, id_width: int = 8) -> str:
    """A listed session's title, on one line; a fork says whose fork it is (it starts with
    its parent's title), a subagent's session whose `task` call started it."""
    title = one_line(info.title or "")
    if info.forked_from is not None:
        return f"{title}  (fork of {one_line(info.forked_from[:id_width])})".lstrip()
    if info.parent_session_id is not None:
        return f"{title}  (subagent of {one_line(info.parent_session_id[:id_width])})".lstrip()
    return title
