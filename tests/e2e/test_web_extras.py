"""The page's view of the other issues' features (docs/web.md), in Debian's chromium through
the real warm daemon: a background process (issue 26) listed in the session header, its
live output continuing the call that started it after the call completed, and stopped with
its Stop button; a subagent's activity (issue 29) under the parent's `task` call, never in
the parent's own transcript; an MCP server's question (issue 28, the real server-everything)
answered with a form built from its schema, and declined."""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect

from tests.e2e.test_mcp_real_servers import server_toml
from tests.support.daemon import CodyEnv
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import tool_outputs
from tests.support.real_mcp_servers import everything
from tests.support.web_daemon import WebDaemon, browser

pytestmark = pytest.mark.e2e

HOSTILE = "<img src=x onerror=\"document.title='pwned'\"><b>bold?</b>"
FULL_ACCESS = 'approval_policy = "never"\nsandbox_mode = "danger-full-access"'


@pytest.fixture
async def web(cody_env: CodyEnv, model: MockResponsesServer) -> AsyncIterator[WebDaemon]:
    cody_env.use_mock_provider(model.base_url, extra=FULL_ACCESS)
    daemon = await WebDaemon.start(cody_env)
    yield daemon
    assert await daemon.stop() == 0


async def session_page(chromium: Any, web: WebDaemon, cwd: Path) -> Any:
    """The page with a new session of its own in `cwd` (made with the New session dialog)."""
    page = await chromium.new_page(viewport={"width": 1200, "height": 900})
    page.on("pageerror", lambda error: pytest.fail(f"the page threw: {error}"))
    await page.goto(web.page_url)
    await page.wait_for_selector("#main[data-ready=true]", timeout=20_000)
    await page.click("#new-session")
    await page.locator("#ask input").fill(str(cwd))
    await page.keyboard.press("Enter")
    await page.wait_for_url("**/#/s/cody/*")
    await page.wait_for_selector("#composer:not([hidden])")
    return page


async def send(page: Any, prompt: str) -> None:
    await page.fill("#prompt", prompt)
    await page.keyboard.press("Enter")


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


async def test_a_background_process_is_listed_streams_into_its_call_and_is_stopped_from_the_page(
    web: WebDaemon, cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    tag = f"web-bg-{os.getpid()}"
    command = (
        f": '{HOSTILE}' {tag}; sleep 0.5; echo first; sleep 0.2; echo LIVE-after-the-call;"
        " sleep 0.2; seq -f 'line %g' 1 60; sleep 300"
    )
    model.enqueue(tool_call("exec", {"command": command, "background": True}, call_id="bg"))
    model.enqueue(text("Started it."))
    async with browser() as chromium:
        page = await session_page(chromium, web, cody_env.workspace)
        await send(page, "start the server")
        await expect(page.locator("#transcript")).to_contain_text("Started it.", timeout=20_000)
        card = page.locator("#transcript .tool[data-id=bg]")
        await expect(card).to_have_attribute("data-status", "completed")
        # the process keeps printing after its call completed: it continues that call
        shown = card.locator(".tool-output")
        await expect(shown).to_contain_text("line 60", timeout=20_000)
        # a long process output shows its latest lines; all of it on demand
        assert "line 21" in await shown.inner_text()
        assert "LIVE-after-the-call" not in await shown.inner_text()
        await card.get_by_role("button", name="Show all").click()
        output = await card.locator(".tool-output").inner_text()
        assert "Started in the background as process 1" in output, "the call's result stays"
        assert "\nfirst\nLIVE-after-the-call\nline 1\n" in output, "on lines of their own, in order"
        await expect(card.locator(".tool-process")).to_have_text("process 1 · running")

        toggle = page.locator("#processes-toggle")
        await expect(toggle).to_have_text("Processes (1 running)")
        await toggle.click()
        row = page.locator("#extras li.process[data-id='1']")
        await expect(row).to_have_attribute("data-status", "running")
        await expect(row.locator(".process-state")).to_have_text("running")
        assert tag in await row.locator(".process-command").inner_text()
        assert HOSTILE in await row.locator(".process-command").inner_text()
        assert await page.locator("#extras img, #extras b").count() == 0
        details = await row.locator(".process-details").inner_text()
        pid = int(details.split("pid ", 1)[1].split(" ", 1)[0])
        assert alive(pid)

        await row.locator("button[data-kind=stop]").click()
        await expect(row).to_have_attribute("data-status", "ended", timeout=15_000)
        await expect(row.locator(".process-state")).to_have_text("killed by SIGTERM")
        assert await row.locator("button[data-kind=stop]").count() == 0
        assert not alive(pid), "the process is gone"
        await expect(card.locator(".tool-process")).to_have_text(
            "process 1 · killed by SIGTERM", timeout=15_000
        )
        await expect(page.locator("#processes-toggle")).to_have_text("Hide processes")
        await page.screenshot(path=str(cody_env.root / "processes.png"))

        # replayed later (the page reloaded), the call does not claim its process still runs
        await page.reload()
        await page.wait_for_selector("#main[data-ready=true]", timeout=20_000)
        card = page.locator("#transcript .tool[data-id=bg]")
        await expect(card.locator(".tool-process")).to_have_text(
            re.compile(r"^process 1 · (killed by SIGTERM|ended)$"), timeout=15_000
        )


async def test_the_list_follows_another_clients_stop_and_a_failed_stop_says_why(
    web: WebDaemon, cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    model.enqueue(tool_call("exec", {"command": "sleep 301", "background": True}, call_id="a"))
    model.enqueue(tool_call("exec", {"command": "sleep 302", "background": True}, call_id="b"))
    model.enqueue(text("Started both."))
    async with browser() as chromium:
        page = await session_page(chromium, web, cody_env.workspace)
        await send(page, "start them")
        await expect(page.locator("#transcript")).to_contain_text("Started both.", timeout=20_000)
        await expect(page.locator("#processes-toggle")).to_have_text("Processes (2 running)")
        await page.click("#processes-toggle")
        first = page.locator("#extras li.process[data-id='1']")
        second = page.locator("#extras li.process[data-id='2']")
        await expect(first).to_have_attribute("data-status", "running")
        sid = page.url.rsplit("/", 1)[1]
        # a terminal attached to the same session stops the first: the page follows
        client = await web.client()
        try:
            await client.request(
                "session/resume",
                {"sessionId": sid, "cwd": str(cody_env.workspace), "mcpServers": []},
            )
            await client.request("_cody/process/kill", {"sessionId": sid, "processId": 1})
        finally:
            await client.close()
        await expect(first).to_have_attribute("data-status", "ended", timeout=15_000)
        await expect(first.locator(".process-details")).to_contain_text(
            "stopped by the user (_cody/process/kill)"
        )
        await expect(page.locator("#processes-toggle")).to_have_text("Hide processes")
        await expect(second).to_have_attribute("data-status", "running")

        # the daemon goes away: Stop fails and the panel says why
        assert await web.stop() == 0
        await expect(page.locator("#connection")).to_have_attribute("data-status", "down")
        await second.locator("button[data-kind=stop]").click()
        failed = page.locator("#extras .process-panel .error").filter(
            has_text="Could not stop process 2: not connected to the daemon"
        )
        await expect(failed).to_have_count(1)


CHILD_PROMPT = "Read notes.txt and say what it holds. CHILD-1"


async def test_a_subagents_activity_is_shown_under_its_task_call_not_as_the_parents(
    web: WebDaemon, cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    (cody_env.workspace / "notes.txt").write_text("the answer is 42\n")
    model.enqueue(
        tool_call(
            "task",
            {"description": "read the notes", "prompt": CHILD_PROMPT, "agent": "general"},
            call_id="p1",
        )
    )
    model.enqueue(tool_call("readFile", {"filePath": "notes.txt"}, call_id="c1"))
    model.enqueue(tool_call("readFile", {"filePath": "missing.txt"}, call_id="c2"))
    model.enqueue(text("The notes say 42."))
    model.enqueue(text("Done: the child found 42."))
    async with browser() as chromium:
        page = await session_page(chromium, web, cody_env.workspace)
        parent_url = page.url
        await send(page, "delegate the notes")
        await expect(page.locator("#transcript")).to_contain_text(
            "Done: the child found 42.", timeout=30_000
        )
        task = page.locator("#transcript .tool[data-id=p1]")
        subagent = task.locator(".subagent")
        await expect(subagent.locator(".subagent-name")).to_have_text("Subagent general")
        activity = subagent.locator(".subagent-activity li")
        lines = await activity.all_inner_texts()
        assert len(lines) == 3, lines
        assert lines[0].startswith("▸ ") and "notes.txt" in lines[0]
        assert lines[1].startswith("▸ ") and "missing.txt" in lines[1]
        assert lines[2].startswith("✗ ") and "missing.txt" in lines[2], "the failed call"
        # the child's calls and text are not the parent's own
        assert await page.locator("#transcript .tool[data-id=c1]").count() == 0
        assert await page.locator("#transcript .tool[data-id=c2]").count() == 0
        agents = await page.locator("#transcript .message.agent").all_inner_texts()
        assert agents == ["Done: the child found 42."]
        await page.screenshot(path=str(cody_env.root / "subagent.png"))

        # the child's own session, from its task call
        child = await subagent.get_attribute("data-id")
        await subagent.locator("button[data-kind=open-child]").click()
        await page.wait_for_url(f"**/#/s/cody/{child}")
        await expect(page.locator("#transcript .tool[data-id=c1]")).to_have_count(1)
        await expect(page.locator("#transcript .message.agent")).to_have_text(["The notes say 42."])
        assert child and child not in parent_url

        # back to the parent, replayed: its task call still leads to the child
        await page.go_back()
        await page.wait_for_url(parent_url)
        replayed = page.locator("#transcript .tool[data-id=p1] .subagent")
        await expect(replayed).to_have_attribute("data-id", child)
        await expect(replayed.locator(".subagent-name")).to_have_text("Subagent general")
        await expect(page.locator("#transcript .message.agent")).to_have_text(
            ["Done: the child found 42."]
        )


async def test_an_mcp_servers_question_is_answered_with_a_form_and_declined(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url, extra='approval_policy = "never"')
    config = cody_env.cody_home / "config.toml"
    config.write_text(config.read_text() + "\n" + server_toml("every", everything()))
    web = await WebDaemon.start(cody_env)
    try:
        model.enqueue(tool_call("mcp__every__trigger-elicitation-request", {}, call_id="e1"))
        model.enqueue(tool_call("mcp__every__trigger-elicitation-request", {}, call_id="e2"))
        model.enqueue(text("Thanks, Ada."))
        async with browser() as chromium:
            page = await session_page(chromium, web, cody_env.workspace)
            await expect(page.locator("#extras .mcp-server[data-id=every]")).to_have_attribute(
                "data-status", "ok", timeout=30_000
            )
            await send(page, "ask me")
            box = page.locator("#elicit")
            await box.wait_for(state="visible", timeout=30_000)
            assert "Please provide inputs" in await box.inner_text()
            assert "every" in await box.locator(".approval-title").inner_text()
            # the schema's fields, with their defaults
            name = box.locator("[data-field=name] input")
            await expect(box.locator("[data-field=integer] input")).to_have_value("42")
            await expect(box.locator("[data-field=untitledSingleSelectEnum] select")).to_have_value(
                "Monica"
            )
            await expect(
                box.locator("[data-field=legacyTitledEnum] select option")
            ).to_contain_text(["Cats"])
            # a required field left empty: no answer yet
            await box.locator("button[data-option=accept]").click()
            await expect(box.locator(".error")).to_contain_text("is required")
            assert await box.is_visible()

            await page.screenshot(path=str(cody_env.root / "elicit.png"), full_page=True)
            await name.fill(f"Ada {HOSTILE}")
            await box.locator("[data-field=check] input").check()
            await box.locator("[data-field=integer] input").fill("7")
            await box.locator("[data-field=titledSingleSelectEnum] select").select_option(
                label="Wonder Woman"
            )
            await box.locator("button[data-option=accept]").click()

            # the second call asks again: declined this time
            await expect(box.locator("button[data-option=decline]")).to_be_visible(timeout=30_000)
            await expect(box.locator("[data-field=name] input")).to_have_value("")
            await box.locator("button[data-option=decline]").click()
            await expect(page.locator("#transcript")).to_contain_text(
                "Thanks, Ada.", timeout=30_000
            )
            assert await box.is_hidden()
            transcript = await page.inner_text("#transcript")
            assert "You answered the MCP server every's question." in transcript
            assert "You declined the MCP server every's question." in transcript
        outputs = tool_outputs(model.requests[-1])
        assert f"Name: Ada {HOSTILE}" in outputs["e1"]
        assert "Agreed to terms: true" in outputs["e1"]
        assert "Favorite Integer: 7" in outputs["e1"]
        assert '"titledSingleSelectEnum": "hero-3"' in outputs["e1"]
        assert "User declined" in outputs["e2"]
    finally:
        assert await web.stop() == 0
