"""install.py attacked (issue 20.8), on a fresh copy of the repository as a newcomer runs it.

- Nothing is taken from the directory the user runs it in: a `uv.py` there (which the old
  `python3 -c "import uv"` imported) or a `uv` reached through a relative PATH entry never
  runs, and a `~/.local/bin/uv` an older install.py linked to what such a file named is
  removed, not used.
- uv.lock's hashes are enforced: a dependency (or the build backend) whose file does not
  match the hash the lock records is not installed, and nothing is linked.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.test_install import PASS_THROUGH, SYSTEM_DIRS, clean_path, fresh_clone, uv_cache_dir

pytestmark = [pytest.mark.reliability, pytest.mark.timeout(240)]


def newcomer_python() -> str:
    return shutil.which("python3", path=os.pathsep.join(SYSTEM_DIRS)) or sys.executable


def real_uv() -> str | None:
    found = shutil.which("uv")
    if found:
        return found
    probe = subprocess.run(
        [sys.executable, "-P", "-c", "import uv; print(uv.find_uv_bin())"],
        capture_output=True, text=True, check=False, cwd="/",
    )  # fmt: skip
    return probe.stdout.strip() if probe.returncode == 0 else None


def base_env(root: Path, system_path: str) -> dict[str, str]:
    home = root / "home"
    home.mkdir(exist_ok=True)
    env = {"HOME": str(home), "PATH": system_path, "LANG": "C.UTF-8"}
    env.update({k: os.environ[k] for k in PASS_THROUGH if k in os.environ})
    cache = uv_cache_dir()
    if cache:
        env["UV_CACHE_DIR"] = cache
    return env


def test_install_py_runs_nothing_from_the_callers_directory(tmp_path: Path) -> None:
    clone = fresh_clone(tmp_path / "cody")
    ran = tmp_path / "RAN"
    hostile = tmp_path / "downloads"
    hostile.mkdir()
    fake_uv = hostile / "uv"
    fake_uv.write_text(f"#!/bin/sh\necho uv >> {ran}\n")
    fake_uv.chmod(0o755)
    (hostile / "uv.py").write_text(
        f"open({str(ran)!r}, 'a').write('uv.py\\n')\n"
        f"def find_uv_bin():\n    return {str(fake_uv)!r}\n"
    )
    env = base_env(tmp_path, clean_path(tmp_path))
    bin_dir = Path(env["HOME"]) / ".local" / "bin"

    def uninstall() -> None:
        result = subprocess.run(
            [newcomer_python(), str(clone / "install.py"), "--uninstall"],
            cwd=hostile, env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert result.returncode == 0, result.stdout + result.stderr
        assert not ran.exists(), f"ran from the caller's directory: {ran.read_text()}"

    uninstall()  # the old `python3 -c "import uv"` imported uv.py, and linked bin/uv to it
    assert not (bin_dir / "uv").is_symlink()

    env["PATH"] = f".:bin:{env['PATH']}"  # relative entries: the caller's directory
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / "uv").symlink_to(fake_uv)  # left by an older install.py run from there
    (bin_dir / ".uv.installed-by-cody").write_text("link\n")
    uninstall()
    assert not (bin_dir / "uv").is_symlink() or os.readlink(bin_dir / "uv") != str(fake_uv), (
        "the stale link to what a uv.py named is not kept"
    )


def tampered(text: str, package: str) -> str:
    """`uv.lock` with every hash of `package` changed (its files no longer match)."""
    start = text.index(f'\nname = "{package}"\n')
    end = text.find("\n[[package]]", start)
    end = len(text) if end < 0 else end
    block = re.sub(r"sha256:[0-9a-f]{8}", "sha256:00000000", text[start:end])
    return text[:start] + block + text[end:]


@pytest.mark.parametrize("package", ["orjson", "hatchling"])
def test_install_py_refuses_a_file_that_does_not_match_uv_lock(
    tmp_path: Path, package: str
) -> None:
    uv = real_uv()
    if uv is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but no uv to install with")
        pytest.skip("no uv here")
    clone = fresh_clone(tmp_path / "cody")
    lock = clone / "uv.lock"
    lock.write_text(tampered(lock.read_text(), package))
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "uv").symlink_to(uv)
    env = base_env(tmp_path, f"{tools}:{clean_path(tmp_path)}")
    result = subprocess.run(
        [newcomer_python(), "install.py"],
        cwd=clone, env=env, capture_output=True, text=True, timeout=200, check=False,
    )  # fmt: skip
    report = result.stdout + result.stderr
    assert result.returncode != 0, report
    assert "hash" in report.lower() and package in report, report
    bin_dir = Path(env["HOME"]) / ".local" / "bin"
    assert not (bin_dir / "cody-client").exists() and not (bin_dir / "cody-daemon").exists()
