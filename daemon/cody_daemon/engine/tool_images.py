"""Images a tool returns for the model (an MCP screenshot): which ones it gets.

A tool's `ToolResult.images` become the `images` of its `function_call_output` only when
(checked here, before anything is stored):

- the session's model is not known to read text only (the catalog's `images`,
  providers/models.toml); otherwise none is kept and the output says why;
- each passes what any API takes (core/image_rules.py: type, size, base64) and Anthropic's
  per-image limit (`MAX_IMAGE_BASE64_ANTHROPIC`: a session may switch to Claude later, and
  every image is sent again on every turn);
- the result holds at most the rules' per-message images, and the session's history stays
  within the per-session ones.

An image left out leaves a one-line note in the output; the client still gets every image
(the result's display content is not changed here).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.history import FunctionCallOutputItem, HistoryItem
from ..core.image_rules import admit_output_images, tally_history
from .images import MAX_IMAGE_BASE64_ANTHROPIC

__all__ = ["admit_tool_images"]


def admit_tool_images(
    item: FunctionCallOutputItem,
    history: Sequence[HistoryItem],
    *,
    accepts_images: bool,
    model: str,
) -> FunctionCallOutputItem:
    """`item` with the images the model may get, a note in its output for each other one."""
    if not item.images:
        return item
    if not accepts_images:
        count = len(item.images)
        what = "the image" if count == 1 else f"the {count} images"
        note = f"[{what} above not shown: the current model ({model}) does not read images]"
        return item.model_copy(update={"images": None, "output": f"{item.output}\n{note}"})
    notes: list[str] = []
    fitting = []
    for number, image in enumerate(item.images, start=1):
        if len(image.data) > MAX_IMAGE_BASE64_ANTHROPIC:
            notes.append(
                f"[image {number} left out: {len(image.data):,} bytes of base64, more than "
                f"{MAX_IMAGE_BASE64_ANTHROPIC:,}]"
            )
        else:
            fitting.append(image)
    if notes:
        output = "\n".join([item.output, *notes])
        item = item.model_copy(update={"images": fitting or None, "output": output})
    admitted, _ = admit_output_images(item, tally_history(history))
    return admitted
