"""Cody's VS Code extension inside a real VS Code, as a user meets it.

code-server (VS Code 1.100.3 for the browser, pinned with playwright-core by
tests/vscode-e2e/package-lock.json and installed by tests/vscode-e2e/install.sh) gets the
`.vsix` built from editor-plugins/vscode and opens a temp workspace; tests/vscode-e2e/drive.mjs
drives it in Debian's chromium: the Cody view, a text turn and a tool turn with the offline
model, an edit allowed and one rejected in VS Code's diff editor and modal dialog, a cancelled
command, a settings change, and a window reload after which the daemon must be gone at once,
having been sent `exit` (the regression test for the log channel that threw during shutdown).
The daemon is this checkout's (`sys.executable -m cody_daemon`, through `cody.daemon.command`).

Screenshots of every step and the driver's result.json go to tests/vscode-e2e/output/.
Skipped when node, npm, chromium, ripgrep or the tools that build code-server's native modules
are missing, except on CI (CI=true), where that fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.daemon import CodyEnv

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
E2E = REPO / "tests" / "vscode-e2e"
OUTPUT = E2E / "output"
EXTENSION = REPO / "editor-plugins" / "vscode"
CHROMIUM = os.environ.get("CODY_CHROMIUM", "/usr/bin/chromium")
# what the native modules of code-server need to build (Debian: build-essential, libkrb5-dev)
BUILD_TOOLS = ("make", "g++", "python3", "krb5-config")
LISTENING = re.compile(r"HTTP server listening on (http://127\.0\.0\.1:\d+/)")
# the workspace the driver expects (drive.mjs: ORIGINAL)
GREET_PY = 'def greet(name):\n    return "Hello " + name\n\n\nprint(greet("world"))'
# nothing is reachable there: the extension gallery must never be asked anything real
DEAD_GALLERY = {
    "serviceUrl": "http://127.0.0.1:9/gallery",
    "itemUrl": "http://127.0.0.1:9/item",
    "resourceUrlTemplate": "http://127.0.0.1:9/resource/{publisher}/{name}/{version}/{path}",
}


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)


def _require(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        _unavailable(f"{name} is not on PATH (needed to run the extension in code-server)")
        raise AssertionError("unreachable")
    return path


def _run(args: list[str], *, cwd: Path, env: dict[str, str], timeout: float) -> str:
    try:
        done = subprocess.run(
            args,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(
            f"{' '.join(args)} timed out after {timeout:.0f} s\n{exc.stdout!r}\n{exc.stderr!r}"
        )
    output = f"--- stdout ---\n{done.stdout}\n--- stderr ---\n{done.stderr}"
    assert done.returncode == 0, f"{' '.join(args)} exited {done.returncode}\n{output}"
    return output


def _tool_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(
        npm_config_fund="false", npm_config_audit="false", npm_config_update_notifier="false"
    )
    return env


def _install_code_server() -> Path:
    _run(["bash", str(E2E / "install.sh")], cwd=E2E, env=_tool_env(), timeout=900)
    binary = E2E / "node_modules" / ".bin" / "code-server"
    assert binary.exists(), f"{binary} is missing after install.sh"
    return binary


def _package_extension(npm: str, dest: Path) -> Path:
    env = _tool_env()
    if not (EXTENSION / "node_modules" / ".bin" / "vsce").exists():
        _run([npm, "ci", "--no-audit", "--no-fund"], cwd=EXTENSION, env=env, timeout=420)
    vsix = dest / "cody.vsix"
    vsce = EXTENSION / "node_modules" / ".bin" / "vsce"
    args = [str(vsce), "package", "--allow-missing-repository", "--skip-license", "-o", str(vsix)]
    _run(args, cwd=EXTENSION, env=env, timeout=300)
    return vsix


def _marked(marker: str) -> list[tuple[int, str]]:
    """(pid, argv) of every live process whose environment carries `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            argv = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if state != "Z":
            found.append((int(entry.name), argv.strip()))
    return found


@contextlib.contextmanager
def _code_server(
    binary: Path, args: list[str], env: dict[str, str], log: Path, left: list[str]
) -> Iterator[str]:
    """code-server in its own process group; yields its URL. After: the whole group is killed
    (killing only the main process would leave the extension host and the daemon running),
    and whatever still carries the run's marker (`env`'s CODY_VSCODE_E2E_RUN) 10 s later is
    killed too and reported in `left`."""
    marker = f"CODY_VSCODE_E2E_RUN={env['CODY_VSCODE_E2E_RUN']}"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [str(binary), *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 60
        while not (match := LISTENING.search(log.read_text(errors="replace"))):
            assert process.poll() is None, f"code-server exited:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"code-server did not listen:\n{log.read_text()}"
            time.sleep(0.1)
        yield match.group(1)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        deadline = time.monotonic() + 10
        while (stragglers := _marked(marker)) and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid, argv in stragglers:
            left.append(f"{pid} {argv}")
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _settings(cody: CodyEnv) -> tuple[dict[str, Any], dict[str, Any]]:
    """(User settings, Remote settings). The daemon's command and environment are machine
    settings: in a remote window such as code-server's, VS Code applies them from the Remote
    settings (user-data-dir/Machine) only, and drops a User value once the extension's schema
    is known (so a settings change restarted `cody-daemon` from PATH)."""
    user = {
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": False,
        "workbench.enableExperiments": False,
        "telemetry.telemetryLevel": "off",
        "update.mode": "none",
        "extensions.autoCheckUpdates": False,
        "extensions.autoUpdate": False,
        "chat.commandCenter.enabled": False,
        "git.enabled": False,
        # cody.trace stays at its default ("verbose"), under which shutdown used to hang
        "cody.provider": "offline",
        # the `ask` mode: every edit and command asks (the default runs them in the sandbox)
        "cody.approvalPolicy": "untrusted",
    }
    remote = {
        "cody.daemon.command": [sys.executable, "-m", "cody_daemon"],
        "cody.daemon.env": {"CODY_HOME": str(cody.cody_home)},
    }
    return user, remote


@pytest.mark.timeout(1200)
def test_the_extension_works_in_a_real_vscode_and_a_reload_stops_the_daemon_at_once(
    tmp_path: Path,
) -> None:
    node, npm = _require("node"), _require("npm")
    _require("rg")
    for tool in BUILD_TOOLS:
        _require(tool)
    if not os.access(CHROMIUM, os.X_OK):
        _unavailable(f"{CHROMIUM} is missing (Debian package chromium; or set CODY_CHROMIUM)")

    code_server = _install_code_server()
    vsix = _package_extension(npm, tmp_path)
    # the driver is type-checked with the extension's TypeScript (tests/vscode-e2e/tsconfig.json)
    tsc = EXTENSION / "node_modules" / ".bin" / "tsc"
    _run([str(tsc), "-p", str(E2E)], cwd=E2E, env=_tool_env(), timeout=120)

    cody = CodyEnv.create(tmp_path / "cody")
    # a short path: it shows in the approval dialog of the README's screenshot
    workspace = Path(tempfile.mkdtemp(prefix="cody-")) / "greeter"
    workspace.mkdir()
    (workspace / "greet.py").write_text(GREET_PY)
    try:
        _drive(tmp_path, cody, workspace, node, code_server, vsix)
    finally:
        shutil.rmtree(workspace.parent, ignore_errors=True)


def _drive(
    tmp_path: Path, cody: CodyEnv, workspace: Path, node: str, code_server: Path, vsix: Path
) -> None:
    user_data, extensions = tmp_path / "user-data", tmp_path / "extensions"
    user_settings, remote_settings = _settings(cody)
    for scope, settings in (("User", user_settings), ("Machine", remote_settings)):
        (user_data / scope).mkdir(parents=True)
        (user_data / scope / "settings.json").write_text(json.dumps(settings, indent=2))
    (tmp_path / "config.yaml").write_text("bind-addr: 127.0.0.1:0\nauth: none\ncert: false\n")
    marker_value = uuid.uuid4().hex
    env = dict(cody.env)
    for name in ("CONFIG", "DATA", "CACHE", "STATE"):
        path = tmp_path / f"xdg-{name.lower()}"
        path.mkdir()
        env[f"XDG_{name}_HOME"] = str(path)
    env["EXTENSIONS_GALLERY"] = json.dumps(DEAD_GALLERY)
    env["TZ"] = "UTC"  # the driver compares the Cody log's local-time stamps with its clock
    env["CODY_VSCODE_E2E_RUN"] = marker_value  # every process of this run inherits it
    common = [
        "--config",
        str(tmp_path / "config.yaml"),
        "--user-data-dir",
        str(user_data),
        "--extensions-dir",
        str(extensions),
    ]
    _run(
        [str(code_server), *common, "--install-extension", str(vsix)],
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert (extensions / "extensions.json").is_file()

    shutil.rmtree(OUTPUT, ignore_errors=True)
    OUTPUT.mkdir(parents=True)
    serve = [
        *common,
        "--disable-telemetry",
        "--disable-update-check",
        "--disable-workspace-trust",
        "--disable-getting-started-override",
        str(workspace),
    ]
    marker = f"CODY_VSCODE_E2E_RUN={marker_value}"
    left: list[str] = []
    try:
        with _code_server(code_server, serve, env, OUTPUT / "code-server.log", left) as url:
            run = {
                "url": url,
                "workspace": str(workspace),
                "userDataDir": str(user_data),
                "outDir": str(OUTPUT),
                "marker": marker,
                "chromium": CHROMIUM,
            }
            (tmp_path / "run.json").write_text(json.dumps(run))
            driver_env = {**_tool_env(), "HOME": str(cody.root / "home"), "TZ": "UTC"}
            try:
                driven = subprocess.run(
                    [node, str(E2E / "drive.mjs"), str(tmp_path / "run.json")],
                    cwd=E2E,
                    env=driver_env,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    timeout=600,
                    check=False,
                )
            except subprocess.TimeoutExpired as exc:
                pytest.fail(f"drive.mjs timed out\n{exc.stdout!r}\n{exc.stderr!r}")
            report = f"--- stdout ---\n{driven.stdout}\n--- stderr ---\n{driven.stderr}"
            assert driven.returncode == 0, f"the scenario failed (see {OUTPUT})\n{report}"
    finally:
        # VS Code's logs (the Cody channel included) and the settings, beside the screenshots
        if (user_data / "logs").is_dir():
            shutil.copytree(user_data / "logs", OUTPUT / "vscode-logs", dirs_exist_ok=True)
        for scope in ("User", "Machine"):
            shutil.copy(user_data / scope / "settings.json", OUTPUT / f"settings-{scope}.json")

    result = json.loads((OUTPUT / "result.json").read_text())
    names = [step["name"] for step in result["steps"]]
    assert names == [
        "cody-view",
        "text-turn",
        "tool-turn",
        "edit-approval",
        "edit-allowed",
        "edit-rejected",
        "cancel",
        "settings",
        "after-settings",
        "reload",
    ]
    for step in result["steps"]:
        assert Path(step["screenshot"]).stat().st_size > 10_000, step
    # every request went to 127.0.0.1, but for the webview's resources, which VS Code's
    # service worker answers from the workbench without any network
    assert result["foreignRequests"] == []
    for host, served in result["requests"].items():
        assert host == "127.0.0.1" or (
            host.endswith(".vscode-resource.vscode-cdn.net") and set(served) == {"service worker"}
        ), (host, served)

    # the regression: with cody.trace "verbose" the closed log channel threw inside the
    # `shutdown` reply, `exit` was never sent, and VS Code killed the daemon after 5 s
    handshake = result["shutdownLog"]
    assert "Sending notification 'exit'" in handshake[2], handshake
    assert result["shutdownToGoneMs"] < 1000, result

    assert left == [], f"processes left 10 s after code-server's group was killed: {left}"
