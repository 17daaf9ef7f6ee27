"""An MCP server's log messages (`notifications/message`) in the daemon's log.

Each server logs under `cody_daemon.mcp.<server>` at the Python level matching its MCP level;
Cody asks the server (`logging/setLevel`) for the level the daemon logs at (`-v`: info, `-vv`:
debug, else warning), so a quiet daemon gets no chatter. Invariants: a message is one line
(control characters escaped), at most `MAX_CHARS` long, and the server's own secrets (its
environment values and headers that look like credentials) are redacted before it is logged.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Final, Literal

from ...policy.secrets import (
    MIN_SECRET_CHARS,
    SecretGuard,
    SecretSources,
    looks_like_token,
    secret_name,
)
from .specs import McpHttp, McpServerSpec

__all__ = ["MAX_CHARS", "McpLevel", "ServerLog"]

McpLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]

MAX_CHARS: Final = 1000
_TO_PYTHON: Final = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


class ServerLog:
    def __init__(self, spec: McpServerSpec) -> None:
        self._name = spec.name
        self._logger = logging.getLogger(f"cody_daemon.mcp.{spec.name}")
        self._guard = SecretGuard(sources=SecretSources(values=tuple(_secrets(spec))))

    def mcp_level(self) -> McpLevel:
        """The MCP level matching what the daemon logs (`logging/setLevel`)."""
        level = self._logger.getEffectiveLevel()
        if level <= logging.DEBUG:
            return "debug"
        if level <= logging.INFO:
            return "info"
        if level <= logging.WARNING:
            return "warning"
        return "error" if level <= logging.ERROR else "critical"

    def write(self, level: str, logger: str | None, data: Any) -> None:
        python_level = _TO_PYTHON.get(level, logging.INFO)
        if not self._logger.isEnabledFor(python_level):
            return
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=True)
        text = _one_line(self._guard.redact(text))
        if len(text) > MAX_CHARS:
            text = text[:MAX_CHARS] + f"... ({len(text) - MAX_CHARS} more characters)"
        where = f" ({_one_line(logger)[:100]})" if logger else ""
        self._logger.log(python_level, "MCP server %s%s: %s", self._name, where, text)


def _one_line(text: str) -> str:
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


def _secrets(spec: McpServerSpec) -> list[str]:
    transport = spec.transport
    pairs = transport.headers if isinstance(transport, McpHttp) else transport.env
    found: list[str] = []
    for name, value in pairs.items():
        for part in (value, *value.split()):
            if len(part) >= MIN_SECRET_CHARS and (secret_name(name) or looks_like_token(part)):
                found.append(part)
    return found
