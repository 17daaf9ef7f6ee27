"""`cody-daemon` alone (how editors start it) means the parser's defaults, without argparse."""

from __future__ import annotations

import subprocess
import sys

from cody_daemon.cli import Options, parse_args


def test_no_arguments_are_the_parsers_defaults() -> None:
    assert parse_args([]) == Options()
    assert parse_args(["--framing", "auto"]) == Options()
    assert parse_args(["-v"]) == Options(verbose=1)


def test_options_are_parsed() -> None:
    options = parse_args(["--framing", "ndjson", "--no-warm-up", "--stall-timeout", "5"])
    assert options == Options(framing="ndjson", warm_up=False, stall_timeout=5.0)
    assert parse_args(["--listen"]).listen == [""]
    both = parse_args(["--listen", "--listen", "ws://127.0.0.1:0", "--allow-remote"])
    assert both.listen == ["", "ws://127.0.0.1:0"] and both.allow_remote


def test_no_arguments_import_no_argparse() -> None:
    code = (
        "import sys\nfrom cody_daemon import cli\ncli.parse_args([])\n"
        "print('argparse' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    )
    assert result.stdout.strip() == "False"
