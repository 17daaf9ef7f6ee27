"""Slash commands are tables of handlers: the daemon's (engine/slash.py `COMMANDS`,
engine/slash_runner.py `HANDLERS`) and the terminal's own (cody_client/chat.py `COMMANDS`).
Every command has exactly its handler; an unknown one is an error, never another command
(before, a `local` command registered without its branch silently ran `/history`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cody_client import chat
from cody_daemon.engine import slash_runner
from cody_daemon.engine.slash import COMMANDS, CommandCall, SlashCommand
from cody_daemon.engine.slash_runner import HANDLERS, run_local_command

from tests.support.engine import EngineHarness
from tests.support.mock_responses import text


def test_every_local_command_has_exactly_its_handler() -> None:
    assert set(HANDLERS) == {c.name for c in COMMANDS if c.kind == "local"}


def test_every_turn_command_has_its_prompt() -> None:
    for command in COMMANDS:
        if command.kind == "turn":
            prompt = CommandCall(command=command, argument="focus").turn_prompt()
            assert prompt[0].text.startswith(f"/{command.name}: "), command.name  # type: ignore[union-attr]


async def test_a_local_command_without_a_handler_is_an_error_not_another_command(
    tmp_path: Path,
) -> None:
    async with EngineHarness(tmp_path) as engine:
        engine.model.enqueue(text("a first answer"))
        sid = await engine.new_session()
        await engine.prompt(sid, "hello")
        session = engine.manager.get(sid)
        orphan = SlashCommand(name="teleport", description="registered, never implemented")
        shown = len(engine.link.of(sid))

        with pytest.raises(RuntimeError, match="/teleport has no handler"):
            await run_local_command(
                engine.manager, session, CommandCall(command=orphan, argument=""), engine.link
            )
        assert engine.link.of(sid)[shown:] == [], "nothing was answered in its place"


async def test_a_command_listed_without_its_handler_fails_when_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The table check itself: drop one handler, and `/history` says so instead of running."""
    monkeypatch.setattr(
        slash_runner, "HANDLERS", {k: v for k, v in HANDLERS.items() if k != "history"}
    )
    async with EngineHarness(tmp_path) as engine:
        sid = await engine.new_session()
        with pytest.raises(RuntimeError, match="/history has no handler"):
            await engine.prompt(sid, "/history")


def test_the_terminals_commands_each_have_a_handler_and_a_help_line() -> None:
    for name, command in chat.COMMANDS.items():
        assert name.startswith("/") and callable(command.run), name
        assert name in chat.HELP, f"{name} is not in /help"
    for name in chat.DAEMON_COMMANDS:
        assert name in chat.HELP, f"{name} is not in /help"


def test_the_terminal_sends_exactly_the_daemons_turn_commands_to_it() -> None:
    """/init and /review are the daemon's (a prompt); its local ones the terminal runs itself."""
    assert {f"/{c.name}" for c in COMMANDS if c.kind == "turn"} == chat.DAEMON_COMMANDS
    assert {f"/{c.name}" for c in COMMANDS if c.kind == "local"} <= set(chat.COMMANDS)
