"""Scripting a mock model that serves several sessions at once (subagents, worktrees).

With one FIFO queue, the order of requests from sessions running in parallel decides which
answer each gets. `Routes` instead keeps one queue per *marker*: a request is answered from
the queue of the first marker that appears in its user messages (a child's task prompt, a
session's own prompt). Install it with `routes.install(model)`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from .mock_responses import MockResponsesServer, RecordedRequest
from .model_inputs import user_texts


class Routes:
    def __init__(self, model: MockResponsesServer) -> None:
        self.model = model
        self._queues: dict[str, deque[Any]] = {}
        self.requests: dict[str, list[RecordedRequest]] = {}

    def add(self, marker: str, *outputs: Any, **options: Any) -> None:
        """One scripted answer for the next request that carries `marker`."""
        self._queues.setdefault(marker, deque()).append(self.model.scripted(*outputs, **options))

    def install(self) -> None:
        self.model.responder = self._respond

    def left(self) -> dict[str, int]:
        return {marker: len(queue) for marker, queue in self._queues.items() if queue}

    def _respond(self, request: RecordedRequest) -> Any:
        texts = "\n".join(user_texts(request))
        for marker, queue in self._queues.items():
            if marker in texts:
                self.requests.setdefault(marker, []).append(request)
                if queue:
                    return queue.popleft()
                raise AssertionError(f"no answer left for {marker!r}")
        raise AssertionError(f"no route for a request whose user text is {texts[:200]!r}")


def answered(routes: Routes) -> Callable[[], bool]:
    return lambda: not routes.left()
