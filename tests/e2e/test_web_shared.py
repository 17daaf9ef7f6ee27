"""One session seen from two browser tabs and a terminal (docs/web.md, "Many clients"):
every one of them sees the turn's updates live; only the tab that sent the prompt is asked
to approve its edit."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from playwright.async_api import expect

from tests.support.daemon import CodyEnv
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.web_daemon import WebDaemon, browser, unix_client

pytestmark = pytest.mark.e2e


@pytest.fixture
async def web(cody_env: CodyEnv, model: MockResponsesServer) -> AsyncIterator[WebDaemon]:
    cody_env.use_mock_provider(model.base_url)
    daemon = await WebDaemon.start(cody_env, "", "ws://127.0.0.1:0")
    yield daemon
    assert await daemon.stop() == 0


async def open_session(chromium: Any, web: WebDaemon, sid: str) -> Any:
    page = await chromium.new_page()
    page.on("pageerror", lambda error: pytest.fail(f"the page threw: {error}"))
    await page.goto(f"{web.base_url}#token={web.token}")
    await page.wait_for_selector("#main[data-ready=true]")
    await page.goto(f"{web.base_url}#/s/cody/{sid}")
    await expect(page.locator("#transcript")).to_contain_text("Ready.")
    return page


async def test_two_tabs_and_a_terminal_see_the_turn_and_only_the_prompting_tab_is_asked(
    web: WebDaemon, cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    (cody_env.workspace / "plan.md").write_text("draft\n")
    terminal = await unix_client(web, cody_env)
    sid = await terminal.new_session(approvalPolicy="untrusted")  # the edit asks
    model.enqueue(text("Ready."))
    await terminal.prompt(sid, "hello")
    model.enqueue(
        tool_call("writeFile", {"filePath": "plan.md", "content": "final\n"}, call_id="e1")
    )
    model.enqueue(text("Plan finalised."))

    async with browser() as chromium:
        first = await open_session(chromium, web, sid)
        second = await open_session(chromium, web, sid)
        await first.fill("#prompt", "finalise the plan")
        await first.keyboard.press("Enter")

        await first.locator("#approval").wait_for(state="visible", timeout=20_000)
        # the other tab and the terminal watch the call, but are not asked
        await expect(second.locator("#transcript .tool[data-id=e1]")).to_be_visible()
        await terminal.wait_for(lambda: bool(terminal.tool_updates(sid, "e1")))
        assert await second.locator("#approval").is_hidden()
        assert terminal.permission_requests == []

        await first.locator("#approval button[data-option=allow_once]").click()
        for page in (first, second):
            await expect(page.locator("#transcript")).to_contain_text(
                "Plan finalised.", timeout=20_000
            )
            await expect(page.locator("#transcript .tool[data-id=e1]")).to_have_attribute(
                "data-status", "completed"
            )
        await terminal.wait_for(lambda: "Plan finalised." in terminal.agent_text(sid))
    assert (cody_env.workspace / "plan.md").read_text() == "final\n"
    assert terminal.permission_requests == []
    await terminal.close()
