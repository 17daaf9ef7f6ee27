"""A warm daemon's per-connection app (rpc/connections.py `ConnectionApp`) is built by
`DaemonApp.__init__` over the daemon's shared engine: it has every attribute a stdio app has
(so a new one cannot be forgotten), shares one engine with the other connections, and keeps
its own server, link and client capabilities."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from cody_daemon.app import DaemonApp
from cody_daemon.config.paths import CodyPaths
from cody_daemon.rpc.connections import ConnectionApp, Connections
from cody_daemon.rpc.sharing import BroadcastLink


def _app(tmp_path: Path) -> DaemonApp:
    home = tmp_path / "home"
    return DaemonApp(env={"CODY_HOME": str(home)}, paths=CodyPaths.under(home, home))


def _public_names() -> list[str]:
    """What the handlers may reach on an app: its public methods, properties and the
    attributes its constructor sets."""
    names = {name for name in dir(DaemonApp) if not name.startswith("_")}
    source = inspect.getsource(DaemonApp.__init__)
    names |= {part.split()[0].rstrip(":=") for part in source.split("self.")[1:]}
    return sorted(name for name in names if name.isidentifier())


async def test_a_warm_connection_s_app_has_every_attribute_a_daemon_app_has(
    tmp_path: Path,
) -> None:
    plain = _app(tmp_path)
    shared = _app(tmp_path)
    connections = Connections(shared, stall_timeout_s=30)
    view = ConnectionApp(shared, connections.attachments)
    for app in (plain, view):
        assert app.link is app.link  # the cached link exists on both
    missing = set(vars(plain)) - set(vars(view))
    assert not missing, f"a warm connection's app lacks {sorted(missing)}"
    for name in _public_names():
        try:
            getattr(view, name)
        except AttributeError as exc:  # pragma: no cover - the failure this test exists for
            pytest.fail(f"a warm connection's app has no working {name!r}: {exc}")
    await shared.shutdown()
    await plain.shutdown()


async def test_connections_share_one_engine_and_keep_their_own_link(tmp_path: Path) -> None:
    shared = _app(tmp_path)
    connections = Connections(shared, stall_timeout_s=30)
    one = ConnectionApp(shared, connections.attachments)
    two = ConnectionApp(shared, connections.attachments)
    assert one.engine is two.engine is shared.engine
    assert one.manager is two.manager is shared.engine.manager
    assert one.deps.store is two.deps.store
    assert one.server is not two.server and one.link is not two.link
    assert one.link is one.sharing.link, "the link fans a session's events out to its viewers"
    assert isinstance(shared.engine.manager.link, BroadcastLink), (
        "events outside a request go to every attached connection, not to one of them"
    )
    one.set_client_capabilities({"fs": {"readTextFile": True, "writeTextFile": True}})
    assert one.link.capabilities.fs.read_text_file
    assert not two.link.capabilities.fs.read_text_file, "capabilities are per connection"
    await one.shutdown()
    assert one.manager is two.manager, "a connection's shutdown leaves the engine to the others"
    await shared.shutdown()
