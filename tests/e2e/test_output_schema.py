"""`cody-client exec --output-schema` through the real daemon on all three wire APIs' mocks
(issue 30): the schema goes out as the API's structured output (Responses `text.format`,
Chat `response_format`) or as a `respond` tool (Anthropic), the validated answer is printed
(and in `turn.completed.output`), and an answer that does not validate twice exits 7."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.e2e.test_cli_json import run_json
from tests.e2e.test_providers import APIS, SERVERS, provider_block
from tests.support.daemon import CodyEnv

CLIENT = [sys.executable, "-m", "cody_client"]
STRICT = {
    "type": "object",
    "properties": {"files": {"type": "integer"}, "summary": {"type": "string"}},
    "required": ["files", "summary"],
    "additionalProperties": False,
}
LOOSE = {"type": "object", "properties": {"files": {"type": "integer", "minimum": 0}}}
ANSWER = {"files": 3, "summary": "three python files"}


@pytest.fixture(params=list(APIS))
async def api(request: pytest.FixtureRequest, cody_env: CodyEnv) -> AsyncIterator[tuple[str, Any]]:
    async with SERVERS[request.param]() as server:
        cody_env.env["MOCK_API_KEY"] = "test-key-not-secret"
        cody_env.write_config(
            f'model_provider = "{request.param}"\n'
            + provider_block(request.param, request.param, server.base_url)
        )
        yield request.param, server
        server.assert_complete()


def answer(name: str, value: Any) -> Any:
    """The scripted final answer: JSON text, or a `respond` call where the API has no
    structured output."""
    module = APIS[name]
    if name == "anthropic":
        return module.tool_call("respond", value, call_id=f"toolu_{abs(hash(str(value)))}")
    return module.text(value if isinstance(value, str) else json.dumps(value), chunks=3)


def write_schema(env: CodyEnv, schema: Any) -> str:
    path = env.root / "schema.json"
    path.write_text(json.dumps(schema))
    return str(path)


async def run_exec(env: CodyEnv, *args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        *CLIENT, "exec", *args,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=env.env, cwd=env.workspace,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def schema_sent(name: str, body: dict[str, Any]) -> Any:
    if name == "responses":
        fmt = body["text"]["format"]
        assert fmt["type"] == "json_schema" and fmt["name"] == "cody_output"
        return fmt
    if name == "chat":
        assert body["response_format"]["type"] == "json_schema"
        return body["response_format"]["json_schema"]
    [respond] = [tool for tool in body["tools"] if tool["name"] == "respond"]
    return {"schema": respond["input_schema"]}


async def test_exec_prints_the_validated_answer_as_json(
    cody_env: CodyEnv, api: tuple[str, Any]
) -> None:
    name, server = api
    server.enqueue(answer(name, ANSWER))

    code, out, err = await run_exec(
        cody_env, "--output-schema", write_schema(cody_env, STRICT), "count the python files"
    )

    assert code == 0, err
    assert out.splitlines() == [json.dumps(ANSWER)], "stdout holds the answer alone"
    sent = schema_sent(name, server.requests[0].body)
    assert sent["schema"] == STRICT
    if name != "anthropic":
        assert sent["strict"] is True, "a schema strict mode takes is sent strict"


async def test_a_loose_schema_is_sent_without_strict_and_the_answer_is_in_turn_completed(
    cody_env: CodyEnv, api: tuple[str, Any]
) -> None:
    name, server = api
    server.enqueue(answer(name, {"files": 7}))

    code, events, err = await run_json(
        cody_env, "--output-schema", write_schema(cody_env, LOOSE), "count"
    )

    assert code == 0, err
    final = events[-1]
    assert final["type"] == "turn.completed" and final["exitCode"] == 0
    assert final["output"]["valid"] is True and final["output"]["value"] == {"files": 7}
    assert final["output"]["via"] == ("tool" if name == "anthropic" else "response_format")
    if name != "anthropic":
        assert schema_sent(name, server.requests[0].body)["strict"] is False
        assert not server.refused, "the mock refuses a loose schema sent strict"


async def test_an_answer_that_fails_once_is_retried_with_its_errors(
    cody_env: CodyEnv, api: tuple[str, Any]
) -> None:
    name, server = api
    server.enqueue(answer(name, {"files": "three"}))
    server.enqueue(answer(name, ANSWER))

    code, out, err = await run_exec(
        cody_env, "--output-schema", write_schema(cody_env, STRICT), "count"
    )

    assert code == 0, err
    assert json.loads(out) == ANSWER
    retry = json.dumps(server.requests[1].body)
    assert "is not of type 'integer'" in retry, "the model saw why its answer failed"
    if name == "anthropic":
        assert server.requests[1].body["tool_choice"] == {"type": "tool", "name": "respond"}


async def test_an_answer_that_does_not_validate_twice_exits_7(
    cody_env: CodyEnv, api: tuple[str, Any]
) -> None:
    name, server = api
    first = "Sure! Here are the files." if name != "anthropic" else {"files": "x"}
    server.enqueue(answer(name, first))
    server.enqueue(answer(name, {"summary": "no count"}))

    code, events, err = await run_json(
        cody_env, "--output-schema", write_schema(cody_env, STRICT), "count"
    )

    assert code == 7, err
    final = events[-1]
    assert final["exitCode"] == 7 and final["stopReason"] == "end_turn"
    assert final["output"]["valid"] is False
    assert any("'files' is a required property" in error for error in final["output"]["errors"])
    assert len(server.requests) == 2, "one retry, no more"


async def test_a_text_answer_on_anthropic_is_followed_by_a_forced_respond_call(
    cody_env: CodyEnv,
) -> None:
    async with SERVERS["anthropic"]() as server:
        cody_env.env["MOCK_API_KEY"] = "test-key-not-secret"
        cody_env.write_config(
            'model_provider = "a"\n' + provider_block("a", "anthropic", server.base_url)
        )
        module = APIS["anthropic"]
        server.enqueue(module.text(json.dumps(ANSWER)))
        server.enqueue(module.tool_call("respond", ANSWER, call_id="toolu_r"))
        code, out, err = await run_exec(
            cody_env, "--output-schema", write_schema(cody_env, STRICT), "count"
        )
    assert code == 0, err
    assert json.loads(out) == ANSWER
    assert "tool_choice" not in server.requests[0].body
    assert server.requests[1].body["tool_choice"] == {"type": "tool", "name": "respond"}


async def test_with_thinking_on_anthropic_the_retry_is_not_forced(cody_env: CodyEnv) -> None:
    """The API refuses a forced tool while thinking is on: the retry asks instead."""
    async with SERVERS["anthropic"]() as server:
        cody_env.env["MOCK_API_KEY"] = "test-key-not-secret"
        cody_env.write_config(
            'model_provider = "a"\nmodel_reasoning_effort = "high"\n'
            + provider_block("a", "anthropic", server.base_url)
        )
        module = APIS["anthropic"]
        server.enqueue(module.text("the answer is three"))
        server.enqueue(module.tool_call("respond", ANSWER, call_id="toolu_r"))
        code, out, err = await run_exec(
            cody_env, "--output-schema", write_schema(cody_env, STRICT), "count"
        )
    assert code == 0, err
    assert "thinking" in server.requests[1].body and "tool_choice" not in server.requests[1].body
    assert not server.refused


async def test_a_schema_that_is_not_json_or_not_a_schema_is_a_usage_error(
    cody_env: CodyEnv, api: tuple[str, Any]
) -> None:
    _, server = api
    bad = cody_env.root / "bad.json"
    bad.write_text("{not json")
    code, _, err = await run_exec(cody_env, "--output-schema", str(bad), "count")
    assert code == 2 and "--output-schema" in err

    code, _, err = await run_exec(
        cody_env, "--output-schema", write_schema(cody_env, {"type": 12}), "count"
    )
    assert code == 2 and "outputSchema" in err
    assert not server.requests, "nothing reached the model"


async def test_the_library_returns_the_validated_answer(cody_env: CodyEnv) -> None:
    from cody_client import CodyClient

    async with SERVERS["responses"]() as server:
        cody_env.env["MOCK_API_KEY"] = "test-key-not-secret"
        cody_env.write_config(
            'model_provider = "r"\n' + provider_block("r", "responses", server.base_url)
        )
        server.enqueue(answer("responses", ANSWER))
        async with CodyClient.spawn(env=cody_env.env) as client:
            session = await client.new_session(str(cody_env.workspace))
            run = session.prompt("count the python files", output_schema=STRICT)
            result = await run
    assert result.stop_reason == "end_turn"
    assert run.output is not None and run.output.valid and run.output.value == ANSWER
    assert run.output.via == "response_format"
