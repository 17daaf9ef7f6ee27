"""Issue 20.5: text from the model, tools and session files reaches no terminal as a control
sequence; an approval shows the command that runs.

The real client on a real terminal (tmux, tests/support/tmux.py) with the real daemon and a
scripted hostile model. Each test checks the bytes the client wrote to its pty (no OSC, no C1
or bidi control, none of the model's cursor moves; the escaped text instead) and what the
screen shows; tmux itself is the witness for OSC 52 (`set-clipboard on` would turn one into
a paste buffer) and OSC 0 (the pane title).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.daemon import CodyEnv
from tests.support.mock_responses import MockResponsesServer, reasoning, text, tool_call
from tests.support.tmux import Tmux

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.reliability,
    pytest.mark.skipif(
        shutil.which("tmux") is None and os.environ.get("CI") != "true",
        reason="tmux is not installed",
    ),
]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "history"
CLAUDE_ID = "62ba3d6f-69b4-4fb2-b809-98dd28854f87"

FORGED = "touch PWNED;: \x1b[14Dls -la\x1b[K"
"""Shown raw, the terminal draws `ls -la` over `touch PWNED;: ` (issue 20.5)."""
FORGED_SHOWN = "touch PWNED;: ␛[14Dls -la␛[K"

TITLE = "cody-owned-title"
OSC52 = "\x1b]52;c;Q09EWS1QV05FRA==\x07"
OSC0 = f"\x1b]0;{TITLE}\x07"
OSC8 = "\x1b]8;;https://evil.example/osc8\x1b\\link\x1b]8;;\x1b\\"
MOVES = "\x1b[2A\x1b[5Cmoved\x1b[2J"
BIDI = "abc\u202edcba\u202c"
HOSTILE = f"{OSC52}{OSC0}{OSC8} {MOVES} {BIDI}"
HOSTILE_SHOWN = (
    "␛]52;c;Q09EWS1QV05FRA==␇␛]0;cody-owned-title␇␛]8;;https://evil.example/osc8␛\\link"
    "␛]8;;␛\\ ␛[2A␛[5Cmoved␛[2J abc<U+202E>dcba<U+202C>"
)
PRINT_HOSTILE = (
    r"printf '\033]52;c;Q09EWS1QV05FRA==\007\033]0;cody-owned-title\007"
    r"\033]8;;https://evil.example/osc8\033\\link\033]8;;\033\\ \033[2A\033[5Cmoved\033[2J"
    r" abc\342\200\256dcba\342\200\254\n'"
)
"""A command whose output is HOSTILE."""

ASK_MODE = ("--approval-policy", "untrusted")
"""The commands here must ask (under the default a sandboxed command runs unasked)."""
CHOICE = "choice ["
"""The one-key prompt (its keys depend on whether "always allow in this project" is offered)."""


NVIM_QUERIES = re.compile(r"\x1bP[$+]q[^\x1b]*\x1b\\|\x1b\]1[01];\?\x07")
"""What Neovim asks its terminal (DECRQSS, XTGETTCAP, OSC 10/11 colour queries)."""


def assert_nothing_raw_reached(tmux: Tmux, *raw: str, own: re.Pattern[str] | None = None) -> bytes:
    """Neither the client, prompt_toolkit nor rich sends an OSC, DCS, APC or PM string, a C1
    control or a bidi control (`own`: those the program sends itself, e.g. Neovim's queries):
    any there came from the text shown. Nor may `raw` (the hostile sequences in their
    context) be there."""
    output = tmux.output()
    decoded = output.decode("utf-8", "replace")
    if own is not None:
        decoded = own.sub("", decoded)
    strings = re.findall(r"\x1b[\]P_^X].{0,30}", decoded)
    assert strings == [], f"control strings reached the terminal: {strings}"
    controls = re.findall("[\x07\x80-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]", decoded)
    assert controls == [], f"raw controls reached the terminal: {controls}"
    for sequence in (*raw, MOVES, FORGED):
        assert sequence.encode() not in output, f"{sequence!r} reached the terminal raw"
    assert "Q09EWS1QV05FRA" not in tmux.clipboard(), "an OSC 52 set the clipboard"
    assert tmux.pane_title() != TITLE, "an OSC 0 set the terminal's title"
    return output


async def test_a_command_cannot_forge_its_approval_prompt(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """What the user approves is what runs: the title, the `$` line and the grant line show
    the cursor moves escaped, and `y` runs the `touch PWNED` they show."""
    cody_env.use_mock_provider(model.base_url)
    model.enqueue(tool_call("exec", {"command": FORGED}, call_id="c1"))
    model.enqueue(tool_call("exec", {"command": "echo hi\ncwd: /tmp/elsewhere"}, call_id="c2"))
    model.enqueue(text("done"))
    tmux = Tmux(cody_env, *ASK_MODE)
    try:
        await tmux.prompt_ready("mock/")
        tmux.keys("go", "Enter")
        screen = await tmux.wait_for(CHOICE)
        assert f"╭─ Approval needed: {FORGED_SHOWN}  [execute]" in screen
        assert f"│ $ {FORGED_SHOWN}\n" in screen
        assert f"applies to the command `bash -c '{FORGED_SHOWN}'`" in screen
        assert not (cody_env.workspace / "PWNED").exists()
        tmux.keys("y")

        # a newline in a command cannot fake the request's other lines
        screen = await tmux.wait_for(CHOICE, count=2)
        assert "╭─ Approval needed: echo hi␊cwd: /tmp/elsewhere  [execute]" in screen
        assert "│ $ echo hi\n│ > cwd: /tmp/elsewhere\n│ cwd: " in screen
        tmux.keys("n")
        await tmux.wait_for("stop: end_turn")
        assert (cody_env.workspace / "PWNED").is_file(), "the approved command ran as shown"
        output = assert_nothing_raw_reached(tmux)
        assert FORGED_SHOWN.encode() in output
    finally:
        tmux.close()


async def test_sequences_in_thoughts_output_and_markdown_stay_inert_in_the_chat(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    model.enqueue(
        reasoning(f"thinking {HOSTILE}"),
        tool_call("exec", {"command": PRINT_HOSTILE}, call_id="c1"),
    )
    model.enqueue(text(f"# Report\n\nreply {HOSTILE}\n\n[docs](https://evil.example/md)\n"))
    tmux = Tmux(cody_env, *ASK_MODE)
    try:
        await tmux.prompt_ready("mock/")
        tmux.keys("go", "Enter")
        await tmux.wait_for(CHOICE)
        tmux.keys("y")
        screen = await tmux.wait_for("stop: end_turn")
        flat = screen.replace("\n", "")  # long lines wrap at 150 columns
        assert f"thinking: thinking {HOSTILE_SHOWN}" in flat
        assert f"✓ {HOSTILE_SHOWN}" in flat, "the command's output"
        assert f"reply {HOSTILE_SHOWN}" in flat, "the markdown reply"
        assert "docs (https://evil.example/md)" in flat, "a link shows where it goes"
        assert "moved" in screen and "Report" in screen
        assert_nothing_raw_reached(tmux)
    finally:
        tmux.close()


async def test_exec_on_a_terminal_shows_sequences_inert(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """`cody-client exec` (plain text on stdout, the rest on stderr, both the terminal)."""
    cody_env.use_mock_provider(model.base_url)
    model.enqueue(
        reasoning(f"thinking {HOSTILE}"),
        tool_call("exec", {"command": PRINT_HOSTILE}, call_id="c1"),
    )
    model.enqueue(text(f"reply {HOSTILE}\n"))
    tmux = Tmux(cody_env, "exec", *ASK_MODE, "--approve", "allow", "go")
    try:
        screen = await tmux.wait_for("EXITED=0")
        flat = screen.replace("\n", "")
        assert f"thinking: thinking {HOSTILE_SHOWN}" in flat
        assert f"allowed by --approve allow: {PRINT_HOSTILE}" in flat
        assert f"✓ {HOSTILE_SHOWN}" in flat and f"reply {HOSTILE_SHOWN}" in flat
        assert_nothing_raw_reached(tmux)
    finally:
        tmux.close()


async def _run(env: CodyEnv, *args: str) -> str:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cody_client",
        *args,
        env=env.env,
        cwd=env.workspace,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    return out.decode()


async def _in_terminal(env: CodyEnv, *args: str) -> tuple[str, Tmux]:
    """Run a client command on a terminal to its end: (screen, the pane, to be closed)."""
    tmux = Tmux(env, *args)
    try:
        return await tmux.wait_for("EXITED="), tmux
    except BaseException:
        tmux.close()
        raise


@pytest.mark.timeout(120)
async def test_a_hostile_session_stays_inert_in_listings_and_replays(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """A session whose prompt (its title), directory name and history hold sequences:
    `sessions list`, `sessions show`, `history list` and `history show`."""
    cody_env.use_mock_provider(model.base_url)
    project = cody_env.workspace / f"repo{OSC0}\x1b[2J"
    project.mkdir()
    model.enqueue(
        reasoning(f"thinking {HOSTILE}"),
        tool_call("exec", {"command": PRINT_HOSTILE}, call_id="c1"),
    )
    model.enqueue(text(f"reply {HOSTILE}\n"))
    await _run(cody_env, "exec", "--approve", "allow", "--cwd", str(project), f"do {HOSTILE}")
    listing = await _run(cody_env, "sessions", "list")
    session_id = listing.split()[0]
    project_shown = "repo␛]0;cody-owned-title␇␛[2J"
    title_shown = f"{project_shown}  do {HOSTILE_SHOWN[:40]}"  # titles are cut at 80

    screen, tmux = await _in_terminal(cody_env, "sessions", "list")
    try:
        assert title_shown in screen.replace("\n", "")
        assert "EXITED=0" in screen
        assert_nothing_raw_reached(tmux, OSC0)
    finally:
        tmux.close()

    screen, tmux = await _in_terminal(cody_env, "sessions", "show", session_id)
    try:
        flat = screen.replace("\n", "")
        assert f"› do {HOSTILE_SHOWN}" in flat and f"reply {HOSTILE_SHOWN}" in flat
        # the command's output, inert, under its result mark (sessions show reads the file
        # as history show does)
        assert re.search(rf"✓ Exit code: 0.*Output:\s*{re.escape(HOSTILE_SHOWN)}", flat)
        assert_nothing_raw_reached(tmux)
    finally:
        tmux.close()

    screen, tmux = await _in_terminal(cody_env, "history", "list", "--agent", "cody")
    try:
        flat = screen.replace("\n", "")
        assert session_id in flat and title_shown in flat
        assert_nothing_raw_reached(tmux)
    finally:
        tmux.close()

    screen, tmux = await _in_terminal(cody_env, "history", "show", session_id)
    try:
        flat = screen.replace("\n", "")
        assert f"› do {HOSTILE_SHOWN}" in flat and f"reply {HOSTILE_SHOWN}" in flat
        assert f"thinking {HOSTILE_SHOWN}" in flat
        assert_nothing_raw_reached(tmux)
    finally:
        tmux.close()


def _hostile(value: object) -> object:
    """The Claude Code fixture with its prompt, command and output made hostile."""
    if isinstance(value, dict):
        return {key: _hostile(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_hostile(item) for item in value]
    if value == "run echo hello":
        return f"do {HOSTILE}"
    if value == "echo hello":
        return FORGED
    if value == "hello":
        return HOSTILE
    return value


async def test_a_hostile_claude_history_file_stays_inert(cody_env: CodyEnv) -> None:
    project = cody_env.root / "claude-config" / "projects" / "-home-dev-project"
    project.mkdir(parents=True)
    lines = [
        json.dumps(_hostile(json.loads(line)))
        for line in (FIXTURES / "claude" / "session.jsonl").read_text().splitlines()
    ]
    lines.append(
        json.dumps(
            {"type": "custom-title", "customTitle": f"title {HOSTILE}", "sessionId": CLAUDE_ID}
        )
    )
    path = project / f"{CLAUDE_ID}.jsonl"
    path.write_text("\n".join(lines) + "\n")

    screen, tmux = await _in_terminal(cody_env, "history", "list", "--agent", "claude")
    try:
        assert f"title {HOSTILE_SHOWN}" in screen.replace("\n", "")
        assert_nothing_raw_reached(tmux)
    finally:
        tmux.close()

    screen, tmux = await _in_terminal(cody_env, "history", "show", str(path))
    try:
        flat = screen.replace("\n", "")
        assert f"› do {HOSTILE_SHOWN}" in flat
        assert f"▸ Bash {FORGED_SHOWN}" in flat
        assert "EXITED=0" in screen
        assert_nothing_raw_reached(tmux)
    finally:
        tmux.close()


async def test_exec_json_keeps_every_string_and_escapes_the_controls(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """`exec --json` is for programs: the same strings, with no raw control on the stream
    (orjson alone writes DEL, C1 and bidi controls as they are)."""
    cody_env.use_mock_provider(model.base_url)
    hostile = f"{HOSTILE}\x7f\x9b2J"
    model.enqueue(reasoning(f"thinking {hostile}"), text(f"reply {hostile}"))
    out = await _run(cody_env, "exec", "--json", "go")
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e]", out), out
    texts = [event.get("text") for event in map(json.loads, out.splitlines())]
    assert f"thinking {hostile}" in texts and f"reply {hostile}" in texts


def _lua(text: str) -> str:
    """`text` as a Lua string literal (decimal escapes for every byte but plain ASCII)."""
    plain = {*range(0x20, 0x7F)} - {ord('"'), ord("\\")}
    body = "".join(chr(b) if b in plain else f"\\{b}" for b in text.encode())
    return f'"{body}"'


def _nvim() -> str | None:
    venv_nvim = Path(sys.executable).parent / "nvim"
    return str(venv_nvim) if venv_nvim.is_file() else shutil.which("nvim")


async def test_neovim_shows_an_approval_without_sending_its_sequences(cody_env: CodyEnv) -> None:
    """Neovim (0.11) sends a floating window's title to the terminal raw: the plugin's
    approval preview, titled with the command, set the clipboard and the terminal's title."""
    nvim = _nvim()
    if nvim is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI must run the Neovim tests")
        pytest.skip("Neovim is not installed")
    plugin = Path(__file__).resolve().parents[2] / "editor-plugins" / "nvim"
    command = f"printf ok #{OSC52}{OSC0}{MOVES}"
    script = cody_env.tmpdir / "start.lua"
    script.write_text(
        f"require('cody').setup({{cmd = {{{_lua(sys.executable)}, '-m', 'cody_daemon'}},"
        " approval_policy = 'untrusted'})\n"
        f"require('cody').prompt({_lua('run ' + command)})\n"
    )
    program = [nvim, "-u", "NONE", "-i", "NONE", "-n", "--cmd", f"set rtp+={plugin}"]
    tmux = Tmux(
        cody_env, "-c", "runtime plugin/cody.lua", "-c", f"luafile {script}", program=program
    )
    try:
        screen = await tmux.wait_for("Type number and <Enter>")
        assert "Cody: printf ok #␛]52;c;Q09EWS1QV05FRA==␇" in screen, "the preview's title"
        assert_nothing_raw_reached(tmux, own=NVIM_QUERIES)
        reject = re.search(r"^(\d+)\W+Reject$", screen, re.MULTILINE)
        assert reject is not None, screen
        tmux.keys(reject.group(1), "Enter")
        await tmux.wait_for("end_turn")
        tmux.keys(":qa!", "Enter")
        await tmux.wait_for("EXITED=0")
        assert_nothing_raw_reached(tmux, own=NVIM_QUERIES)
    finally:
        tmux.close()
