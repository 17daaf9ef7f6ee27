#!/usr/bin/env python3
"""Install Cody from this checkout: `cody-client` and `cody-daemon` on your PATH.

    python3 install.py              install, or update after `git pull`
    python3 install.py --uninstall  remove them again

Standard library only, so it runs on any Python >= 3.11, including a distribution's own
(Debian and Ubuntu forbid `pip install` there: PEP 668). It uses uv (https://docs.astral.sh/uv/):
the `uv` on an absolute PATH entry or in the bin directory, else the `uv` module of this
Python, else the uv wheel from PyPI (or `$UV_INDEX_URL` / `$PIP_INDEX_URL`), checked against
its SHA-256 and unpacked into the bin directory. Then Cody goes into an environment of its own
(`$XDG_DATA_HOME/cody-install/venv`, else `~/.local/share/cody-install/venv`): every
dependency at the version `uv.lock` pins *and with the hash it records* (`--require-hashes`: a
file that does not match is not installed), Cody's three packages built by the build backend
`uv.lock` pins, with its hashes too, and bytecode compiled (so the first start is fast).
`cody-client` and `cody-daemon` are linked into the bin directory (`$UV_TOOL_BIN_DIR`,
`$XDG_BIN_HOME` or `~/.local/bin`). If that directory is not on PATH, `uv tool update-shell`
adds it to your shell's startup files (for new shells; this script cannot change the PATH of
the shell that runs it, so its last line says how to start Cody from there: the README's
first command uses the full path). The lines it added are recorded, and `--uninstall` removes
exactly those (a file it created, it deletes, if nothing else was written to it since).

uv downloads with the system's trust store (`UV_SYSTEM_CERTS`, as this script's own download
does), so an HTTPS proxy whose certificate authority is installed on the machine works for
both, unless `UV_SYSTEM_CERTS` or `UV_NATIVE_TLS` is set otherwise.

Nothing is taken from the directory you run it in: the `uv` module is looked for with the
current directory off `sys.path` (`python3 -P`, run elsewhere), and PATH entries that are not
absolute are skipped.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent
UV_VERSION = "0.13.9"
UV_WHEELS = {
    # (system, machine) -> (wheel file name, sha256), from https://pypi.org/simple/uv/
    ("Linux", "x86_64"): (
        f"uv-{UV_VERSION}-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        "d7f459fe4fd247d830351c75686d3996ace3c6f3f728eb0e85a30b7ada0cef19",
    ),
    ("Linux", "aarch64"): (
        f"uv-{UV_VERSION}-py3-none-manylinux_2_17_aarch64.manylinux2014_aarch64"
        ".musllinux_1_1_aarch64.whl",
        "5435c5ce14a56431208ca0996416d310f1598e8c2c8ba707688985a16bb82dbe",
    ),
    ("Darwin", "x86_64"): (
        f"uv-{UV_VERSION}-py3-none-macosx_10_12_x86_64.whl",
        "c16ed11e013557536b3e60065f1b912f6407bd6518e041b961e23ef9e6b4fbf5",
    ),
    ("Darwin", "arm64"): (
        f"uv-{UV_VERSION}-py3-none-macosx_11_0_arm64.whl",
        "66c512266d633bef48384a1f53003f41f2a8e7b36fe6e7fbfd3e0fd52d96fa63",
    ),
}
MARKER = "installed-by-cody"
"""A uv this script downloaded has this file next to it (so --uninstall removes only that)."""


class InstallError(Exception):
    pass


def say(text: str) -> None:
    print(f"install.py: {text}", flush=True)


def bin_dir() -> Path:
    for name in ("UV_TOOL_BIN_DIR", "XDG_BIN_HOME"):
        value = os.environ.get(name)
        if value:
            return Path(value).expanduser().absolute()
    return Path.home() / ".local" / "bin"


def install_dir() -> Path:
    """Where Cody's environment lives (this script's own: nothing else uses it)."""
    data = os.environ.get("XDG_DATA_HOME", "")
    base = Path(data) if os.path.isabs(data) else Path.home() / ".local" / "share"
    return base / "cody-install"


def venv_dir() -> Path:
    return install_dir() / "venv"


def on_path(directory: Path) -> bool:
    entries = os.environ.get("PATH", "").split(os.pathsep)
    return any(
        Path(entry).expanduser().resolve() == directory.resolve() for entry in entries if entry
    )


# -- finding or fetching uv -------------------------------------------------------------------


def which(name: str) -> str | None:
    """`name` on PATH, looking only in absolute entries: a relative one (`.`, `bin`, an empty
    entry) would find a program in the directory this script is run from."""
    entries = [e for e in os.environ.get("PATH", "").split(os.pathsep) if os.path.isabs(e)]
    return shutil.which(name, path=os.pathsep.join(entries)) if entries else None


def executable(path: str) -> bool:
    return os.path.isabs(path) and os.path.isfile(path) and os.access(path, os.X_OK)


def find_uv() -> list[str] | None:
    """`uv` on PATH, in the bin directory, or this Python's `uv` module (linked into bin)."""
    found = which("uv")
    if found:
        return [found]
    local = bin_dir() / "uv"
    marker = local.parent / f".uv.{MARKER}"
    linked_by_us = local.is_symlink() and marker.is_file() and marker.read_text() == "link\n"
    if not linked_by_us and local.is_file() and os.access(local, os.X_OK):
        return [str(local)]
    # A link this script made is made again from a safe probe (an older install.py could
    # have linked it to whatever a `uv.py` in the caller's directory named).
    with tempfile.TemporaryDirectory() as elsewhere:
        # -P: the current directory is not put on sys.path (a `uv.py` there would run), and
        # the probe runs in an empty directory for good measure.
        probe = subprocess.run(
            [sys.executable, "-P", "-c", "import uv; print(uv.find_uv_bin())"],
            capture_output=True,
            text=True,
            check=False,
            cwd=elsewhere,
        )
    named = probe.stdout.strip()
    if probe.returncode != 0 or not executable(named):
        if linked_by_us:
            local.unlink()
            marker.unlink()
        return None
    # Linked so that `uv run --frozen pytest` (the README's test command) finds it too.
    local.parent.mkdir(parents=True, exist_ok=True)
    link(local, Path(named))
    marker.write_text("link\n", encoding="utf-8")
    return [str(local)]


def link(at: Path, target: Path) -> None:
    """`at` becomes a symlink to `target`, replacing whatever link or file was there."""
    tmp = at.with_name(f".{at.name}.{os.getpid()}.link")
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(target)
    tmp.replace(at)


def index_url() -> str:
    for name in ("UV_INDEX_URL", "PIP_INDEX_URL"):
        value = os.environ.get(name)
        if value:
            return value.rstrip("/")
    return "https://pypi.org/simple"


def fetch(url: str, accept: str | None = None) -> bytes:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(request, timeout=120) as response:
        data: bytes = response.read()
        return data


def download_uv() -> list[str]:
    """Fetch the pinned uv wheel, check its hash, unpack `uv` into the bin directory."""
    key = (platform.system(), platform.machine())
    if key not in UV_WHEELS:
        raise InstallError(
            f"no pinned uv build for {key[0]} {key[1]}; install uv yourself "
            "(https://docs.astral.sh/uv/getting-started/installation/) and run this again"
        )
    name, digest = UV_WHEELS[key]
    listing = json.loads(fetch(f"{index_url()}/uv/", accept="application/vnd.pypi.simple.v1+json"))
    urls = [f["url"] for f in listing.get("files", []) if f.get("filename") == name]
    if not urls:
        raise InstallError(f"{name} is not on {index_url()}")
    url = urllib.request.urljoin(f"{index_url()}/uv/", urls[0])
    say(f"downloading uv {UV_VERSION} ({name})")
    wheel = fetch(url)
    if hashlib.sha256(wheel).hexdigest() != digest:
        raise InstallError(f"{name} does not have the expected SHA-256; not installing it")
    target = bin_dir()
    target.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(io.BytesIO(wheel)) as archive:
        member = f"uv-{UV_VERSION}.data/scripts/uv"
        data = archive.read(member)
    uv = target / "uv"
    tmp = target / ".uv.download"
    tmp.write_bytes(data)
    tmp.chmod(0o755)
    tmp.replace(uv)
    (target / f".uv.{MARKER}").write_text(UV_VERSION + "\n", encoding="utf-8")
    say(f"uv installed at {uv}")
    return [str(uv)]


# -- install / uninstall ----------------------------------------------------------------------


TRUST_SETTINGS = ("UV_SYSTEM_CERTS", "UV_NATIVE_TLS")
"""uv's switches for the system trust store (`UV_NATIVE_TLS` is the name before uv 0.11)."""


def trust_env(uv: list[str]) -> dict[str, str]:
    """What tells uv to verify TLS with the system's trust store, as urllib does here (uv's
    default is its bundled Mozilla roots: behind a TLS-intercepting proxy whose authority is
    installed on the machine, uv would fail with `UnknownIssuer` where this script's own
    download worked). A choice the caller made is kept."""
    if any(name in os.environ for name in TRUST_SETTINGS):
        return {}
    probe = subprocess.run(
        [*uv, "--system-certs", "--version"], capture_output=True, check=False, env=uv_env()
    )
    return {"UV_SYSTEM_CERTS": "1"} if probe.returncode == 0 else {"UV_NATIVE_TLS": "1"}


def uv_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment uv runs in: the caller's, without what would turn hash checks off."""
    env = {k: v for k, v in os.environ.items() if k not in ("UV_NO_VERIFY_HASHES",)}
    env.update(extra or {})
    return env


def run(command: list[str], env: dict[str, str] | None = None, **kwargs: object) -> None:
    result = subprocess.run(command, check=False, env=uv_env(env), **kwargs)  # type: ignore[call-overload]
    if result.returncode != 0:
        raise InstallError(f"`{' '.join(command)}` failed (exit {result.returncode})")


PROGRAMS = ("cody-client", "cody-daemon")


def install(uv: list[str]) -> None:
    venv = venv_dir()
    python = venv / "bin" / "python"
    trust = trust_env(uv)
    with tempfile.TemporaryDirectory() as tmp:
        requirements = Path(tmp) / "requirements.txt"
        build = Path(tmp) / "build.txt"
        # Exactly what uv.lock pins, each with the hashes uv.lock records.
        run(
            [*uv, "export", "--frozen", "--no-dev", "--no-emit-workspace", "--no-header",
             "--quiet", "-o", str(requirements)],
            cwd=REPO,
        )  # fmt: skip
        run(
            [*uv, "export", "--frozen", "--only-group", "build", "--no-emit-workspace",
             "--no-header", "--quiet", "-o", str(build)],
            cwd=REPO,
        )  # fmt: skip
        pinned = sum(1 for line in requirements.read_text().splitlines() if "==" in line)
        say(f"installing {pinned} dependencies at the versions and hashes uv.lock pins into {venv}")
        run([*uv, "venv", "--quiet", "--clear", "--python", sys.executable, str(venv)])
        # --quiet: uv's list of every package would bury this script's last lines (how to
        # start Cody); errors are still printed.
        run(
            [*uv, "pip", "sync", "--quiet", "--python", str(python), "--require-hashes",
             "--compile-bytecode", str(requirements)],
            env=trust, cwd=REPO,
        )  # fmt: skip
        say("building and installing Cody (cody-protocol, cody-daemon, cody-client)")
        run(
            [*uv, "pip", "install", "--quiet", "--python", str(python), "--no-deps",
             "--compile-bytecode", "--build-constraints", str(build), "--require-build-hashes",
             str(REPO / "protocol"), str(REPO / "daemon"), str(REPO / "clients")],
            env=trust, cwd=REPO,
        )  # fmt: skip
    drop_tool_install(uv)  # an install by an older install.py (`uv tool install`)
    target = bin_dir()
    target.mkdir(parents=True, exist_ok=True)
    for program in PROGRAMS:
        link(target / program, venv / "bin" / program)
    say(f"cody-client and cody-daemon are in {target}")
    say("update: `git pull && python3 install.py` · remove: `python3 install.py --uninstall`")
    if on_path(target):
        say("start: cody-client demo")
        return
    export = f'export PATH="{target}:$PATH"'
    if add_to_shell_path(uv):
        say(f"{target} is added to PATH by your shell's startup files, for new shells.")
        say(f"In this shell, run `{export}` first, or start with the full path:")
    else:
        say(f"{target} is not on your PATH: add `{export}` to your shell's startup file.")
        say("Until then, start with the full path:")
    say(f"start: {shell_path(target / 'cody-client')} demo")


def shell_path(path: Path) -> str:
    """`path` as a user types it: `~/...` under the home directory."""
    home = Path.home()
    return f"~/{path.relative_to(home)}" if path.is_relative_to(home) else str(path)


# -- the PATH lines in shell startup files ------------------------------------------------------


def startup_files() -> list[Path]:
    """Every file `uv tool update-shell` may write (uv-shell's list for bash, zsh, ksh, csh
    and fish), so that what it changed can be found by comparing them before and after."""
    home = Path.home()
    names = (".bash_profile", ".bash_login", ".profile", ".bashrc", ".kshrc", ".zshenv",
             ".cshrc", ".login")  # fmt: skip
    files = [home / name for name in names]
    zdotdir = os.environ.get("ZDOTDIR", "")
    if zdotdir:
        files.append(Path(zdotdir) / ".zshenv")
    config = os.environ.get("XDG_CONFIG_HOME", "")
    files.append((Path(config) if config else home / ".config") / "fish" / "config.fish")
    return files


def read_or_none(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8") if path.is_file() else None
    except (OSError, UnicodeDecodeError):
        return None


def path_lines_record() -> Path:
    """What this script added to startup files: kept next to the environment (and so by
    nobody else), read by --uninstall."""
    return install_dir() / "path-lines.json"


def add_to_shell_path(uv: list[str]) -> bool:
    """Run `uv tool update-shell` and record, per file, the text it added (or that it created
    the file). False when uv could not (an unknown shell)."""
    before = {str(path): read_or_none(path) for path in startup_files()}
    shell = subprocess.run(
        [*uv, "tool", "update-shell"], capture_output=True, check=False, env=uv_env()
    )
    added: list[dict[str, object]] = []
    for name, old in before.items():
        new = read_or_none(Path(name))
        if new is None or new == old:
            continue
        if old is None:
            added.append({"file": name, "created": True, "text": new})
        elif new.startswith(old):
            added.append({"file": name, "created": False, "text": new[len(old) :]})
    if added:
        record = path_lines_record()
        kept = json.loads(record.read_text()) if record.is_file() else []
        record.write_text(json.dumps(kept + added, indent=1) + "\n", encoding="utf-8")
    return shell.returncode == 0


def remove_path_lines() -> None:
    """Undo what add_to_shell_path recorded: each added text is cut out of its file where it
    still stands (the last occurrence), and a file it created is deleted only if nothing else
    was written to it since; anything the user changed around it stays."""
    record = path_lines_record()
    if not record.is_file():
        return
    try:
        entries = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        path, text = Path(str(entry.get("file", ""))), str(entry.get("text", ""))
        content = read_or_none(path)
        if not text or content is None or text not in content:
            continue
        if entry.get("created") is True and content.strip() == text.strip():
            path.unlink()
        else:
            at = content.rindex(text)
            path.write_text(content[:at] + content[at + len(text) :], encoding="utf-8")
        say(f"removed the PATH line it added to {shell_path(path)}")


def drop_tool_install(uv: list[str]) -> None:
    """Remove a `uv tool install` of Cody (what older versions of this script made)."""
    listed = subprocess.run(
        [*uv, "tool", "list"], capture_output=True, text=True, check=False, env=uv_env()
    )
    if listed.returncode == 0 and any(
        line.startswith("cody-client ") for line in listed.stdout.splitlines()
    ):
        run([*uv, "tool", "uninstall", "cody-client"])


def uninstall(uv: list[str] | None) -> None:
    if uv is not None:
        drop_tool_install(uv)
    venv = venv_dir()
    for program in PROGRAMS:
        at = bin_dir() / program
        if at.is_symlink() and Path(os.readlink(at)).parent == venv / "bin":
            at.unlink()
    remove_path_lines()
    if install_dir().exists():
        shutil.rmtree(install_dir())
    say("removed cody-client and cody-daemon")
    marker = bin_dir() / f".uv.{MARKER}"
    if marker.exists():
        (bin_dir() / "uv").unlink(missing_ok=True)
        marker.unlink()
        say(f"removed the uv this script installed in {bin_dir()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--uninstall", action="store_true", help="remove cody-client and cody-daemon"
    )
    args = parser.parse_args(argv)
    if sys.version_info < (3, 11):  # noqa: UP036 (this file also runs on older Pythons)
        print("install.py: Cody needs Python 3.11 or newer", file=sys.stderr)
        return 1
    try:
        uv = find_uv()
        if args.uninstall:
            uninstall(uv)
            return 0
        install(uv or download_uv())
    except (InstallError, OSError, ValueError) as exc:
        print(f"install.py: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
