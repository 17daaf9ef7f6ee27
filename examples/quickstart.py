"""Quickstart: one turn on the built-in offline model, printing the streamed reply.

uv run python examples/quickstart.py [DIR]
"""

from __future__ import annotations

import asyncio
import sys

from cody_client import CodyClient
from cody_protocol.updates import AgentMessageChunk


async def main(workspace: str) -> None:
    async with CodyClient.spawn() as client:
        session = await client.new_session(workspace, provider="offline")

        def show(update: object) -> None:
            if isinstance(update, AgentMessageChunk):
                print(update.content.text, end="", flush=True)  # type: ignore[union-attr]

        result = await session.prompt("list files", on_update=show, timeout=120)
        print(f"\n[stop: {result.stop_reason}]")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "."))
