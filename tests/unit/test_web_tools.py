"""`webSearch`, `perplexitySearch` and `fetchUrl` against local imitations of the real
services and of real pages (tests/support/mock_web.py), all on 127.0.0.1."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from cody_daemon.config.model import ToolConfig
from cody_daemon.policy.sandbox import SandboxPolicy
from cody_daemon.tools.base import Tool, ToolArgumentError, ToolContext, ToolError, ToolResult
from cody_daemon.tools.web import FetchUrlTool, PerplexitySearchTool, WebSearchTool
from cody_daemon.tools.web.fetch_url import FetchUrlArgs, html_to_text

from tests.support.mock_web import (
    UNAUTHORIZED_HTML,
    MockWeb,
    Reply,
    chat_answer,
    json_error,
    scrape_answer,
    search_answer,
)

KEY = "pplx-test-0123456789abcdef"
FC_KEY = "fc-test-0123456789abcdef"


@pytest.fixture
async def web() -> AsyncIterator[MockWeb]:
    async with MockWeb() as server:
        yield server


LOCAL_SITES = ["127.0.0.1"]
"""The imitation sites run on loopback, which fetchUrl reaches only when the config allows it."""


def make_ctx(
    tmp_path: Path,
    env: dict[str, str] | None = None,
    tools: dict[str, ToolConfig] | None = None,
    *,
    allow_local: bool = True,
) -> ToolContext:
    configs = dict(tools or {})
    if allow_local:
        fetch = configs.get("fetchUrl", ToolConfig())
        configs["fetchUrl"] = fetch.model_copy(update={"allow_private": LOCAL_SITES})
    return ToolContext(
        session_id="s",
        call_id="c",
        cwd=tmp_path,
        sandbox=SandboxPolicy.create("workspace-write", tmp_path),
        env=env or {},
        tool_config=configs,
    )


def api_ctx(tmp_path: Path, web: MockWeb, name: str, **config: Any) -> ToolContext:
    tools = {name: ToolConfig(base_url=web.base_url, **config)}
    return make_ctx(tmp_path, {"PERPLEXITY_API_KEY": KEY}, tools)


async def call(tool: Tool[Any], raw: dict[str, object], ctx: ToolContext) -> ToolResult:
    try:
        return await tool.run(tool.parse(raw), ctx)
    finally:
        await tool.aclose()  # type: ignore[attr-defined]


async def fails(tool: Tool[Any], raw: dict[str, object], ctx: ToolContext) -> str:
    with pytest.raises(ToolError) as info:
        await call(tool, raw, ctx)
    return info.value.message


# --- webSearch ------------------------------------------------------------------------------

RESULTS: list[dict[str, Any]] = [
    {
        "title": "PEP 695 – Type Parameter Syntax",
        "url": "https://peps.python.org/pep-0695/",
        "snippet": "This PEP specifies an improved syntax for specifying type parameters\n"
        "within a generic class, function, or type alias.",
        "date": "2022-06-15",
        "last_updated": "2024-01-10",
    },
    {
        "title": "What's New In Python 3.12",
        "url": "https://docs.python.org/3/whatsnew/3.12.html",
        "snippet": "PEP 695 introduces a new, more compact and explicit way to create generic "
        "classes and functions.",
    },
]


async def test_web_search_sends_documented_body_and_formats_ranked_results(
    tmp_path: Path, web: MockWeb
) -> None:
    web.json("POST", "/search", search_answer(RESULTS))
    ctx = api_ctx(tmp_path, web, "webSearch")
    result = await call(WebSearchTool(), {"query": "PEP 695 syntax", "maxResults": 7}, ctx)

    (request,) = web.requests_to("/search")
    assert request.method == "POST"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    assert request.json() == {"query": "PEP 695 syntax", "max_results": 7}
    assert result.output == (
        "1. PEP 695 – Type Parameter Syntax\n"
        "   https://peps.python.org/pep-0695/\n"
        "   This PEP specifies an improved syntax for specifying type parameters within a "
        "generic class, function, or type alias.\n"
        "\n"
        "2. What's New In Python 3.12\n"
        "   https://docs.python.org/3/whatsnew/3.12.html\n"
        "   PEP 695 introduces a new, more compact and explicit way to create generic classes "
        "and functions."
    )
    assert result.raw_output == {
        "results": [
            {
                "title": "PEP 695 – Type Parameter Syntax",
                "url": "https://peps.python.org/pep-0695/",
            },
            {
                "title": "What's New In Python 3.12",
                "url": "https://docs.python.org/3/whatsnew/3.12.html",
            },
        ]
    }
    assert result.content[0].model_dump()["content"]["text"] == result.output


async def test_web_search_default_and_bounds_of_max_results(tmp_path: Path, web: MockWeb) -> None:
    web.json("POST", "/search", search_answer([]))
    result = await call(WebSearchTool(), {"query": "nothing"}, api_ctx(tmp_path, web, "webSearch"))
    assert web.requests_to("/search")[0].json()["max_results"] == 5
    assert result.output == "No web results for: nothing"
    for bad in (0, 21):
        with pytest.raises(ToolArgumentError, match="maxResults"):
            WebSearchTool().parse({"query": "q", "maxResults": bad})
    tool = WebSearchTool()
    assert tool.kind == "fetch" and tool.requires_approval
    schema = tool.spec().parameters["properties"]["maxResults"]
    assert (schema["minimum"], schema["maximum"]) == (1, 20)


async def test_missing_key_is_a_clear_error(tmp_path: Path) -> None:
    message = await fails(WebSearchTool(), {"query": "q"}, make_ctx(tmp_path))
    assert "PERPLEXITY_API_KEY" in message
    assert "tools.webSearch.env_key" in message

    blank = make_ctx(tmp_path, {"PERPLEXITY_API_KEY": "  "})
    assert "PERPLEXITY_API_KEY" in await fails(PerplexitySearchTool(), {"query": "q"}, blank)

    custom = make_ctx(
        tmp_path, {"PERPLEXITY_API_KEY": KEY}, {"webSearch": ToolConfig(env_key="MY_PPLX")}
    )
    message = await fails(WebSearchTool(), {"query": "q"}, custom)
    assert "MY_PPLX" in message and "tools.webSearch.env_key" in message


async def test_env_key_from_config_names_the_variable(tmp_path: Path, web: MockWeb) -> None:
    web.json("POST", "/search", search_answer(RESULTS[:1]))
    tools = {"webSearch": ToolConfig(base_url=web.base_url, env_key="MY_PPLX")}
    ctx = make_ctx(tmp_path, {"MY_PPLX": "pplx-other-key"}, tools)
    await call(WebSearchTool(), {"query": "q"}, ctx)
    assert web.requests_to("/search")[0].headers["authorization"] == "Bearer pplx-other-key"


async def test_401_is_a_clear_error_without_the_key(tmp_path: Path, web: MockWeb) -> None:
    web.route(
        "POST",
        "/search",
        Reply(status=401, headers={"Content-Type": "text/html"}, body=UNAUTHORIZED_HTML.encode()),
    )
    message = await fails(WebSearchTool(), {"query": "q"}, api_ctx(tmp_path, web, "webSearch"))
    assert "HTTP 401 Unauthorized" in message
    assert "PERPLEXITY_API_KEY" in message
    assert KEY not in message and "<html>" not in message

    # A JSON error that echoes the key is shown, scrubbed.
    echo = json_error(f"Invalid API key {KEY} provided", type="invalid_api_key", code=401)
    web.json("POST", "/chat/completions", echo, status=401)
    ctx = api_ctx(tmp_path, web, "perplexitySearch")
    message = await fails(PerplexitySearchTool(), {"query": "q"}, ctx)
    assert "HTTP 401 Unauthorized: Invalid API key [redacted] provided" in message
    assert KEY not in message


async def test_api_timeout_is_a_tool_error(tmp_path: Path, web: MockWeb) -> None:
    web.json("POST", "/search", search_answer(RESULTS), delay_s=5)
    ctx = api_ctx(tmp_path, web, "webSearch", timeout_s=0.2)
    started = time.monotonic()
    message = await fails(WebSearchTool(), {"query": "q"}, ctx)
    assert time.monotonic() - started < 1.5
    assert "did not answer within 0.2 s" in message and "tools.webSearch.timeout_s" in message


async def test_unreachable_service_is_a_tool_error(tmp_path: Path) -> None:
    async with MockWeb() as gone:
        base = gone.base_url
    tools = {"webSearch": ToolConfig(base_url=base)}
    ctx = make_ctx(tmp_path, {"PERPLEXITY_API_KEY": KEY}, tools)
    message = await fails(WebSearchTool(), {"query": "q"}, ctx)
    assert f"could not reach the Perplexity API at {base}/search" in message


# --- perplexitySearch -----------------------------------------------------------------------

ANSWER = (
    "<think>\nThe user asks about PEP 695. I should search for the PEP and the release notes."
    "\nSource [1] is the PEP itself; [2] is the changelog.\n</think>\n\n"
    "PEP 695 adds a compact syntax for generics, `def first[T](xs: list[T]) -> T`, and the "
    "`type` statement for aliases [1]. It shipped in Python 3.12 [2]."
)


async def test_perplexity_strips_think_and_lists_citations(tmp_path: Path, web: MockWeb) -> None:
    search_results = [
        {"title": "What's New In Python 3.12", "url": RESULTS[1]["url"], "date": "2023-10-02"},
        {"title": "PEP 695 – Type Parameter Syntax", "url": RESULTS[0]["url"], "date": None},
    ]
    citations = [RESULTS[0]["url"], RESULTS[1]["url"], "https://realpython.com/python312-typing/"]
    web.json(
        "POST",
        "/chat/completions",
        chat_answer(ANSWER, citations=citations, search_results=search_results),
    )
    ctx = api_ctx(tmp_path, web, "perplexitySearch")
    result = await call(PerplexitySearchTool(), {"query": "What is PEP 695?"}, ctx)

    (request,) = web.requests_to("/chat/completions")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.json() == {
        "model": "sonar-reasoning-pro",
        "messages": [{"role": "user", "content": "What is PEP 695?"}],
        "stream": False,
    }
    assert "<think>" not in result.output and "I should search" not in result.output
    assert result.output == (
        "PEP 695 adds a compact syntax for generics, `def first[T](xs: list[T]) -> T`, and the "
        "`type` statement for aliases [1]. It shipped in Python 3.12 [2].\n\n"
        "Sources:\n"
        "1. PEP 695 – Type Parameter Syntax - https://peps.python.org/pep-0695/\n"
        "2. What's New In Python 3.12 - https://docs.python.org/3/whatsnew/3.12.html\n"
        "3. https://realpython.com/python312-typing/"
    )
    assert result.raw_output is not None
    assert result.raw_output["model"] == "sonar-reasoning-pro"
    assert [s["url"] for s in result.raw_output["sources"]] == citations


async def test_perplexity_uses_search_results_without_citations(
    tmp_path: Path, web: MockWeb
) -> None:
    search_results = [{"title": "Python docs", "url": "https://docs.python.org/3/", "date": None}]
    web.json(
        "POST", "/chat/completions", chat_answer("Plain answer.", search_results=search_results)
    )
    result = await call(
        PerplexitySearchTool(), {"query": "q"}, api_ctx(tmp_path, web, "perplexitySearch")
    )
    assert result.output == "Plain answer.\n\nSources:\n1. Python docs - https://docs.python.org/3/"


async def test_perplexity_answer_that_is_only_reasoning_is_an_error(
    tmp_path: Path, web: MockWeb
) -> None:
    web.json("POST", "/chat/completions", chat_answer("<think>cut off mid-thought", citations=[]))
    message = await fails(
        PerplexitySearchTool(), {"query": "q"}, api_ctx(tmp_path, web, "perplexitySearch")
    )
    assert "returned no answer" in message


# --- fetchUrl: direct -----------------------------------------------------------------------

ARTICLE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Understanding Rust Lifetimes | The Systems Blog</title>
<meta name="description" content="A practical guide to lifetimes in Rust.">
<link rel="stylesheet" href="/static/site.css">
<script>window.dataLayer = window.dataLayer || []; function gtag(){dataLayer.push(arguments);}</script>
</head>
<body>
<header class="site-header">
  <a class="logo" href="/">The Systems Blog</a>
  <nav class="main-nav"><ul>
    <li><a href="/">Home</a></li><li><a href="/archive">Archive</a></li>
    <li><a href="/about">About us</a></li><li><a href="/subscribe">Subscribe</a></li>
  </ul></nav>
</header>
<div class="ad-banner" id="top-ad"><a href="https://ads.example.net/click?id=1">Buy cheap widgets now! Limited offer</a></div>
<main>
<article class="post">
  <h1>Understanding Rust Lifetimes</h1>
  <p class="byline">By Ada Example, March 3, 2025</p>
  <p>Lifetimes are how the Rust compiler reasons about how long references stay valid.
  They are part of every reference type, even when you never write them, and learning to
  read them makes borrow checker errors far less mysterious.</p>
  <h2>Why the borrow checker needs them</h2>
  <p>When a function takes two references and returns one, the compiler cannot know which
  input the output borrows from. A lifetime annotation states that relationship so callers
  can be checked without looking inside the function body.</p>
  <ul>
    <li>Every reference has a lifetime.</li>
    <li>Most lifetimes are inferred by the elision rules.</li>
    <li>Annotations describe relationships between references, not durations.</li>
  </ul>
  <p>For the complete rules, read <a href="https://doc.rust-lang.org/book/ch10-03-lifetime-syntax.html">the Rust Book chapter on lifetimes</a>
  and try the examples yourself; the compiler's messages explain each mistake clearly.</p>
</article>
<aside class="sidebar">
  <h3>Popular posts</h3>
  <ul><li><a href="/p/1">Ten tips for faster builds</a></li><li><a href="/p/2">Async in practice</a></li></ul>
  <div class="ad">Sponsored: Try CloudHost free for 30 days</div>
</aside>
</main>
<footer class="site-footer"><p>© 2025 The Systems Blog. All rights reserved.</p><a href="/privacy">Privacy policy</a></footer>
<script src="/static/analytics.js"></script>
</body>
</html>
"""


async def test_fetch_turns_an_article_into_markdown_without_boilerplate(
    tmp_path: Path, web: MockWeb
) -> None:
    web.page("/posts/rust-lifetimes", ARTICLE)
    url = web.url("/posts/rust-lifetimes")
    result = await call(FetchUrlTool(), {"url": url}, make_ctx(tmp_path))
    out = result.output
    assert out.startswith(f"URL: {url}\nTitle: Understanding Rust Lifetimes | The Systems Blog\n\n")
    assert "# Understanding Rust Lifetimes" in out
    assert "## Why the borrow checker needs them" in out
    assert "- Every reference has a lifetime." in out
    assert (
        "[the Rust Book chapter on lifetimes](https://doc.rust-lang.org/book/ch10-03-lifetime-syntax.html)"
        in out
    )
    for boilerplate in (
        "Buy cheap widgets",
        "All rights reserved",
        "Archive",
        "Subscribe",
        "Sponsored",
        "Ten tips",
        "Privacy policy",
        "dataLayer",
    ):
        assert boilerplate not in out
    assert result.raw_output is not None
    assert result.raw_output["source"] == "http" and result.raw_output["contentType"] == "text/html"
    (request,) = web.requests_to("/posts/rust-lifetimes")
    assert "authorization" not in request.headers and "cookie" not in request.headers


async def test_fetch_follows_redirects_reports_final_url_and_sends_no_cookies(
    tmp_path: Path, web: MockWeb
) -> None:
    web.redirect("/old", "/moved", status=301, headers={"Set-Cookie": "session=s3cr3t; Path=/"})
    web.redirect("/moved", web.url("/new"), headers={"Set-Cookie": "tracker=abc; Path=/"})
    web.page("/new", "# Notes\n\nPlain markdown.\n", content_type="text/markdown; charset=utf-8")
    result = await call(FetchUrlTool(), {"url": web.url("/old")}, make_ctx(tmp_path))
    assert result.output == f"URL: {web.url('/new')}\n\n# Notes\n\nPlain markdown."
    assert [r.path for r in web.requests] == ["/old", "/moved", "/new"]
    assert all("cookie" not in r.headers for r in web.requests)
    assert result.raw_output is not None and result.raw_output["requestedUrl"] == web.url("/old")


async def test_fetch_stops_after_five_redirects(tmp_path: Path, web: MockWeb) -> None:
    web.redirect("/loop", "/loop")
    assert "redirected more than 5 times" in await fails(
        FetchUrlTool(), {"url": web.url("/loop")}, make_ctx(tmp_path)
    )
    assert len(web.requests) == 6


async def test_fetch_stops_reading_a_huge_page_at_the_size_limit(
    tmp_path: Path, web: MockWeb
) -> None:
    size = 200 * 1024 * 1024
    web.route("GET", "/huge.txt", Reply(headers={"Content-Type": "text/plain"}, stream_size=size))
    result = await call(FetchUrlTool(), {"url": web.url("/huge.txt")}, make_ctx(tmp_path))
    assert "larger than 5242880 bytes; only the first 5242880 bytes were read" in result.output
    assert "[Output cut at 100000 characters;" in result.output
    assert result.raw_output is not None
    assert result.raw_output["bytes"] == 5 * 1024 * 1024 and result.raw_output["truncated"]
    # The server could push some megabytes into socket buffers, never the whole page.
    assert web.sent["/huge.txt"] < 40 * 1024 * 1024


async def test_fetch_total_time_limit_covers_a_trickling_body(tmp_path: Path, web: MockWeb) -> None:
    reply = Reply(
        headers={"Content-Type": "text/plain"},
        stream_size=10_000,
        chunk_size=10,
        chunk_delay_s=0.05,
    )
    web.route("GET", "/slow", reply)
    ctx = make_ctx(tmp_path, tools={"fetchUrl": ToolConfig(timeout_s=0.3)})
    started = time.monotonic()
    message = await fails(FetchUrlTool(), {"url": web.url("/slow")}, ctx)
    assert time.monotonic() - started < 1.5
    assert "did not load within 0.3 s" in message


async def test_fetch_refuses_other_schemes_and_credentials(tmp_path: Path) -> None:
    tool = FetchUrlTool()
    for url in (
        "file:///etc/passwd",
        "ftp://example.com/x",
        "javascript:alert(1)",
        "example.com/page",
    ):
        with pytest.raises(ToolArgumentError, match="only http:// and https://"):
            tool.parse({"url": url})
    with pytest.raises(ToolArgumentError, match="embedded credentials"):
        tool.parse({"url": "https://user:pw@example.com/"})
    # run() checks again, whatever built the arguments.
    with pytest.raises(ToolError, match="only http:// and https://"):
        await tool.run(FetchUrlArgs.model_construct(url="file:///etc/passwd"), make_ctx(tmp_path))


async def test_fetch_returns_json_and_text_as_is(tmp_path: Path, web: MockWeb) -> None:
    payload = '{"name": "cody", "tags": ["agent", "daemon"], "stars": 3}'
    web.page("/api/info.json", payload, content_type="application/json")
    web.page("/robots.txt", "User-agent: *\nDisallow: /private\n", content_type="text/plain")
    result = await call(FetchUrlTool(), {"url": web.url("/api/info.json")}, make_ctx(tmp_path))
    assert result.output == f"URL: {web.url('/api/info.json')}\n\n{payload}"
    assert json.loads(result.output.split("\n\n", 1)[1]) == json.loads(payload)
    result = await call(FetchUrlTool(), {"url": web.url("/robots.txt")}, make_ctx(tmp_path))
    assert result.output.endswith("\n\nUser-agent: *\nDisallow: /private")


async def test_fetch_refuses_binary_types_and_http_errors(tmp_path: Path, web: MockWeb) -> None:
    web.page("/paper.pdf", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", content_type="application/pdf")
    message = await fails(FetchUrlTool(), {"url": web.url("/paper.pdf")}, make_ctx(tmp_path))
    assert "application/pdf" in message
    message = await fails(FetchUrlTool(), {"url": web.url("/missing")}, make_ctx(tmp_path))
    assert "HTTP 404 Not Found" in message


async def test_fetch_falls_back_to_plain_text_when_trafilatura_finds_nothing(
    tmp_path: Path, web: MockWeb
) -> None:
    web.page(
        "/tiny",
        "<html><head><title>Tiny</title><style>p{}</style></head>"
        "<body><footer>Only a footer line here</footer></body></html>",
    )
    result = await call(FetchUrlTool(), {"url": web.url("/tiny")}, make_ctx(tmp_path))
    assert result.output == f"URL: {web.url('/tiny')}\nTitle: Tiny\n\nOnly a footer line here"
    assert (
        html_to_text("<head><title>x</title><body><p>a</p><script>b</script><p>c &amp; d")
        == "a\nc & d"
    )


async def test_fetch_decodes_the_charset_a_page_declares(tmp_path: Path, web: MockWeb) -> None:
    body = "Crème brûlée is served every day at noon. " * 8
    page = (
        '<html><head><meta charset="iso-8859-1"><title>Café menu</title></head>'
        f"<body><article><h1>Café</h1><p>{body}</p></article></body></html>"
    )
    web.page("/menu", page.encode("latin-1"), content_type="text/html")
    result = await call(FetchUrlTool(), {"url": web.url("/menu")}, make_ctx(tmp_path))
    assert "Title: Café menu" in result.output
    assert "Crème brûlée is served" in result.output


async def test_fetch_caps_output(tmp_path: Path, web: MockWeb) -> None:
    web.page("/long.txt", "x" * 5000, content_type="text/plain")
    result = await call(
        FetchUrlTool(max_output_chars=1000), {"url": web.url("/long.txt")}, make_ctx(tmp_path)
    )
    assert result.output.endswith(
        "x" * 1000 + "\n\n[Output cut at 1000 characters; 4000 more not shown.]"
    )


# --- fetchUrl: Firecrawl --------------------------------------------------------------------


def firecrawl_ctx(tmp_path: Path, web: MockWeb) -> ToolContext:
    tools = {"fetchUrl": ToolConfig(base_url=web.url("/v2"))}
    return make_ctx(tmp_path, {"FIRECRAWL_API_KEY": FC_KEY}, tools)


async def test_fetch_uses_firecrawl_when_its_key_is_set(tmp_path: Path, web: MockWeb) -> None:
    page = "https://blog.example.org/posts/rust-lifetimes"
    markdown = "# Understanding Rust Lifetimes\n\nLifetimes are how the compiler reasons."
    web.json(
        "POST",
        "/v2/scrape",
        scrape_answer(markdown, url=page, title="Understanding Rust Lifetimes"),
    )
    result = await call(FetchUrlTool(), {"url": page}, firecrawl_ctx(tmp_path, web))
    (request,) = web.requests
    assert request.path == "/v2/scrape"
    assert request.headers["authorization"] == f"Bearer {FC_KEY}"
    assert request.json() == {"url": page, "formats": ["markdown"], "onlyMainContent": True}
    assert result.output == f"URL: {page}\nTitle: Understanding Rust Lifetimes\n\n{markdown}"
    assert result.raw_output is not None and result.raw_output["source"] == "firecrawl"


async def test_firecrawl_failure_falls_back_to_a_direct_fetch(tmp_path: Path, web: MockWeb) -> None:
    web.json(
        "POST",
        "/v2/scrape",
        {"success": False, "error": "Payment required to access this resource."},
        status=402,
    )
    web.page("/doc.txt", "direct text", content_type="text/plain")
    result = await call(FetchUrlTool(), {"url": web.url("/doc.txt")}, firecrawl_ctx(tmp_path, web))
    assert (
        "Note: Firecrawl failed (Firecrawl answered HTTP 402 Payment Required: Payment required"
        in result.output
    )
    assert result.output.endswith("\n\ndirect text") and FC_KEY not in result.output
    assert [r.path for r in web.requests] == ["/v2/scrape", "/doc.txt"]
    assert "authorization" not in web.requests[1].headers


async def test_firecrawl_page_error_is_reported(tmp_path: Path, web: MockWeb) -> None:
    page = "https://blog.example.org/gone"
    web.json("POST", "/v2/scrape", scrape_answer("Not found", url=page, title="404", status=404))
    message = await fails(FetchUrlTool(), {"url": page}, firecrawl_ctx(tmp_path, web))
    assert "HTTP 404" in message and len(web.requests) == 1


# --- policy hooks and lifecycle -------------------------------------------------------------


async def test_fetch_grant_key_is_the_origin(tmp_path: Path) -> None:
    tool, ctx = FetchUrlTool(), make_ctx(tmp_path)
    key = tool.grant_key(tool.parse({"url": "https://Example.com/a?b=1"}), ctx)
    assert key == ("fetch", "https://example.com:443")
    assert tool.grant_key(tool.parse({"url": "https://example.com:443/other"}), ctx) == key
    assert tool.grant_key(tool.parse({"url": "http://example.com/"}), ctx) == (
        "fetch",
        "http://example.com:80",
    )
    assert tool.grant_key(tool.parse({"url": "http://127.0.0.1:8080/x"}), ctx) == (
        "fetch",
        "http://127.0.0.1:8080",
    )
    assert tool.kind == "fetch" and tool.requires_approval


async def test_aclose_closes_the_client_it_created(tmp_path: Path, web: MockWeb) -> None:
    web.page("/a.txt", "a", content_type="text/plain")
    tool = FetchUrlTool()
    await tool.run(tool.parse({"url": web.url("/a.txt")}), make_ctx(tmp_path))
    client = tool._http.get()
    await tool.aclose()
    assert client.is_closed
    await tool.aclose()  # idempotent


# --- fetchUrl: the user's own network is off limits -------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/",
        "http://localhost:9/",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.1.2.3/",
        "http://192.168.0.1/admin",
        "http://[::1]:9/",
        "http://[::ffff:127.0.0.1]:9/",
        "http://0.0.0.0:9/",
    ],
)
async def test_fetch_refuses_loopback_private_and_link_local_targets(
    tmp_path: Path, url: str
) -> None:
    with pytest.raises(ToolError) as caught:
        await call(FetchUrlTool(), {"url": url}, make_ctx(tmp_path, allow_local=False))
    assert "fetchUrl only reaches public addresses" in caught.value.message
    assert "allow_private" in caught.value.message


async def test_fetch_sends_nothing_to_a_local_server_by_default(
    tmp_path: Path, web: MockWeb
) -> None:
    web.page("/admin", "<html><title>router admin</title></html>")
    with pytest.raises(ToolError, match="loopback"):
        await call(
            FetchUrlTool(), {"url": web.url("/admin")}, make_ctx(tmp_path, allow_local=False)
        )
    assert web.requests == []


async def test_fetch_refuses_a_redirect_into_a_network_that_is_not_allowed(
    tmp_path: Path, web: MockWeb
) -> None:
    """Only 127.0.0.1 is allowed: a redirect from there to 127.0.0.2 is refused before it is sent."""
    async with MockWeb("127.0.0.2") as inner:
        inner.page("/secret", "internal only")
        web.redirect("/go", inner.url("/secret"))
        with pytest.raises(ToolError, match="127.0.0.2 is a loopback address"):
            await call(FetchUrlTool(), {"url": web.url("/go")}, make_ctx(tmp_path))
        assert inner.requests == []
        assert len(web.requests_to("/go")) == 1


def test_allow_private_takes_only_addresses_and_networks() -> None:
    assert ToolConfig(allow_private=["127.0.0.1", "10.0.0.0/8", "fd00::/8"]).allow_private
    with pytest.raises(ValueError, match="not an IP address or CIDR network"):
        ToolConfig(allow_private=["intranet.example"])
