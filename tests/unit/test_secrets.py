"""policy/secrets.py and engine/secrets.py: which variables, files and values are withheld."""

from __future__ import annotations

import json
import os
from pathlib import Path

from cody_daemon.config.model import McpServerConfig, ToolConfig
from cody_daemon.engine.secrets import credential_refusal, redact_result, secret_guard
from cody_daemon.policy.secrets import REDACTED, SecretGuard, SecretSources
from cody_daemon.providers.catalog import builtin_providers
from cody_daemon.tools.base import PathRead, ToolResult
from cody_daemon.tools.exec import child_environment
from cody_protocol.content import ContentToolCallContent, TextContent

KEY = "sk-test-9f8e7d6c5b4a39281706f5e4d3c2b1a0"


def guard(tmp_path: Path, **env: str) -> SecretGuard:
    login = tmp_path / "codex" / "auth.json"
    return SecretGuard(
        env=env,
        sources=SecretSources(env_names=frozenset({"LLM_CREDS"}), login_files=(login,)),
    )


def test_a_configured_env_key_is_withheld_whatever_its_name(tmp_path: Path) -> None:
    g = guard(tmp_path, LLM_CREDS=KEY)
    env = g.child_environment(
        {"LLM_CREDS": KEY, "PATH": "/bin", "GITHUB_TOKEN": "x", "COPY": f"prefix {KEY} suffix"}
    )
    assert env == {"PATH": "/bin"}, "by configuration, by name, and by value"


def test_exec_child_environment_without_a_guard_drops_credential_names() -> None:
    env = child_environment({"OPENAI_API_KEY": "k", "DB_PASSWD": "p", "HOME": "/h"})
    assert env == {"HOME": "/h"}


def test_a_secret_is_redacted_whole_and_in_pieces(tmp_path: Path) -> None:
    g = guard(tmp_path, LLM_CREDS=KEY)
    assert g.redact(f"key={KEY};") == f"key={REDACTED};"
    cut = KEY[:20]  # a secret cut by truncation
    assert g.redact(f"head {cut}\n[... 10 bytes omitted ...]\n{KEY[-12:]} tail") == (
        f"head {REDACTED}\n[... 10 bytes omitted ...]\n{REDACTED} tail"
    )
    assert g.redact("sk-test") == "sk-test", "7 characters are not enough to tell"
    assert g.redact("nothing secret here") == "nothing secret here"


def test_login_files_are_read_for_their_tokens_and_re_read_when_they_change(
    tmp_path: Path,
) -> None:
    login = tmp_path / "codex" / "auth.json"
    login.parent.mkdir()
    g = guard(tmp_path)
    assert g.redact("before eyJfirst-access-token-1") == "before eyJfirst-access-token-1"
    login.write_text(
        json.dumps(
            {
                "auth_mode": "chatgpt",
                "tokens": {"access_token": "eyJfirst-access-token-1", "account_id": "acc-12345"},
                "last_refresh": "2025-01-01T00:00:00Z",
            }
        )
    )
    assert g.redact("eyJfirst-access-token-1 acc-12345") == f"{REDACTED} {REDACTED}"
    assert g.redact("2025-01-01T00:00:00Z chatgpt") == "2025-01-01T00:00:00Z chatgpt"
    login.write_text(json.dumps({"tokens": {"access_token": "eyJsecond-access-token-2"}}))
    os.utime(login, ns=(1, 1))  # a different stamp even within one mtime tick
    assert g.redact("eyJsecond-access-token-2") == REDACTED


def test_a_login_file_is_recognised_through_symlinks_and_hard_links(tmp_path: Path) -> None:
    login = tmp_path / "codex" / "auth.json"
    login.parent.mkdir()
    login.write_text("{}")
    (tmp_path / "link").symlink_to(login)
    os.link(login, tmp_path / "hard")
    (tmp_path / "other").write_text("{}")
    g = guard(tmp_path)
    assert g.is_login_file(login)
    assert g.is_login_file(tmp_path / "link")
    assert g.is_login_file(tmp_path / "hard")
    assert not g.is_login_file(tmp_path / "other")


def test_a_content_search_that_would_reach_a_login_file_is_refused(tmp_path: Path) -> None:
    login = tmp_path / "codex" / "auth.json"
    login.parent.mkdir()
    login.write_text("{}")
    hidden = tmp_path / "home" / ".claude" / ".credentials.json"
    hidden.parent.mkdir(parents=True)
    hidden.write_text("{}")
    g = SecretGuard(sources=SecretSources(login_files=(login, hidden)))
    assert credential_refusal(g, [PathRead(login)]) is not None
    assert credential_refusal(g, [PathRead(tmp_path, contents_below=True)]) is not None
    assert credential_refusal(g, [PathRead(tmp_path)]) is None, "a listing reads names only"
    home = tmp_path / "home"
    assert credential_refusal(g, [PathRead(home, contents_below=True)]) is None, (
        "searches skip hidden entries, so a search of the home directory never reads it"
    )
    assert credential_refusal(g, [PathRead(home / ".claude", contents_below=True)]) is None, (
        "the file itself is hidden too"
    )


def test_the_engine_gathers_every_configured_credential(tmp_path: Path) -> None:
    env = {
        "HOME": str(tmp_path),
        "CODEX_HOME": str(tmp_path / "codex"),
        "OPENAI_API_KEY": "sk-openai-1234567890",
        "SEARCH_CREDS": "search-abcdef-123456",
        "MCP_BEARER": "bearer-abcdef-123456",
        "PLAIN": "not secret at all",
    }
    g = secret_guard(
        env=env,
        providers=builtin_providers(env),
        tool_config={"webSearch": ToolConfig(env_key="SEARCH_CREDS")},
        mcp_config={
            "gh": McpServerConfig(
                command="x",
                env={"GH_PAT": "ghp_0123456789abcdef", "MODE": "production", "CONF": KEY},
            ),
            "web": McpServerConfig(url="http://x", bearer_token_env_var="MCP_BEARER"),
        },
    )
    child = g.child_environment()
    assert set(child) == {"HOME", "CODEX_HOME", "PLAIN"}
    text = "sk-openai-1234567890 search-abcdef-123456 bearer-abcdef-123456 production"
    assert g.redact(text) == f"{REDACTED} {REDACTED} {REDACTED} production"
    assert g.redact(f"ghp_0123456789abcdef {KEY}") == f"{REDACTED} {REDACTED}"


def test_a_tool_result_is_redacted_everywhere_it_goes(tmp_path: Path) -> None:
    g = guard(tmp_path, LLM_CREDS=KEY)
    result = ToolResult(
        output=f"out {KEY}",
        raw_output={"nested": [f"x{KEY}"], "n": 1},
        content=[ContentToolCallContent(content=TextContent(text=f"shown {KEY}"))],
    )
    clean = redact_result(g, result)
    assert KEY[:12] not in repr(clean)
    assert clean.output == f"out {REDACTED}"
    assert clean.raw_output == {"nested": [f"x{REDACTED}"], "n": 1}
