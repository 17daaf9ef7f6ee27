"""Skipping (locally) or failing (CI) a test that needs a working bubblewrap."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .daemon import CodyEnv

__all__ = ["require_bwrap"]


def require_bwrap(env: CodyEnv) -> None:
    """Tests about the sandbox need it; without bubblewrap exec is unsandboxed by design."""
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "from cody_daemon.policy.sandbox import bwrap_path as p; print(p())",
        ],
        env=env.env,
        capture_output=True,
        text=True,
        check=True,
    )
    if probe.stdout.strip() == "None":
        if os.environ.get("CI") == "true":
            pytest.fail("bubblewrap is required in CI but is not usable")
        pytest.skip("bubblewrap (bwrap) is not usable on this machine")
