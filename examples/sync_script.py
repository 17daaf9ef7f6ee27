"""The blocking wrapper, for scripts that don't use asyncio.

uv run python examples/sync_script.py [DIR]
"""

from __future__ import annotations

import sys

from cody_client import Allow, SyncCodyClient


def main(workspace: str) -> None:
    with SyncCodyClient(on_permission=lambda request: Allow()) as client:
        session = client.new_session(workspace, provider="offline")
        result = session.prompt("run echo hello from the sync client")
        print(f"stop: {result.stop_reason}")
        usage = result.meta.cody.usage if result.meta else None
        if usage is not None:
            print(f"tokens this turn: {usage.turn.total_tokens}")
        print(f"saved sessions: {len(client.list_sessions())}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
