"""What an MCP server may ask of Cody during a session: its roots (`roots/list`), the user
(`elicitation/create`), and a place for its log (`notifications/message`).

One `ClientFeatures` per server connection; the SDK client calls its methods (connection.py
hands them to `transport.make_client`). Invariants:

- roots are the session's (`McpClientHooks.roots`), as `file://` URIs; what was last sent is
  remembered, so `roots/list_changed` goes only to a server that was told something else;
- an elicitation is forwarded through `McpClientHooks.elicit` (declined without one), tagged
  with the session's tool call when exactly one call of this server is in flight; while one
  is open `eliciting` counts it, and `user_wait_s` sums the time spent waiting, so a call's
  own deadline can leave it out (requests.py);
- log messages go to the daemon's log (server_log.py).

This module imports the `mcp` SDK's types only inside functions.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from .hooks import Elicitation, McpClientHooks
from .server_log import McpLevel, ServerLog
from .specs import McpServerSpec

if TYPE_CHECKING:
    from mcp.client.session import ClientRequestContext
    from mcp_types import (
        ElicitRequestParams,
        ElicitResult,
        ErrorData,
        ListRootsResult,
        LoggingMessageNotificationParams,
    )

__all__ = ["ClientFeatures"]


class ClientFeatures:
    def __init__(self, spec: McpServerSpec, hooks: McpClientHooks) -> None:
        self._server = spec.name
        self._hooks = hooks
        self._log = ServerLog(spec)
        self.calls: list[str | None] = []
        """The session's tool call ids of this server's calls in flight."""
        self.eliciting = 0
        self.user_wait_s = 0.0
        self.roots_sent: tuple[str, ...] | None = None

    def log_level(self) -> McpLevel:
        return self._log.mcp_level()

    async def log(self, params: LoggingMessageNotificationParams) -> None:
        self._log.write(params.level, params.logger, params.data)

    async def list_roots(self, context: ClientRequestContext) -> ListRootsResult:
        import mcp_types

        paths = list(self._hooks.roots())
        self.roots_sent = tuple(str(path) for path in paths)
        roots = [
            mcp_types.Root.model_validate({"uri": path.as_uri(), "name": path.name or str(path)})
            for path in paths
        ]
        return mcp_types.ListRootsResult(roots=roots)

    def roots_differ(self, roots: tuple[str, ...]) -> bool:
        """Whether a server that was told its roots must hear they are now `roots`."""
        if self.roots_sent is None or self.roots_sent == roots:
            return False
        self.roots_sent = roots
        return True

    async def elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        import mcp_types

        if self._hooks.elicit is None:
            return mcp_types.ElicitResult(action="decline")
        calls = [call for call in self.calls if call is not None]
        call_id = calls[0] if len(calls) == 1 else None
        if isinstance(params, mcp_types.ElicitRequestURLParams):
            request = Elicitation(
                server=self._server,
                mode="url",
                message=params.message,
                url=params.url,
                elicitation_id=params.elicitation_id,
                call_id=call_id,
            )
        else:
            request = Elicitation(
                server=self._server,
                mode="form",
                message=params.message,
                requested_schema=dict(params.requested_schema),
                call_id=call_id,
            )
        self.eliciting += 1
        started = time.monotonic()
        try:
            answer = await self._hooks.elicit(request)
        finally:
            self.eliciting -= 1
            self.user_wait_s += time.monotonic() - started
        return mcp_types.ElicitResult(action=answer.action, content=answer.content)
