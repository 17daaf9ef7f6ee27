"""`_cody/session/checkpoints`, `_cody/session/checkpointDiff`, `_cody/session/rewind`:
params validated, the engine's checkpoints (engine/checkpoints.py, engine/rewind.py) called,
results dumped. Models and engine modules load on the first such request."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from cody_protocol import methods

from .handlers import parse

if TYPE_CHECKING:
    from cody_protocol.checkpoints import CheckpointInfo

    from ..engine.checkpoints import CheckpointEntry
    from .context import HandlerContext

__all__ = ["checkpoint_handlers"]


def checkpoint_handlers(app: HandlerContext) -> dict[str, Callable[[Any], Awaitable[Any]]]:
    """The checkpoint methods' handlers (registered by rpc/handlers.py)."""

    async def checkpoints(params: Any) -> Any:
        from cody_protocol.checkpoints import CheckpointsParams, CheckpointsResult

        parsed = parse(CheckpointsParams, params)
        session = app.manager.get(parsed.session_id)
        entries = await app.manager.checkpoints.listing(session)
        present = {id(item) for item in session.history}
        return CheckpointsResult(checkpoints=[_info(entry, present) for entry in entries])

    async def checkpoint_diff(params: Any) -> Any:
        from cody_protocol.checkpoints import (
            CheckpointDiffParams,
            CheckpointDiffResult,
            CheckpointFile,
        )

        parsed = parse(CheckpointDiffParams, params)
        session = app.manager.get(parsed.session_id)
        diff, truncated = await app.manager.checkpoints.diff(session, parsed.checkpoint_id)
        entry = session.checkpoints.get(parsed.checkpoint_id)
        files = entry.files if entry is not None else []
        return CheckpointDiffResult(
            checkpoint_id=parsed.checkpoint_id,
            diff=diff,
            truncated=truncated,
            files=[CheckpointFile(path=f.path, change=f.change) for f in files],
        )

    async def rewind(params: Any) -> Any:
        from cody_protocol.checkpoints import (
            RewindFailure,
            RewindParams,
            RewindResult,
            RewindStoppedProcess,
        )

        from ..engine.rewind import rewind as engine_rewind

        parsed = parse(RewindParams, params)
        session = app.manager.get(parsed.session_id)
        outcome = await engine_rewind(
            app.manager.checkpoints,
            session,
            parsed.checkpoint_id,
            parsed.restore,
            force=parsed.force,
        )
        return RewindResult(
            restored=outcome.restored,
            conflicts=outcome.conflicts,
            conversation_at=outcome.conversation_at,
            failed=[RewindFailure(path=path, reason=why) for path, why in outcome.failed],
            redo_checkpoint_id=outcome.redo_checkpoint_id,
            stopped_processes=[
                RewindStoppedProcess(process_id=pid, command=command)
                for pid, command in outcome.stopped_processes
            ],
        )

    return {
        methods.CODY_SESSION_CHECKPOINTS: checkpoints,
        methods.CODY_SESSION_CHECKPOINT_DIFF: checkpoint_diff,
        methods.CODY_SESSION_REWIND: rewind,
    }


def _info(entry: CheckpointEntry, present: set[int]) -> CheckpointInfo:
    from cody_protocol.checkpoints import CheckpointFile, CheckpointInfo, NotCoveredFile

    from ..engine.checkpoints import in_conversation

    return CheckpointInfo(
        checkpoint_id=entry.checkpoint_id,
        prompt=entry.prompt,
        time=entry.time,
        files=[CheckpointFile(path=f.path, change=f.change) for f in entry.files],
        turn=entry.turn,
        reason=entry.reason,
        in_conversation=in_conversation(entry, present),
        restorable=entry.before is not None,
        error=entry.error,
        interrupted=entry.interrupted,
        not_covered=[NotCoveredFile(path=n["path"], why=n["why"]) for n in entry.not_covered],
    )
