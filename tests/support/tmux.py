"""cody-client in a real terminal: a tmux pane on a private tmux server.

`Tmux(env, *args)` runs `python -m cody_client ARGS` (or `program`, e.g. Neovim) in a 150x50
pane (cwd: the workspace) and records every byte the client writes to its pty (`tmux pipe-pane`, started before the
client runs), so a test can check both what the screen shows (`screen()`) and what reached
the terminal (`output()`). Each instance has its own tmux server (`-L`, no config file), with
`set-clipboard on`: an OSC 52 the pane receives becomes a tmux paste buffer
(`clipboard()`), an OSC 0/2 the pane title (`pane_title()`). The pane stays open after the
client exits (`EXITED=<code>` is printed) until `close()`.
"""

from __future__ import annotations

import asyncio
import shlex
import subprocess
import sys
import time
import uuid
from pathlib import Path

from .daemon import CodyEnv

__all__ = ["Tmux"]


class Tmux:
    def __init__(
        self, env: CodyEnv, *args: str, width: int = 150, program: list[str] | None = None
    ) -> None:
        self.name = f"cody-chat-{uuid.uuid4().hex[:8]}"
        self.socket = f"cody-test-{uuid.uuid4().hex[:12]}"
        self.recording = env.tmpdir / f"{self.name}.pty"
        gate = env.tmpdir / f"{self.name}.go"
        env_args = [f"{key}={value}" for key, value in env.env.items()]
        command = [
            "env",
            "-i",
            *env_args,
            "TERM=xterm-256color",
            *(program or [sys.executable, "-m", "cody_client"]),
            *args,
        ]
        wait = f"until [ -e {shlex.quote(str(gate))} ]; do sleep 0.02; done; "
        self._tmux(
            "new-session",
            "-d",
            "-s",
            self.name,
            "-x",
            str(width),
            "-y",
            "50",
            "-c",
            str(env.workspace),
            wait + shlex.join(command) + "; echo EXITED=$?; sleep 30",
        )
        self._tmux("set-option", "-s", "set-clipboard", "on")
        self._tmux("pipe-pane", "-O", "-t", self.name, f"cat >> {shlex.quote(str(self.recording))}")
        gate.touch()

    def _tmux(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", self.name, "-S", "-300")

    def output(self) -> bytes:
        """Every byte the pane's programs wrote to the terminal so far."""
        return self.recording.read_bytes() if self.recording.exists() else b""

    def clipboard(self) -> str:
        """tmux's paste buffers: what OSC 52 sequences set."""
        return self._tmux("list-buffers")

    def pane_title(self) -> str:
        return self._tmux("display-message", "-p", "-t", self.name, "#{pane_title}").strip()

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", self.name, *keys)

    async def wait_for(self, needle: str, count: int = 1, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if screen.count(needle) >= count:
                return screen
            await asyncio.sleep(0.1)
        raise AssertionError(f"{needle!r} did not appear:\n{self.screen()}")

    async def prompt_ready(self, toolbar_start: str, timeout: float = 30) -> None:
        """Wait until the input prompt is up (its bottom bar shows): keys typed before that
        pass through the tty's line discipline, which turns Enter into Ctrl-J."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(line.startswith(toolbar_start) for line in self.screen().splitlines()):
                return
            await asyncio.sleep(0.1)
        raise AssertionError(f"the prompt did not come up:\n{self.screen()}")

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, check=False)
        Path(self.recording).unlink(missing_ok=True)
