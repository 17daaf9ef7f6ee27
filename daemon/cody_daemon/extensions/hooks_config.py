"""Hook definitions in the shape Claude Code and Codex share (docs/extensions.md "Hooks"):

    {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "./check.sh", "timeout": 30}]}]}}

(`[hooks]` in a config.toml is the same table: `[[hooks.PreToolUse]]` ...).

Events Cody runs: `HOOK_EVENTS`. A group's `matcher` is matched against a value that depends
on the event (a tool's name and its aliases, SessionStart's `source`, PreCompact's `trigger`,
Notification's `notification_type`; ignored for UserPromptSubmit and Stop) by Codex's rule:
missing, `""` or `*` match everything; a matcher of only letters, digits, `_` and `|` is a
list of exact names; anything else is a regular expression searched in the value.

Invariants: a pure function of the table (no file is read, nothing runs); every problem (an
unknown or unsupported event, a bad matcher, a handler that is not a command) skips only its
own part, with a warning naming the source; a command is at most
`MAX_COMMAND` characters; a timeout is in seconds, default `DEFAULT_TIMEOUT_S`, at most
`MAX_TIMEOUT_S`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, get_args

from .files import Scope

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "HOOK_EVENTS",
    "MAX_TIMEOUT_S",
    "HookEvent",
    "HookSpec",
    "parse_hooks",
]

HookEvent = Literal[
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "Stop",
    "PreCompact",
    "Notification",
]
HOOK_EVENTS: Final[tuple[str, ...]] = get_args(HookEvent)
PEER_ONLY_EVENTS: Final = frozenset(
    {
        "SessionEnd",
        "SubagentStart",
        "SubagentStop",
        "PostCompact",
        "PostToolUseFailure",
        "PermissionDenied",
        "Setup",
        "StopFailure",
        "Interrupt",
    }
)
"""Events the peers have and Cody does not run (said once per file, not an error)."""
MATCHED_EVENTS: Final = frozenset(
    {"SessionStart", "PreToolUse", "PermissionRequest", "PostToolUse", "PreCompact", "Notification"}
)

DEFAULT_TIMEOUT_S: Final = 60.0
MAX_TIMEOUT_S: Final = 3600.0
MAX_COMMAND: Final = 8192
_EXACT = re.compile(r"^[A-Za-z0-9_|]+$")


@dataclass(frozen=True, slots=True, kw_only=True)
class HookSpec:
    event: HookEvent
    command: str
    matcher: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    source: str
    """The file it came from."""
    scope: Scope = "user"
    fail_closed: bool = False
    """Cody's own `failClosed`: a failure or a timeout blocks (where the event can block)."""
    background: bool = False
    """`async: true`: started and not waited for (its answer is not used)."""
    _pattern: re.Pattern[str] | None = field(default=None, compare=False, repr=False)

    def matches(self, values: Sequence[str]) -> bool:
        """Whether the group's matcher selects any of `values` (see the module's rule)."""
        matcher = self.matcher
        if self.event not in MATCHED_EVENTS or matcher in (None, "", "*"):
            return True
        assert matcher is not None
        if _EXACT.match(matcher):
            names = set(matcher.split("|"))
            return any(value in names for value in values)
        pattern = self._pattern
        return pattern is not None and any(pattern.search(value) for value in values)

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "event": self.event,
            "command": self.command,
            "source": self.source,
            "scope": self.scope,
            "timeoutSec": self.timeout_s,
        }
        if self.matcher not in (None, "", "*"):
            out["matcher"] = self.matcher
        if self.fail_closed:
            out["failClosed"] = True
        if self.background:
            out["async"] = True
        return out


def parse_hooks(table: Any, *, source: str, scope: Scope, warnings: list[str]) -> list[HookSpec]:
    """The hooks of one `hooks` table (the value of the `hooks` key)."""
    if table is None:
        return []
    if not isinstance(table, dict):
        warnings.append(f"hooks in {source} ignored: `hooks` is not a table of events")
        return []
    specs: list[HookSpec] = []
    ignored: list[str] = []
    for event, groups in table.items():
        if event == "state":  # Codex's per-hook enablement table: nothing to run
            continue
        if event not in HOOK_EVENTS:
            ignored.append(str(event))
            continue
        if not isinstance(groups, list):
            warnings.append(f"hooks.{event} in {source} ignored: not a list of matcher groups")
            continue
        for group in groups:
            specs += _group(event, group, source, scope, warnings)
    if ignored:
        known = [name for name in ignored if name in PEER_ONLY_EVENTS]
        unknown = [name for name in ignored if name not in PEER_ONLY_EVENTS]
        if known:
            warnings.append(f"Cody does not run {', '.join(known)} hooks (in {source})")
        if unknown:
            warnings.append(
                f"unknown hook event(s) {', '.join(map(repr, unknown))} in {source} ignored; "
                f"Cody runs {', '.join(HOOK_EVENTS)}"
            )
    return specs


def _group(
    event: HookEvent, group: Any, source: str, scope: Scope, warnings: list[str]
) -> list[HookSpec]:
    where = f"hooks.{event} in {source}"
    if not isinstance(group, dict):
        warnings.append(f"an entry of {where} ignored: not a table")
        return []
    matcher = group.get("matcher")
    if matcher is not None and not isinstance(matcher, str):
        warnings.append(f"an entry of {where} ignored: `matcher` is not a string")
        return []
    pattern: re.Pattern[str] | None = None
    if event in MATCHED_EVENTS and matcher not in (None, "", "*") and not _EXACT.match(matcher):
        try:
            pattern = re.compile(matcher)
        except re.error as exc:
            warnings.append(f"an entry of {where} ignored: matcher {matcher!r} is invalid ({exc})")
            return []
    handlers = group.get("hooks")
    if not isinstance(handlers, list):
        warnings.append(f"an entry of {where} ignored: `hooks` is not a list")
        return []
    specs = []
    for handler in handlers:
        spec = _handler(
            event,
            handler,
            matcher=matcher,
            pattern=pattern,
            source=source,
            scope=scope,
            warnings=warnings,
        )
        if spec is not None:
            specs.append(spec)
    return specs


def _handler(
    event: HookEvent,
    handler: Any,
    *,
    matcher: str | None,
    pattern: re.Pattern[str] | None,
    source: str,
    scope: Scope,
    warnings: list[str],
) -> HookSpec | None:
    where = f"a hook of hooks.{event} in {source}"
    if not isinstance(handler, dict):
        warnings.append(f"{where} ignored: not a table")
        return None
    kind = handler.get("type", "command")
    if kind != "command":
        warnings.append(f"{where} ignored: Cody runs `command` hooks, not {kind!r}")
        return None
    command = handler.get("command")
    if not isinstance(command, str) or not command.strip():
        warnings.append(f"{where} ignored: `command` is missing or empty")
        return None
    if len(command) > MAX_COMMAND or "\0" in command:
        warnings.append(f"{where} ignored: `command` is too long or holds a NUL byte")
        return None
    timeout = handler.get("timeout", handler.get("timeout_sec", DEFAULT_TIMEOUT_S))
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        warnings.append(f"{where}: timeout {timeout!r} is not a positive number of seconds")
        timeout = DEFAULT_TIMEOUT_S
    return HookSpec(
        event=event,
        command=command,
        matcher=matcher,
        timeout_s=min(float(timeout), MAX_TIMEOUT_S),
        source=source,
        scope=scope,
        fail_closed=handler.get("failClosed") is True,
        background=handler.get("async") is True,
        _pattern=pattern,
    )
