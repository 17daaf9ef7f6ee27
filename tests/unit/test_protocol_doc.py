"""docs/protocol.md cannot drift from the wire models.

The page must name every method (cody_protocol.methods), every extension the daemon advertises
(`cody_protocol.methods.extensions()`, as rows of its extension table), every error code (rows of its
error table), every `sessionUpdate` kind (rows of its update table), every `session/new`
`_meta.cody` field and every config option id with its ACP category (rows of its settings
table, categories compared with what engine/settings.py builds for native and backend
sessions), and every permission option id and kind (rows of its approval table). The tables
must not list anything the code does not have either.

The checker is tested on copies of the page with one name deleted (or a category changed):
each must be reported, so a check that silently passes would fail here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import pytest
from cody_daemon.engine.settings import SessionSettings, build_config_options
from cody_protocol.errors import ErrorCode, ProviderErrorKind
from cody_protocol.methods import METHODS, extensions
from cody_protocol.permission import ALLOW_PROJECT, LEGACY_OPTION_IDS, PERMISSION_OPTIONS
from cody_protocol.prompt import StopReason
from cody_protocol.session import CodySessionMeta, SessionConfigOption
from cody_protocol.settings import Backend
from cody_protocol.updates import SessionUpdate, ToolKind

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "protocol.md"

# -- what the code has ---------------------------------------------------------------------


def method_names() -> set[str]:
    return set(METHODS)


def update_kinds() -> set[str]:
    (union,) = get_args(SessionUpdate)[:1]
    kinds = set()
    for model in get_args(union):
        default = model.model_fields["session_update"].default
        assert isinstance(default, str)
        kinds.add(default)
    return kinds


def session_meta_fields() -> set[str]:
    schema = CodySessionMeta.model_json_schema(by_alias=True)
    return set(schema["properties"])


def config_options() -> dict[str, str | None]:
    """Option id -> ACP category, over a native and a backend session."""
    found: dict[str, str | None] = {}
    backends: tuple[Backend, ...] = ("native", "codex")
    for backend in backends:
        settings = SessionSettings(
            provider="offline",
            model="offline",
            approval_policy="on-request",
            sandbox_mode="workspace-write",
            backend=backend,
        )
        options: list[SessionConfigOption] = build_config_options(
            settings, ["offline", "openai"], ["offline"]
        )
        for option in options:
            assert found.get(option.id, option.category) == option.category
            found[option.id] = option.category
    return found


def literal_values(literal: Any) -> set[str]:
    return {str(value) for value in get_args(literal)}


@dataclass(frozen=True)
class Expected:
    methods: set[str]
    extensions: set[str]
    error_codes: set[str]
    update_kinds: set[str]
    meta_fields: set[str]
    options: dict[str, str | None]
    permission_options: set[tuple[str, str]]
    legacy_option_ids: set[str]
    spans: set[str]
    """Other names that must appear as code: stop reasons, tool kinds, provider error kinds."""


def expected() -> Expected:
    return Expected(
        methods=method_names(),
        extensions=set(extensions()),
        error_codes={str(int(code)) for code in ErrorCode},
        update_kinds=update_kinds(),
        meta_fields=session_meta_fields(),
        options=config_options(),
        permission_options={(o.option_id, o.kind) for o in PERMISSION_OPTIONS}
        | {(ALLOW_PROJECT, "allow_always")},
        legacy_option_ids=set(LEGACY_OPTION_IDS),
        spans=literal_values(StopReason)
        | literal_values(ToolKind)
        | literal_values(ProviderErrorKind),
    )


# -- reading the page -----------------------------------------------------------------------


_TOKEN = r"[\w$/.-]+"
"""A name inside code: `session/list {cwd?}` names `session/list`, `{kind: "auth"}` `auth`."""


def code_spans(text: str) -> set[str]:
    """Every name written as code: whole spans and the tokens inside them."""
    spans = re.findall(r"`([^`\n]+)`", text)
    return set(spans) | {token for span in spans for token in re.findall(_TOKEN, span)}


def _token(name: str) -> str:
    return rf"(?<![\w$/.-]){re.escape(name)}(?![\w$/.-])"


def first_code(cell: str) -> str | None:
    match = re.search(r"`([^`]+)`", cell)
    return match.group(1) if match else None


def table(text: str, first_header: str) -> list[list[str]]:
    """The body rows (as cells) of the table whose first header cell is `first_header`
    (backticks ignored); [] when there is none."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if not line.startswith("|"):
            continue
        header = _cells(line)
        if header[0].replace("`", "") != first_header:
            continue
        rows = []
        for row in lines[index + 2 :]:
            if not row.startswith("|"):
                break
            rows.append(_cells(row))
        return rows
    return []


def _cells(line: str) -> list[str]:
    # `\|` inside a cell is an escaped pipe, not a separator.
    parts = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [part.strip() for part in parts]


def column(rows: list[list[str]], index: int) -> set[str]:
    return {code for row in rows if len(row) > index and (code := first_code(row[index]))}


def check(text: str, want: Expected) -> list[str]:
    """Every way `text` (a version of docs/protocol.md) disagrees with the code."""
    problems: list[str] = []
    spans = code_spans(text)

    def need(kind: str, names: set[str], have: set[str]) -> None:
        problems.extend(f"{kind} `{name}` is not documented" for name in sorted(names - have))

    def only(kind: str, names: set[str], have: set[str]) -> None:
        problems.extend(
            f"{kind} `{name}` does not exist in the code" for name in sorted(have - names)
        )

    need("method", want.methods, spans)

    extension_rows = table(text, "method")
    need("extension", want.extensions, column(extension_rows, 0))
    only("extension", want.extensions, column(extension_rows, 0))

    error_rows = table(text, "code")
    need("error code", want.error_codes, column(error_rows, 0))
    only("error code", want.error_codes, column(error_rows, 0))

    update_rows = table(text, "sessionUpdate")
    need("sessionUpdate kind", want.update_kinds, column(update_rows, 0))
    only("sessionUpdate kind", want.update_kinds, column(update_rows, 0))

    settings_rows = table(text, "config key (config.toml)")
    need("_meta.cody field", want.meta_fields, column(settings_rows, 1))
    only("_meta.cody field", want.meta_fields, column(settings_rows, 1))
    need("config option", set(want.options), column(settings_rows, 2))
    only("config option", set(want.options), column(settings_rows, 2))
    for row in settings_rows:
        option = first_code(row[2]) if len(row) > 3 else None
        if option in want.options:
            documented = first_code(row[3])
            if documented != want.options[option]:
                problems.append(
                    f"config option `{option}` has category {want.options[option]!r}, "
                    f"documented as {documented!r}"
                )

    permission_rows = table(text, "optionId")
    documented_options = {
        (first_code(row[0]), first_code(row[1])) for row in permission_rows if len(row) > 1
    }
    for option_id, kind in sorted(want.permission_options):
        if (option_id, kind) not in documented_options:
            problems.append(f"permission option `{option_id}` (kind `{kind}`) is not documented")
    need("old permission option id", want.legacy_option_ids, spans)

    need("name", want.spans, spans)
    return problems


# -- the tests ------------------------------------------------------------------------------


def test_the_protocol_reference_matches_the_models() -> None:
    assert check(DOC.read_text(encoding="utf-8"), expected()) == []


def test_the_code_side_is_not_empty() -> None:
    """A broken introspection (no options, no kinds) would make every check pass."""
    want = expected()
    assert {"session/prompt", "session/fork", "_cody/mcp/status", "$/cancel_request"} <= (
        want.methods
    )
    assert "_cody/agents/list" in want.extensions
    assert {"-32700", "-32011"} <= want.error_codes
    assert {"tool_call", "available_commands_update"} <= want.update_kinds
    assert {"approvalPolicy", "allowedTools", "backend"} <= want.meta_fields
    assert want.options["reasoning_effort"] == "thought_level"
    assert want.options["backend"] == "_cody_backend"
    assert want.options["provider"] is None
    assert ("allow_always", "allow_always") in want.permission_options


def _all_names(want: Expected) -> list[str]:
    names = (
        want.methods
        | want.extensions
        | want.error_codes
        | want.update_kinds
        | want.meta_fields
        | set(want.options)
        | {option_id for option_id, _ in want.permission_options}
        | want.legacy_option_ids
        | want.spans
    )
    return sorted(names)


def _mentions(line: str, name: str) -> bool:
    return any(re.search(_token(name), span) for span in re.findall(r"`([^`\n]+)`", line))


def _delete(text: str, name: str) -> str:
    """The page without `name`: table rows naming it dropped, other mentions removed."""
    kept = [
        line for line in text.splitlines() if not (line.startswith("|") and _mentions(line, name))
    ]
    return re.sub(
        r"`([^`\n]+)`",
        lambda span: "`" + re.sub(_token(name), "", span.group(1)) + "`",
        "\n".join(kept),
    )


@pytest.mark.parametrize("name", _all_names(expected()))
def test_the_checker_reports_a_name_deleted_from_the_page(name: str) -> None:
    text = DOC.read_text(encoding="utf-8")
    assert name in code_spans(text)
    problems = check(_delete(text, name), expected())
    assert any(f"`{name}`" in problem for problem in problems), problems


def test_the_checker_reports_a_wrong_category() -> None:
    text = DOC.read_text(encoding="utf-8")
    row = "| `model_reasoning_effort` | `reasoningEffort` | `reasoning_effort` | `thought_level` |"
    assert row in text
    wrong = text.replace(row, row.replace("`thought_level`", "`model`"))
    problems = check(wrong, expected())
    assert any("`reasoning_effort` has category 'thought_level'" in p for p in problems), problems


def test_the_checker_reports_a_documented_extension_the_daemon_lacks() -> None:
    text = DOC.read_text(encoding="utf-8")
    extra = "| `_cody/session/rewind` | `{sessionId}` | `{}` |"
    anchor = "| `_cody/session/compact` |"
    assert anchor in text
    problems = check(text.replace(anchor, f"{extra}\n{anchor}", 1), expected())
    assert "extension `_cody/session/rewind` does not exist in the code" in problems
