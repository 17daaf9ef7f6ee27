"""Messages that misled a newcomer (issue 24.5), each fixed where it was made.

- `--model gpt-5.5` without a key advised adding the model to the *offline* provider;
- `--provider nosuch` named `_meta.cody`; `/fork 99` named `atMessage`;
- retry lines said `HTTP None`; a stream that never started was "cut off mid-stream";
- a refused connection to a loopback `base_url` (Ollama not started) was retried for a
  minute before the error, which never said that nothing was listening;
- `/model` on a configured provider took any name though its config listed its models;
- `history show/import` refused the id prefixes every other command takes.
"""

from __future__ import annotations

import asyncio
import socket
import sys

from tests.support.daemon import CodyEnv, Daemon, expect_error
from tests.support.mock_responses import MockResponsesServer, text

CLIENT = [sys.executable, "-m", "cody_client"]


async def run_client(
    env: CodyEnv, *args: str, stdin: bytes = b"", extra_env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        *CLIENT,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**env.env, "CODY_DAEMON_SOCKET": "", **(extra_env or {})},
        cwd=env.workspace,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin), 50)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_a_model_without_a_key_says_which_key_not_to_configure_offline(
    cody_env: CodyEnv,
) -> None:
    code, _, err = await run_client(cody_env, "exec", "--model", "gpt-5.5", "hi")
    assert code == 2
    assert "model_providers.offline" not in err
    assert "'gpt-5.5' needs a provider with credentials, and none has any" in err
    assert "gpt-5.5 is a model of OpenAI (openai): set OPENAI_API_KEY" in err

    code, _, err = await run_client(cody_env, "exec", "--model", "llama3", "hi")
    assert code == 2 and "`cody-client doctor` lists them" in err and "(--provider)" in err

    code, _, err = await run_client(
        cody_env, "exec", "--provider", "offline", "--model", "claude-opus-4-7", "hi"
    )
    assert code == 2
    assert "It is a model of Anthropic: choose anthropic (--provider)." in err


async def test_model_in_an_offline_chat_says_which_provider_has_it(cody_env: CodyEnv) -> None:
    code, out, _ = await run_client(cody_env, "--provider", "offline", stdin=b"/model gpt-5.5\n")
    assert code == 0
    assert "model_providers.offline" not in out
    assert (
        "'gpt-5.5' is not a model of the built-in offline demo provider (only `offline` is). "
        "It is a model of OpenAI: choose openai (/model PROVIDER MODEL)."
    ) in out.replace("\n", " ")


async def test_an_unknown_provider_names_the_flag_not_the_protocol(cody_env: CodyEnv) -> None:
    code, _, err = await run_client(cody_env, "exec", "--provider", "nosuch", "hi")
    assert code == 2
    assert 'invalid configuration: --provider "nosuch"; valid values: auto, openai' in err
    assert "_meta" not in err


async def test_fork_out_of_range_names_the_message_number_not_the_param(
    cody_env: CodyEnv,
) -> None:
    code, out, _ = await run_client(
        cody_env, "--provider", "offline", stdin=b"list files\n/fork 99\n"
    )
    assert code == 0
    assert (
        "error: There is no user message 99 to fork at: session " in out  # the chat's /fork
    )
    assert "has 1 user message, numbered 0 to 0." in out
    assert "atMessage" not in out


async def test_fork_out_of_range_in_an_editors_slash_command(offline_daemon: Daemon) -> None:
    sid = await offline_daemon.new_session()
    await offline_daemon.prompt(sid, "list files")
    await offline_daemon.prompt(sid, "/fork 99")
    said = offline_daemon.agent_text(sid)
    assert "/fork: There is no user message 99 to fork at" in said and "atMessage" not in said
    error = await expect_error(
        offline_daemon.request(
            "session/fork",
            {"sessionId": sid, "cwd": str(offline_daemon.env.workspace), "atMessage": 5},
        ),
        -32602,
    )
    assert error.data["errors"][0]["key"] == "atMessage", "the wire data still names the param"


async def test_retry_lines_name_no_missing_status_and_an_empty_stream_is_not_cut_off(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    cody_env.write_config(
        (cody_env.cody_home / "config.toml")
        .read_text()
        .replace("request_max_retries = 0", "request_max_retries = 1")
        + "request_retry_window_ms = 50\n"
    )
    model.enqueue_disconnect()
    model.enqueue(text("after a retry"))
    code, out, err = await run_client(cody_env, "exec", "hi")
    assert code == 0, err
    assert "after a retry" in out
    retry = next(line for line in err.splitlines() if "retrying in" in line)
    assert "attempt 1 failed (network); retrying in" in retry and "None" not in retry

    model.enqueue_events([])
    model.enqueue_events([])
    code, _, err = await run_client(cody_env, "exec", "hi")
    assert code == 5
    assert "cut off" not in err and "mid-stream" not in err
    assert "answered with an event stream that ended before its first event" in err


async def test_a_refused_loopback_connection_fails_at_once_saying_nothing_listens(
    cody_env: CodyEnv,
) -> None:
    """Default retries (4, over at least 60 s) used to run before the error."""
    port = closed_port()
    cody_env.env["LOCAL_KEY"] = "not-a-secret"
    cody_env.write_config(
        'model_provider = "ollama"\n[model_providers.ollama]\n'
        f'base_url = "http://127.0.0.1:{port}/v1"\nwire_api = "chat"\n'
        'env_key = "LOCAL_KEY"\ndefault_model = "llama3"\n'
    )
    code, _, err = await run_client(cody_env, "exec", "hi")
    assert code == 5
    assert f"Nothing is listening at http://127.0.0.1:{port}/v1" in err
    assert "`ollama serve`" in err and "model_providers.ollama.base_url" in err
    assert "retrying" not in err, "a refused local connection is not retried"


async def test_model_on_a_configured_provider_checks_its_models_list_when_it_has_one(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        sid = await daemon.new_session()
        # No `models` list: Cody cannot know the server's models; its server decides.
        await daemon.set_config_option(sid, "model", "whatever-the-server-has")
        cody_env.write_config(
            (cody_env.cody_home / "config.toml").read_text()
            + 'models = ["mock-model", "mock-large"]\n'
        )
        sid = await daemon.new_session()
        await daemon.set_config_option(sid, "model", "mock-large")
        error = await expect_error(daemon.set_config_option(sid, "model", "mock-huge"), -32602)
        assert "'mock-huge' is not a model of Mock" in error.message
        assert error.data["errors"][0]["valid"] == ["mock-model", "mock-large"]
    finally:
        await daemon.close()


async def test_history_show_and_import_take_an_id_prefix(cody_env: CodyEnv) -> None:
    code, _, err = await run_client(cody_env, "exec", "--provider", "offline", "list files")
    assert code == 0, err
    [saved] = cody_env.cody_home.glob("sessions/*/*/*/*.jsonl")
    session_id = saved.stem[-36:]

    code, out, err = await run_client(cody_env, "history", "show", session_id[:8])
    assert code == 0, err
    assert "› list files" in out
    code, out, err = await run_client(cody_env, "history", "import", session_id[:8])
    assert code == 0, err
    assert f"Imported cody session {session_id}" in out

    code, _, err = await run_client(cody_env, "history", "show", "0")  # both sessions match
    assert code == 2 and "2 sessions start with '0'; give more characters." in err
    code, _, err = await run_client(cody_env, "history", "show", "zz")
    assert code == 2 and "No session id starts with 'zz'." in err
