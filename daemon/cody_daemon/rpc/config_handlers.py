"""`_cody/config/check`: the configuration checked as `session/new` would check it.

The engine runs `session/new`'s own checks (engine/config_check.py); the error it would have
raised is mapped here exactly as `session/new`'s handler maps it (rpc/errors.py), so a client
shows the same message for both.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from cody_protocol import methods

from .errors import to_rpc_error
from .handlers import parse

if TYPE_CHECKING:
    from .context import HandlerContext

__all__ = ["config_handlers"]


def config_handlers(app: HandlerContext) -> dict[str, Callable[[Any], Awaitable[Any]]]:
    """`_cody/config/check`'s handler (registered by rpc/handlers.py)."""

    async def config_check(params: Any) -> Any:
        from cody_protocol.errors import RpcError as WireError
        from cody_protocol.extensions import ConfigCheckResult, ConfigFileInfo
        from cody_protocol.session import NewSessionParams

        from ..engine.config_check import check_config
        from ..engine.loading import SessionLoader

        parsed = parse(NewSessionParams, params)
        meta = parsed.meta.cody if parsed.meta is not None else None
        check = check_config(SessionLoader(app.deps), parsed.cwd, meta, parsed.mcp_servers)
        error = None
        if check.error is not None:
            rpc = to_rpc_error(check.error)
            error = WireError(code=rpc.code, message=rpc.message, data=rpc.data)
        return ConfigCheckResult(
            ok=error is None,
            files=[
                ConfigFileInfo(
                    path=str(file.path), scope=file.scope, exists=file.exists, trusted=file.trusted
                )
                for file in check.files
            ],
            warnings=check.warnings,
            error=error,
        )

    return {methods.CODY_CONFIG_CHECK: config_check}
