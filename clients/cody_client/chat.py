"""Interactive chat: `cody-client [PROMPT]`.

Enter sends; Ctrl-C interrupts the running turn (a second Ctrl-C quits); Ctrl-D quits. While
a turn runs the input line stays up: Enter steers the turn, Tab queues the next prompt
(chat_turns.py). `@path` completes a file of the workspace and sends it along; `/image PATH`
(or a pasted image path) attaches an image to the next message (attachments.py).
Slash commands: /model, /approvals, /sessions, /resume, /fork, /history, /agents
(subagents_view.py), /compact, /undo, /rewind (rewind_cli.py), /ps (processes.py), /help,
/quit run here (`COMMANDS`: this terminal's own pickers and listings); /init and /review, and
the session's custom commands and skills (`_meta.cody.commands`: `.claude/commands`, Codex
prompts, skills...), are sent to the daemon, which runs them as turns (the same commands it
advertises to editors over ACP). `/help` lists them too, and Tab completes every command.
Without a terminal, prompts are read line by line from stdin and approvals are rejected
(there is nobody to ask), which is said on screen.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from cody_protocol.mcp import McpElicitParams, McpElicitResult
from cody_protocol.session import CustomCommandInfo
from cody_protocol.settings import APPROVAL_POLICIES

from .approvals import TerminalApprover
from .attachments import AttachmentError, Attachments, mention_blocks, pasted_image_path
from .chat_turns import ChatTurns
from .client import ClientSession, CodyClient, RemoteError, SessionLookupError
from .elicitation import TerminalElicitor
from .extensions_view import (
    command_help_rows,
    hook_status_line,
    mcp_prompt_help_rows,
    short,
    skill_command,
)
from .headless import EXIT_CODES, session_settings
from .inert import above_prompt, one_line, prompt_screen
from .notifications import TerminalNotifier, enable_focus_reports
from .processes import ProcessCount, ps_command
from .progress import Spinner
from .project_docs import project_docs_line
from .rewind_cli import RewindCommands
from .subagents_view import ChildActivity, agents_command, leave_worktrees
from .terminal import Renderer, Style, use_color
from .warm import open_daemon
from .wording import for_terminal, lookup_message, session_label

__all__ = ["COMMANDS", "DAEMON_COMMANDS", "HELP", "ChatCommand", "run_chat"]

DAEMON_COMMANDS = frozenset({"/init", "/review"})
"""Slash commands the daemon runs as turns (sent as the prompt text, like an editor does)."""

PICK_LIMIT = 20
"""How many recent sessions bare `/resume` offers."""


def unique_prefix_length(ids: list[str], shortest: int = 8) -> int:
    """The shortest prefix length (at least `shortest`) that tells all `ids` apart."""
    length = shortest
    while length < max((len(i) for i in ids), default=0) and len({i[:length] for i in ids}) < len(
        set(ids)
    ):
        length += 1
    return length


KEYS_HELP = """\
Keys: Enter sends · Alt-Enter (or Esc then Enter) starts a new line · Ctrl-C interrupts a turn · Ctrl-C twice or Ctrl-D quits
While a turn runs: Enter steers it (the model reads your message at its next step) · Tab queues the message as the next prompt
@ completes a file of the workspace (sent along with the message) · /image PATH or a pasted image path attaches an image
Approvals (one key, no Enter): y allow once · a allow for this session · n reject · r reject for this session · c cancel the turn"""


class Chat:
    def __init__(
        self,
        client: CodyClient,
        session: ClientSession,
        renderer: Renderer,
        cwd: str,
        *,
        notify: bool = True,
    ) -> None:
        self.client = client
        self.session = session
        self.renderer = renderer
        self.cwd = cwd
        self.interactive = sys.stdin.isatty() and sys.stdout.isatty()
        self.spinner = Spinner(sys.stdout) if self.interactive else None
        self._prompt_session: Any = None
        self.interrupted = [False]
        """Whether the last key press that mattered was a Ctrl-C (two in a row quit)."""
        self._quit = False
        self.attachments = Attachments()
        """Images for the next message (`/image`, a pasted path)."""
        self.notifier = TerminalNotifier(sys.stdout, enabled=notify and self.interactive)
        self.turns = ChatTurns(self)
        self.completer: Any = None
        self.focus_bindings: Any = None
        self.approver: Any = None
        """Asks the user about an approval (set by `run_chat`: a TerminalApprover)."""
        self.elicitor: Callable[[McpElicitParams], Awaitable[McpElicitResult]] | None = None
        """Answers an MCP server's question (set by `run_chat`: a TerminalElicitor)."""
        if self.interactive:
            from prompt_toolkit.completion import merge_completers
            from prompt_toolkit.key_binding import KeyBindings

            from .chat_input import SlashCompleter
            from .mentions import MentionCompleter

            # `/` starts a command's name, `@` a file's path: each completer keeps to its own.
            self.completer = merge_completers(
                [SlashCompleter(self.completions), MentionCompleter(lambda: self.session)]
            )
            self.focus_bindings = KeyBindings()
            enable_focus_reports(self.focus_bindings, self.notifier)
        self.process_count = ProcessCount(on_change=self._redraw)
        """The session's running processes, for the status bar (cody_client/processes.py)."""
        self._unlisten = client.listen(session.id, self.process_count.observe)
        self.children = ChildActivity(client, renderer, self.spinner)
        """The child sessions (subagents) this chat has seen start."""
        self.children.parent_id = session.id
        renderer.on_child = self.children.watch
        self.parents: list[ClientSession] = []
        """Where `/agents back` returns to (the sessions `/agents N` left)."""

    def show(self, session: ClientSession) -> None:
        """The chat talks to `session` now (resume, fork, a subagent's session): its
        processes are the ones counted, its children the ones listed."""
        self._unlisten()
        self.session = session
        self.children.parent_id = session.id
        self.process_count = ProcessCount(on_change=self._redraw)
        self._unlisten = self.client.listen(session.id, self.process_count.observe)

    def _redraw(self) -> None:
        app = getattr(self._prompt_session, "app", None)
        if app is not None and app.is_running:
            app.invalidate()

    # -- input ----------------------------------------------------------------------------

    def _settings(self) -> list[str]:
        parts = [
            f"{self.session.option('provider')}/{self.session.option('model')}",
            f"approvals {self.session.option('approval_policy')}",
            f"sandbox {self.session.option('sandbox_mode')}",
        ]
        # prompt_toolkit shows C0 controls as ^[ but passes bidi controls to the terminal.
        return [one_line(part) for part in parts]

    def toolbar(self) -> str:
        """The bottom bar: model, context use, approvals, sandbox, tokens used, the running
        processes, as many whole parts as fit the terminal's width (in that order of
        importance)."""
        from .chat_input import fit, terminal_width

        model, *policies = self._settings()
        context, *rest = [*self.renderer.status_parts(), ""]
        parts = [model, context, *policies, *rest, self.process_count.text()]
        return fit([part for part in parts if part], terminal_width() - 1)

    async def read(self) -> str | None:
        if not self.interactive:
            line = await asyncio.to_thread(sys.stdin.readline)
            return line.rstrip("\n") if line else None
        if self._prompt_session is None:
            from prompt_toolkit import PromptSession
            from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

            bindings = KeyBindings()

            # Alt-Enter (Escape, Enter) starts a new line. Not Ctrl-J: keys typed before the prompt
            # is up arrive through the tty's line discipline, where Enter becomes Ctrl-J.
            @bindings.add("escape", "enter")
            def _newline(event: KeyPressEvent) -> None:
                event.current_buffer.insert_text("\n")

            from prompt_toolkit.application.current import get_app
            from prompt_toolkit.filters import Condition
            from prompt_toolkit.key_binding import merge_key_bindings

            from .mentions import typing_mention

            @Condition
            def _mention() -> bool:
                return typing_mention(get_app().current_buffer.document.text_before_cursor)

            self._prompt_session = PromptSession(
                bottom_toolbar=self.toolbar,
                key_bindings=merge_key_bindings([bindings, self.focus_bindings]),
                completer=self.completer,
                complete_while_typing=_mention,
            )
        while True:
            if self._quit:
                return None
            try:
                # handle_sigint=False: the chat's own SIGINT handler stays in place (a Ctrl-C
                # typed before the prompt is up arrives as a signal, not as a key).
                draft, self.turns.draft = self.turns.draft, ""
                # What arrives meanwhile (an MCP server ready, a late hook's report) prints
                # above the prompt, never into the line being typed.
                async with above_prompt(sys.stdout, sys.stderr):
                    text: str = await self._prompt_session.prompt_async(
                        "› ", handle_sigint=False, default=draft
                    )
            except KeyboardInterrupt:
                if self.interrupted[0]:
                    return None  # the second Ctrl-C in a row
                self.interrupted[:] = [True]
                self.renderer.line("(Ctrl-C again or Ctrl-D to leave)")
                continue
            except EOFError:
                return None
            self.interrupted[:] = [False]
            return text

    def between_turns_interrupt(self) -> None:
        """SIGINT while no turn runs (the terminal not yet in the prompt's raw mode): the
        first is a hint, the second in a row quits (also when the first cancelled a turn)."""
        if self.interrupted[0]:
            self._quit = True
        else:
            self.interrupted[:] = [True]
            self.renderer.line("(Ctrl-C again or Ctrl-D to leave)")
        app = getattr(self._prompt_session, "app", None)
        if self._quit and app is not None and app.is_running:
            app.exit(exception=KeyboardInterrupt())

    # -- the loop -------------------------------------------------------------------------

    def banner(self) -> None:
        """Three short lines (each fits 80 columns; the settings line is cut at the width)."""
        from .chat_input import fit, terminal_width

        style = self.renderer.style
        self.renderer.line(style.dim(fit(["Cody", *self._settings()], terminal_width() - 1)))
        self.renderer.line(style.dim(f"session {one_line(self.session.id)}"))
        self.renderer.line(style.dim("Ctrl-C interrupts a turn, Ctrl-D quits, /help for help."))

    async def run(self, first_prompt: str | None) -> None:
        if self.interactive:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                asyncio.get_running_loop().add_signal_handler(
                    signal.SIGINT, self.between_turns_interrupt
                )
        self.notifier.start()
        try:
            await self._loop(first_prompt)
        finally:
            self.notifier.stop()

    async def _loop(self, first_prompt: str | None) -> None:
        pending = first_prompt
        while True:
            text = pending if pending is not None else await self.read()
            pending = None
            if text is None:
                break
            text = text.strip()
            if not text:
                continue
            if text.startswith("/") and text.split()[0] not in self.daemon_commands():
                if not await self.command(text):
                    break
                continue
            await self.turn(text)
        if await self._kept():
            message = f"Session saved. Resume with: cody-client --resume {self.session.id}"
        else:
            message = "Nothing was asked, so the session is not saved."
        self.renderer.line(self.renderer.style.dim(message))
        await leave_worktrees(self)

    async def _kept(self) -> bool:
        """Whether the daemon keeps this session: it lists (and saves) only sessions with a
        prompt; a never-prompted one is dropped when it closes. The session was written last,
        so it is on the first page when listed."""
        try:
            page = await self.client.connection.request("session/list", {})
        except Exception:
            return True  # cannot tell: say how to resume rather than nothing
        sessions = page.get("sessions", []) if isinstance(page, dict) else []
        return any(s.get("sessionId") == self.session.id for s in sessions)

    async def turn(self, text: str) -> None:
        content = self.content_of(text)
        if content is not None:
            await self.turns.run(content, text)
            with contextlib.suppress(RemoteError):  # the status bar's count of processes
                await self.process_count.refresh(self.session)

    def content_of(self, text: str) -> str | list[dict[str, Any]] | None:
        """What a message sends: its text, the files it mentions (`@path`) and the images
        attached. A message that is only a pasted image path attaches the image (None: it
        goes with the next message)."""
        pasted = pasted_image_path(text)
        if pasted is not None:
            self._attach(pasted)
            return None
        blocks = mention_blocks(text, self.cwd) + self.attachments.take()
        return [{"type": "text", "text": text}, *blocks] if blocks else text

    def _attach(self, path: str) -> None:
        try:
            self.attachments.add_image(path)
        except AttachmentError as exc:
            self.renderer.line(self.renderer.style.red(f"error: {for_terminal(str(exc))}"))
            return
        names = ", ".join(one_line(name) for name in self.attachments.names)
        self.renderer.line(f"Attached {names}: sent with your next message.")

    async def approve(self, request: Any) -> Any:
        """The approval callback: asked with the turn's input line down."""
        return await self.turns.approve(request, self.approver)

    async def elicit(self, request: McpElicitParams) -> McpElicitResult:
        """The elicitation callback: asked with the turn's input line down."""
        if self.elicitor is None:
            return McpElicitResult(action="decline")
        return await self.turns.elicit(request, self.elicitor)

    # -- slash commands -------------------------------------------------------------------

    async def command(self, text: str) -> bool:
        """Run a slash command from `COMMANDS`; False means quit. An unknown one is said so,
        never run as another."""
        name, _, rest = text.partition(" ")
        words = rest.split()
        command = COMMANDS.get(name)
        if command is None:
            self.renderer.line(f"Unknown command {name}. /help lists the commands.")
            return True
        try:
            return await command.run(self, words) is not False
        except RemoteError as exc:
            self.renderer.line(self.renderer.style.red(f"error: {for_terminal(exc.message)}"))
        except SessionLookupError as exc:
            self.renderer.line(self.renderer.style.red(f"error: {lookup_message(exc)}"))
            for info in exc.candidates[:10]:
                self.renderer.line(f"  {one_line(info.session_id)}  {one_line(info.title or '')}")
        except ValueError:
            self.renderer.line(command.usage_error or f"usage: see /help for {name}")
        return True

    def completions(self) -> list[tuple[str, str]]:
        """Every slash command this chat runs or sends, with a short description."""
        found = [(name, command.help.split("\n")[0]) for name, command in COMMANDS.items()]
        found += [(usage.split()[0], text) for usage, text in DAEMON_HELP.items()]
        found += [
            (f"/{command.name}", short(command.description, 60))
            for command in self.custom_commands()
            if f"/{command.name}" not in COMMANDS
        ]
        advertised = self.client.available_commands.get(self.session.id, [])  # MCP prompts...
        found += [(f"/{command.name}", command.description) for command in advertised]
        return found

    def custom_commands(self) -> list[CustomCommandInfo]:
        """The session's custom commands and the skills a user may run
        (`_meta.cody.commands`, `skills`)."""
        meta = self.session.meta
        if meta is None:
            return []
        names = {command.name for command in meta.commands}
        skills = [
            skill_command(skill)
            for skill in meta.skills
            if skill.user_invocable and skill.name not in names
        ]
        return [*meta.commands, *skills]

    def daemon_commands(self) -> frozenset[str]:
        """What is sent to the daemon as a prompt: its turn commands and the session's own
        (a name the terminal has a command of its own for stays the terminal's)."""
        own = {f"/{command.name}" for command in self.custom_commands()}
        return DAEMON_COMMANDS | frozenset(own - set(COMMANDS))

    async def _agents(self, words: list[str]) -> None:
        await agents_command(self, words)

    async def _help(self, words: list[str]) -> None:
        self.renderer.line(HELP)
        rows = [
            (usage, text)
            for usage, text in command_help_rows(self.custom_commands())
            if usage.split()[0] not in COMMANDS
        ]
        advertised = self.client.available_commands.get(self.session.id, [])
        for title, found in (
            ("Commands from your files (sent to the daemon):", rows),
            ("Prompts of the session's MCP servers:", mcp_prompt_help_rows(advertised)),
        ):
            if not found:
                continue
            width = min(max(len(usage) for usage, _ in found) + 2, 42)
            self.renderer.line(title)
            for usage, text in found:
                self.renderer.line(f"  {usage:<{width}}{text}")

    async def _ps(self, words: list[str]) -> None:
        width = shutil.get_terminal_size((100, 24)).columns
        for line in await ps_command(self.session, words, self.process_count, width=width):
            self.renderer.line(line)

    async def _image(self, words: list[str]) -> None:
        if not words:
            raise ValueError("no path")
        self._attach(" ".join(words))

    async def _leave(self, words: list[str]) -> bool:
        return False

    async def _fork(self, words: list[str]) -> None:
        at = int(words[0]) if words else None
        self.show(await self.client.fork_session(self.session.id, self.cwd, at_message=at))
        self.renderer.line(f"Forked into session {self.session.id}.")

    async def _history(self, words: list[str]) -> None:
        # A renderer of its own: the calls shown live are shown again in the replay. User
        # messages are numbered as /fork counts them.
        replay = self.renderer.fresh(number_messages=True)
        await self.client.load_session(self.session.id, self.cwd, on_update=replay.on_update)
        replay.line("")
        if replay.messages_numbered:
            replay.line(replay.style.dim("(/fork N continues from a copy up to user message #N)"))

    async def _resume(self, words: list[str]) -> None:
        given = words[0] if words else None
        if given is None:
            given = await self._pick_session()
            if given is None:
                return
        session_id = await self.client.resolve_session_id(given)
        replay = self.renderer.fresh()
        self.show(await self.client.load_session(session_id, self.cwd, on_update=replay.on_update))
        self.parents.clear()
        self.renderer.forget_usage()
        replay.line(f"Resumed session {self.session.id}.")  # ends the replay's last message
        for warning in self.session.meta.warnings if self.session.meta else []:
            replay.line(replay.style.yellow(f"warning: {for_terminal(warning)}"))

    async def _pick_session(self) -> str | None:
        """Number the recent sessions and read a choice (an empty answer picks nothing)."""
        listed = await self.client.list_sessions()
        sessions = [s for s in listed if s.session_id != self.session.id]
        if not sessions:
            self.renderer.line("No other saved sessions.")
            return None
        shown = sessions[:PICK_LIMIT]
        # Unique among every session, this one too: forks made within a minute share their
        # first 8 characters (ids start with the time).
        width = unique_prefix_length([s.session_id for s in listed] + [self.session.id])
        for number, info in enumerate(shown, start=1):
            self.renderer.line(
                f"{number:>3}. {one_line(info.session_id[:width])}  "
                f"{one_line(info.updated_at or ''):20}  {session_label(info, width)}"
            )
        answer = await self._ask_line(f"resume which? [1-{len(shown)}, Enter for none] ")
        if answer is None or not answer.strip():
            return None
        try:
            index = int(answer) - 1
        except ValueError:
            return answer.strip()  # an id or a prefix
        if not 0 <= index < len(shown):
            raise ValueError("no such entry")
        return shown[index].session_id

    async def _ask_line(self, question: str) -> str | None:
        if not self.interactive:
            self.renderer.line(question.rstrip())
            line = await asyncio.to_thread(sys.stdin.readline)
            return line.rstrip("\n") if line else None
        from prompt_toolkit import PromptSession

        picker: PromptSession[str] = PromptSession()
        try:
            return await picker.prompt_async(question)
        except (KeyboardInterrupt, EOFError):
            return None

    async def _model(self, words: list[str]) -> None:
        if len(words) == 2:
            await self.session.set_config_option("provider", words[0])
            await self.session.set_config_option("model", words[1])
        elif len(words) == 1:
            await self.session.set_config_option("model", words[0])
        else:
            listing = await self.client.models()
            current = (self.session.option("provider"), self.session.option("model"))
            for provider in listing.providers:
                mark = "✓" if provider.available else "✗ (no credentials)"
                self.renderer.line(f"{one_line(provider.id)} {mark}")
                for model in provider.models:
                    here = " ← current" if (provider.id, model.id) == current else ""
                    self.renderer.line(f"    {one_line(model.id)}{here}")
            return
        self.renderer.line(
            f"Now using {self.session.option('provider')}/{self.session.option('model')}."
        )

    async def _compact(self, words: list[str]) -> None:
        self.renderer.line(self.renderer.style.dim("Compacting the conversation..."))
        result = await self.session.compact(on_update=self.renderer.on_update)
        if not result.compacted:
            self.renderer.line(f"Nothing to compact: {result.reason}.")
            return
        self.renderer.line(
            f"Compacted: {result.summarized_items} earlier items summarised, "
            f"{result.kept_items} kept; the model now sees about {result.tokens_after:,} "
            f"tokens (was {result.tokens_before:,}). The session file keeps everything."
        )

    async def _undo(self, words: list[str]) -> None:
        await RewindCommands(self.renderer, self._ask_line).undo(self.session)

    async def _rewind(self, words: list[str]) -> None:
        await RewindCommands(self.renderer, self._ask_line).rewind(self.session, words)

    async def _approvals(self, words: list[str]) -> None:
        if words:
            await self.session.set_config_option("approval_policy", words[0])
        self.renderer.line(
            f"Approval policy: {self.session.option('approval_policy')} "
            f"(one of {', '.join(APPROVAL_POLICIES)})"
        )

    async def _sessions(self, words: list[str]) -> None:
        sessions = await self.client.list_sessions()
        if not sessions:
            self.renderer.line("No saved sessions.")
        for info in sessions:
            here = "  ← this session" if info.session_id == self.session.id else ""
            self.renderer.line(
                f"{one_line(info.session_id)}  {one_line(info.updated_at or '')}  "
                f"{session_label(info)}{here}"
            )


@dataclass(frozen=True, slots=True)
class ChatCommand:
    """One of the terminal's own slash commands: its help line and its handler."""

    usage: str
    """What `/help` shows on the left (`/fork [N]`)."""
    help: str
    run: Callable[[Chat, list[str]], Awaitable[bool | None]]
    """Runs it with the words after the name; returns False to quit."""
    usage_error: str | None = None
    """What to say when the words are not what it takes (the handler raised ValueError)."""


COMMANDS: dict[str, ChatCommand] = {
    "/model": ChatCommand(
        "/model [MODEL | PROVIDER MODEL]",
        "show providers and models, or switch (applies from the next turn)",
        Chat._model,
    ),
    "/approvals": ChatCommand(
        "/approvals [POLICY]",
        f"show or set the approval policy ({', '.join(APPROVAL_POLICIES)})",
        Chat._approvals,
    ),
    "/sessions": ChatCommand("/sessions", "list saved sessions", Chat._sessions),
    "/resume": ChatCommand(
        "/resume [ID]",
        "switch to a saved session (a unique id prefix will do; no ID: pick)",
        Chat._resume,
        usage_error="usage: /resume [ID | ID prefix], or a number from the list",
    ),
    "/fork": ChatCommand(
        "/fork [N]",
        "continue in a copy of this session (up to user message N)",
        Chat._fork,
        usage_error="usage: /fork [N] where N is a user message number (0 = the first)",
    ),
    "/history": ChatCommand("/history", "replay this session's history", Chat._history),
    "/agents": ChatCommand(
        "/agents [N | back]",
        "list this session's subagents, open one (prompts then go to it), or go back",
        Chat._agents,
        usage_error="usage: /agents [N | ID prefix | back]",
    ),
    "/image": ChatCommand(
        "/image PATH",
        "attach an image (PNG, JPEG, GIF, WebP) to your next message",
        Chat._image,
        usage_error="usage: /image PATH (a PNG, JPEG, GIF or WebP file)",
    ),
    "/compact": ChatCommand(
        "/compact",
        "summarise the conversation so far to free context\n(the session file keeps everything)",
        Chat._compact,
    ),
    "/undo": ChatCommand(
        "/undo", "undo the last turn: its file changes and its messages", Chat._undo
    ),
    "/rewind": ChatCommand(
        "/rewind [N [files|conversation|both] [force]]",
        "pick a checkpoint and go back to it (no N: a picker)",
        Chat._rewind,
        usage_error="usage: /rewind [N [files|conversation|both] [force]], "
        "N a number from the list",
    ),
    "/ps": ChatCommand(
        "/ps [kill ID | kill all]",
        "list this session's processes (servers, watchers, REPLs), or stop one",
        Chat._ps,
        usage_error="usage: /ps, /ps kill ID or /ps kill all",
    ),
    "/help": ChatCommand("/help", "this help", Chat._help),
    "/quit": ChatCommand("/quit", "leave (as Ctrl-D)", Chat._leave),
    "/exit": ChatCommand("/exit", "leave (as Ctrl-D)", Chat._leave),
}
"""The terminal's own slash commands, by name; the daemon's turn commands (`DAEMON_COMMANDS`)
are sent to it as prompts. A name here without a handler cannot exist: each entry is one."""

DAEMON_HELP = {
    "/init [NOTES]": "have the model write an AGENTS.md for this project",
    "/review [FOCUS]": "have the model review the working tree's uncommitted changes",
}


def _help_text() -> str:
    rows = [(c.usage, c.help) for c in COMMANDS.values() if c.run is not Chat._leave]
    rows += list(DAEMON_HELP.items())
    rows.append(("/quit, /exit", "leave (as Ctrl-D)"))
    width = max(len(usage) for usage, _ in rows) + 2
    lines = ["Commands:"]
    for usage, text in rows:
        first, *more = text.split("\n")
        lines.append(f"  {usage:<{width}}{first}")
        lines += [f"  {'':<{width}}{line}" for line in more]
    return "\n".join([*lines, KEYS_HELP])


HELP = _help_text()


async def run_chat(args: argparse.Namespace, forward_stderr: Any) -> int:
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    color = use_color(sys.stdout)
    renderer = Renderer(
        out=sys.stdout,
        info=sys.stdout,
        style=Style(color),
        show_thoughts=not args.no_thoughts,
        show_decisions=args.decisions,
        markdown=interactive and color,
    )
    cwd = args.cwd or os.getcwd()
    # Every prompt of the chat (and the tasks that show them) draws behind the gate.
    with prompt_screen() if interactive else contextlib.nullcontext():
        return await _chat(args, forward_stderr, renderer, cwd, interactive)


async def _chat(
    args: argparse.Namespace,
    forward_stderr: Any,
    renderer: Renderer,
    cwd: str,
    interactive: bool,
) -> int:
    try:
        async with open_daemon(
            use_socket=not args.no_daemon_socket, on_stderr=forward_stderr
        ) as client:
            approver = TerminalApprover(renderer, "ask")
            client.on_permission = approver
            client.on_hook_status = lambda status: renderer.line(
                renderer.style.yellow(f"hook: {hook_status_line(status)}")
            )
            elicitor = TerminalElicitor(renderer)
            client.on_elicitation = elicitor
            client.connection.on_notification("_cody/mcp/status", renderer.show_mcp_status)
            if args.resume:
                session_id = await client.resolve_session_id(args.resume)
                session = await client.load_session(
                    session_id, cwd, on_update=renderer.on_update, relocate=args.cwd is not None
                )
            else:
                session = await client.new_session(cwd, **session_settings(args))
            for warning in session.meta.warnings if session.meta else []:
                renderer.line(renderer.style.yellow(f"warning: {for_terminal(warning)}"))
            docs = project_docs_line(session.meta.project_docs if session.meta else [], cwd)
            if docs is not None:
                renderer.line(renderer.style.dim(docs))
            worktree = session.meta.worktree if session.meta else None
            if worktree is not None:
                renderer.line(
                    f"Working in a worktree: {one_line(worktree.path)} "
                    f"(branch {one_line(worktree.branch)})"
                )
            chat = Chat(client, session, renderer, cwd, notify=not args.no_notify)
            chat.approver = approver
            client.on_permission = chat.approve
            chat.elicitor = elicitor
            client.on_elicitation = chat.elicit
            chat.banner()
            await chat.run(" ".join(args.prompt).strip() or None)
    except RemoteError as exc:
        sys.stderr.write(f"cody-client: {for_terminal(exc.message)}\n")
        return EXIT_CODES["usage"] if exc.code in (-32602, -32002) else EXIT_CODES["error"]
    except SessionLookupError as exc:
        sys.stderr.write(f"cody-client: {lookup_message(exc)}\n")
        return EXIT_CODES["usage"]
    return 0
