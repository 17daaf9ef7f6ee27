"""The image rules every Cody component shares: which types, how large, how many.

The daemon applies them wherever an image enters a history (daemon core/image_rules.py,
which re-exports these); clients check an attachment against them before sending it, so a
user hears "too large" from the client instead of a refused prompt. Plain constants and pure
functions: no pydantic, nothing of the daemon's.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "IMAGE_TYPES",
    "MAX_IMAGE_BYTES",
    "MESSAGE_MAX_IMAGES",
    "MESSAGE_MAX_IMAGE_BYTES",
    "SESSION_MAX_IMAGES",
    "SESSION_MAX_IMAGE_BYTES",
    "image_type",
    "sniff_image_type",
]

IMAGE_TYPES: Final = ("image/png", "image/jpeg", "image/gif", "image/webp")
"""The image types all three APIs accept."""
MAX_IMAGE_BYTES: Final = 20 * 1024 * 1024
"""OpenAI's limit per image (decoded bytes)."""
MESSAGE_MAX_IMAGES: Final = 20
"""Images in one prompt (a user message)."""
MESSAGE_MAX_IMAGE_BYTES: Final = 20 * 1024 * 1024
"""Decoded bytes of all images of one prompt: one image of the largest size, or several
smaller ones (its session-file line stays under the readers' line limits)."""
SESSION_MAX_IMAGES: Final = 100
"""Images in one session's history: Anthropic's Messages API takes at most 100 per request,
and every turn sends the whole history."""
SESSION_MAX_IMAGE_BYTES: Final = 24 * 1024 * 1024
"""Decoded bytes of all images of a session (32 MiB of base64, sent on every turn: under
OpenAI's 50 MB request limit with room for the conversation's text)."""


def image_type(mime_type: str) -> str | None:
    """The normalised type (`image/jpg` is `image/jpeg`), or None when it is not accepted."""
    mime = mime_type.strip().lower()
    if mime == "image/jpg":
        mime = "image/jpeg"
    return mime if mime in IMAGE_TYPES else None


def sniff_image_type(head: bytes) -> str | None:
    """The accepted type the first bytes of a file show (its signature), or None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None
