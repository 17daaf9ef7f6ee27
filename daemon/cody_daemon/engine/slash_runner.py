"""Running the slash commands the daemon answers itself (see engine/slash.py).

`HANDLERS` has one handler per `local` command: a command without one is an error, never
another command's answer (tests/unit/test_slash_table.py holds the two tables equal).
Each answer is agent text sent to the client, then flushed; the result is an `end_turn`
outcome (`cancelled` for a `/compact` stopped by `session/cancel`) with no model usage (`/compact`'s summary call is counted in the session's usage as
any compaction is). Nothing here enters the model's history.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from cody_protocol.prompt import TokenUsage
from cody_protocol.settings import APPROVAL_POLICIES

from ..core.history import HistoryItem, MessageItem
from ..errors import CodyError, ProviderError
from ..ids import new_id
from .events import AgentText
from .ports import ClientLink
from .replay import replay_events
from .session import Session, TurnOutcome
from .settings import MODES, mode_of
from .slash import CommandCall
from .slash_rewind import rewind_command

if TYPE_CHECKING:
    from .manager import SessionManager

__all__ = ["HANDLERS", "Reply", "answer", "run_local_command"]


@dataclass(frozen=True, slots=True)
class Reply:
    """What a local command answers: agent text, and how the prompt ends."""

    text: str
    stop: str = "end_turn"


LocalHandler = Callable[["SessionManager", Session, str, ClientLink], Awaitable[Reply]]


async def run_local_command(
    manager: SessionManager, session: Session, call: CommandCall, link: ClientLink
) -> TurnOutcome:
    """Run a `local` command (its handler in `HANDLERS`); answer as agent text."""
    name = call.command.name
    handler = HANDLERS.get(name)
    if handler is None:  # never another command in its place (tests/unit/test_slash_table.py)
        raise RuntimeError(f"the slash command /{name} has no handler")
    try:
        reply = await handler(manager, session, call.argument, link)
    except ProviderError:
        raise  # a failed model call is the prompt's error, as for any turn
    except CodyError as exc:
        reply = Reply(f"/{name}: {exc.message}")
    return await answer(session, link, reply)


async def answer(session: Session, link: ClientLink, reply: Reply) -> TurnOutcome:
    """Answer a command with agent text (nothing enters the model's history)."""
    link.emit(session.id, AgentText(reply.text))
    await link.flush(session.id)
    return TurnOutcome(
        stop_reason=reply.stop,
        turn_id=new_id(),
        last=TokenUsage(),
        turn=TokenUsage(),
        total=session.usage_total,
    )


async def _compact_command(
    manager: SessionManager, session: Session, argument: str, link: ClientLink
) -> Reply:
    try:
        return Reply(await _compact(manager, session, link))
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # the request itself was cancelled
        # session/cancel stopped the summary: nothing changed, the prompt answers so
        return Reply("Compaction cancelled; nothing was changed.", "cancelled")


async def _compact(manager: SessionManager, session: Session, link: ClientLink) -> str:
    result = await manager.compact(session.id, link)
    if result is None:
        return "Nothing to compact yet: there are no earlier messages to summarise."
    return (
        f"Compacted: {result.summarized_items} earlier items summarised, {result.kept_items} "
        f"kept; the model now sees about {result.tokens_after:,} tokens (was "
        f"{result.tokens_before:,}). The session file keeps everything."
    )


def _model(manager: SessionManager, session: Session, argument: str, link: ClientLink) -> str:
    catalog = manager.catalog_of(session)
    providers = {spec.id: spec for spec in catalog.all()}
    words = argument.split()
    current = providers.get(session.settings.provider)
    models = [model.id for model in current.models] if current is not None else []
    if len(words) > 2:
        return "/model takes a model, a provider, or a provider and a model."
    if len(words) == 2:
        manager.set_config_option(session.id, "provider", words[0], link)
        manager.set_config_option(session.id, "model", words[1], link)
    elif len(words) == 1:
        word = words[0]
        if word in providers and word not in models:
            manager.set_config_option(session.id, "provider", word, link)
        else:
            manager.set_config_option(session.id, "model", word, link)
    if words:
        settings = session.settings
        return f"Now using {settings.provider}/{settings.model} (from the next turn on)."
    lines = [f"Model: {session.settings.provider}/{session.settings.model}", "", "Providers:"]
    for spec in catalog.all():
        state = "ready" if catalog.credentials(spec) is not None else "no credentials"
        here = "  ← current" if spec.id == session.settings.provider else ""
        lines.append(f"- {spec.id} ({state}){here}")
        for model in spec.models:
            mark = (
                " (current)"
                if spec.id == session.settings.provider and (model.id == session.settings.model)
                else ""
            )
            lines.append(f"    {model.id}{mark}")
    lines += ["", "Switch with /model MODEL, /model PROVIDER or /model PROVIDER MODEL."]
    return "\n".join(lines)


def _approvals(manager: SessionManager, session: Session, argument: str, link: ClientLink) -> str:
    value = argument.strip()
    if value in MODES:
        manager.set_mode(session.id, value, link)
    elif value in APPROVAL_POLICIES:
        manager.set_config_option(session.id, "approval_policy", value, link)
    elif value:
        return (
            f"/approvals: unknown mode or approval policy {value!r}. Modes: "
            f"{', '.join(MODES)}; approval policies: {', '.join(APPROVAL_POLICIES)}."
        )
    settings = session.settings
    lines = [
        f"Mode: {mode_of(settings)} (approval policy {settings.approval_policy}, "
        f"sandbox {settings.sandbox_mode})."
    ]
    if not value:
        lines += ["", "Modes:"]
        lines += [
            f"- {mode_id}: {description}" for mode_id, (_, description, _, _) in MODES.items()
        ]
        lines += [
            "",
            f"Approval policies: {', '.join(APPROVAL_POLICIES)}.",
            "Set with /approvals MODE or /approvals POLICY.",
        ]
    return "\n".join(lines)


async def _fork(
    manager: SessionManager, session: Session, argument: str, link: ClientLink
) -> Reply:
    """The fork is written and closed at once (its lock released): the user opens it from
    the session list, in this daemon or another one."""
    at_message: int | None = None
    if argument:
        try:
            at_message = int(argument)
        except ValueError:
            return Reply("/fork takes a user message number (0 = the first), or nothing for all.")
    if not session.history:
        return Reply("Nothing to fork yet: this session has no conversation.")
    forked = await manager.fork(session.id, str(session.cwd), at_message)
    await manager.close(forked.id)
    upto = "the whole conversation" if at_message is None else f"up to user message {at_message}"
    return Reply(
        f"Forked {upto} into session {forked.id}. This chat goes on in session {session.id}; "
        "open the fork from the session list to continue there."
    )


def _history(manager: SessionManager, session: Session, argument: str, link: ClientLink) -> str:
    items: Sequence[HistoryItem] = session.history
    if argument:
        try:
            turns = int(argument)
        except ValueError:
            return "/history takes a number of turns, or nothing for the whole conversation."
        if turns < 1:
            return "/history takes a number of turns of at least 1."
        items = _last_turns(items, turns)
    count = sum(1 for item in items if _is_user(item))
    if count == 0:
        return "This session has no conversation yet."
    # New ids for what is shown again: ACP ids are unique per session (module docstring of
    # engine/replay.py); a client would otherwise update the calls it showed first.
    for event in replay_events(items, manager.deps.tools, id_suffix=f"~{new_id()}"):
        link.emit(session.id, event)
    shown = "the whole conversation" if not argument else f"the last {count} turn(s)"
    return f"(That was {shown} of session {session.id}.)"


def _is_user(item: HistoryItem) -> bool:
    return isinstance(item, MessageItem) and item.role == "user"


def _last_turns(items: Sequence[HistoryItem], turns: int) -> Sequence[HistoryItem]:
    starts = [index for index, item in enumerate(items) if _is_user(item)]
    if len(starts) <= turns:
        return items
    return items[starts[-turns] :]


async def _rewind_command(
    manager: SessionManager, session: Session, argument: str, link: ClientLink
) -> Reply:
    return Reply(await rewind_command(manager.checkpoints, session, "rewind", argument))


async def _undo_command(
    manager: SessionManager, session: Session, argument: str, link: ClientLink
) -> Reply:
    return Reply(await rewind_command(manager.checkpoints, session, "undo", argument))


def _answering(text_of: Callable[[SessionManager, Session, str, ClientLink], str]) -> LocalHandler:
    """A handler for a command that only computes its answer's text."""

    async def handler(
        manager: SessionManager, session: Session, argument: str, link: ClientLink
    ) -> Reply:
        return Reply(text_of(manager, session, argument, link))

    return handler


HANDLERS: Mapping[str, LocalHandler] = MappingProxyType(
    {
        "compact": _compact_command,
        "model": _answering(_model),
        "approvals": _answering(_approvals),
        "fork": _fork,
        "history": _answering(_history),
        "undo": _undo_command,
        "rewind": _rewind_command,
    }
)
"""One handler per `local` command of engine/slash.py `COMMANDS` (a test holds them equal)."""
