"""Cody in the browser (docs/web.md), in Debian's chromium driven by Playwright: the page
opened with its token lists Codex, Claude Code and Cody sessions, replays one, sends a
prompt to the scripted mock model, shows the edit's diff in the approval, and the file
changes when it is allowed. Without the token, with a wrong one, or from another origin,
the daemon serves it nothing; model text never becomes HTML."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from playwright.async_api import expect

from tests.support.daemon import CodyEnv
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.web_daemon import WebDaemon, browser, seed_agent_sessions

pytestmark = pytest.mark.e2e

HOSTILE = "<img src=x onerror=\"document.title='pwned'\"><b>bold?</b>"


@pytest.fixture
async def web(cody_env: CodyEnv, model: MockResponsesServer) -> AsyncIterator[WebDaemon]:
    cody_env.use_mock_provider(model.base_url)
    daemon = await WebDaemon.start(cody_env)
    yield daemon
    assert await daemon.stop() == 0


async def ready_page(chromium: Any, url: str) -> Any:
    page = await chromium.new_page(viewport={"width": 1200, "height": 800})
    page.on("pageerror", lambda error: pytest.fail(f"the page threw: {error}"))
    await page.goto(url)
    await page.wait_for_selector("#main[data-ready=true]", timeout=20_000)
    return page


async def test_the_page_lists_replays_continues_and_approves_an_edit_from_its_diff(
    web: WebDaemon, cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    seed_agent_sessions(cody_env)
    (cody_env.workspace / "notes.txt").write_text("old line\n")
    # A Cody session with one turn (made over the WebSocket, as any client would).
    model.enqueue(text("Hello from Cody."))
    client = await web.client()
    sid = await client.new_session(approvalPolicy="untrusted")  # the edit below asks
    await client.prompt(sid, "first question")
    await client.close()

    model.enqueue(
        tool_call("writeFile", {"filePath": "notes.txt", "content": "new line\n"}, call_id="w1")
    )
    model.enqueue(text("Rewrote notes.txt."))
    async with browser() as chromium:
        page = await ready_page(chromium, web.page_url)
        assert "#token=" not in page.url, "the token leaves the address bar"
        rows = page.locator("li.session-row")
        await rows.first.wait_for()
        agents = sorted(await rows.evaluate_all("rows => rows.map(r => r.dataset.agent)"))
        assert agents == ["claude", "codex", "cody"]

        # filter by agent, then search
        await page.select_option("#agent-filter", "codex")
        await expect(rows).to_have_count(1)
        await expect(rows.first).to_have_attribute("data-agent", "codex")
        await page.select_option("#agent-filter", "")
        await page.fill("#search", "first question")
        await expect(rows).to_have_count(1)
        await expect(rows.first).to_have_attribute("data-agent", "cody")
        await page.fill("#search", "")
        await expect(rows).to_have_count(3)

        # a Codex session's replay: its prompt and its shell call
        await page.click("li.session-row[data-agent=codex]")
        await page.wait_for_selector("#transcript .tool")
        assert "run echo hello" in await page.inner_text("#transcript")
        assert "$ echo hello" in await page.inner_text("#transcript .tool-title >> nth=0")
        assert await page.is_visible("#continue")

        # the Cody session: replayed, then a prompt, an approval from its diff, the file
        await page.click("li.session-row[data-agent=cody]")
        await page.wait_for_selector("#transcript .message.agent")
        assert "Hello from Cody." in await page.inner_text("#transcript")
        await page.fill("#prompt", "rewrite notes.txt")
        await page.keyboard.press("Enter")
        approval = page.locator("#approval")
        await approval.wait_for(state="visible", timeout=20_000)
        assert "notes.txt" in await approval.inner_text()
        assert await approval.locator(".line.del").inner_text() == "- old line\n"
        assert await approval.locator(".line.add").inner_text() == "+ new line\n"
        assert (cody_env.workspace / "notes.txt").read_text() == "old line\n", "not before approval"
        await approval.locator("button[data-option=allow_once]").click()
        await expect(page.locator("#transcript")).to_contain_text(
            "Rewrote notes.txt.", timeout=20_000
        )
        assert (cody_env.workspace / "notes.txt").read_text() == "new line\n"
        assert (
            await page.locator("#transcript .tool[data-id=w1]").get_attribute("data-status")
            == "completed"
        )
        assert await approval.is_hidden()
        await page.screenshot(path=str(cody_env.root / "web.png"))


async def test_continuing_a_claude_code_session_in_cody(
    web: WebDaemon, cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    seed_agent_sessions(cody_env)
    model.enqueue(text("Continuing where Claude left off."))
    async with browser() as chromium:
        page = await ready_page(chromium, web.page_url)
        await page.click("li.session-row[data-agent=claude]")
        await page.wait_for_selector("#transcript .tool")
        await page.click("#continue")
        field = page.locator("#ask input")
        assert await field.input_value() == "/home/dev/project", "prefilled from the file, shown"
        await field.fill(str(cody_env.workspace))
        await page.keyboard.press("Enter")
        await page.wait_for_url("**/#/s/cody/*")
        await page.wait_for_selector("#composer:not([hidden])")
        await page.fill("#prompt", "go on")
        await page.keyboard.press("Enter")
        await expect(page.locator("#transcript")).to_contain_text(
            "Continuing where Claude left off.", timeout=20_000
        )
    request = model.requests[-1]
    sent = str(request.body)
    assert "run echo hello" in sent, "the model got the imported conversation"


async def test_model_and_session_text_never_becomes_html(
    web: WebDaemon, cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    model.enqueue(text(f"Here: {HOSTILE}\u202eevil"))
    client = await web.client()
    sid = await client.new_session()
    await client.prompt(sid, HOSTILE)
    await client.close()
    async with browser() as chromium:
        page = await ready_page(chromium, web.page_url)
        await page.click("li.session-row[data-agent=cody]")
        await page.wait_for_selector("#transcript .message.agent")
        transcript = await page.inner_text("#transcript")
        assert HOSTILE in transcript and "<U+202E>evil" in transcript
        assert await page.locator("#transcript img, #transcript b").count() == 0
        assert await page.title() == "Cody"
        # the page's CSP requires Trusted Types: an HTML string write throws
        thrown = await page.evaluate(
            "() => { try { document.body.innerHTML = '<b>x</b>'; return 'written'; } catch (e) { return e.name; } }"
        )
        assert thrown == "TypeError"


async def test_the_page_without_its_token_or_from_another_origin_gets_nothing(
    web: WebDaemon,
) -> None:
    async with browser() as chromium:
        page = await chromium.new_page()
        await page.goto(web.base_url)
        await page.wait_for_selector("#gate:not([hidden])")
        assert "needs its token" in await page.inner_text("#gate")
        assert await page.is_hidden("#main")

        wrong = await chromium.new_page()
        await wrong.goto(f"{web.base_url}#token={'A' * 43}")
        await wrong.wait_for_selector("#gate:not([hidden])")
        assert "refused" in await wrong.inner_text("#gate")

        # a page of another origin that knows the token still cannot open the socket
        server = await asyncio.start_server(
            lambda r, w: serve_foreign_page(r, w, web), "127.0.0.1", 0
        )
        port = server.sockets[0].getsockname()[1]
        foreign = await chromium.new_page()
        await foreign.goto(f"http://127.0.0.1:{port}/")
        await expect(foreign).to_have_title("refused", timeout=15_000)
        server.close()
    await asyncio.sleep(0.2)
    assert any("refused a WebSocket (403)" in line for line in web.stderr)


async def serve_foreign_page(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, web: WebDaemon
) -> None:
    await reader.readuntil(b"\r\n\r\n")
    body = (
        "<!doctype html><title>waiting</title><script>"
        f"const s = new WebSocket('{web.ws_url}?token={web.token}');"
        "s.onopen = () => { document.title = 'opened'; };"
        "s.onerror = () => { document.title = 'refused'; };"
        "</script>"
    ).encode()
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
        % (len(body), body)
    )
    await writer.drain()
    writer.close()
