"""A native turn from the prompt the user sent to the one the model gets: the hooks that run
first, a custom command or skill expanded, `$skill-name` mentions attached
(docs/extensions.md).

Order: SessionStart hooks (when pending) -> UserPromptSubmit hooks, on the prompt as typed
(a block ends the turn here: nothing ran, nothing is stored) -> the command's file expanded
(its `@path` files attached; its `` !`command` ``s run inside the turn, through the
approvals, before the user's message is written) -> `$skill` mentions -> the turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from cody_protocol.content import ContentBlock

from ..core.history import ImagePart
from .custom_commands import CommandFailed, Invocation, invoke, skill_mentions
from .replay import client_content, prompt_to_text
from .session import TurnOutcome
from .slash import CommandCall
from .turn import TurnRunner
from .turn_hooks import TurnStopped, blocked_answer

__all__ = ["run_native"]


async def run_native(
    runner: TurnRunner,
    blocks: list[ContentBlock],
    command: CommandCall | None,
    images: Sequence[ImagePart],
) -> TurnOutcome:
    try:
        prepared = await _prepare(runner, blocks, command)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()  # session/cancel before the turn began: nothing ran or is stored
        return await runner.answer("", "cancelled")
    except TurnStopped as exc:
        return await runner.answer(f"[The turn was stopped by a hook: {exc.reason}]")
    if isinstance(prepared, TurnOutcome):
        return prepared
    invocation, prompt = prepared
    outcome = await runner.run(
        prompt_to_text(prompt),
        images,
        client_content(prompt),
        shell=invocation.shell,
        model=invocation.model,
    )
    runner.hooks.notify("idle_prompt", "Cody finished the turn and is waiting for your input")
    return outcome


async def _prepare(
    runner: TurnRunner, blocks: list[ContentBlock], command: CommandCall | None
) -> TurnOutcome | tuple[Invocation, list[ContentBlock]]:
    """The hooks before the turn, then the prompt the model gets; an outcome when the turn
    ends here (a blocked prompt, a command that cannot run)."""
    session = runner.session
    typed = prompt_to_text(blocks)
    await runner.hooks.session_start()
    blocked = await runner.hooks.prompt_submitted(typed)
    if blocked is not None:
        return await runner.answer(blocked_answer(blocked).text, "refusal")
    invocation = Invocation(blocks=blocks)
    if command is not None and command.custom is not None:
        try:
            invocation = await asyncio.to_thread(
                invoke, command.custom, command.argument, command.rest, session.cwd
            )
        except CommandFailed as exc:
            return await runner.answer(str(exc))
    elif command is not None:
        invocation = Invocation(blocks=command.turn_prompt())
    prompt = list(invocation.blocks)
    if session.extensions.skills and "$" in typed:
        prompt += await asyncio.to_thread(skill_mentions, typed, session.extensions)
    return invocation, prompt
