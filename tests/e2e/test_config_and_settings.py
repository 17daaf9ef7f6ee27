"""Configuration files, `_meta.cody`, modes and config options through the real daemon."""

from __future__ import annotations

from tests.support.daemon import CodyEnv, Daemon, expect_error
from tests.support.mock_responses import MockResponsesServer, text, tool_call


async def test_an_invalid_config_value_fails_session_new_naming_key_value_and_valid_values(
    cody_env: CodyEnv,
) -> None:
    cody_env.write_config('approval_policy = "sometimes"\n')
    daemon = await Daemon.start(cody_env)
    try:
        result = await daemon.initialize()
        assert result["_meta"]["cody"]["defaultProvider"] == "offline", "the daemon still starts"
        error = await expect_error(daemon.new_session(), -32602)
        [issue] = error.data["errors"]
        assert issue["key"] == "approval_policy"
        assert issue["value"] == "sometimes"
        assert issue["valid"] == ["untrusted", "on-request", "on-failure", "never"]
        assert issue["source"].endswith("config.toml")
        assert "sometimes" in error.message and "on-request" in error.message
    finally:
        await daemon.close()


async def test_unknown_keys_and_toml_errors_are_reported_with_their_file(cody_env: CodyEnv) -> None:
    cody_env.write_config("aproval_policy = 'never'\n")
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        error = await expect_error(daemon.new_session(), -32602)
        assert error.data["errors"][0]["key"] == "aproval_policy"
        assert "approval_policy" in error.data["errors"][0]["valid"]
        cody_env.write_config("model = [unterminated\n")
        error = await expect_error(daemon.new_session(), -32602)
        assert "config.toml" in error.message
        cody_env.write_config("")
        assert await daemon.new_session()
    finally:
        await daemon.close()


async def test_an_untrusted_project_cannot_lift_the_sandbox_but_a_trusted_one_can(
    cody_env: CodyEnv,
) -> None:
    project = cody_env.workspace / ".cody"
    project.mkdir()
    (project / "config.toml").write_text(
        'approval_policy = "never"\nsandbox_mode = "danger-full-access"\nmodel = "offline"\n'
    )
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        result = await daemon.request("session/new", {"cwd": str(cody_env.workspace)})
        values = {o["id"]: o["currentValue"] for o in result["configOptions"]}
        assert values["approval_policy"] == "on-request"
        assert values["sandbox_mode"] == "workspace-write"
        [warning] = result["_meta"]["cody"]["warnings"]
        assert "approval_policy" in warning and "trusted_projects" in warning

        cody_env.write_config(f'trusted_projects = ["{cody_env.workspace}"]\n')
        result = await daemon.request("session/new", {"cwd": str(cody_env.workspace)})
        values = {o["id"]: o["currentValue"] for o in result["configOptions"]}
        assert values["approval_policy"] == "never"
        assert result["modes"]["currentModeId"] == "full-access"
    finally:
        await daemon.close()


async def test_an_untrusted_project_cannot_send_prompts_to_another_provider(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    with (cody_env.cody_home / "config.toml").open("a") as config:
        config.write(
            '[model_providers.paid]\nbase_url = "http://127.0.0.1:9/v1"\n'
            'env_key = "MOCK_API_KEY"\ndefault_model = "expensive"\n'
        )
    project = cody_env.workspace / ".cody"
    project.mkdir()
    (project / "config.toml").write_text('model_provider = "paid"\nmodel = "expensive"\n')
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        result = await daemon.request("session/new", {"cwd": str(cody_env.workspace)})
        [warning] = result["_meta"]["cody"]["warnings"]
        assert "model_provider" in warning and "trusted_projects" in warning
        model.enqueue(text("answered by the user's provider"))
        await daemon.prompt(result["sessionId"], "hi")
        assert model.requests[-1].body["model"] == "mock-model"
    finally:
        await daemon.close()


async def test_meta_overrides_config_and_set_config_option_overrides_meta(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    sid = await daemon.new_session(approvalPolicy="never")
    result = await daemon.request(
        "session/set_config_option",
        {"sessionId": sid, "configId": "approval_policy", "value": "untrusted"},
    )
    values = {o["id"]: o["currentValue"] for o in result["configOptions"]}
    assert values["approval_policy"] == "untrusted"
    updates = daemon.session_updates(sid)
    assert updates[-2]["sessionUpdate"] == "config_option_update"
    assert updates[-1] == {"sessionUpdate": "current_mode_update", "currentModeId": "ask"}

    model.enqueue(tool_call("exec", {"command": "touch x"}, call_id="c1"))
    model.enqueue(text("ok"))
    daemon.answer("allow_once")
    await daemon.prompt(sid, "run touch x")
    assert len(daemon.permission_requests) == 1, "the changed policy applies from the next turn"


async def test_set_mode_applies_the_preset(daemon: Daemon) -> None:
    sid = await daemon.new_session()
    assert await daemon.request("session/set_mode", {"sessionId": sid, "modeId": "read-only"}) == {}
    [options, mode] = daemon.session_updates(sid)[-2:]
    values = {o["id"]: o["currentValue"] for o in options["configOptions"]}
    assert (values["approval_policy"], values["sandbox_mode"]) == ("on-request", "read-only")
    assert mode["currentModeId"] == "read-only"
    error = await expect_error(
        daemon.request("session/set_mode", {"sessionId": sid, "modeId": "yolo"}), -32602
    )
    assert error.data["errors"][0]["valid"] == ["ask", "auto", "read-only", "full-access"]
    assert await daemon.request("session/set_mode", {"sessionId": sid, "modeId": "ask"}) == {}
    values = {o["id"]: o["currentValue"] for o in daemon.session_updates(sid)[-2]["configOptions"]}
    assert (values["approval_policy"], values["sandbox_mode"]) == ("untrusted", "workspace-write")


async def test_custom_is_offered_only_while_current_and_choosing_the_current_mode_succeeds(
    daemon: Daemon,
) -> None:
    result = await daemon.request(
        "session/new",
        {"cwd": str(daemon.env.workspace), "mcpServers": [], "_meta": {"cody": {}}},
    )
    sid = result["sessionId"]
    assert [m["id"] for m in result["modes"]["availableModes"]] == [
        "ask",
        "auto",
        "read-only",
        "full-access",
    ]
    assert await daemon.request("session/set_mode", {"sessionId": sid, "modeId": "auto"}) == {}
    await expect_error(
        daemon.request("session/set_mode", {"sessionId": sid, "modeId": "custom"}), -32602
    )
    result = await daemon.request(
        "session/set_config_option",
        {"sessionId": sid, "configId": "approval_policy", "value": "on-failure"},
    )
    [mode] = [o for o in result["configOptions"] if o["id"] == "mode"]
    assert mode["currentValue"] == "custom"
    assert [o["value"] for o in mode["options"]] == [
        "custom",
        "ask",
        "auto",
        "read-only",
        "full-access",
    ]
    assert await daemon.request("session/set_mode", {"sessionId": sid, "modeId": "custom"}) == {}
    result = await daemon.request(
        "session/set_config_option", {"sessionId": sid, "configId": "mode", "value": "custom"}
    )
    values = {o["id"]: o["currentValue"] for o in result["configOptions"]}
    assert values["approval_policy"] == "on-failure", "choosing the current mode changes nothing"


async def test_invalid_config_option_values_name_the_valid_ones(daemon: Daemon) -> None:
    sid = await daemon.new_session()
    error = await expect_error(
        daemon.request(
            "session/set_config_option",
            {"sessionId": sid, "configId": "sandbox_mode", "value": "wide-open"},
        ),
        -32602,
    )
    assert error.data["errors"][0]["valid"] == [
        "read-only",
        "workspace-write",
        "danger-full-access",
    ]
    error = await expect_error(
        daemon.request(
            "session/set_config_option", {"sessionId": sid, "configId": "colour", "value": "x"}
        ),
        -32602,
    )
    assert "approval_policy" in error.data["errors"][0]["valid"]


async def test_switching_provider_resets_the_model_and_survives_resume(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        sid = await daemon.new_session()
        await daemon.request(
            "session/set_config_option",
            {"sessionId": sid, "configId": "model", "value": "custom-1"},
        )
        result = await daemon.request(
            "session/set_config_option",
            {"sessionId": sid, "configId": "provider", "value": "offline"},
        )
        values = {o["id"]: o["currentValue"] for o in result["configOptions"]}
        assert (values["provider"], values["model"]) == ("offline", "offline")
        result = await daemon.prompt(sid, "list files")
        assert result["stopReason"] == "end_turn"
        assert model.requests == [], "the offline provider answered"
    finally:
        await daemon.close()
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        result = await daemon.request(
            "session/resume", {"sessionId": sid, "cwd": str(cody_env.workspace)}
        )
        values = {o["id"]: o["currentValue"] for o in result["configOptions"]}
        assert values["provider"] == "offline"
    finally:
        await daemon.close()


async def test_initialize_reports_providers_auth_methods_and_extensions(
    offline_daemon: Daemon,
) -> None:
    result = await offline_daemon.initialize()
    assert result["protocolVersion"] == 1
    assert result["agentInfo"]["name"] == "cody"
    assert {m["id"] for m in result["authMethods"]} >= {"openai-api-key", "anthropic-api-key"}
    cody = result["_meta"]["cody"]
    assert cody["defaultProvider"] == "offline"
    assert "_cody/tools/list" in cody["extensions"]
    await expect_error(
        offline_daemon.request("authenticate", {"methodId": "openai-api-key"}), -32000
    )
    assert await offline_daemon.request("authenticate", {"methodId": "offline-api-key"}) == {}


async def test_tools_and_models_lists(offline_daemon: Daemon) -> None:
    tools = (await offline_daemon.request("_cody/tools/list", {}))["tools"]
    by_name = {tool["name"]: tool for tool in tools}
    assert {"exec", "readFile", "writeFile", "listDir"} <= set(by_name)
    assert by_name["exec"]["requiresApproval"] is True
    assert by_name["readFile"]["requiresApproval"] is False
    assert "command" in by_name["exec"]["schema"]["properties"]
    sid = await offline_daemon.new_session(allowedTools=["readFile"])
    tools = (await offline_daemon.request("_cody/tools/list", {"sessionId": sid}))["tools"]
    assert [tool["name"] for tool in tools] == ["readFile"]
    providers = (await offline_daemon.request("_cody/models/list", {}))["providers"]
    offline = next(p for p in providers if p["id"] == "offline")
    assert offline["available"] is True and offline["models"][0]["id"] == "offline"


async def test_fork_copies_history_up_to_a_message(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    sid = await daemon.new_session()
    model.enqueue(text("answer one"))
    await daemon.prompt(sid, "question one")
    model.enqueue(text("answer two"))
    await daemon.prompt(sid, "question two")

    fork = await daemon.request(
        "_cody/session/fork", {"sessionId": sid, "cwd": str(daemon.env.workspace), "atMessage": 0}
    )
    model.enqueue(text("forked"))
    await daemon.prompt(fork["sessionId"], "question three")

    from tests.support.model_inputs import user_texts

    assert user_texts(model.requests[-1]) == ["question one", "question three"]
    assert fork["sessionId"] != sid


async def test_the_default_providers_auth_method_comes_first(offline_daemon: Daemon) -> None:
    """ACP clients such as CodeCompanion authenticate with the first method listed."""
    result = await offline_daemon.initialize()
    first = result["authMethods"][0]["id"]
    assert first == "offline-api-key"
    assert await offline_daemon.request("authenticate", {"methodId": first}) == {}


async def test_a_model_the_provider_does_not_have_is_refused_at_once(
    offline_daemon: Daemon,
) -> None:
    """Regression: `/model ANYTHING` was accepted (the offline model then answered as it)."""
    sid = await offline_daemon.new_session()
    error = await expect_error(
        offline_daemon.request(
            "session/set_config_option",
            {"sessionId": sid, "configId": "model", "value": "gpt-5.5"},
        ),
        -32602,
    )
    assert "'gpt-5.5' is not a model of" in error.message and "offline" in error.message
    assert error.data["errors"][0]["valid"] == ["offline"]

    error = await expect_error(
        offline_daemon.new_session(provider="offline", model="gpt-5.5"), -32602
    )
    assert error.data["errors"][0]["source"] == "_meta.cody"

    # Switching to a provider without credentials fails now, not at the next prompt.
    error = await expect_error(
        offline_daemon.request(
            "session/set_config_option",
            {"sessionId": sid, "configId": "provider", "value": "openai"},
        ),
        -32000,
    )
    assert "OPENAI_API_KEY" in error.message
    options = await offline_daemon.request(
        "session/set_config_option",
        {"sessionId": sid, "configId": "approval_policy", "value": "never"},
    )
    current = {o["id"]: o["currentValue"] for o in options["configOptions"]}
    assert current["provider"] == "offline" and current["model"] == "offline", "nothing changed"


async def test_built_in_providers_take_newer_models_of_their_own_families(
    cody_env: CodyEnv,
) -> None:
    cody_env.env["OPENAI_API_KEY"] = "sk-test-not-real"
    cody_env.env["ANTHROPIC_API_KEY"] = "sk-ant-test-not-real"
    cody_env.write_config('model = "gpt-5.5"\n')
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        assert await daemon.new_session(provider="openai", model="gpt-6-mini")
        assert await daemon.new_session(provider="anthropic", model="claude-opus-5")
        await expect_error(daemon.new_session(provider="openai", model="llama3:8b"), -32602)
        await expect_error(daemon.new_session(provider="anthropic", model="gpt-5.5"), -32602)
    finally:
        await daemon.close()


async def test_a_configured_model_for_a_missing_login_falls_back_to_offline_with_a_warning(
    cody_env: CodyEnv,
) -> None:
    cody_env.write_config('model = "gpt-5.5"\n')
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        result = await daemon.request(
            "session/new", {"cwd": str(cody_env.workspace), "mcpServers": []}
        )
        assert result["_meta"]["cody"]["provider"] == "offline"
        assert result["_meta"]["cody"]["model"] == "offline"
        assert any("gpt-5.5" in w for w in result["_meta"]["cody"]["warnings"])
    finally:
        await daemon.close()


async def test_each_acp_config_category_names_exactly_one_option(offline_daemon: Daemon) -> None:
    """CodeCompanion picks options by category (`session_config_options = {model = ...,
    mode = ...}`; its model picker takes the first `model` option): the ACP categories
    (schema `SessionConfigOptionCategory`) must each name one option, and the right one."""
    daemon = offline_daemon
    result = await daemon.request(
        "session/new", {"cwd": str(daemon.env.workspace), "mcpServers": []}
    )
    options = result["configOptions"]
    by_category: dict[str, list[str]] = {}
    for option in options:
        category = option.get("category")
        if category is not None:
            by_category.setdefault(category, []).append(option["id"])
    acp = {key: value for key, value in by_category.items() if not key.startswith("_")}
    assert acp == {"model": ["model"], "mode": ["mode"], "thought_level": ["reasoning_effort"]}
    mode = next(o for o in options if o["id"] == "mode")
    assert mode["currentValue"] == result["modes"]["currentModeId"] == "auto"
    assert [v["value"] for v in mode["options"]] == [
        m["id"] for m in result["modes"]["availableModes"]
    ]

    sid = result["sessionId"]
    changed = await daemon.request(
        "session/set_config_option", {"sessionId": sid, "configId": "mode", "value": "read-only"}
    )
    values = {o["id"]: o["currentValue"] for o in changed["configOptions"]}
    assert values["mode"] == "read-only"
    assert (values["approval_policy"], values["sandbox_mode"]) == ("on-request", "read-only")
    await daemon.wait_for(
        lambda: any(
            u.get("currentModeId") == "read-only"
            for u in daemon.session_updates(sid, "current_mode_update")
        )
    )
    error = await expect_error(
        daemon.request(
            "session/set_config_option", {"sessionId": sid, "configId": "mode", "value": "custom"}
        ),
        -32602,
    )
    assert "full-access" in error.message, "the error names the valid modes"
