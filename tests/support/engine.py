"""The engine in process: a scripted model, a recording client link, a session manager.

A turn here takes milliseconds (no subprocess, no HTTP, no JSON-RPC), so engine behaviour
(tool calls, approvals, slash commands, forks, settings) is tested directly; the e2e tests
(tests/support/daemon.py) prove the wiring around it. The manager is composed as app.py
composes it (`EngineDeps` with the real store and built-in tools), except that every
provider is the `ScriptedModel`.

Scripting is the e2e mock's (tests/support/mock_responses.py): the same `text`,
`tool_call`, `reasoning` outputs and `Usage`, one `enqueue` per expected model call, a
`responder` for the rest, `requests`, `pending` and `assert_complete()`:

    async with EngineHarness(tmp_path) as engine:
        engine.model.enqueue(tool_call("exec", {"command": ["echo", "hi"]}, call_id="c1"))
        engine.model.enqueue(text("done"))
        sid = await engine.new_session()
        outcome = await engine.prompt(sid, "say hi")
        assert engine.agent_text(sid) == "done"
        engine.model.assert_complete()

Leaving the harness without an error fails when a scripted answer was never asked for
(unless `model.unused_ok`). `EngineHarness.config` is config.toml text added to the scripted provider's block (approval
policy, sandbox mode...); approvals are answered by `link.answer(...)` or `link.answer_fn`
(default `allow_once`), as on the e2e `Daemon`.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import deque
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from cody_daemon.config.paths import CodyPaths
from cody_daemon.core.history import FunctionCallOutputItem, ReasoningItem, SummaryPart
from cody_daemon.engine.deps import EngineDeps
from cody_daemon.engine.events import AgentText, EngineEvent, ToolCallOpened, ToolCallProgress
from cody_daemon.engine.manager import SessionManager
from cody_daemon.engine.ports import (
    ApprovalAnswer,
    ApprovalReply,
    ApprovalRequest,
    ClientFileAccess,
    Elicitation,
    ElicitationAnswer,
)
from cody_daemon.engine.session import TurnOutcome
from cody_daemon.errors import ProviderError
from cody_daemon.providers.base import (
    ModelEvent,
    ModelProvider,
    ModelRequest,
    ReasoningDelta,
    ReasoningDone,
    StreamEnd,
    TextDelta,
    ToolCallRequested,
    UsageReport,
)
from cody_daemon.providers.pool import ProviderPool
from cody_daemon.providers.specs import Credentials, ProviderSpec
from cody_daemon.store.store import SessionStore
from cody_daemon.tools.registry import ToolRegistry
from cody_protocol.content import TextContent

from .mock_responses import End, Output, Usage, _split

__all__ = ["EngineHarness", "RecordingLink", "Script", "ScriptedModel", "tool_outputs"]

SCRIPTED_PROVIDER = """\
model_provider = "scripted"
{extra}
[model_providers.scripted]
name = "Scripted"
base_url = "http://127.0.0.1:9/v1"
wire_api = "responses"
env_key = "SCRIPTED_API_KEY"
default_model = "scripted-model"
"""


def tool_outputs(request: ModelRequest) -> dict[str, str]:
    """call_id -> output of every tool result the model was sent (as model_inputs.py reads
    them from an e2e mock's request)."""
    return {
        item.call_id: item.output
        for item in request.history
        if isinstance(item, FunctionCallOutputItem)
    }


class Script:
    """One scripted model call: what `ScriptedModel.stream` yields (or raises)."""

    def __init__(self, events: list[ModelEvent], error: ProviderError | None = None) -> None:
        self.events = events
        self.error = error


def events_of(outputs: tuple[Output, ...], usage: Usage | None, end: End | None) -> list[Any]:
    """The provider events the e2e mock's outputs become once a provider has parsed them."""
    events: list[ModelEvent] = []
    for index, out in enumerate(outputs):
        item_id = out.id or f"item_{index}"
        if out.kind in ("message", "refusal"):
            events += [TextDelta(piece) for piece in _split(out.text, out.chunks)]
        elif out.kind == "reasoning":
            events += [ReasoningDelta(piece) for piece in _split(out.text, out.chunks)]
            summary = [SummaryPart(text=out.text)] if out.text else []
            item = ReasoningItem(id=item_id, summary=summary, encrypted_content=out.encrypted)
            events.append(ReasoningDone(item))
        else:
            events.append(
                ToolCallRequested(
                    call_id=out.call_id or f"call_{item_id}", name=out.name, arguments=out.text
                )
            )
    if usage is not None:
        events.append(
            UsageReport(
                input_tokens=usage.input,
                cached_input_tokens=usage.cached,
                output_tokens=usage.output,
                reasoning_tokens=usage.reasoning,
            )
        )
    end = end or End()
    if end.kind == "failed":
        raise ValueError("script a failure with ScriptedModel.enqueue_error")
    calls = any(isinstance(event, ToolCallRequested) for event in events)
    stop = "max_tokens" if end.kind == "incomplete" else "tool_use" if calls else "end_turn"
    events.append(StreamEnd(stop=stop))  # type: ignore[arg-type]
    return events


class ScriptedModel:
    """A `ModelProvider` that answers each call from a FIFO script (see the module docstring).

    A call with nothing scripted left (and no `responder`) fails as the e2e mock's HTTP 500
    does: a `ProviderError` the turn reports."""

    def __init__(self, provider_id: str = "scripted") -> None:
        self._id = provider_id
        self.requests: list[ModelRequest] = []
        """Every call, in order."""
        self.responder: Callable[[ModelRequest], Script] | None = None
        self.unused_ok = False
        """Scripted answers may be left unused (else `EngineHarness` fails at its end)."""
        self._script: deque[Script] = deque()

    @property
    def id(self) -> str:
        return self._id

    # scripting: the e2e mock's API

    def scripted(
        self, *outputs: Output, usage: Usage | None = None, end: End | None = None
    ) -> Script:
        return Script(events_of(outputs, usage, end))

    def enqueue(self, *outputs: Output, usage: Usage | None = None, end: End | None = None) -> None:
        self._script.append(self.scripted(*outputs, usage=usage, end=end))

    def enqueue_events(self, *events: ModelEvent) -> None:
        """Exactly these provider events (add the `StreamEnd` yourself)."""
        self._script.append(Script(list(events)))

    def enqueue_error(
        self, kind: str = "provider", message: str = "scripted failure", *, retryable: bool = False
    ) -> None:
        error = ProviderError(kind=kind, message=message, provider=self._id, retryable=retryable)  # type: ignore[arg-type]
        self._script.append(Script([], error))

    @property
    def pending(self) -> int:
        """Scripted answers not used yet."""
        return len(self._script)

    def assert_complete(self) -> None:
        """Every scripted answer was asked for (a test that scripts more than the code asks
        for is testing less than it says)."""
        assert not self._script, (
            f"{len(self._script)} scripted answer(s) never asked for "
            f"({len(self.requests)} model call(s) made)"
        )

    # the provider

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        self.requests.append(request)
        script = self._script.popleft() if self._script else None
        if script is None and self.responder is not None:
            script = self.responder(request)
        if script is None:
            raise ProviderError(
                kind="provider", message="scripted model: no answer left", provider=self._id
            )
        if script.error is not None:
            raise script.error
        for event in script.events:
            await asyncio.sleep(0)  # a real stream yields to the loop between events
            yield event

    async def aclose(self) -> None:
        return None


class _ScriptedPool(ProviderPool):
    """Every provider (whatever its spec) is the one scripted model."""

    def __init__(self, model: ScriptedModel) -> None:
        super().__init__(env={})
        self.model = model

    def get(self, spec: ProviderSpec, credentials: Credentials | None) -> ModelProvider:
        return self.model

    async def aclose(self) -> None:
        return None


class RecordingLink:
    """A `ClientLink` that records every event and answers approvals like the e2e `Daemon`:
    queued answers (`answer`), else `answer_fn`, else `allow_once`."""

    def __init__(self) -> None:
        self.events: list[tuple[str, EngineEvent]] = []
        self.approvals: list[tuple[str, ApprovalRequest]] = []
        self.elicitations: list[tuple[str, Elicitation]] = []
        """MCP elicitations forwarded to the client (each is declined)."""
        self.answer_fn: Callable[[ApprovalRequest], ApprovalAnswer] | None = None
        self._answers: list[ApprovalAnswer] = []

    def answer(self, *answers: ApprovalAnswer) -> None:
        self._answers.extend(answers)

    def of(self, session_id: str) -> list[EngineEvent]:
        return [event for sid, event in self.events if sid == session_id]

    # the port (engine/ports.py)

    def emit(self, session_id: str, event: EngineEvent) -> None:
        self.events.append((session_id, event))

    async def wait_writable(self) -> None:
        return None

    async def flush(self, session_id: str) -> None:
        return None

    async def request_approval(self, session_id: str, request: ApprovalRequest) -> ApprovalReply:
        self.approvals.append((session_id, request))
        if self._answers:
            return ApprovalReply(self._answers.pop(0))
        return ApprovalReply(
            self.answer_fn(request) if self.answer_fn is not None else "allow_once"
        )

    async def request_elicitation(self, session_id: str, request: Elicitation) -> ElicitationAnswer:
        self.elicitations.append((session_id, request))
        return ElicitationAnswer("decline")

    def file_access(self) -> ClientFileAccess:
        return ClientFileAccess()  # the disk is used

    async def read_text_file(self, session_id: str, path: str) -> str:
        raise AssertionError("this link serves no editor files")

    async def write_text_file(self, session_id: str, path: str, content: str) -> None:
        raise AssertionError("this link serves no editor files")


class EngineHarness:
    """A `SessionManager` on temp dirs, a `ScriptedModel` and a `RecordingLink` (module
    docstring). Use as an async context manager: leaving it shuts the manager down."""

    def __init__(self, root: Path, *, config: str = "", tools: ToolRegistry | None = None) -> None:
        self.root = root
        self.workspace = root / "workspace"
        home = root / "cody-home"
        for path in (self.workspace, home, root / "home"):
            path.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text(SCRIPTED_PROVIDER.format(extra=config), encoding="utf-8")
        self.paths = CodyPaths.under(home, home)
        self.model = ScriptedModel()
        self.link = RecordingLink()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(root / "home"),
            "CODY_HOME": str(home),
            "SCRIPTED_API_KEY": "scripted-key-not-secret",
        }
        self.deps = EngineDeps(
            paths=self.paths,
            store=SessionStore(self.paths.sessions_dir),
            tools=tools if tools is not None else ToolRegistry.builtin(),
            providers=_ScriptedPool(self.model),
            env=env,
            codex_home=root / "codex-home",
            claude_dir=root / "claude-config",
            version="0.0.0-test",
        )
        self.manager = SessionManager(self.deps)
        self.manager.link = self.link

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self.manager.shutdown()
        if error is None and not self.model.unused_ok:
            self.model.assert_complete()

    async def new_session(self, cwd: Path | None = None) -> str:
        session = await self.manager.new_session(str(cwd or self.workspace), None)
        return session.id

    async def prompt(self, session_id: str, text: str) -> TurnOutcome:
        return await self.manager.prompt(session_id, [TextContent(text=text)], self.link)

    # what the client saw

    def agent_text(self, session_id: str) -> str:
        return "".join(e.text for e in self.link.of(session_id) if isinstance(e, AgentText))

    def tool_calls(self, session_id: str) -> list[ToolCallOpened]:
        return [e for e in self.link.of(session_id) if isinstance(e, ToolCallOpened)]

    def final_status(self, session_id: str, call_id: str) -> str | None:
        """The last status the client saw for a tool call."""
        status = None
        for event in self.link.of(session_id):
            if isinstance(event, ToolCallProgress) and event.call_id == call_id and event.status:
                status = event.status
        return status

    def tool_output(self, session_id: str, call_id: str) -> Any:
        """What the model got back for a call (the `function_call_output` it was sent)."""
        session = self.manager.get(session_id)
        for item in session.history:
            if isinstance(item, FunctionCallOutputItem) and item.call_id == call_id:
                try:
                    return json.loads(item.output)
                except ValueError:
                    return item.output
        raise AssertionError(f"no output for call {call_id}")
