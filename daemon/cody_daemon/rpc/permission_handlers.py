"""`_cody/permissions/list` and `_cody/permissions/remove`: params validated, the engine's
permissions module called (engine/permissions.py); files are read off the event loop."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from cody_protocol import methods
from pygls.server import JsonRPCServer

from .handlers import _guard, parse

if TYPE_CHECKING:
    from ..app import DaemonApp

__all__ = ["PERMISSION_METHODS", "register_permission_handlers"]

PERMISSION_METHODS = (methods.CODY_PERMISSIONS_LIST, methods.CODY_PERMISSIONS_REMOVE)


def register_permission_handlers(server: JsonRPCServer, app: DaemonApp) -> None:
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

    table = {
        methods.CODY_PERMISSIONS_LIST: permissions_list,
        methods.CODY_PERMISSIONS_REMOVE: permissions_remove,
    }
    for name, fn in table.items():
        server.feature(name)(_guard(name, fn))
