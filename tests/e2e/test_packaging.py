"""The three packages in someone else's project (issue 24.7): wheels built from the checkout
with `uv build`, installed with the README's one command (the lock's pins as constraints)
into a fresh virtual environment outside the checkout, then a real session driven from there
by the library and by `cody-client exec`. Also: the constraints file is the lock's export,
every package is typed (`py.typed`) and its metadata is ready to publish."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from tests.support.daemon import CodyEnv

REPO = Path(__file__).resolve().parents[2]
PACKAGES = {
    "cody-protocol": "cody_protocol",
    "cody-daemon": "cody_daemon",
    "cody-client": "cody_client",
}
EXPORT = [
    "export", "--frozen", "--no-dev", "--all-packages", "--no-emit-workspace", "--no-hashes",
    "--format", "requirements.txt", "-o", "constraints.txt",
]  # fmt: skip
"""The command that wrote constraints.txt (its own first lines say so too)."""


def uv() -> list[str]:
    found = shutil.which("uv")
    if found:
        return [found]
    probe = subprocess.run(
        [sys.executable, "-m", "uv", "--version"], capture_output=True, check=False, timeout=60
    )
    if probe.returncode == 0:
        return [sys.executable, "-m", "uv"]
    if os.environ.get("CI") == "true":
        pytest.fail("CI=true but uv is not available")
    pytest.skip("uv is not available")


def machine_env() -> dict[str, str]:
    """Building and installing use the machine's uv settings (cache, index, certificates)."""
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env["UV_NO_PROGRESS"] = "1"
    return env


def pins(text: str) -> dict[str, str]:
    found = re.findall(r"^([A-Za-z0-9_.-]+)==([^\s;]+)", text, re.MULTILINE)
    return {name.lower().replace("_", "-"): version for name, version in found}


def test_the_constraints_file_is_the_locks_export(tmp_path: Path) -> None:
    """constraints.txt must pin what uv.lock pins: regenerated, it is unchanged."""
    command = uv()
    out = tmp_path / "constraints.txt"
    args = [a if a != "constraints.txt" else str(out) for a in EXPORT]
    subprocess.run(
        [*command, *args, "--project", str(REPO)],
        check=True, capture_output=True, env=machine_env(), timeout=120, cwd=REPO,
    )  # fmt: skip
    assert pins(out.read_text()) == pins((REPO / "constraints.txt").read_text()), (
        "constraints.txt is stale: run `uv " + " ".join(EXPORT) + "`"
    )


@pytest.mark.timeout(600)
def test_built_wheels_install_into_a_fresh_venv_and_drive_a_session(cody_env: CodyEnv) -> None:
    command = uv()
    env = machine_env()
    dist = cody_env.root / "dist"
    subprocess.run(
        [*command, "build", "--all-packages", "--wheel", "--out-dir", str(dist)],
        check=True, capture_output=True, env=env, timeout=300, cwd=REPO,
    )  # fmt: skip
    wheels = sorted(dist.glob("*.whl"))
    assert len(wheels) == 3, wheels
    for wheel in wheels:
        check_wheel(wheel)

    # A project of someone else's: its own directory and venv, nowhere near the checkout.
    project = cody_env.root / "their-project"
    project.mkdir()
    venv = project / ".venv"
    subprocess.run([*command, "venv", "-q", str(venv)], check=True, env=env, timeout=120)
    python = venv / "bin" / "python"
    # The README's command, with uv's pip (the same arguments work with `python -m pip`).
    install = subprocess.run(
        [*command, "pip", "install", "--python", str(python),
         "-c", str(REPO / "constraints.txt"), *map(str, wheels)],
        capture_output=True, text=True, env=env, timeout=300, cwd=project, check=False,
    )  # fmt: skip
    assert install.returncode == 0, install.stderr
    installed = json.loads(
        subprocess.run(
            [*command, "pip", "list", "--python", str(python), "--format", "json"],
            check=True, capture_output=True, text=True, env=env, timeout=60,
        ).stdout
    )  # fmt: skip
    versions = {p["name"].lower().replace("_", "-"): p["version"] for p in installed}
    locked = pins((REPO / "constraints.txt").read_text())
    for name in ("pydantic", "pygls", "httpx", "mcp", "orjson", "rich", "ripgrep"):
        assert versions[name] == locked[name], f"{name} {versions[name]} is not the lock's"
    assert {versions[name] for name in PACKAGES} == {"0.1.0"}

    script = project / "use_cody.py"
    script.write_text(
        textwrap.dedent(
            """
            import asyncio, sys
            import cody_client, cody_daemon
            from cody_client import Allow, CodyClient

            assert cody_daemon.__file__.startswith(sys.prefix), cody_daemon.__file__

            async def main(workspace):
                async with CodyClient.spawn() as client:
                    async def approve(request):
                        return Allow()
                    client.on_permission = approve
                    session = await client.new_session(workspace, provider="offline")
                    result = await session.prompt("write notes.txt: from a wheel", timeout=60)
                    print("stop:", result.stop_reason, type(client) is cody_client.CodyClient)

            asyncio.run(main(sys.argv[1]))
            """
        )
    )
    # Only the venv: not the checkout's PATH, interpreter or sources.
    run_env = {**cody_env.env, "PATH": f"{venv / 'bin'}:/usr/bin:/bin"}
    run_env.pop("VIRTUAL_ENV", None)
    run_env.pop("PYTHONPATH", None)
    library = subprocess.run(
        [str(python), str(script), str(cody_env.workspace)],
        capture_output=True, text=True, env=run_env, cwd=project, timeout=120, check=False,
    )  # fmt: skip
    assert library.returncode == 0, library.stderr
    assert "stop: end_turn True" in library.stdout
    assert (cody_env.workspace / "notes.txt").read_text() == "from a wheel"

    cli = subprocess.run(
        [str(venv / "bin" / "cody-client"), "exec", "--json", "--cwd", str(cody_env.workspace),
         "--provider", "offline", "list files"],
        capture_output=True, text=True, env=run_env, cwd=project, timeout=120, check=False,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    last = json.loads(cli.stdout.splitlines()[-1])
    assert last["type"] == "turn.completed" and last["stopReason"] == "end_turn"


def check_wheel(wheel: Path) -> None:
    """py.typed shipped; metadata complete; the sibling packages pinned to this version."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        [metadata_name] = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(archive.read(metadata_name).decode())
    name = metadata["Name"]
    assert f"{PACKAGES[name]}/py.typed" in names, f"{wheel.name} ships no py.typed"
    assert metadata["Version"] == "0.1.0"
    assert metadata["Summary"] and metadata["Requires-Python"] == ">=3.11"
    assert "Typing :: Typed" in metadata.get_all("Classifier", [])
    assert metadata.get_payload().strip(), "a long description (the package's README)"
    requires = metadata.get_all("Requires-Dist", [])
    for sibling in PACKAGES:
        for requirement in requires:
            if requirement.startswith(sibling):
                assert f"{sibling}==0.1.0" in requirement, requirement
