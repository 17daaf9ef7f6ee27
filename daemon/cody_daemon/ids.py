"""Identifiers: UUIDv7 (time-ordered) for sessions, turns, items and tool calls."""

from __future__ import annotations

import os
import time
import uuid

__all__ = ["new_id", "uuid7"]


def uuid7() -> uuid.UUID:
    """A UUID version 7 (RFC 9562): 48-bit Unix milliseconds, then random bits."""
    millis = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (millis & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76  # version
    value |= ((rand >> 62) & 0xFFF) << 64  # rand_a (12 bits)
    value |= 0b10 << 62  # variant
    value |= rand & ((1 << 62) - 1)  # rand_b (62 bits)
    return uuid.UUID(int=value)


def new_id(prefix: str = "") -> str:
    """A fresh UUIDv7 string, optionally prefixed (e.g. `msg_`)."""
    return f"{prefix}{uuid7()}"
