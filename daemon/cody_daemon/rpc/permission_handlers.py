"""`_cody/permissions/list` and `_cody/permissions/remove`: params validated, the engine's
permissions module called (engine/permissions.py); files are read off the event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from cody_protocol import methods

from .handlers import parse

if TYPE_CHECKING:
    from .context import HandlerContext

__all__ = ["permission_handlers"]


def permission_handlers(app: HandlerContext) -> dict[str, Callable[[Any], Awaitable[Any]]]:
    """`_cody/permissions/*`'s handlers (registered by rpc/handlers.py)."""

    async def permissions_list(params: Any) -> Any:
        from cody_protocol.extensions import PermissionsListParams, PermissionsListResult

        from ..engine.permissions import list_permission_rules

        parsed = parse(PermissionsListParams, params)
        rules, warnings = await asyncio.to_thread(list_permission_rules, app.deps, parsed.cwd)
        return PermissionsListResult(rules=rules, warnings=warnings)

    async def permissions_remove(params: Any) -> Any:
        from cody_protocol.extensions import PermissionsRemoveParams, PermissionsRemoveResult

        from ..engine.permissions import remove_permission_rule

        parsed = parse(PermissionsRemoveParams, params)
        removed = await asyncio.to_thread(
            lambda: remove_permission_rule(
                app.deps,
                rule=parsed.rule,
                decision=parsed.decision,
                source=parsed.source,
                project=parsed.project,
            )
        )
        return PermissionsRemoveResult(removed=removed)

    return {
        methods.CODY_PERMISSIONS_LIST: permissions_list,
        methods.CODY_PERMISSIONS_REMOVE: permissions_remove,
    }
