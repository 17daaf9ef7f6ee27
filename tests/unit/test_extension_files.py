"""The pure parts of extensions/: front matter, argument expansion as each agent numbers
arguments, `@path` references, hook definitions and matchers, hook answers, and the skills
item's budget."""

from __future__ import annotations

from pathlib import Path

import pytest
from cody_daemon.engine.skills_context import skills_budget, skills_text
from cody_daemon.extensions.expand import SHELL_MARK, ExpansionError, expand, file_references
from cody_daemon.extensions.front_matter import flag, split_front_matter, text_field
from cody_daemon.extensions.hook_output import MAX_TEXT, read_answer
from cody_daemon.extensions.hook_runner import HookRun
from cody_daemon.extensions.hooks_config import HookSpec, parse_hooks
from cody_daemon.extensions.skills import Skill


def test_front_matter_reads_the_yaml_the_peers_write() -> None:
    fields, body = split_front_matter(
        "---\n"
        "description: 'Say hi: loudly'\n"
        "argument-hint: [name] [greeting]\n"
        "allowed-tools: Bash(git status:*), Read\n"
        "tags:\n  - a\n  - 'b c'\n"
        "long: >\n  one\n  two\n"
        "block: |\n  line 1\n  line 2\n"
        "metadata:\n  author: x\n"
        "disable-model-invocation: true\n"
        "---\nBody $ARGUMENTS\n"
    )
    assert body == "Body $ARGUMENTS\n"
    assert fields["description"] == "Say hi: loudly"
    assert text_field(fields, "argument-hint", as_written=True) == "[name] [greeting]"
    assert fields["tags"] == ["a", "b c"]
    assert fields["long"] == "one two"
    assert fields["block"] == "line 1\nline 2"
    assert "metadata" not in fields and "author" not in fields
    assert flag(fields, "disable-model-invocation", False) is True
    assert text_field(fields, "allowed-tools") == "Bash(git status:*), Read"


@pytest.mark.parametrize(
    "text",
    ["no front matter\n", "---\nunclosed: yes\nbody\n", "---\n" + "x: 1\n" * 500 + "---\nbody"],
)
def test_text_without_a_closed_block_is_all_body(text: str) -> None:
    assert split_front_matter(text) == ({}, text)


def test_claude_and_cody_number_arguments_from_zero() -> None:
    got = expand("a=$0 b=$1 c=$ARGUMENTS[2] all=$ARGUMENTS", 'x "y z" w', "claude", name="t")
    assert got.text == 'a=x b=y z c=w all=x "y z" w'
    assert expand("$1", "only", "cody", name="t").text == ""


def test_codex_numbers_from_one_keeps_double_dollar_and_wants_every_named_argument() -> None:
    assert expand("$1-$2 ($ARGUMENTS) $$1", "a b", "codex", name="p").text == "a-b (a b) $$1"
    assert expand("Fix $FILE: $WHY", 'FILE=a.py WHY="it breaks"', "codex", name="p").text == (
        "Fix a.py: it breaks"
    )
    with pytest.raises(ExpansionError, match="needs WHY"):
        expand("Fix $FILE: $WHY", "FILE=a.py", "codex", name="p")
    with pytest.raises(ExpansionError, match="KEY=value"):
        expand("Fix $FILE", "a.py", "codex", name="p")


def test_arguments_are_never_dropped() -> None:
    assert expand("Review the diff.", "focus on errors", "claude", name="r").text == (
        "Review the diff.\n\nARGUMENTS: focus on errors"
    )
    assert expand("Review the diff.", "", "claude", name="r").text == "Review the diff."


def test_shell_commands_are_taken_out_before_arguments_go_in() -> None:
    got = expand(
        "Status: !`git log -n $0`\nUser says: $ARGUMENTS", "3 !`rm -rf /`", "claude", name="c"
    )
    assert got.shell == ("git log -n 3",)
    assert f"Status: {SHELL_MARK}0{SHELL_MARK}" in got.text
    assert "!`rm -rf /`" in got.text, "an argument never becomes a command of its own"


def test_file_references() -> None:
    assert file_references("see @README.md, @src/a.py and mail me@host.org (@docs/x.md)") == [
        "README.md",
        "src/a.py",
    ]
    assert file_references("@a @a") == ["a"]


def test_hook_definitions_and_matchers() -> None:
    warnings: list[str] = []
    specs = parse_hooks(
        {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "a", "timeout": 5}]},
                {"matcher": "Edit|Write", "hooks": [{"command": "b"}]},
                {"matcher": "^mcp__.*", "hooks": [{"type": "command", "command": "c"}]},
                {"matcher": "[", "hooks": [{"type": "command", "command": "bad"}]},
                {"hooks": [{"type": "prompt", "prompt": "x"}]},
            ],
            "Stop": [{"matcher": "ignored", "hooks": [{"type": "command", "command": "d"}]}],
            "SubagentStop": [],
            "Bogus": [],
        },
        source="/x/hooks.json",
        scope="user",
        warnings=warnings,
    )
    by = {spec.command: spec for spec in specs}
    assert set(by) == {"a", "b", "c", "d"}
    assert by["a"].timeout_s == 5 and by["b"].timeout_s == 60
    assert by["a"].matches(("exec", "Bash")) and not by["a"].matches(("exec", "BashOutput"))
    assert by["b"].matches(("applyPatch", "Edit")) and not by["b"].matches(("readFile", "Read"))
    assert by["c"].matches(("mcp__github__list",))
    assert by["d"].matches(()), "Stop ignores matchers"
    text = "\n".join(warnings)
    assert "matcher '[' is invalid" in text and "not 'prompt'" in text
    assert "Cody does not run SubagentStop hooks" in text and "'Bogus'" in text


def spec(event: str = "PreToolUse", **extra: object) -> HookSpec:
    return HookSpec(event=event, command="h", source="s", **extra)  # type: ignore[arg-type]


def test_hook_answers_as_claude_code_documents_them() -> None:
    assert read_answer(spec(), HookRun(2, stderr="no rm\n")).reason == "no rm"
    deny = read_answer(
        spec(),
        HookRun(
            0,
            stdout='{"hookSpecificOutput": {"permissionDecision": "deny", '
            '"permissionDecisionReason": "policy"}}',
        ),
    )
    assert deny.decision == "deny" and deny.blocked and deny.reason == "policy"
    assert read_answer(spec(), HookRun(0, stdout='{"decision": "approve"}')).decision == "allow"
    assert read_answer(spec(), HookRun(1, stderr="boom")).failure == "exited with code 1: boom"
    assert "timed out" in (read_answer(spec(), HookRun(None, timed_out=True)).failure or "")
    assert read_answer(spec(), HookRun(0, stdout="{not json")).failure
    assert read_answer(spec("UserPromptSubmit"), HookRun(0, stdout="plain")).context == "plain"
    assert read_answer(spec("Stop"), HookRun(0, stdout="plain")).context == ""
    long = read_answer(spec("SessionStart"), HookRun(0, stdout="x" * (MAX_TEXT + 50)))
    assert len(long.context) < MAX_TEXT + 100
    permission = read_answer(
        spec("PermissionRequest"),
        HookRun(0, stdout='{"hookSpecificOutput": {"decision": {"behavior": "allow"}}}'),
    )
    assert permission.decision == "allow"
    stopped = read_answer(spec(), HookRun(0, stdout='{"continue": false, "stopReason": "enough"}'))
    assert stopped.stop_turn and stopped.stop_reason == "enough"


def skill(index: int) -> Skill:
    return Skill(
        name=f"s{index:03d}",
        description="does one thing of the checklist " * 2,
        path=Path(f"/skills/s{index:03d}/SKILL.md"),
        scope="user",
        origin="agents",
        root=None,
    )


@pytest.mark.parametrize("window", [8_000, 32_000, 128_000, 1_000_000])
def test_the_skills_item_keeps_its_budget_whatever_the_window(window: int) -> None:
    skills = [skill(i) for i in range(300)]
    text = skills_text(skills, window)
    assert len(text) <= skills_budget(window)
    if window == 1_000_000:
        assert "Not listed" not in text and text.count("\n- s") == 300
    elif text:
        listed = text.count("\n- s")
        assert f"Not listed, for lack of room ({300 - listed})" in text
