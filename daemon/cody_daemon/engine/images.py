"""Images in prompts: checked before anything is stored, then kept in the user message.

An ACP `image` block (`{data, mimeType}`, base64) becomes an `input_image` part of the user
message (core/history.py: a `data:` URL, as Codex stores them), is written to the session
file with it, replayed on `session/load`, and sent to the model in its API's shape (the
providers: Responses `input_image`, Anthropic `image` base64 source, Chat `image_url`).

Checks, each a -32602 naming what to change, made before the prompt is stored (an image the
API would refuse must never enter the history, where it would fail every later turn):
- the session's model must not be known as text-only (`images = false` in the model catalog,
  providers/models.toml); an unknown model gets the image and its API decides;
- the type must be one every API takes: PNG, JPEG, GIF or WebP;
- the data must be base64, and within the API's size limit: 5 MB of base64 per image for
  Anthropic's Messages API (its 400 "image exceeds 5 MB maximum"), 20 MB per image for
  OpenAI's APIs (https://platform.openai.com/docs/guides/images-vision);
- the prompt holds at most 20 images of at most 20 MB in all, and the session (its history
  plus this prompt) at most 100 images of at most 24 MiB in all: every turn sends them again.

The rules beyond the model's are core/image_rules.py's, which imports and loads apply too.

`initialize` can only say `promptCapabilities.image` once per daemon (app.py): true when any
model of a provider with credentials may take images; the per-session check is this one.
After a switch to a text-only model, earlier images stay in the history and the model is
sent a short note in their place (`without_images`), so the conversation goes on.
"""

from __future__ import annotations

from collections.abc import Sequence

from cody_protocol.content import AudioContent, ContentBlock, ImageContent

from ..core.history import FunctionCallOutputItem, HistoryItem, ImagePart, MessageItem, TextPart
from ..core.image_rules import (
    IMAGE_TYPES,
    MAX_IMAGE_BYTES,
    MESSAGE_MAX_IMAGE_BYTES,
    MESSAGE_MAX_IMAGES,
    SESSION_MAX_IMAGE_BYTES,
    SESSION_MAX_IMAGES,
    ImageTally,
    decoded_size,
    image_type,
    tally_history,
)
from ..errors import InvalidParams, Issue
from ..providers.models import takes_images

__all__ = [
    "IMAGE_TYPES",
    "MAX_IMAGE_BASE64_ANTHROPIC",
    "MAX_IMAGE_BYTES",
    "prompt_images",
    "takes_images",
    "without_images",
]

MAX_IMAGE_BASE64_ANTHROPIC = 5 * 1024 * 1024
"""Anthropic's limit per image: 5 MB of base64 text (it counts the encoded length)."""

_OMITTED = "[an image the user attached here; the current model ({model}) does not read images]"
_OMITTED_TOOL = (
    "[the tool's images are not shown: the current model ({model}) does not read images]"
)


def prompt_images(
    blocks: Sequence[ContentBlock],
    *,
    provider: str,
    model: str,
    wire_api: str,
    history: Sequence[HistoryItem] = (),
) -> list[ImagePart]:
    """The prompt's images as message parts, in order; raises InvalidParams (see above).
    `history`: the session's, whose images count against the session's limits."""
    images = [(i, b) for i, b in enumerate(blocks) if isinstance(b, ImageContent)]
    if not images:
        return []
    if len(images) > MESSAGE_MAX_IMAGES:
        raise _invalid(
            images[MESSAGE_MAX_IMAGES][0],
            f"A prompt may carry at most {MESSAGE_MAX_IMAGES} images; this one has "
            f"{len(images)}. Send fewer (every later turn sends them again).",
            "too many images in one prompt",
        )
    if not takes_images(provider, model):
        raise _invalid(
            images[0][0],
            f"The model {model} ({provider}) does not accept images. Switch to a model that "
            "does (/model, or session/set_config_option) or send the prompt without images.",
            "the session's model reads text only",
        )
    parts: list[ImagePart] = []
    prompt = ImageTally()
    held = tally_history(history)
    for index, block in images:
        mime = image_type(block.mime_type)
        if mime is None:
            raise _invalid(
                index,
                f"Image type {block.mime_type!r} is not accepted; send PNG, JPEG, GIF or WebP.",
                "unsupported image type",
                valid=IMAGE_TYPES,
            )
        data = "".join(block.data.split())
        size = decoded_size(data)
        if size is None:
            raise _invalid(index, "The image data is not valid base64.", "not base64")
        if wire_api == "anthropic" and len(data) > MAX_IMAGE_BASE64_ANTHROPIC:
            raise _invalid(
                index,
                f"The image is too large for {model}: {len(data):,} bytes of base64, and "
                f"Anthropic's API takes at most {MAX_IMAGE_BASE64_ANTHROPIC:,} per image. "
                "Send a smaller or more compressed image.",
                "image too large",
            )
        if size > MAX_IMAGE_BYTES:
            raise _invalid(
                index,
                f"The image is too large: {size:,} bytes; the limit is {MAX_IMAGE_BYTES:,} "
                "per image. Send a smaller or more compressed image.",
                "image too large",
            )
        if prompt.over(size, max_images=MESSAGE_MAX_IMAGES, max_bytes=MESSAGE_MAX_IMAGE_BYTES):
            raise _invalid(
                index,
                f"The prompt's images add up to more than {MESSAGE_MAX_IMAGE_BYTES:,} bytes "
                f"(with this one, {prompt.total + size:,}); send fewer or smaller images.",
                "too many image bytes in one prompt",
            )
        if held.over(
            prompt.total + size,
            max_images=SESSION_MAX_IMAGES - prompt.count,
            max_bytes=SESSION_MAX_IMAGE_BYTES,
        ):
            raise _invalid(
                index,
                f"This session already holds {held.count} images ({held.total:,} bytes), and "
                f"a session may hold at most {SESSION_MAX_IMAGES} images of "
                f"{SESSION_MAX_IMAGE_BYTES:,} bytes in all (every turn sends them again). "
                "Start a new session for more images.",
                "too many images in the session",
            )
        prompt.add(size)
        parts.append(ImagePart(image_url=f"data:{mime};base64,{data}"))
    return parts


def without_images(history: Sequence[HistoryItem], model: str) -> list[HistoryItem]:
    """`history` with every image (of a prompt or a tool result) replaced by a short note
    (for a text-only model)."""
    out: list[HistoryItem] = []
    for item in history:
        if isinstance(item, FunctionCallOutputItem) and item.images:
            output = f"{item.output}\n{_OMITTED_TOOL.format(model=model)}"
            out.append(item.model_copy(update={"images": None, "output": output}))
        elif isinstance(item, MessageItem) and item.images:
            part_note = TextPart(type="input_text", text=_OMITTED.format(model=model))
            content: list[TextPart | ImagePart] = [
                part_note if isinstance(part, ImagePart) else part for part in item.content
            ]
            out.append(item.model_copy(update={"content": content}))
        else:
            out.append(item)
    return out


def refuse_audio(blocks: Sequence[ContentBlock]) -> None:
    """Audio is not accepted (`promptCapabilities.audio` is false): -32602, never dropped."""
    for index, block in enumerate(blocks):
        if isinstance(block, AudioContent):
            raise _invalid(
                index,
                "Audio is not accepted in prompts; send text (or an image, where the model "
                "reads images).",
                "audio is not accepted",
            )


def refuse_images_for_backend(blocks: Sequence[ContentBlock], backend: str) -> None:
    """A codex/claude session takes text only: an image block is -32602, never dropped."""
    for index, block in enumerate(blocks):
        if isinstance(block, ImageContent):
            raise _invalid(
                index,
                f"This session runs on the {backend} backend, which Cody passes text only; "
                "send the prompt without images.",
                "images are not passed to an agent CLI",
            )


def _invalid(
    index: int, message: str, problem: str, valid: tuple[str, ...] | None = None
) -> InvalidParams:
    return InvalidParams(
        message,
        [Issue(key=f"prompt[{index}]", message=problem, valid=valid, source="params")],
    )
