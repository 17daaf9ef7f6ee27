"""`fetchUrl`: a web page as readable markdown (or a text/JSON document as is).

Two paths:
- With a Firecrawl key (`[tools.fetchUrl]` `env_key`, else `FIRECRAWL_API_KEY`): `POST
  {base_url}/scrape` (default base `https://api.firecrawl.dev/v2`; `base_url` in
  `[tools.fetchUrl]` then points at Firecrawl) with `{"url", "formats": ["markdown"],
  "onlyMainContent": true}`; the answer is `{"success", "data": {"markdown", "metadata":
  {"title", "sourceURL", "url"?, "statusCode"}}}`
  (https://docs.firecrawl.dev/api-reference/endpoint/scrape). If Firecrawl itself fails
  (not the page, and not by timing out) the page is fetched directly, with a note.
- Otherwise a direct GET with httpx: redirects followed (at most 5, across sites too; the
  final URL is reported; every hop's address checked by `address_guard`: only public
  addresses unless `[tools.fetchUrl] allow_private` lists the network), one total time limit (`timeout_s`, default 30 s) and a body limit
  (`max_body_bytes`, default 5 MB: the body is streamed and reading stops at the limit,
  which the output says). HTML becomes markdown with trafilatura (imported lazily and run in
  a worker thread: it is slow to import and CPU-bound), or plain text when trafilatura finds
  nothing; text, markdown, JSON, XML and YAML are returned as they are; other types are
  refused by content type before the body is read.

Invariants: only http(s) URLs without embedded credentials are fetched (checked when the
arguments are parsed and again before running). Nothing but the URL and generic headers is
sent to the site: no cookies (the client's jar refuses them all), no API key, no
credentials. The output starts with `URL: <final url>`, then `Title: ...` when known, then
notes, then the text, which is cut at `max_output_chars` with a note. The grant key is the
URL's origin, `("fetch", "scheme://host:port")`, so "allow for this session" covers one
site; a redirect to another site is followed without asking again.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import html
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Any, Final

from cody_protocol.content import ContentToolCallContent, TextContent, ToolCallContent
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ...policy.rules import RuleSubject, UrlSubject
from ..base import GrantKey, ToolContext, ToolError, ToolResult
from .address_guard import AddressPolicy, BlockedAddress, UnresolvableHost
from .common import (
    MAX_REDIRECTS,
    Endpoint,
    ServiceError,
    WebTool,
    lookup_key,
    post_json,
    read_capped,
    resolve_endpoint,
    timeout_for,
)

if TYPE_CHECKING:
    import httpx

__all__ = [
    "FIRECRAWL_BASE_URL",
    "FIRECRAWL_ENV_KEY",
    "MAX_BODY_BYTES",
    "MAX_OUTPUT_CHARS",
    "FetchUrlArgs",
    "FetchUrlTool",
    "check_url",
    "html_to_text",
    "origin",
]

FIRECRAWL_BASE_URL: Final = "https://api.firecrawl.dev/v2"
FIRECRAWL_ENV_KEY: Final = "FIRECRAWL_API_KEY"
MAX_BODY_BYTES: Final = 5 * 1024 * 1024
MAX_OUTPUT_CHARS: Final = 100_000
_ACCEPT: Final = (
    "text/html,application/xhtml+xml,text/markdown;q=0.9,text/plain;q=0.9,"
    "application/json;q=0.9,*/*;q=0.5"
)
_HTML_TYPES: Final = frozenset({"text/html", "application/xhtml+xml"})
# fmt: off
_TEXT_TYPES: Final = frozenset({
    "application/json", "application/ld+json", "application/xml", "application/javascript",
    "application/x-javascript", "application/ecmascript", "application/yaml",
    "application/x-yaml", "application/toml", "application/x-sh", "application/sql",
    "application/graphql",
})
# fmt: on
_TITLE = re.compile(r"<title[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.I)


def check_url(value: str) -> str:
    """`value` stripped, if it is an http(s) URL with a host and no credentials; ValueError."""
    import httpx

    value = value.strip()
    try:
        url = httpx.URL(value)
    except (httpx.InvalidURL, ValueError) as exc:
        raise ValueError(f"not a valid URL: {exc}") from None
    if url.scheme not in ("http", "https"):
        shown = f"{url.scheme}://" if url.scheme else "no scheme"
        raise ValueError(f"only http:// and https:// URLs can be fetched (got {shown})")
    if not url.host:
        raise ValueError("the URL has no host")
    if url.userinfo:
        raise ValueError("URLs with embedded credentials (user:password@) are not fetched")
    return value


def origin(value: str) -> str:
    """`scheme://host:port` of an http(s) URL, with the default port made explicit."""
    import httpx

    url = httpx.URL(value)
    port = url.port or (443 if url.scheme == "https" else 80)
    host = f"[{url.host}]" if ":" in url.host else url.host
    return f"{url.scheme}://{host}:{port}"


class FetchUrlArgs(BaseModel):
    model_config = ConfigDict(
        extra="forbid", validate_by_name=True, validate_by_alias=True, defer_build=True
    )

    url: str = Field(
        min_length=1, description="The http:// or https:// URL of the page or document to read."
    )

    @field_validator("url")
    @classmethod
    def _check(cls, value: str) -> str:
        return check_url(value)


@dataclass(kw_only=True)
class _Page:
    url: str
    text: str
    source: str
    """"http" or "firecrawl"."""
    title: str | None = None
    status: int | None = None
    content_type: str | None = None
    bytes_read: int | None = None
    body_cut: bool = False
    notes: list[str] = field(default_factory=list)


class FetchUrlTool(WebTool[FetchUrlArgs]):
    name = "fetchUrl"
    description = (
        "Fetch a web page (http/https) and return its main content as markdown (navigation, "
        "ads and footers dropped), or a text/JSON document as it is. Follows redirects and "
        "reports the final URL. Large pages are cut; binary files (PDF, images) are refused."
    )
    kind = "fetch"
    args_model = FetchUrlArgs

    def __init__(
        self,
        *,
        client: httpx.AsyncClient | None = None,
        max_body_bytes: int = MAX_BODY_BYTES,
        max_output_chars: int = MAX_OUTPUT_CHARS,
    ) -> None:
        super().__init__(client=client)
        self.max_body_bytes = max_body_bytes
        self.max_output_chars = max_output_chars

    def title(self, args: FetchUrlArgs) -> str:
        return f"Fetch {args.url}"

    def grant_key(self, args: FetchUrlArgs, ctx: ToolContext) -> GrantKey:
        """The URL's origin: a session grant allows every page of one site."""
        return ("fetch", origin(args.url))

    def permission_subject(self, args: FetchUrlArgs, ctx: ToolContext) -> RuleSubject:
        """The host (`fetchUrl(domain:docs.rs)` rules); a URL without one matches none."""
        import urllib.parse

        host = urllib.parse.urlsplit(args.url.strip()).hostname
        return UrlSubject(host) if host else None

    def preview(self, args: FetchUrlArgs, ctx: ToolContext) -> list[ToolCallContent]:
        text = f"GET {args.url}"
        if lookup_key(ctx, self.name, FIRECRAWL_ENV_KEY) is not None:
            config = ctx.tool_config.get(self.name)
            base = config.base_url if config is not None and config.base_url else None
            text += f"\nvia Firecrawl ({base or FIRECRAWL_BASE_URL})"
        return [ContentToolCallContent(content=TextContent(text=text))]

    async def run(self, args: FetchUrlArgs, ctx: ToolContext) -> ToolResult:
        try:
            url = check_url(args.url)
        except ValueError as exc:
            raise ToolError(f"fetchUrl: {exc}") from None
        notes: list[str] = []
        config = ctx.tool_config.get(self.name)
        policy = AddressPolicy.from_config(config.allow_private if config is not None else ())
        if lookup_key(ctx, self.name, FIRECRAWL_ENV_KEY) is not None:
            import httpx

            target = httpx.URL(url)
            try:
                await policy.check_host(target.host, target.port or _default_port(target.scheme))
            except UnresolvableHost:
                pass  # Firecrawl resolves it remotely, where the user's network is not reachable
            except BlockedAddress as exc:
                raise ToolError(f"fetchUrl: refused {url}: {exc}") from None
            endpoint = resolve_endpoint(
                ctx,
                self.name,
                service="Firecrawl",
                default_base_url=FIRECRAWL_BASE_URL,
                default_env=FIRECRAWL_ENV_KEY,
            )
            try:
                return self._result(await self._scrape(endpoint, url), url)
            except ServiceError as exc:
                if exc.timed_out:
                    raise
                reason = exc.message.removeprefix(f"{self.name}: ")
                notes.append(f"Firecrawl failed ({reason}); fetched the page directly.")
        page = await self._fetch(url, timeout_for(ctx, self.name), policy)
        page.notes[:0] = notes
        return self._result(page, url)

    # -- Firecrawl ----------------------------------------------------------------------------

    async def _scrape(self, endpoint: Endpoint, url: str) -> _Page:
        body = {"url": url, "formats": ["markdown"], "onlyMainContent": True}
        answer = await post_json(self._http.get(), endpoint, "scrape", body)
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, dict) or answer.get("success") is False:
            error = answer.get("error") if isinstance(answer, dict) else None
            raise ServiceError(f"Firecrawl could not scrape {url}: {error or 'no data'}")
        raw_meta = data.get("metadata")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        status = meta.get("statusCode") if isinstance(meta.get("statusCode"), int) else None
        final = next(
            (u for u in (meta.get("url"), meta.get("sourceURL")) if isinstance(u, str)), url
        )
        if status is not None and status >= 400:
            raise ToolError(f"fetchUrl: {final} answered HTTP {status} (through Firecrawl)")
        markdown = data.get("markdown")
        if not isinstance(markdown, str) or not markdown.strip():
            raise ServiceError(f"Firecrawl returned no markdown for {url}")
        title = meta.get("title") if isinstance(meta.get("title"), str) else None
        return _Page(
            url=final, text=markdown.strip(), source="firecrawl", title=title, status=status
        )

    # -- direct fetch -------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _open(
        self, url: str, timeout_s: float, policy: AddressPolicy
    ) -> AsyncIterator[httpx.Response]:
        """GET `url`, following redirects one hop at a time with every hop's address checked."""
        import httpx

        client = self._http.get()
        for _hop in range(MAX_REDIRECTS + 1):
            target = httpx.URL(url)
            await policy.check_host(target.host, target.port or _default_port(target.scheme))
            request = client.build_request(
                "GET", url, headers={"Accept": _ACCEPT}, timeout=timeout_s
            )
            response = await client.send(request, stream=True, follow_redirects=False)
            try:
                policy.check_peer(response, target.host)
                if not response.has_redirect_location:
                    yield response
                    return
                url = str(response.url.join(response.headers["Location"]))
                if httpx.URL(url).scheme not in ("http", "https"):
                    raise httpx.UnsupportedProtocol(url)
            finally:
                await response.aclose()
        raise httpx.TooManyRedirects(f"more than {MAX_REDIRECTS} redirects", request=request)

    async def _fetch(self, url: str, timeout_s: float, policy: AddressPolicy) -> _Page:
        import httpx

        try:
            async with (
                asyncio.timeout(timeout_s),
                self._open(url, timeout_s, policy) as response,
            ):
                final = str(response.url)
                if not response.is_success:
                    reason = response.reason_phrase or "error"
                    raise ToolError(
                        f"fetchUrl: {final} answered HTTP {response.status_code} {reason}"
                    )
                content_type = response.headers.get("content-type", "")
                mime = content_type.split(";", 1)[0].strip().lower()
                kind = _kind(mime)
                if kind == "binary":
                    raise ToolError(
                        f"fetchUrl: {final} is {mime}, which is not text; only HTML and text "
                        "documents (text/*, JSON, XML) can be read"
                    )
                body, cut = await read_capped(response, self.max_body_bytes)
                charset = response.charset_encoding
        except (TimeoutError, httpx.TimeoutException):
            raise ToolError(
                f"fetchUrl: {url} did not load within {timeout_s:g} s "
                "(tools.fetchUrl.timeout_s sets the limit)"
            ) from None
        except httpx.TooManyRedirects:
            raise ToolError(f"fetchUrl: {url} redirected more than {MAX_REDIRECTS} times") from None
        except httpx.UnsupportedProtocol:
            raise ToolError(f"fetchUrl: {url} redirected to a URL that is not http(s)") from None
        except httpx.HTTPError as exc:
            raise ToolError(
                f"fetchUrl: could not fetch {url}: {exc or type(exc).__name__}"
            ) from None
        except BlockedAddress as exc:
            raise ToolError(f"fetchUrl: refused {url}: {exc}") from None
        if kind == "unknown":
            kind = _sniff(body, final)
        page = _Page(
            url=final,
            text="",
            source="http",
            status=response.status_code,
            content_type=mime or None,
            bytes_read=len(body),
            body_cut=cut,
        )
        if cut:
            page.notes.append(
                f"The document is larger than {self.max_body_bytes} bytes; only the first "
                f"{self.max_body_bytes} bytes were read."
            )
        if kind == "html":
            text = _decode(body, charset, html_doc=True)
            page.title = _title(text)
            page.text = await asyncio.to_thread(_html_to_markdown, text, final)
        else:
            page.text = _decode(body, charset, html_doc=False)
        return page

    # -- output -------------------------------------------------------------------------------

    def _result(self, page: _Page, requested: str) -> ToolResult:
        lines = [f"URL: {page.url}"]
        if page.title:
            lines.append(f"Title: {page.title}")
        lines += [f"Note: {note}" for note in page.notes]
        text = page.text.strip() or "(the page has no readable text)"
        output_cut = len(text) > self.max_output_chars
        if output_cut:
            more = len(text) - self.max_output_chars
            text = (
                f"{text[: self.max_output_chars]}\n\n[Output cut at {self.max_output_chars} "
                f"characters; {more} more not shown.]"
            )
        output = "\n".join(lines) + "\n\n" + text
        raw: dict[str, Any] = {
            "url": page.url,
            "requestedUrl": requested,
            "source": page.source,
            "status": page.status,
            "title": page.title,
            "truncated": output_cut or page.body_cut,
        }
        if page.content_type is not None:
            raw["contentType"] = page.content_type
        if page.bytes_read is not None:
            raw["bytes"] = page.bytes_read
        return ToolResult(
            output=output,
            raw_output=raw,
            content=[ContentToolCallContent(content=TextContent(text=output))],
        )


# -- content handling --------------------------------------------------------------------------


def _default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


def _kind(mime: str) -> str:
    """ "html", "text", "binary" or "unknown" (no content type) for a MIME type."""
    if not mime:
        return "unknown"
    if mime in _HTML_TYPES:
        return "html"
    if mime.startswith("text/") or mime in _TEXT_TYPES:
        return "text"
    if mime.endswith(("+json", "+xml", "+yaml")):
        return "text"
    return "binary"


def _sniff(body: bytes, url: str) -> str:
    """The kind of a body sent without a content type; ToolError when it looks binary."""
    head = body[:8192]
    if b"\0" in head:
        raise ToolError(f"fetchUrl: {url} sent no content type and looks binary; not reading it")
    start = head.lstrip()[:512].lower()
    return "html" if start.startswith((b"<!doctype html", b"<html")) else "text"


def _decode(body: bytes, charset: str | None, *, html_doc: bool) -> str:
    """Decode with the header's charset, else a `<meta charset>` (HTML), else UTF-8."""
    candidates = [charset]
    if html_doc and (match := _META_CHARSET.search(body[:4096])):
        candidates.append(match.group(1).decode("ascii", "replace"))
    for name in candidates:
        if name:
            try:
                codecs.lookup(name)
            except LookupError:
                continue
            return body.decode(name, errors="replace")
    return body.decode("utf-8", errors="replace")


def _title(document: str) -> str | None:
    match = _TITLE.search(document, 0, 65536)
    if match is None:
        return None
    title = " ".join(html.unescape(match.group(1)).split())
    return title or None


def _html_to_markdown(document: str, url: str) -> str:
    """The main content of an HTML page as markdown; plain text when trafilatura finds none.

    Blocking and CPU-bound: call it in a worker thread."""
    import trafilatura

    markdown = trafilatura.extract(
        document,
        url=url,
        output_format="markdown",
        include_links=True,
        include_formatting=True,
        include_tables=True,
        include_images=False,
        include_comments=False,
    )
    return markdown if markdown and markdown.strip() else html_to_text(document)


# fmt: off
_SKIP_TAGS: Final = frozenset({"script", "style", "noscript", "template", "svg", "head", "iframe"})
_BLOCK_TAGS: Final = frozenset({
    "p", "div", "br", "li", "ul", "ol", "tr", "table", "section", "article", "header", "footer",
    "nav", "aside", "main", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "hr", "dt",
    "dd", "form", "figure", "figcaption",
})
# fmt: on


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "body":
            self._skipping = 0  # an unclosed <head> (or script) must not hide the body
        elif tag in _SKIP_TAGS:
            self._skipping += 1
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP_TAGS:
            self._skipping = max(0, self._skipping - 1)
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def html_to_text(document: str) -> str:
    """Plain text of an HTML document: scripts and styles dropped, one line per block."""
    parser = _TextExtractor()
    parser.feed(document)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).split("\n"))
    return "\n".join(line for line in lines if line)
