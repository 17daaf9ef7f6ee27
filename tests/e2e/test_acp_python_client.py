"""ACP conformance with a second, independent client: the Python `acp` SDK's client side.

The real daemon is spawned over stdio (newline-delimited JSON, detected from the first bytes)
with `acp.spawn_agent_process`, and driven with the SDK's typed `ClientSideConnection`. The
assertions use the SDK's pydantic models. Because those models salvage invalid values (an
unknown tool status becomes None, for instance), every raw frame is also checked against ACP's
JSON Schema (`tests/fixtures/acp/schema.json`, the copy of the SDK 2.4.0 `schema/v1/schema.json`)
through the connection's stream observer.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
from acp import PROTOCOL_VERSION, Client, spawn_agent_process, text_block
from acp.client.connection import ClientSideConnection
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    AgentMessageChunk,
    AllowedOutcome,
    ClientCapabilities,
    ConfigOptionUpdate,
    ContentToolCallContent,
    CurrentModeUpdate,
    DeniedOutcome,
    FileEditToolCallContent,
    FileSystemCapabilities,
    Implementation,
    PermissionOption,
    PromptResponse,
    RequestPermissionResponse,
    SessionConfigOptionSelect,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UserMessageChunk,
)

from tests.support.acp_schema import acp_errors
from tests.support.daemon import CodyEnv

pytestmark = pytest.mark.e2e

DAEMON = (sys.executable, "-m", "cody_daemon")
TIMEOUT = 30.0

RESPONSE_DEFS = {
    "initialize": "InitializeResponse",
    "session/new": "NewSessionResponse",
    "session/load": "LoadSessionResponse",
    "session/list": "ListSessionsResponse",
    "session/prompt": "PromptResponse",
    "session/set_mode": "SetSessionModeResponse",
    "session/set_config_option": "SetSessionConfigOptionResponse",
}

PermissionAnswer = Callable[[str, ToolCallUpdate, list[PermissionOption]], Awaitable[Any]]


@dataclass
class Frame:
    direction: str  # "in" (daemon -> client) or "out"
    message: dict[str, Any]


@dataclass
class RecordingClient:
    """The client half: records typed updates and answers permission requests per session."""

    updates: list[tuple[str, Any]] = field(default_factory=list)
    permission_requests: list[tuple[str, ToolCallUpdate, list[PermissionOption]]] = field(
        default_factory=list
    )
    answers: dict[str, PermissionAnswer] = field(default_factory=dict)
    frames: list[Frame] = field(default_factory=list)

    # -- acp.Client ---------------------------------------------------------------------------

    async def request_permission(
        self,
        options: list[PermissionOption],
        session_id: str,
        tool_call: ToolCallUpdate,
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        self.permission_requests.append((session_id, tool_call, options))
        answer = self.answers.get(session_id)
        if answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        outcome = await answer(session_id, tool_call, options)
        return RequestPermissionResponse(outcome=outcome)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))

    # -- raw frames (stream observer) ---------------------------------------------------------

    def observe(self, event: StreamEvent) -> None:
        direction = "in" if event.direction == StreamDirection.INCOMING else "out"
        self.frames.append(Frame(direction, event.message))

    def schema_problems(self) -> list[str]:
        """Every frame Cody sent that fails ACP's JSON Schema (responses matched by id)."""
        sent = {
            f.message["id"]: f.message["method"]
            for f in self.frames
            if f.direction == "out" and "method" in f.message and "id" in f.message
        }
        problems: list[str] = []
        for index, frame in enumerate(self.frames):
            if frame.direction != "in":
                continue
            msg = frame.message
            method = msg.get("method")
            if method == "session/update":
                checks = [("SessionNotification", msg.get("params"))]
            elif method == "session/request_permission":
                checks = [("RequestPermissionRequest", msg.get("params"))]
            elif method == "$/cancel_request":
                checks = [("CancelRequestNotification", msg.get("params"))]
            elif method is None and "result" in msg and sent.get(msg.get("id")) in RESPONSE_DEFS:
                checks = [(RESPONSE_DEFS[sent[msg["id"]]], msg["result"])]
            else:
                checks = []
            for definition, instance in checks:
                for problem in acp_errors(definition, instance):
                    problems.append(
                        f"frame #{index} {method or sent.get(msg.get('id'))}: "
                        f"$defs/{definition}: {problem}\n    {msg}"
                    )
        return problems

    def incoming(self, method: str) -> list[dict[str, Any]]:
        return [
            f.message
            for f in self.frames
            if f.direction == "in" and f.message.get("method") == method
        ]

    def updates_for(self, session_id: str, start: int = 0) -> list[Any]:
        return [u for sid, u in self.updates[start:] if sid == session_id]


@dataclass
class Agent:
    conn: ClientSideConnection
    process: asyncio.subprocess.Process
    client: RecordingClient
    stderr_path: Path

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")[-4000:]


@asynccontextmanager
async def cody_agent(cody_env: CodyEnv, name: str) -> AsyncIterator[Agent]:
    """The real daemon behind the Python SDK's client connection; closes with stdin EOF."""
    client = RecordingClient()
    stderr_path = cody_env.root / f"{name}.stderr"
    with stderr_path.open("wb") as stderr:
        # The SDK routes by attribute: a client without fs/terminal methods answers those
        # requests with -32601, which is right for a client that advertises neither.
        async with spawn_agent_process(
            cast(Client, client),
            DAEMON[0],
            *DAEMON[1:],
            env=cody_env.env,
            cwd=cody_env.workspace,
            transport_kwargs={"stderr": stderr.fileno(), "shutdown_timeout": 10.0},
            observers=[client.observe],
        ) as (conn, process):
            agent = Agent(conn, process, client, stderr_path)
            yield agent
    problems = client.schema_problems()
    assert not problems, "Cody sent messages that fail ACP's schema:\n" + "\n".join(problems)


async def initialize(agent: Agent) -> Any:
    return await asyncio.wait_for(
        agent.conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=False, write_text_file=False),
                terminal=False,
            ),
            client_info=Implementation(name="cody-acp-python-conformance", version="0"),
        ),
        TIMEOUT,
    )


async def new_session(agent: Agent, cwd: Path) -> str:
    response = await asyncio.wait_for(agent.conn.new_session(cwd=str(cwd), mcp_servers=[]), TIMEOUT)
    assert response.session_id
    assert response.modes is not None and response.modes.available_modes
    assert response.config_options
    return response.session_id


@dataclass
class Turn:
    response: PromptResponse
    updates: list[Any]


async def prompt(agent: Agent, session_id: str, text: str) -> Turn:
    start = len(agent.client.updates)
    response = await asyncio.wait_for(
        agent.conn.prompt(session_id=session_id, prompt=[text_block(text)]), TIMEOUT
    )
    return Turn(response, agent.client.updates_for(session_id, start))


@dataclass
class Call:
    start: ToolCallStart
    progress: list[ToolCallProgress] = field(default_factory=list)

    @property
    def final_status(self) -> str | None:
        statuses = [p.status for p in self.progress if p.status is not None]
        return statuses[-1] if statuses else self.start.status

    def text(self) -> str:
        parts: list[str] = []
        for item in [self.start, *self.progress]:
            for content in item.content or []:
                if isinstance(content, ContentToolCallContent) and isinstance(
                    content.content, TextContentBlock
                ):
                    parts.append(content.content.text)
            if item.raw_output is not None:
                parts.append(str(item.raw_output))
        return "\n".join(parts)


def tool_calls(updates: list[Any]) -> dict[str, Call]:
    calls: dict[str, Call] = {}
    for update in updates:
        if isinstance(update, ToolCallStart):
            calls[update.tool_call_id] = Call(update)
        elif isinstance(update, ToolCallProgress):
            assert update.tool_call_id in calls, f"tool_call_update before its tool_call: {update}"
            calls[update.tool_call_id].progress.append(update)
    return calls


def agent_text(updates: list[Any]) -> str:
    return "".join(
        u.content.text
        for u in updates
        if isinstance(u, AgentMessageChunk) and isinstance(u.content, TextContentBlock)
    )


async def eventually(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate() and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.01)


def answer_with(option_id: str) -> PermissionAnswer:
    async def answer(
        session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption]
    ) -> Any:
        return AllowedOutcome(outcome="selected", option_id=option_id)

    return answer


@pytest.fixture
def acp_env(tmp_path: Path) -> CodyEnv:
    cody_env = CodyEnv.create(tmp_path)
    (cody_env.workspace / "hello.txt").write_text("hello from the ACP conformance check\n")
    return cody_env


# -- the flows --------------------------------------------------------------------------------


async def test_initialize_advertises_acp_v1_and_session_capabilities(acp_env: CodyEnv) -> None:
    async with cody_agent(acp_env, "init") as agent:
        init = await initialize(agent)

        assert init.protocol_version == 1
        caps = init.agent_capabilities
        assert caps is not None and caps.load_session is True
        sessions = caps.session_capabilities
        assert sessions is not None
        assert sessions.list is not None
        assert sessions.resume is not None
        assert sessions.close is not None
        assert init.agent_info is not None and init.agent_info.name == "cody"
        assert init.auth_methods, "one auth method per provider"
    assert agent.process.returncode == 0


async def test_list_files_streams_chunks_and_a_completed_tool_call(acp_env: CodyEnv) -> None:
    async with cody_agent(acp_env, "list") as agent:
        await initialize(agent)
        sid = await new_session(agent, acp_env.workspace)

        turn = await prompt(agent, sid, "list files")

        assert turn.response.stop_reason == "end_turn"
        chunks = [u for u in turn.updates if isinstance(u, AgentMessageChunk)]
        assert chunks and all(isinstance(c.content, TextContentBlock) for c in chunks)
        assert "hello.txt" in agent_text(turn.updates)
        # Streamed: the first agent_message_chunk frame precedes the prompt's response frame.
        frames = [f.message for f in agent.client.frames if f.direction == "in"]
        chunk_at = next(
            i
            for i, m in enumerate(frames)
            if m.get("method") == "session/update"
            and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
        )
        response_at = next(
            i for i, m in enumerate(frames) if "result" in m and "stopReason" in m["result"]
        )
        assert chunk_at < response_at
        [call] = tool_calls(turn.updates).values()
        assert call.start.status == "pending"
        assert call.start.kind == "read"
        assert call.final_status == "completed"
        assert "hello.txt" in call.text()


async def test_permission_allow_once_runs_the_command(acp_env: CodyEnv) -> None:
    async with cody_agent(acp_env, "allow") as agent:
        await initialize(agent)
        sid = await new_session(agent, acp_env.workspace)
        agent.client.answers[sid] = answer_with("allow_once")

        # The default policy runs sandboxed commands unasked; this one asks to leave the sandbox.
        turn = await prompt(agent, sid, "run outside echo acp-allowed")

        [(_, request, options)] = agent.client.permission_requests
        assert [(o.option_id, o.kind) for o in options] == [
            ("allow_once", "allow_once"),
            ("allow_always", "allow_always"),
            ("allow_project", "allow_always"),
            ("reject_once", "reject_once"),
            ("reject_always", "reject_always"),
        ]
        assert request.kind == "execute"
        assert request.status == "pending"
        calls = tool_calls(turn.updates)
        assert request.tool_call_id in calls
        call = calls[request.tool_call_id]
        assert call.final_status == "completed"
        assert "acp-allowed" in call.text()
        assert turn.response.stop_reason == "end_turn"


async def test_permission_reject_once_fails_the_call_and_the_turn_goes_on(
    acp_env: CodyEnv,
) -> None:
    target = acp_env.workspace.parent / "x.txt"
    existed_while_asking: list[bool] = []

    async def reject(session_id: str, tool_call: ToolCallUpdate, options: Any) -> Any:
        existed_while_asking.append(target.exists())
        return AllowedOutcome(outcome="selected", option_id="reject_once")

    async with cody_agent(acp_env, "reject") as agent:
        await initialize(agent)
        sid = await new_session(agent, acp_env.workspace)
        agent.client.answers[sid] = reject

        turn = await prompt(agent, sid, "write ../x.txt: hi")  # outside the workspace: it asks

        [(_, request, _)] = agent.client.permission_requests
        assert request.kind == "edit"
        diffs = [c for c in request.content or [] if isinstance(c, FileEditToolCallContent)]
        assert diffs and diffs[0].path.endswith("x.txt") and diffs[0].new_text == "hi"
        assert existed_while_asking == [False]
        assert not target.exists()
        call = tool_calls(turn.updates)[request.tool_call_id]
        assert call.final_status == "failed"
        assert turn.response.stop_reason == "end_turn"
        failed_at = turn.updates.index(call.progress[-1])
        assert agent_text(turn.updates[failed_at + 1 :]), "the model answers after the rejection"


async def test_cancel_while_an_approval_is_pending(acp_env: CodyEnv) -> None:
    asked = asyncio.Event()
    answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    async def hold(session_id: str, tool_call: ToolCallUpdate, options: Any) -> Any:
        asked.set()
        return await answer

    async with cody_agent(acp_env, "cancel") as agent:
        await initialize(agent)
        sid = await new_session(agent, acp_env.workspace)
        agent.client.answers[sid] = hold

        turn_task = asyncio.create_task(prompt(agent, sid, "run outside touch acp-cancelled.txt"))
        await asyncio.wait_for(asked.wait(), TIMEOUT)
        [permission] = agent.client.incoming("session/request_permission")
        await agent.conn.cancel(session_id=sid)

        # The daemon withdraws the pending request on the wire ($/cancel_request, ACP's form
        # under NDJSON). The Python SDK 0.12 does not route that notification itself, so the
        # stream observer is where this client sees it.
        async def withdrawn() -> None:
            while not any(
                m["params"].get("requestId") == permission["id"]
                for m in agent.client.incoming("$/cancel_request")
            ):
                await asyncio.sleep(0.01)

        await asyncio.wait_for(withdrawn(), 10)
        # ACP: after session/cancel the client answers pending permission requests `cancelled`.
        answer.set_result(DeniedOutcome(outcome="cancelled"))
        turn = await turn_task

        assert turn.response.stop_reason == "cancelled"
        call = tool_calls(turn.updates)[permission["params"]["toolCall"]["toolCallId"]]
        assert call.final_status == "failed"
        assert not (acp_env.workspace / "acp-cancelled.txt").exists()


async def test_load_replays_the_history_in_a_fresh_daemon(acp_env: CodyEnv) -> None:
    async with cody_agent(acp_env, "live") as agent:
        await initialize(agent)
        sid = await new_session(agent, acp_env.workspace)
        answers = iter(["allow_once", "reject_once"])

        async def scripted(session_id: str, tool_call: ToolCallUpdate, options: Any) -> Any:
            return AllowedOutcome(outcome="selected", option_id=next(answers))

        agent.client.answers[sid] = scripted
        live: dict[str, str] = {}
        for text in ("list files", "run outside echo acp-allowed", "write ../x.txt: hi"):
            turn = await prompt(agent, sid, text)
            assert turn.response.stop_reason == "end_turn"
            [(call_id, call)] = tool_calls(turn.updates).items()
            live[text] = call_id
    assert agent.process.returncode == 0, agent.stderr()

    async with cody_agent(acp_env, "loaded") as agent:
        await initialize(agent)
        listed = await asyncio.wait_for(
            agent.conn.list_sessions(cwd=str(acp_env.workspace)), TIMEOUT
        )
        assert sid in [s.session_id for s in listed.sessions]

        loaded = await asyncio.wait_for(
            agent.conn.load_session(cwd=str(acp_env.workspace), session_id=sid, mcp_servers=[]),
            TIMEOUT,
        )

        assert loaded is not None and loaded.modes is not None
        updates = agent.client.updates_for(sid)
        user_texts = [
            u.content.text
            for u in updates
            if isinstance(u, UserMessageChunk) and isinstance(u.content, TextContentBlock)
        ]
        assert user_texts == ["list files", "run outside echo acp-allowed", "write ../x.txt: hi"]
        assert any(isinstance(u, AgentMessageChunk) for u in updates)
        replayed = {u.tool_call_id: u for u in updates if isinstance(u, ToolCallStart)}
        assert replayed[live["list files"]].status == "completed"
        assert replayed[live["run outside echo acp-allowed"]].status == "completed"
        assert "acp-allowed" in Call(replayed[live["run outside echo acp-allowed"]]).text()
        assert replayed[live["write ../x.txt: hi"]].status == "failed"
        # Replay comes before the session/load response.
        frames = [f.message for f in agent.client.frames if f.direction == "in"]
        # (available_commands_update follows the response: the client needs the session id.)
        last_update = max(
            i
            for i, m in enumerate(frames)
            if m.get("method") == "session/update"
            and m["params"]["update"]["sessionUpdate"] != "available_commands_update"
        )
        load_response = next(
            i for i, m in enumerate(frames) if "result" in m and "modes" in (m["result"] or {})
        )
        assert last_update < load_response
    assert agent.process.returncode == 0, agent.stderr()


async def test_modes_and_config_options(acp_env: CodyEnv) -> None:
    async with cody_agent(acp_env, "modes") as agent:
        await initialize(agent)
        sid = await new_session(agent, acp_env.workspace)

        await asyncio.wait_for(
            agent.conn.set_session_mode(mode_id="read-only", session_id=sid), TIMEOUT
        )

        # Notifications are handled as tasks of their own: wait until both have landed.
        def mode_updates() -> tuple[bool, bool]:
            updates = agent.client.updates_for(sid)
            return (
                any(
                    isinstance(u, CurrentModeUpdate) and u.current_mode_id == "read-only"
                    for u in updates
                ),
                any(isinstance(u, ConfigOptionUpdate) for u in updates),
            )

        await eventually(lambda: all(mode_updates()))
        assert mode_updates() == (True, True)

        result = await asyncio.wait_for(
            agent.conn.set_config_option(
                config_id="approval_policy", session_id=sid, value="on-request"
            ),
            TIMEOUT,
        )
        policy = next(o for o in result.config_options if o.id == "approval_policy")
        assert isinstance(policy, SessionConfigOptionSelect)
        assert policy.current_value == "on-request"
