"""The provider catalog: built-ins, configured providers, credentials and `auto` (real files)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cody_daemon.config.model import CodyConfig
from cody_daemon.errors import InvalidParams
from cody_daemon.providers.catalog import (
    Credentials,
    ProviderCatalog,
    ProviderSpec,
    default_claude_dir,
    default_codex_home,
)

SECRET = "sk-test-SECRET-value-123"


@pytest.fixture
def codex_home(tmp_path: Path) -> Path:
    return tmp_path / "codex"


@pytest.fixture
def claude_dir(tmp_path: Path) -> Path:
    return tmp_path / "claude"


def catalog(
    codex_home: Path,
    claude_dir: Path,
    env: dict[str, str] | None = None,
    config: CodyConfig | None = None,
) -> ProviderCatalog:
    return ProviderCatalog.from_config(
        config or CodyConfig(),
        env=env or {},
        codex_home=codex_home,
        claude_dir=claude_dir,
    )


def write_codex_login(codex_home: Path, access_token: str = SECRET) -> Path:
    codex_home.mkdir(parents=True, exist_ok=True)
    path = codex_home / "auth.json"
    path.write_text(
        json.dumps(
            {
                "OPENAI_API_KEY": None,
                "tokens": {
                    "id_token": "id",
                    "access_token": access_token,
                    "refresh_token": "refresh-SECRET",
                    "account_id": "acct-1",
                },
                "last_refresh": "2025-01-01T00:00:00Z",
            }
        ),
        encoding="utf-8",
    )
    return path


def write_claude_login(claude_dir: Path) -> Path:
    claude_dir.mkdir(parents=True, exist_ok=True)
    path = claude_dir / ".credentials.json"
    path.write_text(
        json.dumps(
            {
                "claudeAiOauth": {
                    "accessToken": SECRET,
                    "refreshToken": "refresh-SECRET",
                    "expiresAt": 1_900_000_000_000,
                }
            }
        ),
        encoding="utf-8",
    )
    return path


# --- built-ins and config -------------------------------------------------------------------


def test_builtins(codex_home: Path, claude_dir: Path) -> None:
    cat = catalog(codex_home, claude_dir)
    assert cat.ids() == ("openai", "anthropic", "openrouter", "offline")
    openai = cat.get("openai")
    assert openai.wire_api == "responses"
    assert openai.base_url == "https://api.openai.com/v1"
    assert openai.env_key == "OPENAI_API_KEY"
    assert openai.default_model == "gpt-5.5"
    assert {"gpt-5.5", "gpt-5.4", "gpt-5.4-mini", "gpt-5.3-codex", "gpt-5.2"} <= set(
        openai.model_ids
    )
    assert openai.context_window("gpt-5.5") == 1_050_000  # from models.toml
    anthropic = cat.get("anthropic")
    assert anthropic.wire_api == "anthropic"
    assert anthropic.default_model == "claude-opus-4-8"
    assert any("sonnet" in m for m in anthropic.model_ids)
    assert any("haiku" in m for m in anthropic.model_ids)
    assert anthropic.context_window("claude-opus-4-8") == 1_000_000
    assert anthropic.context_window("claude-haiku-4-5") == 200_000
    openrouter = cat.get("openrouter")
    assert (openrouter.wire_api, openrouter.default_model) == ("chat", "openai/gpt-5.5")
    offline = cat.get("offline")
    assert (offline.wire_api, offline.base_url, offline.env_key) == ("offline", None, None)
    assert offline.context_window("offline") == 32_768
    for spec in cat.all():
        assert spec.default_model in spec.model_ids


def test_config_overrides_only_given_fields_of_builtin(codex_home: Path, claude_dir: Path) -> None:
    config = CodyConfig.model_validate(
        {
            "model_providers": {
                "openai": {"base_url": "http://127.0.0.1:9999/v1"},
                "anthropic": {"request_max_retries": 1, "stream_idle_timeout_ms": 5000},
            }
        }
    )
    cat = catalog(codex_home, claude_dir, config=config)
    openai = cat.get("openai")
    assert openai.base_url == "http://127.0.0.1:9999/v1"
    assert openai.wire_api == "responses"
    assert openai.default_model == "gpt-5.5"
    anthropic = cat.get("anthropic")
    assert anthropic.wire_api == "anthropic"  # the ProviderConfig default did not clobber it
    assert anthropic.max_retries == 1
    assert anthropic.stream_idle_timeout_s == 5.0


def test_config_adds_a_provider(codex_home: Path, claude_dir: Path) -> None:
    config = CodyConfig.model_validate(
        {
            "model_providers": {
                "ollama": {
                    "name": "Ollama",
                    "base_url": "http://127.0.0.1:11434/v1",
                    "wire_api": "chat",
                    "models": ["qwen3", "llama4"],
                    "headers": {"X-Test": "1"},
                }
            }
        }
    )
    cat = catalog(codex_home, claude_dir, config=config)
    assert cat.ids()[-1] == "ollama"
    spec = cat.get("ollama")
    assert spec.name == "Ollama"
    assert spec.default_model == "qwen3"
    assert spec.model_ids == ("qwen3", "llama4")
    assert spec.headers == {"X-Test": "1"}
    assert spec.context_window("qwen3") is None
    # No env_key: a local server needs no credentials.
    creds = cat.credentials(spec)
    assert creds is not None
    assert creds.kind == "none"


def test_configured_provider_with_env_key(codex_home: Path, claude_dir: Path) -> None:
    config = CodyConfig.model_validate(
        {
            "model_providers": {
                "corp": {
                    "base_url": "https://llm.corp/v1",
                    "env_key": "CORP_KEY",
                    "default_model": "big",
                }
            }
        }
    )
    spec = catalog(codex_home, claude_dir, config=config).get("corp")
    assert catalog(codex_home, claude_dir, config=config).credentials(spec) is None
    creds = catalog(codex_home, claude_dir, {"CORP_KEY": SECRET}, config).credentials(spec)
    assert creds is not None
    assert (creds.kind, creds.source, creds.secret) == ("api_key", "env CORP_KEY", SECRET)


def test_unknown_provider_lists_valid_ids(codex_home: Path, claude_dir: Path) -> None:
    cat = catalog(codex_home, claude_dir)
    with pytest.raises(InvalidParams) as info:
        cat.get("gemini")
    [issue] = info.value.issues
    assert issue.key == "model_provider"
    assert issue.value == "gemini"
    assert issue.valid == ("openai", "anthropic", "openrouter", "offline")
    assert "gemini" in info.value.message
    with pytest.raises(InvalidParams) as info:
        cat.resolve("gemini")
    assert info.value.issues[0].valid == ("auto", "openai", "anthropic", "openrouter", "offline")


# --- credentials and auto -------------------------------------------------------------------


def test_auto_without_credentials_is_offline(codex_home: Path, claude_dir: Path) -> None:
    cat = catalog(codex_home, claude_dir)
    assert cat.resolve_auto().id == "offline"
    assert cat.resolve("auto").id == "offline"
    creds = cat.credentials(cat.get("offline"))
    assert creds is not None
    assert creds.kind == "none"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"OPENROUTER_API_KEY": SECRET}, "openrouter"),
        ({"OPENROUTER_API_KEY": SECRET, "ANTHROPIC_API_KEY": SECRET}, "anthropic"),
        (
            {"OPENROUTER_API_KEY": SECRET, "ANTHROPIC_API_KEY": SECRET, "OPENAI_API_KEY": SECRET},
            "openai",
        ),
        ({"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": "  "}, "offline"),  # blank means unset
    ],
)
def test_auto_order_with_env(
    codex_home: Path, claude_dir: Path, env: dict[str, str], expected: str
) -> None:
    assert catalog(codex_home, claude_dir, env).resolve("auto").id == expected


def test_auto_prefers_chatgpt_login_over_anthropic_key(codex_home: Path, claude_dir: Path) -> None:
    path = write_codex_login(codex_home)
    cat = catalog(codex_home, claude_dir, {"ANTHROPIC_API_KEY": SECRET})
    assert cat.resolve_auto().id == "openai"
    creds = cat.credentials(cat.get("openai"))
    assert creds is not None
    assert creds.kind == "chatgpt"
    assert creds.secret == SECRET
    assert creds.account_id == "acct-1"
    assert creds.refresh_token == "refresh-SECRET"
    assert str(path) in creds.source or creds.source.endswith("auth.json")


def test_env_key_beats_login_file(codex_home: Path, claude_dir: Path) -> None:
    write_codex_login(codex_home, access_token="from-file")
    cat = catalog(codex_home, claude_dir, {"OPENAI_API_KEY": SECRET})
    creds = cat.credentials(cat.get("openai"))
    assert creds is not None
    assert (creds.kind, creds.source) == ("api_key", "env OPENAI_API_KEY")


def test_codex_api_key_in_auth_json(codex_home: Path, claude_dir: Path) -> None:
    codex_home.mkdir()
    (codex_home / "auth.json").write_text(json.dumps({"OPENAI_API_KEY": SECRET}), "utf-8")
    creds = catalog(codex_home, claude_dir).credentials(
        catalog(codex_home, claude_dir).get("openai")
    )
    assert creds is not None
    assert (creds.kind, creds.secret) == ("api_key", SECRET)


def test_malformed_login_file_counts_as_absent(codex_home: Path, claude_dir: Path) -> None:
    codex_home.mkdir()
    (codex_home / "auth.json").write_text("{not json", "utf-8")
    claude_dir.mkdir()
    (claude_dir / ".credentials.json").write_text('{"claudeAiOauth": {}}', "utf-8")
    assert catalog(codex_home, claude_dir).resolve_auto().id == "offline"


def test_a_claude_login_is_never_a_credential(codex_home: Path, claude_dir: Path) -> None:
    """Only Claude Code may use a claude.ai login: the native loop never sends it."""
    write_claude_login(claude_dir)
    cat = catalog(codex_home, claude_dir, {"OPENROUTER_API_KEY": SECRET})
    assert cat.resolve_auto().id == "openrouter"
    assert cat.credentials(cat.get("anthropic")) is None
    assert cat.claude_login_file(cat.get("anthropic")) == str(claude_dir / ".credentials.json")
    assert cat.claude_login_file(cat.get("openai")) is None
    assert "Claude login" not in cat.auth_description(cat.get("anthropic"))


def test_login_file_not_used_when_base_url_is_overridden(
    codex_home: Path, claude_dir: Path
) -> None:
    write_codex_login(codex_home)
    config = CodyConfig.model_validate(
        {"model_providers": {"openai": {"base_url": "http://127.0.0.1:1/v1"}}}
    )
    cat = catalog(codex_home, claude_dir, config=config)
    assert cat.credentials(cat.get("openai")) is None
    assert cat.resolve_auto().id == "offline"


def test_env_key_empty_string_means_no_key_needed(codex_home: Path, claude_dir: Path) -> None:
    config = CodyConfig.model_validate(
        {"model_providers": {"openai": {"base_url": "http://127.0.0.1:1/v1", "env_key": ""}}}
    )
    cat = catalog(codex_home, claude_dir, config=config)
    spec = cat.get("openai")
    assert spec.env_key is None
    creds = cat.credentials(spec)
    assert creds is not None
    assert creds.kind == "none"


def test_default_login_dirs_follow_env(tmp_path: Path) -> None:
    env = {"CODEX_HOME": str(tmp_path / "cx"), "CLAUDE_CONFIG_DIR": str(tmp_path / "cl")}
    assert default_codex_home(env) == tmp_path / "cx"
    assert default_claude_dir(env) == tmp_path / "cl"
    assert default_codex_home({}) == Path("~/.codex").expanduser()
    assert default_claude_dir({}) == Path("~/.claude").expanduser()


def test_from_environment_reads_codex_home(tmp_path: Path) -> None:
    write_codex_login(tmp_path / "cx")
    cat = ProviderCatalog.from_environment(CodyConfig(), {"CODEX_HOME": str(tmp_path / "cx")})
    assert cat.resolve_auto().id == "openai"


# --- messages -------------------------------------------------------------------------------


def test_missing_credentials_fix(codex_home: Path, claude_dir: Path) -> None:
    cat = catalog(codex_home, claude_dir)
    openai_fix = cat.missing_credentials_fix(cat.get("openai"))
    assert openai_fix.startswith("Set OPENAI_API_KEY, or log in with the Codex CLI (codex login)")
    assert "auth.json exists" in openai_fix
    assert openai_fix.endswith(
        "or pick another provider with model_provider / session/set_config_option provider."
    )
    anthropic_fix = cat.missing_credentials_fix(cat.get("anthropic"))
    assert "ANTHROPIC_API_KEY" in anthropic_fix
    assert "the `claude` backend" in anthropic_fix
    assert "OPENROUTER_API_KEY" in cat.missing_credentials_fix(cat.get("openrouter"))
    assert "auth.json" in cat.auth_description(cat.get("openai"))


def test_secrets_never_in_repr_or_str(codex_home: Path, claude_dir: Path) -> None:
    write_codex_login(codex_home)
    write_claude_login(claude_dir)
    config = CodyConfig.model_validate(
        {"model_providers": {"openrouter": {"headers": {"Authorization": f"Bearer {SECRET}"}}}}
    )
    cat = catalog(codex_home, claude_dir, {"OPENROUTER_API_KEY": SECRET}, config)
    shown: list[str] = []
    for spec in cat.all():
        shown += [repr(spec), str(spec), cat.missing_credentials_fix(spec)]
        shown.append(cat.auth_description(spec))
        creds = cat.credentials(spec)
        if spec.id == "anthropic":  # a Claude login is not a credential
            assert creds is None
            continue
        assert creds is not None
        shown += [repr(creds), str(creds), creds.source]
    shown += [repr(config), str(config)]
    for text in shown:
        assert SECRET not in text
        assert "refresh-SECRET" not in text
        assert "acct-1" not in text


def test_credentials_repr_keeps_kind_and_source() -> None:
    creds = Credentials(kind="api_key", source="env OPENAI_API_KEY", secret=SECRET)
    assert "env OPENAI_API_KEY" in repr(creds)
    assert SECRET not in repr(creds)


def test_spec_is_hashable_and_frozen(codex_home: Path, claude_dir: Path) -> None:
    spec: ProviderSpec = catalog(codex_home, claude_dir).get("openai")
    hash(spec)
    with pytest.raises(AttributeError):
        spec.id = "x"  # type: ignore[misc]


def test_a_codex_provider_takes_the_top_level_model_and_codex_keys(
    codex_home: Path, claude_dir: Path
) -> None:
    config = CodyConfig.model_validate(
        {
            "model": "gpt-5.5",
            "model_providers": {
                "gateway": {
                    "base_url": "https://gw.example/v1",
                    "env_key": "GW_KEY",
                    "env_key_instructions": "Create one at gw.example/keys.",
                    "env_http_headers": {"X-Org": "GW_ORG"},
                    "query_params": {"api-version": "1"},
                    "request_max_retries": 2,
                    "stream_max_retries": 7,
                    "request_retry_window_ms": 5_000,
                    "stream_idle_timeout_ms": 9_000,
                }
            },
        }
    )
    spec = catalog(codex_home, claude_dir, config=config).get("gateway")
    assert (spec.default_model, spec.model_ids) == ("gpt-5.5", ("gpt-5.5",))
    assert (spec.max_retries, spec.stream_max_retries) == (2, 7)
    assert (spec.retry_window_s, spec.stream_idle_timeout_s) == (5.0, 9.0)
    assert spec.env_headers == {"X-Org": "GW_ORG"} and spec.query_params == {"api-version": "1"}
    fix = catalog(codex_home, claude_dir, config=config).missing_credentials_fix(spec)
    assert fix.startswith("Set GW_KEY (Create one at gw.example/keys)")
