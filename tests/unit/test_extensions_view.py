"""What cody-client shows of a session's commands, skills and hooks: a repository chooses
every name, description and command, so each line stays one inert line; `/help` rows,
Tab completion, the hook report, doctor's lines."""

from __future__ import annotations

from cody_client.chat_input import SlashCompleter
from cody_client.extensions_view import (
    command_help_rows,
    extension_lines,
    hook_status_line,
    skill_command,
)
from cody_protocol.extensions import HookStatusNotification
from cody_protocol.session import CustomCommandInfo, HookInfo, SkillInfo
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

HOSTILE = "evil\x1b[2J\nfake line\u202e"


def command(name: str = "hello", description: str = "Greets") -> CustomCommandInfo:
    return CustomCommandInfo(
        name=name,
        description=description,
        source="/repo/.claude/commands/hello.md",
        scope="project",
        origin="claude",
        hint="[name]",
    )


def assert_one_inert_line(text: str) -> None:
    assert "\n" not in text and "\x1b" not in text and "\u202e" not in text


def test_help_rows_name_what_each_command_does_and_whence() -> None:
    (row,) = command_help_rows([command()])
    assert row == ("/hello [name]", "Greets (project claude)")
    skill = SkillInfo(
        name="pdf", description="Fills forms", path="/s/pdf/SKILL.md", scope="user", origin="agents"
    )
    assert command_help_rows([skill_command(skill)]) == [("/pdf", "Fills forms (user skill)")]


def test_hostile_names_descriptions_and_commands_stay_one_inert_line() -> None:
    usage, text = command_help_rows([command(HOSTILE, HOSTILE * 20)])[0]
    assert_one_inert_line(usage)
    assert_one_inert_line(text)
    assert len(text) < 200, "cut to a line"
    report = HookStatusNotification(
        session_id="s",
        event="PreToolUse",
        command=HOSTILE,
        source=HOSTILE,
        status="failed",
        message=HOSTILE,
    )
    assert_one_inert_line(hook_status_line(report))
    hook = HookInfo(event="Stop", command=HOSTILE, source="/x", scope="user", timeout_sec=60)
    skill = SkillInfo(name=HOSTILE, description="d", path=HOSTILE, scope="user", origin="cody")
    for line in extension_lines(
        [command(HOSTILE)], [skill], [hook], "/repo", disabled_skills=[skill]
    ):
        assert_one_inert_line(line)


def test_doctor_counts_and_lists_where_each_came_from() -> None:
    hook = HookInfo(
        event="PreToolUse",
        command="./no-rm.sh",
        source="/repo/.claude/settings.json",
        scope="project",
        timeout_sec=60,
        matcher="Bash",
    )
    lines = extension_lines([command()], [], [hook], "/repo")
    assert lines[0] == "Commands      1 custom command"
    assert lines[1].startswith("  /hello") and lines[1].endswith(".claude/commands/hello.md")
    assert "Skills        none" in lines
    assert "  PreToolUse [Bash]: ./no-rm.sh  (.claude/settings.json)" in lines


def test_tab_completes_slash_commands_at_the_start_only() -> None:
    completer = SlashCompleter(
        lambda: [("/hello", "Greets"), ("/help", "this help"), ("/model", "m")]
    )

    def names(text: str) -> list[str]:
        found = completer.get_completions(Document(text, len(text)), CompleteEvent())
        return [completion.text for completion in found]

    assert names("/he") == ["/hello", "/help"]
    assert names("/hello wor") == []
    assert names("say /he") == []
    assert names("/") == ["/hello", "/help", "/model"]
