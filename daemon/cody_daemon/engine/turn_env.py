"""What a native turn runs with (`TurnEnv`): the provider, the tools and what the model
is offered of them, the sandbox, the secrets, the price and the turn's optional parts
(final answer, checkpoint, language servers). Built per prompt by engine/turn_setup.py.

Invariant: `offer` is asked before every model call, so a tool that became able (or unable)
to work during a turn is offered (or left out) from the next call on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..policy.sandbox import SandboxPolicy
from ..policy.secrets import SecretGuard
from ..providers.base import ModelProvider
from ..providers.pricing import Price
from ..tools.base import Tool
from ..tools.registry import ToolRegistry
from .checkpoints import TurnCheckpoint
from .final_answer import FinalAnswer
from .instructions import PromptFamily
from .ports import ClientLink, CodeServers
from .session import Session

__all__ = ["TurnEnv"]


@dataclass(kw_only=True)
class TurnEnv:
    provider: ModelProvider
    context_window: int
    tools: ToolRegistry
    """The session's tools, those that cannot work here included (`offer` leaves them out);
    the MCP tools are added before each model call (`extra_tools`)."""
    allowed: frozenset[str] | None
    link: ClientLink
    sandbox: SandboxPolicy
    env: Mapping[str, str] = field(default_factory=dict)
    accepts_images: bool = True
    """False for a model known to read text only: earlier images are sent as a note."""
    price: Price | None = None
    """The model's price, only when its calls are billed per token (else no cost is shown)."""
    extra_tools: Callable[[], Awaitable[Sequence[Tool[Any]]]] | None = None
    """The session's MCP tools, awaited before each model call (servers still starting are
    waited for briefly, then join a later call: tools/mcp/manager.py)."""
    secrets: SecretGuard = field(default_factory=SecretGuard)
    """What tools must not pass on; every tool result is redacted with it (engine/secrets.py)."""
    rules_file: Path | None = None
    """The user config, where `allow_project` saves rules (None: the option is not offered)."""
    refresh_rules: Callable[[], Awaitable[None]] | None = None
    """Re-reads the session's permission rules (after `allow_project` saved one)."""
    family: PromptFamily = "open"
    """Which system-prompt overlay the model gets (engine/instructions.py)."""
    final_answer: FinalAnswer | None = None
    """The output schema the final answer must validate against (engine/final_answer.py)."""
    code: CodeServers | None = None
    """The language servers: diagnostics after edits (engine/diagnostics.py)."""
    checkpoint: TurnCheckpoint | None = None
    """The turn's checkpoint of the workspace (engine/checkpoints.py); None: none is taken."""
    model_problem: Callable[[str], str | None] | None = None
    """Why a model is not one of the provider's (None: it is); for a command's `model`."""

    def offer(self, session: Session) -> tuple[ToolRegistry, dict[str, str]]:
        """The tools the model is offered now, and why the others of `tools` are not
        (`Tool.unavailable`: no key, turned off, no language server running yet). Asked
        before each model call: a tool can become able to work during a turn."""
        tool_config = session.settings.tool_config
        absent = self.tools.absent(self.env, tool_config, session.id)
        offered = ToolRegistry(tool for tool in self.tools.tools() if tool.name not in absent)
        return offered, absent
