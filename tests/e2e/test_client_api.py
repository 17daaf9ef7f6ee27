"""The Python library as a program embedding Cody uses it (issue 24.6 and 24.8), through the
real daemon: a prompt the caller stops waiting for stops in the daemon, typed approval
decisions, one exception class per error kind, and a blocking API as complete as the async
one. Tests about deciding approvals run their sessions in the ask mode (`untrusted`): under
the default a sandboxed command runs without asking."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import AsyncIterator
from pathlib import Path

import cody_client
import pytest
from cody_client import (
    Allow,
    AuthenticationError,
    AuthRequired,
    Cancel,
    ClientSession,
    CodyClient,
    ContextWindowError,
    Deny,
    InvalidDecision,
    InvalidParams,
    NotFound,
    PromptTimeout,
    ProviderAuthError,
    ProviderError,
    RateLimitError,
    RemoteError,
    SessionBusy,
    SyncCodyClient,
    SyncSession,
)
from cody_protocol.history import TextBlock, UnifiedMessage
from cody_protocol.permission import RequestPermissionParams

from tests.support.daemon import CodyEnv
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import tool_outputs

SLOW = "echo started > started.txt; sleep 30; echo landed > landed.txt"


@pytest.fixture
async def client(cody_env: CodyEnv, model: MockResponsesServer) -> AsyncIterator[CodyClient]:
    cody_env.use_mock_provider(model.base_url)
    async with CodyClient.spawn(env=cody_env.env) as running:
        yield running


async def file_appears(path: Path) -> None:
    """Wait until the slow command has really started (it writes `started.txt` first)."""
    for _ in range(1000):
        if path.exists():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{path} never appeared")


async def call_output(session: ClientSession, call_id: str) -> str:
    """What the model was given as the call's result (the session's own record)."""
    for message in await session.history():
        for block in message.content:
            if getattr(block, "tool_use_id", None) == call_id:
                return str(getattr(block, "content", ""))
    raise AssertionError(f"no result for {call_id}")


# -- 24.6: a prompt the caller stops waiting for stops in the daemon ---------------------------


async def test_wait_for_timing_out_cancels_the_turn_and_the_next_prompt_works(
    client: CodyClient, model: MockResponsesServer, cody_env: CodyEnv
) -> None:
    """Issue 24.6: after `wait_for(session.prompt(...), t)` timed out, the command kept
    running, its edits landed, and the next prompt got -32011 (session busy)."""
    model.enqueue(tool_call("exec", {"command": SLOW}, call_id="slow"))
    model.enqueue(text("second turn"))
    session = await client.new_session(str(cody_env.workspace), approval_policy="never")

    waiter = asyncio.ensure_future(asyncio.wait_for(session.prompt("run the slow thing"), 3600))
    await file_appears(cody_env.workspace / "started.txt")
    waiter.cancel()  # what wait_for's timeout does to the awaited prompt
    with pytest.raises(asyncio.CancelledError):
        await waiter
    again = await session.prompt("next")

    assert again.stop_reason == "end_turn", "no -32011: the cancelled turn had ended"
    assert json.loads(await call_output(session, "slow")) == {"error": "cancelled"}
    assert not (cody_env.workspace / "landed.txt").exists()
    assert len(model.requests) == 2, "the cancelled turn made no further model call"


async def test_asyncio_wait_for_itself_cancels_the_turn(
    client: CodyClient, model: MockResponsesServer, cody_env: CodyEnv
) -> None:
    model.enqueue(tool_call("exec", {"command": SLOW}, call_id="slow"))
    model.enqueue(text("second turn"))
    session = await client.new_session(str(cody_env.workspace), approval_policy="never")

    with pytest.raises(TimeoutError):
        await asyncio.wait_for(session.prompt("run the slow thing"), 1.5)

    assert (await session.prompt("next")).stop_reason == "end_turn"
    assert not (cody_env.workspace / "landed.txt").exists()


async def test_prompt_timeout_cancels_the_turn_and_raises_with_the_daemons_answer(
    client: CodyClient, model: MockResponsesServer, cody_env: CodyEnv
) -> None:
    model.enqueue(tool_call("exec", {"command": SLOW}, call_id="slow"))
    model.enqueue(text("second turn"))
    session = await client.new_session(str(cody_env.workspace), approval_policy="never")

    run = session.prompt("run the slow thing", timeout=1.5)
    with pytest.raises(PromptTimeout) as raised:
        await run

    assert isinstance(raised.value, TimeoutError)
    assert raised.value.result is not None and raised.value.result.stop_reason == "cancelled"
    assert run.result.stop_reason == "cancelled"
    assert (await session.prompt("next")).stop_reason == "end_turn"
    assert not (cody_env.workspace / "landed.txt").exists()


async def test_a_cancelled_async_for_cancels_the_turn(
    client: CodyClient, model: MockResponsesServer, cody_env: CodyEnv
) -> None:
    model.enqueue(tool_call("exec", {"command": SLOW}, call_id="slow"))
    model.enqueue(text("second turn"))
    session = await client.new_session(str(cody_env.workspace), approval_policy="never")

    async def iterate() -> None:
        async for _update in session.prompt("run the slow thing"):
            pass

    iterating = asyncio.ensure_future(iterate())
    await file_appears(cody_env.workspace / "started.txt")
    iterating.cancel()
    with pytest.raises(asyncio.CancelledError):
        await iterating

    assert (await session.prompt("next")).stop_reason == "end_turn"
    assert not (cody_env.workspace / "landed.txt").exists()


async def test_run_result_is_the_answer_and_is_never_none(
    client: CodyClient, model: MockResponsesServer, cody_env: CodyEnv
) -> None:
    model.enqueue(text("hi"))
    session = await client.new_session(str(cody_env.workspace))
    run = session.prompt("hello")
    with pytest.raises(RuntimeError, match="has not ended"):
        _ = run.result
    assert not run.done
    result = await run
    assert run.done and run.result is result and result.stop_reason == "end_turn"


# -- 24.8: typed approval decisions -------------------------------------------------------------


async def test_typed_decisions_edit_the_input_and_give_the_model_a_reason(
    client: CodyClient, model: MockResponsesServer, cody_env: CodyEnv
) -> None:
    model.enqueue(
        tool_call("exec", {"command": "echo model > a.txt"}, call_id="edit"),
        tool_call("exec", {"command": "rm -rf build"}, call_id="deny"),
    )
    model.enqueue(text("done"))
    seen: list[str] = []

    async def decide(request: RequestPermissionParams) -> Allow | Deny:
        seen.append(request.tool_call.tool_call_id)
        if request.tool_call.tool_call_id == "edit":
            return Allow(updated_input={"command": "echo user > a.txt"})
        return Deny(message="do not delete build/, it is cached")

    client.on_permission = decide
    session = await client.new_session(str(cody_env.workspace), approval_policy="untrusted")
    result = await session.prompt("go")

    assert result.stop_reason == "end_turn" and seen == ["edit", "deny"]
    assert (cody_env.workspace / "a.txt").read_text() == "user\n"
    outputs = tool_outputs(model.requests[1])
    assert json.loads(outputs["deny"]) == {
        "error": "User denied approval: do not delete build/, it is cached"
    }


@pytest.mark.parametrize("mistake", ["allow-once", "yes", None, True, {"optionId": "allow_once"}])
async def test_a_decision_that_is_not_one_fails_loudly_and_runs_nothing(
    client: CodyClient, model: MockResponsesServer, cody_env: CodyEnv, mistake: object
) -> None:
    """A typo'd option id used to be sent as is, and the daemon counted it as a rejection:
    every call was silently refused. Now the prompt raises InvalidDecision."""
    model.enqueue(tool_call("exec", {"command": "echo ran > ran.txt"}, call_id="c1"))
    model.enqueue(text("ok"))
    model.enqueue(text("and on"))
    model.unused_ok = True  # the cancelled turn never asks for "ok"

    async def decide(request: RequestPermissionParams) -> object:
        return mistake

    client.on_permission = decide  # type: ignore[assignment]
    session = await client.new_session(str(cody_env.workspace), approval_policy="untrusted")
    run = session.prompt("run it")
    with pytest.raises(InvalidDecision, match="Allow\\(\\), Deny\\(\\) or Cancel\\(\\)"):
        await run
    assert run.result.stop_reason == "cancelled"
    assert not (cody_env.workspace / "ran.txt").exists()

    client.on_permission = None  # the session goes on
    assert (await session.prompt("again")).stop_reason == "end_turn"


async def test_cancel_and_bare_option_ids_still_work(
    client: CodyClient, model: MockResponsesServer, cody_env: CodyEnv
) -> None:
    model.enqueue(tool_call("exec", {"command": "echo one > one.txt"}, call_id="c1"))
    model.enqueue(text("ok"))
    model.enqueue(tool_call("exec", {"command": "echo two > two.txt"}, call_id="c2"))
    answers: list[object] = ["allow_once", Cancel()]

    async def decide(request: RequestPermissionParams) -> object:
        return answers.pop(0)

    client.on_permission = decide  # type: ignore[assignment]
    session = await client.new_session(str(cody_env.workspace), approval_policy="untrusted")
    assert (await session.prompt("one")).stop_reason == "end_turn"
    assert (await session.prompt("two")).stop_reason == "cancelled"
    assert (cody_env.workspace / "one.txt").exists()
    assert not (cody_env.workspace / "two.txt").exists()


async def test_allow_project_saves_the_offered_rule_and_a_new_session_runs_it_unasked(
    client: CodyClient, model: MockResponsesServer, cody_env: CodyEnv
) -> None:
    """`Allow(project=True)` answers `allow_project` (issue 23): the rule is saved to the user
    config, listed by `permissions()`, and removed by `remove_permission()`."""
    model.enqueue(tool_call("exec", {"command": "mkdir -p build"}, call_id="c1"))
    model.enqueue(text("ok"))
    model.enqueue(tool_call("exec", {"command": "mkdir -p dist"}, call_id="c2"))
    model.enqueue(text("ok"))
    offered: list[list[str] | None] = []

    async def decide(request: RequestPermissionParams) -> Allow:
        meta = request.meta.cody if request.meta is not None else None
        offered.append(meta.project_rules if meta is not None else None)
        return Allow(project=True)

    client.on_permission = decide
    first = await client.new_session(str(cody_env.workspace), approval_policy="untrusted")
    assert (await first.prompt("build")).stop_reason == "end_turn"
    second = await client.new_session(str(cody_env.workspace), approval_policy="untrusted")
    assert (await second.prompt("dist")).stop_reason == "end_turn"

    assert offered == [["exec(mkdir:*)"]], "the second session's command ran by the saved rule"
    assert (cody_env.workspace / "build").is_dir() and (cody_env.workspace / "dist").is_dir()
    listed = await client.permissions(str(cody_env.workspace))
    [rule] = [info for info in listed.rules if info.rule == "exec(mkdir:*)"]
    assert rule.decision == "allow" and rule.project == str(cody_env.workspace)
    assert await client.remove_permission(rule)
    again = await client.permissions(str(cody_env.workspace))
    assert all(info.rule != "exec(mkdir:*)" for info in again.rules)


async def test_allow_project_where_it_is_not_offered_fails_loudly(
    client: CodyClient, model: MockResponsesServer, cody_env: CodyEnv
) -> None:
    """No rule can be made from a command with a substitution: `Allow(project=True)` then
    raises InvalidDecision and nothing runs."""
    model.enqueue(tool_call("exec", {"command": "touch $(cat name.txt)"}, call_id="c1"))
    model.enqueue(text("ok"))

    async def decide(request: RequestPermissionParams) -> Allow:
        return Allow(project=True)

    client.on_permission = decide
    session = await client.new_session(str(cody_env.workspace), approval_policy="untrusted")
    run = session.prompt("touch it")
    with pytest.raises(InvalidDecision, match="allow_project"):
        await run
    assert run.result.stop_reason == "cancelled"
    model.unused_ok = True  # the turn is cancelled before the model's answer is asked for


# -- 24.8: one exception class per error kind --------------------------------------------------


async def test_errors_arrive_as_the_class_of_their_kind(
    client: CodyClient, model: MockResponsesServer, cody_env: CodyEnv
) -> None:
    session = await client.new_session(str(cody_env.workspace))

    with pytest.raises(InvalidParams) as invalid:
        await client.new_session(str(cody_env.root / "missing"))
    assert invalid.value.issues[0]["key"] == "cwd"

    with pytest.raises(NotFound):
        await client.resume_session("0199aaaa-0000-7000-8000-000000000000", str(cody_env.workspace))

    model.enqueue_error(429, headers={"Retry-After": "0"})
    with pytest.raises(RateLimitError) as limited:
        await session.prompt("one")
    assert limited.value.retryable and limited.value.kind == "rate_limit"

    model.enqueue_error(401)
    with pytest.raises(ProviderAuthError) as refused:
        await session.prompt("two")
    assert isinstance(refused.value, AuthenticationError)
    assert isinstance(refused.value, ProviderError) and refused.value.http_status == 401

    model.enqueue_error(400, message="This model's maximum context length is 8192 tokens.")
    with pytest.raises(ContextWindowError):
        await session.prompt("three")

    model.enqueue(text("a slow answer " * 10, chunks=20), delay_s=0.05)
    streaming = asyncio.Event()
    first = asyncio.ensure_future(session.prompt("four", on_update=lambda _: streaming.set()))
    await streaming.wait()  # the first turn runs
    with pytest.raises(SessionBusy):
        await client.connection.request(
            "session/prompt",
            {"sessionId": session.id, "prompt": [{"type": "text", "text": "five"}]},
        )
    assert (await first).stop_reason == "end_turn"


async def test_missing_credentials_are_an_authentication_error(
    cody_env: CodyEnv,
) -> None:
    async with CodyClient.spawn(env=cody_env.env) as client:
        session = await client.new_session(str(cody_env.workspace), provider="openai")
        with pytest.raises(AuthRequired) as missing:
            await session.prompt("hello")
    assert isinstance(missing.value, AuthenticationError) and isinstance(missing.value, RemoteError)
    assert missing.value.provider == "openai" and missing.value.fix


# -- the public API ------------------------------------------------------------------------------

ASYNC_ONLY = {"spawn", "connect", "aclose", "listen", "initialize"}
"""CodyClient methods with no blocking twin: the `with` block does them (or needs asyncio)."""


def public_methods(cls: type) -> set[str]:
    return {
        name
        for name, value in inspect.getmembers(cls)
        if not name.startswith("_") and (callable(value) or isinstance(value, property))
    }


def test_the_blocking_api_has_every_method_of_the_async_one() -> None:
    session_fields = {"client", "id", "cwd", "config_options", "mode_id", "meta"}
    assert public_methods(ClientSession) | session_fields <= public_methods(SyncSession) | {
        "client"
    }
    assert public_methods(CodyClient) - ASYNC_ONLY <= public_methods(SyncCodyClient)


def test_the_package_exports_the_library() -> None:
    assert cody_client.CodyClient is CodyClient
    exported = set(cody_client.__all__) - {"__version__"}
    assert exported == set(cody_client._EXPORTS), "__all__ and the lazy exports agree"
    for name in exported:
        value = getattr(cody_client, name)
        if isinstance(value, type):
            assert value.__module__.startswith("cody_client."), name


def prompts(history: list[UnifiedMessage]) -> list[str]:
    return [
        block.text
        for message in history
        if message.role == "user"
        for block in message.content
        if isinstance(block, TextBlock)
    ]


def test_a_blocking_prompt_with_a_timeout_stops_its_turn(cody_env: CodyEnv) -> None:
    with MockResponsesServer.in_thread() as model:  # this test's thread blocks
        cody_env.use_mock_provider(model.base_url)
        model.enqueue(tool_call("exec", {"command": SLOW}, call_id="slow"))
        model.enqueue(text("second turn"))
        with SyncCodyClient(env=cody_env.env) as client:
            session = client.new_session(str(cody_env.workspace), approval_policy="never")
            with pytest.raises(PromptTimeout) as raised:
                session.prompt("run the slow thing", timeout=3)
            assert raised.value.result is not None
            assert raised.value.result.stop_reason == "cancelled"
            assert session.prompt("next").stop_reason == "end_turn"
    assert not (cody_env.workspace / "landed.txt").exists()


def test_the_blocking_client_forks_compacts_reads_history_and_closes(
    cody_env: CodyEnv,
) -> None:
    allowed: list[str] = []

    def decide(request: RequestPermissionParams) -> Allow:
        allowed.append(request.tool_call.title)
        return Allow()

    with SyncCodyClient(env=cody_env.env, on_permission=decide) as client:
        session = client.new_session(
            str(cody_env.workspace), provider="offline", approval_policy="untrusted"
        )
        assert session.prompt("write notes.txt: hello").stop_reason == "end_turn"
        assert session.prompt("list files").stop_reason == "end_turn"
        fork = session.fork(at_message=0)
        assert isinstance(fork, SyncSession) and fork.id != session.id
        assert prompts(fork.history()) == ["write notes.txt: hello"]
        compacted = session.compact()
        assert compacted.summarized_items >= 1
        assert prompts(session.history()) == ["write notes.txt: hello", "list files"]
        session.close()
        resumed = client.resume_session(session.id, str(cody_env.workspace))
        assert resumed.prompt("list files").stop_reason == "end_turn"
        assert client.resolve_session_id(session.id[:30]) == session.id
        assert {s.session_id for s in client.list_sessions()} >= {session.id, fork.id}
        assert list(client.history_messages(session.id))
    assert (Path(cody_env.workspace) / "notes.txt").read_text() == "hello"
    assert allowed
