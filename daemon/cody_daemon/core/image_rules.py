"""What an image in a conversation may be, wherever it comes from: one set of rules.

Images reach a session's history by four paths: a prompt (engine/images.py), an import of
another agent's session (history/importer.py), the load of a session file, which may have
been edited or damaged (store/reader.py), and a fork, which copies a history that came by
one of the others. Every image in the history is sent to the model again on every later
turn, so each path applies these rules before an image enters:

- its type is one every API takes (PNG, JPEG, GIF, WebP) and its data is base64;
- it is at most `MAX_IMAGE_BYTES` (decoded);
- one message (a prompt) holds at most `MESSAGE_MAX_IMAGES` images of at most
  `MESSAGE_MAX_IMAGE_BYTES` in all;
- one session holds at most `SESSION_MAX_IMAGES` images of at most `SESSION_MAX_IMAGE_BYTES`
  in all.

A prompt that breaks a rule is refused (-32602, nothing stored); an imported or loaded image
that breaks one is replaced by a short note in its message (`admit_history_images`), so the
rest of the conversation loads and nothing unchecked is ever sent.

The limits and accepted types are cody_protocol/images.py's (clients check attachments
against the same ones), re-exported here.
"""

from __future__ import annotations

import binascii
from collections.abc import Sequence
from dataclasses import dataclass

from cody_protocol.images import (
    IMAGE_TYPES,
    MAX_IMAGE_BYTES,
    MESSAGE_MAX_IMAGE_BYTES,
    MESSAGE_MAX_IMAGES,
    SESSION_MAX_IMAGE_BYTES,
    SESSION_MAX_IMAGES,
    image_type,
)

from .history import HistoryItem, ImagePart, MessageItem, TextPart

__all__ = [
    "IMAGE_TYPES",
    "MAX_IMAGE_BYTES",
    "MESSAGE_MAX_IMAGES",
    "MESSAGE_MAX_IMAGE_BYTES",
    "SESSION_MAX_IMAGES",
    "SESSION_MAX_IMAGE_BYTES",
    "ImageTally",
    "admit_history_images",
    "admit_image",
    "decoded_size",
    "image_type",
    "left_out",
    "tally_history",
]


def decoded_size(data: str) -> int | None:
    """The decoded size of base64 `data` (whitespace ignored), or None when it is not base64."""
    try:
        return len(binascii.a2b_base64("".join(data.split()), strict_mode=True))
    except (binascii.Error, ValueError):
        return None


@dataclass(slots=True)
class ImageTally:
    """Images counted so far (in a message, or in a session)."""

    count: int = 0
    total: int = 0

    def over(self, size: int, *, max_images: int, max_bytes: int) -> str | None:
        """Why one more image of `size` bytes would break the limits; None if it fits."""
        if self.count + 1 > max_images:
            return f"more than {max_images} images"
        if self.total + size > max_bytes:
            return f"more than {max_bytes:,} bytes of images"
        return None

    def add(self, size: int) -> None:
        self.count += 1
        self.total += size


def tally_history(items: Sequence[HistoryItem]) -> ImageTally:
    """The images a history holds (their decoded sizes estimated from the base64 length)."""
    tally = ImageTally()
    for item in items:
        if isinstance(item, MessageItem):
            for part in item.content:
                if isinstance(part, ImagePart):
                    tally.add(len(part.data) * 3 // 4)
    return tally


def _problem(part: ImagePart) -> tuple[int, str | None]:
    """(decoded size, why the image is refused or None)."""
    if image_type(part.mime_type) is None or not part.image_url.startswith("data:"):
        return 0, "not a PNG, JPEG, GIF or WebP image"
    size = decoded_size(part.data)
    if size is None:
        return 0, "not valid base64"
    if size > MAX_IMAGE_BYTES:
        return size, f"{size:,} bytes, more than {MAX_IMAGE_BYTES:,}"
    return size, None


def admit_image(part: ImagePart, message: ImageTally, session: ImageTally) -> str | None:
    """Why `part` may not join a message and a session holding `message` and `session` so
    far; None when it may (then both tallies count it)."""
    size, problem = _problem(part)
    problem = (
        problem
        or message.over(size, max_images=MESSAGE_MAX_IMAGES, max_bytes=MESSAGE_MAX_IMAGE_BYTES)
        or session.over(size, max_images=SESSION_MAX_IMAGES, max_bytes=SESSION_MAX_IMAGE_BYTES)
    )
    if problem is None:
        message.add(size)
        session.add(size)
    return problem


def left_out(problem: str) -> TextPart:
    """The note an image that was not admitted leaves in its message."""
    return TextPart(type="input_text", text=f" [image left out: {problem}]")


def admit_history_images(items: list[HistoryItem]) -> int:
    """Replace, in place, every image of `items` that breaks a rule (see the module doc) by a
    short text note in its message; the number replaced. Images are taken in order: the
    first ones within the limits stay."""
    session = ImageTally()
    replaced = 0
    for index, item in enumerate(items):
        if not isinstance(item, MessageItem) or not any(
            isinstance(part, ImagePart) for part in item.content
        ):
            continue
        message = ImageTally()
        content: list[TextPart | ImagePart] = []
        for part in item.content:
            if not isinstance(part, ImagePart):
                content.append(part)
                continue
            if item.role != "user":
                problem: str | None = "only the user's messages carry images"
            else:
                problem = admit_image(part, message, session)
            if problem is None:
                content.append(part)
            else:
                replaced += 1
                content.append(left_out(problem))
        if len(content) != len(item.content) or any(
            a is not b for a, b in zip(content, item.content, strict=True)
        ):
            items[index] = item.model_copy(update={"content": content})
    return replaced
