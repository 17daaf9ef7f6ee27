"""The README's set-up, as a newcomer runs it: a fresh copy of the repository, an empty HOME,
no uv on PATH, the distribution's own Python (PEP 668: `pip install` is refused there), the
README's first command run as written in a fresh shell (issue 24.1: `cody-client: command not
found` there before), then `cody-client` used from another directory and from a new shell,
and removed again, with the PATH lines the install added to the startup files."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SYSTEM_DIRS = ("/usr/bin", "/bin")
WITHHELD = frozenset({"uv", "uvx", "bwrap", "rg"})
"""What a newcomer's machine lacks: the install must bring uv, the sandbox and search."""
PASS_THROUGH = (
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "UV_INDEX_URL",
    "PIP_INDEX_URL",
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "NO_PROXY",
    "no_proxy",
)
"""The machine's network settings (certificates, index, proxy) still apply: a newcomer has them."""


def fresh_clone(target: Path) -> Path:
    """Every file git would give a clone (tracked and new, not ignored), copied to `target`."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.split(b"\0")
    for raw in listed:
        if not raw:
            continue
        source = REPO / raw.decode()
        if not source.is_file():
            continue  # deleted in the working tree
        destination = target / raw.decode()
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, destination)
    return target


def clean_path(root: Path) -> str:
    """A PATH dir with every program of /usr/bin and /bin except uv, bwrap and rg (links)."""
    bin_dir = root / "system-bin"
    bin_dir.mkdir()
    for directory in SYSTEM_DIRS:
        for program in Path(directory).iterdir():
            target = bin_dir / program.name
            if program.name in WITHHELD or target.exists():
                continue
            target.symlink_to(program)
    return str(bin_dir)


def uv_cache_dir() -> str | None:
    """The machine's uv cache, so the test does not download every package again."""
    for command in (["uv"], ["python3", "-m", "uv"]):
        try:
            found = subprocess.run(
                [*command, "cache", "dir"], capture_output=True, text=True, timeout=60, check=False
            )
        except OSError:
            continue
        if found.returncode == 0 and found.stdout.strip():
            return found.stdout.strip()
    return None


def readme_first_command() -> str:
    """The command of the README's "Try it" block, exactly as a newcomer copies it."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    found = re.search(r"## Try it\n\n```sh\n(.+?)\n```", readme, re.S)
    assert found, "README.md has no ```sh block right under ## Try it"
    assert "\n" not in found.group(1), "the README's first command is one line"
    return found.group(1)


QUICK_TESTS = "-q -p no:cacheprovider tests/unit/test_subagent_profiles.py"
"""What the README's test command runs here (PYTEST_ADDOPTS): a few quick tests."""


def readme_test_command() -> str:
    """The first command of the README's "Run the tests" block, exactly as written."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    found = re.search(r"Run the tests.*?```sh\n(.+?)\n", readme, re.S)
    assert found, "README.md has no ```sh block after 'Run the tests'"
    return found.group(1).strip()


def system_python() -> str:
    python = shutil.which("python3", path=os.pathsep.join(SYSTEM_DIRS))
    if python is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but there is no system python3 in /usr/bin")
        pytest.skip("no system python3 in /usr/bin")
    return python


MY_BASHRC = "# my own settings\nalias ll='ls -l'"
"""A startup file the newcomer already has (no final newline): it must come back unchanged."""


@pytest.mark.timeout(600)
def test_install_from_a_fresh_clone_then_use_it_anywhere_then_uninstall(tmp_path: Path) -> None:
    python = system_python()
    system_path = clean_path(tmp_path)
    for program in WITHHELD:
        assert shutil.which(program, path=system_path) is None, f"{program} on the clean PATH"
    clone = fresh_clone(tmp_path / "cody")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text(MY_BASHRC)
    env = {"HOME": str(home), "PATH": system_path, "LANG": "C.UTF-8", "SHELL": "/bin/bash"}
    env.update({k: os.environ[k] for k in PASS_THROUGH if k in os.environ})
    cache = uv_cache_dir()
    if cache:
        env["UV_CACHE_DIR"] = cache

    # The README's first command, as written, in a fresh (non-interactive) shell: the demo
    # must run in the very shell that ran install.py, whose PATH nothing can change.
    first = readme_first_command()
    installed = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", first],
        cwd=clone, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=560, check=False,
    )  # fmt: skip
    report = f"{first}\n{installed.stdout}\n{installed.stderr}"
    assert installed.returncode == 0, report
    assert "command not found" not in installed.stderr, report
    assert "Hello from the Cody demo!" in installed.stdout, report  # the demo ran, whole
    assert "Starting a fresh daemon and resuming it" in installed.stdout, report
    bin_dir = home / ".local" / "bin"
    assert (bin_dir / "cody-client").exists() and (bin_dir / "cody-daemon").exists(), report
    said = [line for line in installed.stdout.splitlines() if line.startswith("install.py:")]
    assert any("git pull && python3 install.py" in line for line in said)  # how to update
    assert any("--uninstall" in line for line in said)  # and how to remove it
    assert any(f'export PATH="{bin_dir}:$PATH"' in line for line in said)  # for this shell
    assert said[-1] == "install.py: start: ~/.local/bin/cody-client demo", said  # last, visible
    listed = [line for line in installed.stderr.splitlines() if line.startswith((" + ", " - "))]
    assert not listed, installed.stderr  # uv's list of every package buries nothing

    # A new shell finds it (and uv) by name: the startup file the install extended.
    new_shell = subprocess.run(
        ["bash", "-i", "-c", "cody-client --version && uv --version"],
        cwd=tmp_path, env={**env, "PATH": system_path}, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert new_shell.returncode == 0, new_shell.stdout + new_shell.stderr

    # The README's second command (its test command), as written, in that new shell, from
    # the clone: uv (the one install.py brought) makes the dev environment and runs pytest.
    # Which tests run is the environment's choice (the whole suite is not run twice).
    tests = subprocess.run(
        ["bash", "-i", "-c", readme_test_command()],
        cwd=clone, env={**env, "PATH": system_path, "PYTEST_ADDOPTS": QUICK_TESTS},
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=400, check=False,
    )  # fmt: skip
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-3000:]
    assert re.search(r"\b\d+ passed\b", tests.stdout), tests.stdout[-3000:]

    project = tmp_path / "my-project"
    project.mkdir()
    (project / "main.py").write_text("print('hi')\n")
    (project / "AGENTS.md").write_text("Run `python main.py` to test.\n")
    # exec starts its own warm daemon (as for any user); it exits 5 s after the test's last
    # command instead of 300 s.
    user_env = {**env, "PATH": f"{bin_dir}:{system_path}", "CODY_EXEC_DAEMON_IDLE": "5"}
    turn = subprocess.run(
        ["cody-client", "exec", "list files"],
        cwd=project, env=user_env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert turn.returncode == 0, f"{turn.stdout}\n{turn.stderr}"
    assert "main.py" in turn.stdout
    # the installed copy has its prompt files and reads the project's instructions
    assert "Project instructions: AGENTS.md (30 bytes)" in turn.stderr, turn.stderr
    listed = subprocess.run(
        ["cody-client", "sessions", "list"],
        cwd=tmp_path, env=user_env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert str(project) in listed.stdout, listed.stdout + listed.stderr
    daemon = subprocess.run(
        ["cody-daemon", "--version"],
        env=user_env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert daemon.returncode == 0 and daemon.stdout.strip(), daemon.stderr

    doctor = subprocess.run(
        ["cody-client", "doctor", "--json"],
        cwd=project, env=user_env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    binaries = {b["name"]: b for b in json.loads(doctor.stdout)["binaries"]}
    for name in ("bwrap", "rg"):
        assert binaries[name]["origin"] == "wheel", binaries[name]  # from the lock file
    assert binaries["rg"]["usable"], binaries["rg"]

    removed = subprocess.run(
        [python, "install.py", "--uninstall"],
        cwd=clone, env=user_env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert removed.returncode == 0, removed.stderr
    assert not (bin_dir / "cody-client").exists() and not (bin_dir / "cody-daemon").exists()
    # The PATH lines it added are gone; the user's own startup file is as it was, and the
    # one it created (bash's login file) is removed.
    assert (home / ".bashrc").read_text() == MY_BASHRC, removed.stdout
    assert not (home / ".bash_profile").exists(), removed.stdout
    assert "removed the PATH line it added to ~/.bashrc" in removed.stdout
