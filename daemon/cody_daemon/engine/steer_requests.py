"""What a client asks of a session while its turn runs: a steered message joins it
(`_cody/session/steer`), a queued prompt that never ran is answered (engine/steering.py holds
the inbox and the queue themselves)."""

from __future__ import annotations

from cody_protocol.content import ContentBlock
from cody_protocol.prompt import TokenUsage

from ..errors import InvalidParams, Issue, NoTurnRunning
from ..ids import new_id
from .images import prompt_images, refuse_audio
from .replay import client_content, prompt_to_text
from .session import Session, TurnOutcome
from .steering import Steer

__all__ = ["dropped_outcome", "join_turn"]


def join_turn(session: Session, blocks: list[ContentBlock], wire_api: str) -> str:
    """Give the running native turn of `session` the message `blocks` (checked as a prompt's
    are); the turn's id. NoTurnRunning when none runs; InvalidParams for a codex/claude
    turn, which cannot take one (queue it instead)."""
    inbox = session.steering
    if inbox is None or inbox.closed:
        if session.busy and session.settings.backend != "native":
            raise InvalidParams(
                f"Session {session.id} runs on the {session.settings.backend} backend, whose "
                "turns cannot take messages while they run; queue it instead (session/prompt "
                "with _meta.cody.queue).",
                [Issue(key="sessionId", message="not a native session", source="params")],
            )
        raise NoTurnRunning(
            f"No turn is running in session {session.id}; send the message with "
            "session/prompt instead."
        )
    refuse_audio(blocks)
    settings = session.settings
    images = prompt_images(
        blocks,
        provider=settings.provider,
        model=settings.model,
        wire_api=wire_api,
        history=session.history,
    )
    inbox.add(Steer(prompt_to_text(blocks), tuple(images), client_content(blocks)))
    return inbox.turn_id


def dropped_outcome(session: Session) -> TurnOutcome:
    """The answer of a queued prompt that never ran (`session/cancel`, the session closed)."""
    return TurnOutcome(
        stop_reason="cancelled",
        turn_id=new_id(),
        last=TokenUsage(),
        turn=TokenUsage(),
        total=session.usage_total,
    )
