"""Each backend carries its own facts (backends/info.py): one module per backend with its
`INFO` and `BACKEND`, and the list of backends is the wire's (`cody_protocol.settings.Backend`
without `native`), so a backend added in one place and not the other fails here."""

from __future__ import annotations

import pytest
from cody_daemon.backends.info import KINDS, backend_class, backend_info
from cody_protocol.settings import BACKENDS


def test_the_backends_are_the_wire_values_but_native() -> None:
    assert set(KINDS) == set(BACKENDS) - {"native"}


@pytest.mark.parametrize("kind", KINDS)
def test_each_backend_module_declares_its_facts_and_its_class(kind: str) -> None:
    info = backend_info(kind)  # type: ignore[arg-type]
    assert info.kind == kind
    assert backend_class(kind).info is info  # type: ignore[arg-type]
    assert info.cli_env in info.install_hint and info.npm_package in info.install_hint
    assert info.credentials and info.env_prefixes and info.enforcement


def test_two_backends_share_no_cli() -> None:
    infos = [backend_info(kind) for kind in KINDS]
    for field in ("cli_name", "cli_env", "npm_package", "display_name"):
        values = [getattr(info, field) for info in infos]
        assert len(set(values)) == len(values), field
