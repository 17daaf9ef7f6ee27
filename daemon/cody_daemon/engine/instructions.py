"""The system prompt Cody sends with every model call, and the request every call starts from.

The system prompt is `prompts/system.md` plus one small overlay for the model's family
(`prompts/family_*.md`): OpenAI's reasoning models, Claude, and open models on Chat
Completions. It holds nothing that depends on the session (no path, date or setting), so it
is byte-identical for every session of a family and the providers' prompt caches keep it.
What depends on the session goes in context items (engine/context_items.py): the project
instructions, the environment and the permissions.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

from ..providers.base import ModelRequest
from ..tools.registry import ToolRegistry
from .prompt_files import prompt

if TYPE_CHECKING:
    from .session import Session

__all__ = ["FAMILIES", "PromptFamily", "base_request", "build_instructions", "prompt_family"]

PromptFamily = Literal["openai", "claude", "open"]
FAMILIES: tuple[PromptFamily, ...] = ("openai", "claude", "open")

_OPENAI_MODEL = re.compile(r"(^|/)(gpt-|o\d|codex)")


def prompt_family(wire_api: str, model: str) -> PromptFamily:
    """Which overlay a model gets: Claude by name (on any wire API, OpenRouter's
    `anthropic/claude-...` included); OpenAI's models on the Responses API or by name;
    every other model (Chat Completions, local servers, the offline demo) is `open`."""
    name = model.lower()
    if wire_api == "anthropic" or "claude" in name:
        return "claude"
    if wire_api == "responses" or _OPENAI_MODEL.search(name):
        return "openai"
    return "open"


def build_instructions(family: PromptFamily) -> str:
    return f"{prompt('system')}\n\n{prompt(f'family_{family}')}"


def base_request(
    session: Session,
    registry: ToolRegistry,
    allowed: frozenset[str] | None,
    family: PromptFamily,
) -> ModelRequest:
    """A model call of `session` with its instructions, tools and settings, and no history
    yet (turns and compaction fill it in): both use the same prefix, so it stays cached.
    `registry` holds the tools the session offers (engine: `ToolRegistry.offered`)."""
    settings = session.settings
    tools = registry.tools(allowed)
    return ModelRequest(
        model=settings.model,
        instructions=build_instructions(family),
        history=[],
        tools=[tool.spec() for tool in tools],
        session_id=session.id,
        reasoning_effort=settings.reasoning_effort,
        reasoning_summary=settings.reasoning_summary,
    )
