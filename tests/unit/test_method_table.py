"""The method table (cody_protocol.methods.METHODS) is the one list of methods, and what is
derived from it agrees with the code: every method the daemon serves has exactly one handler
(the daemon refuses to start otherwise), the models it names exist and are in the schema,
ACP's stability matches ACP's own schema, the warm daemon handles every session use, and the
editor plugins and the terminal client only use methods the table has, in their direction.

Each checker is also run on a broken case (a method without a handler, a handler without a
method, a plugin calling an unknown method), so a check that silently passes fails here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

import pytest
from cody_daemon.app import DaemonApp
from cody_daemon.config.paths import CodyPaths
from cody_daemon.rpc.history_handlers import HISTORY_METHODS, history_handlers
from cody_protocol import methods, schema
from cody_protocol.methods import METHODS, extensions, handler_problems, resolve_model
from pydantic import BaseModel

from tests.support.acp_schema import SCHEMA_PATH as ACP_SCHEMA
from tests.support.acp_schema import UNSTABLE_SCHEMA_PATH as ACP_UNSTABLE_SCHEMA

REPO = Path(__file__).resolve().parents[2]


def build_app(tmp_path: Path) -> DaemonApp:
    home = tmp_path / "home"
    return DaemonApp(env={"CODY_HOME": str(home)}, paths=CodyPaths.under(home, home))


def registered(app: DaemonApp) -> set[str]:
    return set(app.server.protocol.fm.features)


@pytest.fixture
def extra_method() -> Iterator[str]:
    """A `_cody/*` method added to the table for one test (as a new feature would add it)."""
    name = methods.request(
        "_cody/test/probe",
        params="extensions:ToolsListParams",
        result="extensions:ToolsListResult",
        spec="cody",
    )
    try:
        yield name
    finally:
        del methods._TABLE[name]


# -- handlers ---------------------------------------------------------------------------------


def test_every_served_method_has_exactly_one_handler(tmp_path: Path) -> None:
    served = {m.name for m in METHODS.values() if m.has_handler}
    assert registered(build_app(tmp_path)) == served
    assert {"logout", "session/fork", "_cody/history/import", "session/cancel"} <= served


def test_a_method_in_the_table_without_a_handler_stops_the_daemon(
    tmp_path: Path, extra_method: str
) -> None:
    with pytest.raises(RuntimeError, match=re.escape(f"{extra_method} has no handler")):
        build_app(tmp_path)


def test_the_handler_check_reports_every_kind_of_disagreement() -> None:
    served = sorted(methods.served_by_handlers())
    assert handler_problems(served) == []
    assert handler_problems(served[1:]) == [f"{served[0]} has no handler"]
    assert handler_problems([*served, "_cody/nope"]) == [
        "_cody/nope has a handler but no entry in cody_protocol.methods.METHODS"
    ]
    assert handler_problems([*served, "session/update"]) == [
        "session/update has a handler but the daemon does not serve it (agent)"
    ]
    assert handler_problems([*served, served[0]]) == [f"{served[0]} has 2 handlers"]


def test_the_history_handlers_serve_the_history_methods(tmp_path: Path) -> None:
    assert set(history_handlers(build_app(tmp_path))) == set(HISTORY_METHODS)
    assert "_cody/session/history" in HISTORY_METHODS


def test_a_name_cannot_be_registered_twice_nor_claim_the_wrong_namespace() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        methods.request("session/new", spec="acp")
    with pytest.raises(ValueError, match="_cody/"):
        methods.request("_cody/not/cody", spec="acp")
    with pytest.raises(ValueError, match="_cody/"):
        methods.request("session/mine", spec="cody")
    with pytest.raises(AttributeError, match="read-only"):
        METHODS["session/new"].session = None  # type: ignore[misc]


# -- what is derived ----------------------------------------------------------------------------


def test_extensions_are_every_served_cody_method() -> None:
    assert set(extensions()) == {
        m.name for m in METHODS.values() if m.name.startswith("_cody/") and m.served
    }
    assert "_cody/mcp/status" not in extensions()  # sent by the daemon, not served


def test_an_entry_added_at_the_end_of_the_table_is_advertised(extra_method: str) -> None:
    assert extra_method in extensions()


def test_every_model_named_exists_and_is_in_a_schema() -> None:
    protocol = set(json.loads(schema.render())["$defs"])
    history = set(json.loads(schema.render_history())["$defs"])
    for method in METHODS.values():
        for ref in method.models():
            model = resolve_model(ref)
            assert issubclass(model, BaseModel), ref
            in_schema = history if ref.startswith("history:") else protocol
            assert model.__name__ in in_schema, f"{method.name}: {ref} is not in its schema"


def test_an_alias_has_the_same_models_as_its_method() -> None:
    for method in METHODS.values():
        if method.alias_of is not None:
            target = METHODS[method.alias_of]
            assert (method.params, method.result, method.session) == (
                target.params,
                target.result,
                target.session,
            )


def _acp_method_names(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    return set(
        re.findall(r'"((?:session|fs|terminal)/[a-z_]+|initialize|authenticate|logout)"', text)
    )


def test_acp_stability_is_what_acps_schema_says() -> None:
    stable, unstable = _acp_method_names(ACP_SCHEMA), _acp_method_names(ACP_UNSTABLE_SCHEMA)
    for method in METHODS.values():
        if method.spec != "acp" or method.name.startswith("$/"):
            continue
        if method.stability == "stable":
            assert method.name in stable, f"{method.name} is not in ACP's stable schema"
        else:
            assert method.name in unstable - stable, f"{method.name} is stable in ACP"


def test_the_warm_daemon_handles_every_session_use() -> None:
    """rpc/sharing.py dispatches on `Method.session`: a new kind of use needs its rule."""
    source = (REPO / "daemon" / "cody_daemon" / "rpc" / "sharing.py").read_text()
    for use in get_args(methods.SessionUse):
        assert f'use == "{use}"' in source, f"rpc/sharing.py has no rule for {use!r}"


# -- the clients --------------------------------------------------------------------------------

_NAMED = re.compile(r"""["']((?:session|_cody|fs|terminal)/[\w/]+|\$/\w+)["']""")
"""A string that names a method (lifecycle words such as `exit` only count in a call)."""
_CALL = re.compile(r"""(\w+)\s*\(\s*["']([$\w/]+)["']""")
_CALLERS = re.compile(r"request|notify|notification|_page")
"""`request`, `request_sync`, `notify`, `on_request`, `on_notification`, `_every_page`..."""


def method_uses(text: str) -> list[tuple[str, str]]:
    """(how, method): `named` for a method-shaped string, else the function it is passed to
    (`request("session/new", ...)`, `on_request("session/request_permission", ...)`)."""
    uses = [("named", name) for name in _NAMED.findall(text)]
    uses += [(how, name) for how, name in _CALL.findall(text) if _CALLERS.search(how)]
    return uses


def method_problems(uses: list[tuple[str, str]]) -> list[str]:
    problems = []
    for how, name in uses:
        method = METHODS.get(name)
        if method is None:
            problems.append(f"{name} is not in cody_protocol.methods.METHODS")
        elif how == "named":
            continue
        elif not how.startswith("on_") and not method.served:
            problems.append(f"{name} is sent by a client but the daemon does not serve it")
        elif how.startswith("on_") and method.sender == "client":
            problems.append(f"{name} is handled by a client but the daemon never sends it")
    return list(dict.fromkeys(problems))


def client_sources() -> dict[str, str]:
    roots = [REPO / "editor-plugins" / "nvim" / "lua", REPO / "clients" / "cody_client"]
    return {
        str(path.relative_to(REPO)): path.read_text(encoding="utf-8")
        for root in roots
        for path in sorted([*root.rglob("*.lua"), *root.rglob("*.py")])
    }


def test_the_neovim_plugin_and_the_terminal_client_use_only_table_methods() -> None:
    sources = client_sources()
    uses = {path: method_uses(text) for path, text in sources.items()}
    nvim = {use for path, found in uses.items() if path.endswith(".lua") for use in found}
    assert {
        ("request", "session/new"),
        ("notify", "session/cancel"),
        ("on_request", "session/request_permission"),
        ("request_all_sessions", "_cody/history/list"),
        ("notify", "exit"),
    } <= nvim
    assert method_problems([use for found in uses.values() for use in found]) == []


def test_the_client_check_reports_an_unknown_or_misdirected_method() -> None:
    text = (
        'conn:request("_cody/session/teleport", {})\n'
        'conn:request("session/update", {})\n'
        'conn:on_notification("session/cancel", f)\n'
    )
    assert method_problems(method_uses(text)) == [
        "_cody/session/teleport is not in cody_protocol.methods.METHODS",
        "session/update is sent by a client but the daemon does not serve it",
        "session/cancel is handled by a client but the daemon never sends it",
    ]
