"""The providers `initialize` lists stay right across restarts while the daemon keeps a listing
of the config it validated (providers/listing.py): an edit, an exported key, a moved base URL,
a damaged or unwritable cache are all seen at the next start, and no secret is kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.daemon import CodyEnv, Daemon

CACHE = Path("cache") / "providers.json"

LOCAL = (
    'model_provider = "local"\n'
    "[model_providers.local]\n"
    'name = "Local"\n'
    'base_url = "http://127.0.0.1:9/v1"\n'
    'default_model = "small"\n'
    'env_key = "LOCAL_KEY"\n'
    'http_headers = { "X-Api-Token" = "header-secret-4711" }\n'
)


async def start_and_initialize(cody_env: CodyEnv) -> dict[str, Any]:
    daemon = await Daemon.start(cody_env)
    try:
        result: dict[str, Any] = await daemon.initialize()
    finally:
        await daemon.close()
    return result


def providers(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["id"]: p for p in result["_meta"]["cody"]["providers"]}


def default_provider(result: dict[str, Any]) -> str:
    return str(result["_meta"]["cody"]["defaultProvider"])


async def test_an_edited_config_is_listed_at_the_next_start(tmp_path: Path) -> None:
    cody_env = CodyEnv.create(tmp_path)
    cody_env.write_config(LOCAL)
    first = await start_and_initialize(cody_env)
    assert providers(first)["local"]["name"] == "Local"
    assert (cody_env.cody_home / CACHE).is_file()

    cody_env.write_config(LOCAL.replace('name = "Local"', 'name = "Renamed"') + "\n")
    second = await start_and_initialize(cody_env)
    assert providers(second)["local"]["name"] == "Renamed"

    cody_env.write_config("")
    third = await start_and_initialize(cody_env)
    assert "local" not in providers(third)
    assert default_provider(third) == "offline"


async def test_credentials_are_looked_up_live_not_kept(tmp_path: Path) -> None:
    cody_env = CodyEnv.create(tmp_path)
    cody_env.write_config(LOCAL)
    before = await start_and_initialize(cody_env)
    assert providers(before)["local"]["available"] is False
    assert default_provider(before) == "local"

    cody_env.env["LOCAL_KEY"] = "exported-later"
    after = await start_and_initialize(cody_env)
    assert providers(after)["local"]["available"] is True


async def test_a_moved_openai_base_url_keeps_the_chatgpt_login_in_the_listing(
    tmp_path: Path,
) -> None:
    """`OPENAI_BASE_URL` in the user's environment is the official endpoint (a proxy), so the
    Codex login still applies; a listing kept from a start without it must not hide that."""
    cody_env = CodyEnv.create(tmp_path)
    cody_env.write_config(LOCAL)
    await start_and_initialize(cody_env)
    (cody_env.root / "codex-home" / "auth.json").write_text(
        json.dumps({"tokens": {"access_token": "chatgpt-token", "account_id": "acct"}})
    )
    cody_env.env["OPENAI_BASE_URL"] = "http://127.0.0.1:9/openai-proxy/v1"
    moved = await start_and_initialize(cody_env)
    openai = providers(moved)["openai"]
    assert openai["available"] is True
    assert "ChatGPT login" in openai["credentials"]


async def test_the_listing_keeps_no_header_value_and_no_url(tmp_path: Path) -> None:
    """Header values may be keys, and a base URL may carry credentials (user:password@, ?key=)."""
    cody_env = CodyEnv.create(tmp_path)
    cody_env.write_config(LOCAL.replace("127.0.0.1:9", "bob:url-secret-1@127.0.0.1:9"))
    cody_env.env["OPENAI_BASE_URL"] = "https://alice:env-secret-2@gw.example/v1?key=sk-3"
    await start_and_initialize(cody_env)
    kept = (cody_env.cody_home / CACHE).read_text()
    for secret in ("header-secret-4711", "X-Api-Token", "url-secret-1", "env-secret-2", "sk-3"):
        assert secret not in kept
    assert (cody_env.cody_home / CACHE).stat().st_mode & 0o777 == 0o600


async def test_a_damaged_listing_is_rebuilt(tmp_path: Path) -> None:
    cody_env = CodyEnv.create(tmp_path)
    cody_env.write_config(LOCAL)
    first = await start_and_initialize(cody_env)
    cache = cody_env.cody_home / CACHE
    entry = json.loads(cache.read_text())
    without_offline = [p for p in entry["providers"] if p["id"] != "offline"]
    for damage in (
        b"{not json",
        b"",
        b"[" * 100_000 + b"]" * 100_000,
        json.dumps({**entry, "providers": without_offline}).encode(),
        json.dumps({**entry, "providers": entry["providers"] * 2}).encode(),
        json.dumps({**entry, "providers": [{"id": "local"}]}).encode(),
        json.dumps({**entry, "providers": "local"}).encode(),
        json.dumps({**entry, "model_provider": 7}).encode(),
    ):
        cache.write_bytes(damage)
        again = await start_and_initialize(cody_env)
        assert again == first, damage
    assert json.loads(cache.read_text())["key"] == entry["key"]


async def test_an_unwritable_listing_only_costs_time(tmp_path: Path) -> None:
    """The cache path is a directory (CI runs as root: a mode would not stop the write)."""
    cody_env = CodyEnv.create(tmp_path)
    cody_env.write_config(LOCAL)
    (cody_env.cody_home / CACHE).mkdir(parents=True)
    for _ in range(2):
        result = await start_and_initialize(cody_env)
        assert default_provider(result) == "local"


async def test_an_invalid_config_lists_the_defaults_until_it_is_fixed(tmp_path: Path) -> None:
    cody_env = CodyEnv.create(tmp_path)
    cody_env.write_config(LOCAL + "approval_policy = 42\n")
    for _ in range(2):  # validated, then read from the listing: the same answer
        broken = await start_and_initialize(cody_env)
        assert "local" not in providers(broken)
        assert default_provider(broken) == "offline"
    cody_env.write_config(LOCAL)
    fixed = await start_and_initialize(cody_env)
    assert default_provider(fixed) == "local"
