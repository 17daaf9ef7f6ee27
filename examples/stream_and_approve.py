"""Iterate a turn's updates with `async for`, and decide approvals in code.

Under the default approval policy what the sandbox contains runs without asking, so both
prompts here ask for more: a command to run outside the sandbox (the offline model's
`run outside`) and a file written outside the workspace. The approval callback lets
read-only commands run and rejects everything else, telling the model why ("User denied
approval: <reason>"); the turn goes on.

    uv run python examples/stream_and_approve.py [DIR]
"""

from __future__ import annotations

import asyncio
import sys

from cody_client import Allow, CodyClient, Decision, Deny
from cody_protocol.permission import RequestPermissionParams
from cody_protocol.updates import AgentMessageChunk, ToolCallStart, ToolCallUpdate

SAFE = ("echo ", "ls", "cat ", "pwd")


async def decide(request: RequestPermissionParams) -> Decision:
    title = request.tool_call.title
    decision: Decision = (
        Allow()
        if title.startswith(SAFE)
        else Deny(message="this script only runs read-only commands")
    )
    print(f"[approval] {title} -> {type(decision).__name__}")
    return decision


async def main(workspace: str) -> None:
    async with CodyClient.spawn() as client:
        client.on_permission = decide
        session = await client.new_session(workspace, provider="offline")
        for prompt in ("run outside echo hello from a script", "write ../notes.txt: not allowed"):
            run = session.prompt(prompt)
            async for update in run:
                if isinstance(update, ToolCallStart):
                    print(f"[tool] {update.title}")
                elif isinstance(update, ToolCallUpdate) and update.status in (
                    "completed",
                    "failed",
                ):
                    print(f"[tool] {update.status}")
                elif isinstance(update, AgentMessageChunk):
                    print(update.content.text, end="")  # type: ignore[union-attr]
            print(f"\n[stop: {run.result.stop_reason}]")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "."))
