"""Which optional parameters a provider's 400 refuses (providers/refused_params.py), from the
error shapes real servers send, after `http_errors.classify_http_error` made them a
ProviderError (so the message is what the daemon really has: cleaned and cut)."""

from __future__ import annotations

import json

from cody_daemon.providers.http_errors import classify_http_error
from cody_daemon.providers.refused_params import refused_params

from tests.support.mock_responses import litellm_unsupported_params

SENT = ("prompt_cache_key", "parallel_tool_calls", "reasoning.summary")


def refused(status: int, body: object) -> set[str]:
    error = classify_http_error(provider="p", status=status, body=json.dumps(body))
    return refused_params(error, SENT)


def test_litellm_names_its_unsupported_parameters_in_the_message() -> None:
    body = litellm_unsupported_params(
        {"prompt_cache_key": "019a2b3c-0000-7000-8000-000000000000", "parallel_tool_calls": True},
        "claude-sonnet-4-5",
    )
    assert body["error"]["param"] == "None", "LiteLLM's param is no help"
    assert refused(400, body) == {"prompt_cache_key", "parallel_tool_calls"}


def test_a_value_that_looks_like_a_parameter_name_is_not_one() -> None:
    body = litellm_unsupported_params({"prompt_cache_key": "parallel_tool_calls"}, "m")
    assert refused(400, body) == {"prompt_cache_key"}


def test_openai_s_param_field_and_other_servers_words() -> None:
    openai = {"error": {"message": "nope", "type": "x", "param": "reasoning.summary"}}
    assert refused(400, openai) == {"reasoning.summary"}
    assert refused(400, {"detail": "Unsupported parameter: prompt_cache_key"}) == {
        "prompt_cache_key"
    }
    bedrock = {
        "error": {
            "message": 'litellm.BadRequestError: BedrockException - {"message":"The model '
            'returned the following errors: prompt_cache_key: Extra inputs are not permitted"}'
        }
    }
    assert refused(400, bedrock) == {"prompt_cache_key"}


def test_only_a_400_about_a_parameter_that_was_sent_counts() -> None:
    effort = {
        "error": {
            "message": "Unsupported value: 'reasoning.effort' does not support 'xhigh'.",
            "param": "reasoning.effort",
        }
    }
    assert refused(400, effort) == set(), "reasoning.effort is not reasoning.summary"
    assert refused(500, {"detail": "Unsupported parameter: prompt_cache_key"}) == set()
    assert refused(400, {"detail": "Unsupported parameter: temperature"}) == set()
