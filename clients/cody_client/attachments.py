"""Files a user attaches to a prompt: images (`-i`, `/image`, a pasted path) and `@path`
mentions, as the ACP content blocks the daemon takes.

- An image becomes an `image` block (base64). Its type comes from the file's first bytes,
  never its name, and it must pass the rules the daemon applies (cody_protocol/images.py:
  PNG, JPEG, GIF or WebP; per image and per message sizes and counts), so a user hears what
  is wrong before anything is sent. The daemon checks again (the model may not take images).
- `@path` in a prompt names a file of the workspace: the file is sent along as an embedded
  resource (`resource` block: its `file://` URI and its text), the prompt text keeps the
  mention. A file that is not UTF-8 text or is larger than `MAX_MENTION_BYTES` is sent as a
  `resource_link` instead (the model can read it with its tools); a mention of nothing is
  left as typed.
- A prompt that is nothing but the path of an image file (what a terminal pastes when a
  file is dropped on it, possibly quoted or with `\\ ` escapes) attaches that image.

Files are read by the client, which runs as the user: the daemon's sandbox does not apply
to what the user attaches on purpose; a mention is only resolved inside the workspace.
"""

from __future__ import annotations

import base64
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cody_protocol.images import (
    MAX_IMAGE_BYTES,
    MESSAGE_MAX_IMAGE_BYTES,
    MESSAGE_MAX_IMAGES,
    sniff_image_type,
)

__all__ = [
    "MAX_MENTION_BYTES",
    "AttachmentError",
    "Attachments",
    "image_block",
    "mention_blocks",
    "mentions",
    "pasted_image_path",
]

MAX_MENTION_BYTES = 256 * 1024
"""Largest file sent inline for an `@path` mention (larger ones go as a link)."""

_MENTION = re.compile(r"(?:(?<=\s)|^)@((?:[^\s\\]|\\ )+)")


class AttachmentError(ValueError):
    """A file that cannot be attached; the message says why (for the user)."""


def image_block(path: str | Path) -> dict[str, Any]:
    """An ACP `image` block for the image file at `path` (raises AttachmentError)."""
    file = Path(path).expanduser()
    try:
        size = file.stat().st_size
        if not file.is_file():
            raise AttachmentError(f"{path}: not a regular file")
        if size > MAX_IMAGE_BYTES:
            raise AttachmentError(
                f"{path}: {size:,} bytes, more than the {MAX_IMAGE_BYTES:,} an image may have"
            )
        data = file.read_bytes()
    except OSError as exc:
        raise AttachmentError(f"{path}: {exc.strerror or exc}") from None
    mime = sniff_image_type(data[:16])
    if mime is None:
        raise AttachmentError(f"{path}: not a PNG, JPEG, GIF or WebP image")
    return {
        "type": "image",
        "mimeType": mime,
        "data": base64.b64encode(data).decode("ascii"),
        "uri": file.resolve().as_uri(),
    }


@dataclass
class Attachments:
    """Images waiting to go with the next prompt (the chat's `/image`), within the
    per-message limits."""

    blocks: list[dict[str, Any]] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    _bytes: int = 0

    def add_image(self, path: str) -> dict[str, Any]:
        block = image_block(path)
        size = len(block["data"]) * 3 // 4
        if len(self.blocks) + 1 > MESSAGE_MAX_IMAGES:
            raise AttachmentError(f"{path}: a message takes at most {MESSAGE_MAX_IMAGES} images")
        if self._bytes + size > MESSAGE_MAX_IMAGE_BYTES:
            raise AttachmentError(
                f"{path}: the images of one message may have {MESSAGE_MAX_IMAGE_BYTES:,} "
                "bytes in all"
            )
        self.blocks.append(block)
        self.names.append(os.path.basename(path))
        self._bytes += size
        return block

    def take(self) -> list[dict[str, Any]]:
        blocks, self.blocks, self.names, self._bytes = self.blocks, [], [], 0
        return blocks


def mentions(text: str) -> list[str]:
    """The `@path` mentions of a prompt (`\\ ` is a space inside a path), in order."""
    return [match.group(1).replace("\\ ", " ") for match in _MENTION.finditer(text)]


def mention_blocks(text: str, cwd: str) -> list[dict[str, Any]]:
    """A `resource` (or `resource_link`) block for each `@path` of `text` that names a file
    inside `cwd` (module docstring); each file once."""
    root = Path(cwd).resolve()
    blocks: list[dict[str, Any]] = []
    seen: set[Path] = set()
    for mention in mentions(text):
        candidate = (root / mention).resolve()
        if candidate in seen or not candidate.is_relative_to(root) or not candidate.is_file():
            continue
        seen.add(candidate)
        blocks.append(_file_block(candidate, mention))
    return blocks


def _file_block(path: Path, name: str) -> dict[str, Any]:
    uri = path.as_uri()
    try:
        with path.open("rb") as file:
            data = file.read(MAX_MENTION_BYTES + 1)
        if len(data) <= MAX_MENTION_BYTES:
            return {"type": "resource", "resource": {"uri": uri, "text": data.decode("utf-8")}}
    except (OSError, UnicodeDecodeError):
        pass
    return {"type": "resource_link", "uri": uri, "name": name}


def pasted_image_path(text: str) -> str | None:
    """The image file a prompt consists of, when it is only a (pasted) path to one."""
    stripped = text.strip()
    if not stripped or "\n" in stripped:
        return None
    try:
        words = shlex.split(stripped)
    except ValueError:
        return None
    if len(words) != 1:
        return None
    candidate = words[0]
    if candidate.startswith("file://"):
        candidate = candidate.removeprefix("file://")
    path = Path(candidate).expanduser()
    try:
        if not path.is_absolute() and not candidate.startswith("."):
            return None
        with path.open("rb") as file:
            head = file.read(16)
    except OSError:
        return None
    return str(path) if sniff_image_type(head) is not None else None
