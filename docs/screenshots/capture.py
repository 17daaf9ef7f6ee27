"""Take the README's screenshots: real programs in tmux, captured with `capture-pane -pe`.

    uv run python docs/screenshots/capture.py [demo|chat|nvim|vscode|all]

Needs tmux and `rsvg-convert` (Debian: librsvg2-bin). The ANSI capture is turned into SVG
with rich, then into PNG. Sessions run with a temporary CODY_HOME and no API keys.
`vscode` runs tests/e2e/test_vscode_real.py (a real VS Code in chromium) and keeps its
approval screenshot.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def ansi_to_png(ansi: str, out: Path, title: str, width: int) -> None:
    from rich.console import Console
    from rich.text import Text

    with open(os.devnull, "w") as sink:
        console = Console(
            record=True, width=width, force_terminal=True, color_system="truecolor", file=sink
        )
        console.print(Text.from_ansi(ansi.rstrip("\n")))
    svg = out.with_suffix(".svg")
    # librsvg drops a text run's leading spaces unless told to keep them.
    markup = console.export_svg(title=title).replace("<svg ", '<svg xml:space="preserve" ', 1)
    svg.write_text(markup, encoding="utf-8")
    subprocess.run(["rsvg-convert", "-o", str(out), str(svg)], check=True)
    svg.unlink()


class Session:
    def __init__(
        self, command: list[str], env: dict[str, str], cwd: Path, width: int, height: int
    ) -> None:
        self.name = f"cody-shot-{uuid.uuid4().hex[:6]}"
        self.width = width
        env_args = [f"{key}={value}" for key, value in env.items()]
        line = subprocess.list2cmdline(
            ["env", "-i", *env_args, "TERM=xterm-256color", "COLORTERM=truecolor", *command]
        )
        subprocess.run(
            [
                "tmux",
                "new-session",
                "-d",
                "-s",
                self.name,
                "-x",
                str(width),
                "-y",
                str(height),
                "-c",
                str(cwd),
                line + "; sleep 60",
            ],
            check=True,
        )

    def screen(self, escapes: bool = False) -> str:
        args = ["tmux", "capture-pane", "-p", "-t", self.name]
        if escapes:
            args.insert(2, "-e")
        return subprocess.run(args, capture_output=True, text=True, check=True).stdout

    def wait_for(self, needle: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.screen():
            if time.monotonic() > deadline:
                raise SystemExit(f"timed out waiting for {needle!r}:\n{self.screen()}")
            time.sleep(0.1)

    def keys(self, *keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], check=False)


def environment(root: Path) -> dict[str, str]:
    for name in ("home", "cody-home", "tmp"):
        (root / name).mkdir(parents=True, exist_ok=True)
    return {
        "PATH": os.environ["PATH"],
        "LANG": "C.UTF-8",
        "HOME": str(root / "home"),
        "CODY_HOME": str(root / "cody-home"),
        "TMPDIR": str(root / "tmp"),
    }


def shot_demo(root: Path) -> None:
    session = Session(
        [sys.executable, "-m", "cody_client", "demo"], environment(root), root, 110, 62
    )
    try:
        session.wait_for("choice [y/a/n/r/c]:")
        session.keys("y")  # one key answers; no Enter
        session.wait_for("new file")
        time.sleep(0.5)
        ansi_to_png(
            session.screen(escapes=True),
            HERE / "cody-client-approval.png",
            "cody-client demo",
            session.width,
        )
        session.keys("a")
        session.wait_for("Replay it:")
        time.sleep(0.3)
    finally:
        session.close()


def shot_nvim(root: Path) -> None:
    nvim = shutil.which("nvim", path=str(Path(sys.executable).parent)) or shutil.which("nvim")
    plugin = ROOT / "editor-plugins" / "nvim"
    if nvim is None or not plugin.exists():
        raise SystemExit("nvim or the plugin is missing")
    workspace = root / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "hello.py").write_text('print("hello")\n')
    init = root / "init.lua"
    daemon = [sys.executable, "-m", "cody_daemon"]
    init.write_text(
        f"vim.opt.rtp:prepend({str(plugin)!r})\n"
        "vim.opt.termguicolors = true\n"
        f"require('cody').setup({{ cmd = {{ {', '.join(repr(part) for part in daemon)} }} }})\n"
    )
    session = Session(
        [nvim, "-u", str(init), str(workspace / "hello.py")], environment(root), workspace, 120, 40
    )
    try:
        time.sleep(1.0)
        session.keys(":Cody list files", "Enter")
        session.wait_for("end_turn")
        time.sleep(0.5)
        ansi_to_png(
            session.screen(escapes=True), HERE / "nvim-chat.png", "Neovim :Cody", session.width
        )
    finally:
        session.close()


def shot_vscode() -> None:
    """The VS Code e2e test screenshots every step; its approval step is the README's."""
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "tests/e2e/test_vscode_real.py"],
        cwd=ROOT,
        check=True,
    )
    shutil.copy(
        ROOT / "tests" / "vscode-e2e" / "output" / "04-edit-approval.png",
        HERE / "vscode-approval.png",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "which", nargs="?", default="all", choices=("demo", "nvim", "vscode", "all")
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if args.which in ("demo", "all"):
            shot_demo(root / "demo")
        if args.which in ("nvim", "all"):
            shot_nvim(root / "nvim")
        if args.which in ("vscode", "all"):
            shot_vscode()


if __name__ == "__main__":
    main()
