"""Shared plumbing for the web tools: endpoints, API keys, the HTTP client, error mapping.

Invariants:
- A web service's endpoint comes from `[tools.<name>]` in config: `base_url` (else the
  service's documented default), `env_key` (the name of the environment variable holding
  the key, else the service's default variable) and `timeout_s` (else `DEFAULT_TIMEOUT_S`).
  The key itself is read from `ToolContext.env` (the daemon's environment), nowhere else.
- A missing or blank key is a `ToolError` that names the variable to set and the config key
  (`tools.<name>.env_key`) that chooses another variable.
- An API key never appears in an error message or a repr: `Endpoint.api_key` is left out of
  the repr, and every message built from a response or an exception is scrubbed of the key.
- Every call runs under one total deadline (`timeout_s`), not just per-read timeouts; missing
  it is a `ServiceError` with `timed_out=True`. Response bodies are read with a byte cap.
- A tool holds at most one lazily created `httpx.AsyncClient` (`ClientHolder`), closed by the
  tool's `aclose()`. The client keeps no cookies (its jar refuses every cookie), so nothing a
  site sets is ever sent back, to it or to anyone else, and redirects are limited to
  `MAX_REDIRECTS`. API calls never follow redirects (the key must not travel elsewhere).
"""

from __future__ import annotations

import asyncio
import http.cookiejar
import json
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from ... import __version__
from ...config.model import ToolConfig
from ...policy.approval import Escalation
from ..base import OWN_DEADLINE_MARGIN_S, A, Tool, ToolContext, ToolError, ToolFacts

if TYPE_CHECKING:
    import httpx

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "MAX_API_BYTES",
    "MAX_REDIRECTS",
    "USER_AGENT",
    "ClientHolder",
    "Endpoint",
    "ServiceError",
    "WebTool",
    "base_url_for",
    "error_detail",
    "key_variable",
    "lookup_key",
    "missing_key",
    "new_client",
    "post_json",
    "read_capped",
    "resolve_endpoint",
    "scrub",
    "time_limit_for",
    "timeout_for",
]

DEFAULT_TIMEOUT_S: Final = 30.0
MAX_API_BYTES: Final = 8 * 1024 * 1024
"""An API answer larger than this is refused (a search answer is a few kilobytes)."""
MAX_REDIRECTS: Final = 5
MAX_DETAIL_CHARS: Final = 300
USER_AGENT: Final = f"Mozilla/5.0 (compatible; cody/{__version__})"


class ServiceError(ToolError):
    """A web service (Perplexity, Firecrawl) failed: HTTP error, bad answer, unreachable, slow.

    Distinct from a failure of the page being fetched, so `fetchUrl` can fall back from
    Firecrawl to a direct fetch.
    """

    def __init__(self, message: str, *, status: int | None = None, timed_out: bool = False):
        super().__init__(message)
        self.status = status
        self.timed_out = timed_out


@dataclass(frozen=True, kw_only=True)
class Endpoint:
    """Where and how a tool calls its web service. `api_key` is never part of the repr."""

    tool: str
    """The tool's name (`webSearch`), used in messages."""
    service: str
    """The service as messages name it (`the Perplexity API`)."""
    base_url: str
    env_var: str
    """The environment variable the key came from (named in messages, never its value)."""
    api_key: str = field(repr=False)
    timeout_s: float

    def url(self, path: str) -> str:
        return f"{self.base_url.rstrip('/')}/{path.lstrip('/')}"


# -- configuration ---------------------------------------------------------------------------


def _config(ctx: ToolContext, name: str) -> ToolConfig | None:
    return ctx.tool_config.get(name)


def timeout_for(ctx: ToolContext, name: str) -> float:
    """`tools.<name>.timeout_s`, else `DEFAULT_TIMEOUT_S`."""
    config = _config(ctx, name)
    return config.timeout_s if config is not None and config.timeout_s else DEFAULT_TIMEOUT_S


def base_url_for(ctx: ToolContext, name: str, default_base_url: str) -> str:
    """`tools.<name>.base_url`, else the service's `default_base_url`."""
    config = _config(ctx, name)
    return config.base_url if config is not None and config.base_url else default_base_url


def time_limit_for(ctx: ToolContext, name: str) -> float:
    """The engine's backstop for a web tool: its own deadline plus a margin (see base.py)."""
    return timeout_for(ctx, name) + OWN_DEADLINE_MARGIN_S


def key_variable(ctx: ToolContext, name: str, default_env: str) -> str:
    """The environment variable holding the key: `tools.<name>.env_key`, else `default_env`.

    An empty `env_key` means the default (every web service needs a key)."""
    config = _config(ctx, name)
    return config.env_key if config is not None and config.env_key else default_env


def missing_key(
    env: Mapping[str, str],
    tool_config: Mapping[str, ToolConfig],
    name: str,
    default_env: str,
    service: str,
) -> str | None:
    """Why tool `name` has no API key in this environment (naming the variable to set), or
    None when it has one. Never the key itself."""
    config = tool_config.get(name)
    variable = config.env_key if config is not None and config.env_key else default_env
    if env.get(variable, "").strip():
        return None
    return f"no API key for {service}: set {variable}"


def lookup_key(ctx: ToolContext, name: str, default_env: str) -> str | None:
    """The API key from the daemon's environment, or None when unset or blank."""
    value = ctx.env.get(key_variable(ctx, name, default_env), "").strip()
    return value or None


def resolve_endpoint(
    ctx: ToolContext, name: str, *, service: str, default_base_url: str, default_env: str
) -> Endpoint:
    """The endpoint for tool `name`; raises ToolError naming what to set when the key is missing."""
    config = _config(ctx, name)
    variable = key_variable(ctx, name, default_env)
    key = lookup_key(ctx, name, default_env)
    if key is None:
        if config is not None and config.env_key:
            how = (
                f"the environment variable {variable} (named by tools.{name}.env_key) is not "
                f"set. Set {variable} in the daemon's environment, or change "
                f"tools.{name}.env_key in config.toml."
            )
        else:
            how = (
                f"the environment variable {variable} is not set. Set {variable} in the "
                f"daemon's environment, or set tools.{name}.env_key in config.toml "
                f'([tools.{name}] env_key = "OTHER_VARIABLE") to read the key from another '
                "variable."
            )
        raise ToolError(f"{name} needs an API key for {service}, but {how}")
    return Endpoint(
        tool=name,
        service=service,
        base_url=base_url_for(ctx, name, default_base_url),
        env_var=variable,
        api_key=key,
        timeout_s=timeout_for(ctx, name),
    )


# -- the HTTP client -------------------------------------------------------------------------


class _NoCookies(http.cookiejar.DefaultCookiePolicy):
    """A cookie policy that neither stores nor returns any cookie."""

    def set_ok(self, cookie: http.cookiejar.Cookie, request: urllib.request.Request) -> bool:
        return False

    def return_ok(self, cookie: http.cookiejar.Cookie, request: urllib.request.Request) -> bool:
        return False


def new_client() -> httpx.AsyncClient:
    """The web tools' client: no cookies kept, at most `MAX_REDIRECTS` redirects."""
    import httpx

    return httpx.AsyncClient(
        # A bare CookieJar is used as is; an httpx.Cookies would be copied into a jar with
        # the default (accepting) policy.
        cookies=http.cookiejar.CookieJar(policy=_NoCookies()),
        max_redirects=MAX_REDIRECTS,
        headers={"User-Agent": USER_AGENT},
        timeout=DEFAULT_TIMEOUT_S,
    )


class ClientHolder:
    """One lazily created client per tool. A client passed in is used but never closed."""

    def __init__(
        self,
        client: httpx.AsyncClient | None = None,
        *,
        factory: Callable[[], httpx.AsyncClient] = new_client,
    ) -> None:
        self._client = client
        self._owned = client is None
        self._factory = factory

    def get(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = self._factory()
            self._owned = True
        return self._client

    async def aclose(self) -> None:
        """Close the client if this holder created it; a later `get()` makes a new one."""
        client, self._client = self._client, None
        if client is not None and self._owned:
            await client.aclose()


class WebTool(Tool[A]):
    """A tool that goes over the network: one `ClientHolder` (a client passed in is used and
    never closed), closed by `aclose()`, and the engine's time limit from `timeout_s`. It
    changes nothing but reaches the network (so it asks by default)."""

    facts = ToolFacts(changes="nothing", network=True)

    def __init__(self, *, client: httpx.AsyncClient | None = None) -> None:
        self._http = ClientHolder(client)

    async def aclose(self) -> None:
        """Close the HTTP client this tool created (if any)."""
        await self._http.aclose()

    def time_limit_s(self, args: A, ctx: ToolContext) -> float:
        return time_limit_for(ctx, self.name)

    def escalation(self, args: A, ctx: ToolContext) -> tuple[Escalation, str] | None:
        """The network tools reach the network from the daemon, never from the sandbox:
        they ask under `on-request` unless a rule allows them."""
        return "network", f"{self.name} reaches the network"


# -- requests and errors ---------------------------------------------------------------------


def scrub(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret replaced by `[redacted]`."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    return text


def _detail_from_json(parsed: Any) -> str | None:
    """The message in common error bodies: `{"error": {"message"}}` (OpenAI style),
    `{"error": "..."}` (Firecrawl), `{"detail": "..." | [{"msg"}]}` (FastAPI validation)."""
    if not isinstance(parsed, Mapping):
        return None
    error = parsed.get("error")
    if isinstance(error, Mapping) and isinstance(error.get("message"), str):
        return str(error["message"])
    if isinstance(error, str):
        return error
    detail = parsed.get("detail")
    if isinstance(detail, str):
        return detail
    if isinstance(detail, list):
        messages = [str(d.get("msg")) for d in detail if isinstance(d, Mapping) and "msg" in d]
        return "; ".join(messages) or None
    message = parsed.get("message")
    return message if isinstance(message, str) else None


def error_detail(body: bytes, secrets: Iterable[str] = ()) -> str:
    """A short, one-line reason from an error body ("" for an HTML page or an empty body)."""
    text = body.decode("utf-8", errors="replace").strip()
    try:
        detail = _detail_from_json(json.loads(text)) if text else None
    except ValueError:
        detail = None
    if detail is None:
        if not text or text.startswith("<"):
            return ""
        detail = text
    detail = scrub(" ".join(detail.split()), secrets)
    if len(detail) > MAX_DETAIL_CHARS:
        detail = detail[: MAX_DETAIL_CHARS - 3] + "..."
    return detail


async def read_capped(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """Read at most `limit` (decoded) bytes of the body; True when more was left unread."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        if size + len(chunk) > limit:
            chunks.append(chunk[: limit - size])
            return b"".join(chunks), True
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), False


def _http_error(endpoint: Endpoint, response: httpx.Response, body: bytes) -> ServiceError:
    status = response.status_code
    reason = response.reason_phrase or "error"
    detail = error_detail(body, [endpoint.api_key])
    message = f"{endpoint.tool}: {endpoint.service} answered HTTP {status} {reason}"
    if detail:
        message += f": {detail}"
    if status in (401, 403):
        message += f" (check the API key in the environment variable {endpoint.env_var})"
    elif status == 429:
        message += " (rate limited: wait a little before trying again)"
    return ServiceError(message, status=status)


async def post_json(client: httpx.AsyncClient, endpoint: Endpoint, path: str, body: Any) -> Any:
    """POST `body` as JSON to `path` with the bearer key; the parsed JSON answer.

    Raises ServiceError (never showing the key) on timeout, transport failure, an HTTP error
    status, an oversized answer or invalid JSON."""
    import httpx

    url = endpoint.url(path)
    headers = {
        "Authorization": f"Bearer {endpoint.api_key}",
        "Accept": "application/json",
        "User-Agent": f"cody/{__version__}",
    }
    try:
        async with (
            asyncio.timeout(endpoint.timeout_s),
            client.stream(
                "POST",
                url,
                json=body,
                headers=headers,
                timeout=endpoint.timeout_s,
                follow_redirects=False,
            ) as response,
        ):
            data, cut = await read_capped(response, MAX_API_BYTES)
    except (TimeoutError, httpx.TimeoutException):
        raise ServiceError(
            f"{endpoint.tool}: {endpoint.service} did not answer within {endpoint.timeout_s:g} s "
            f"(tools.{endpoint.tool}.timeout_s sets the limit)",
            timed_out=True,
        ) from None
    except httpx.HTTPError as exc:
        reason = scrub(str(exc) or type(exc).__name__, [endpoint.api_key])
        raise ServiceError(
            f"{endpoint.tool}: could not reach {endpoint.service} at {url}: {reason}"
        ) from None
    if response.status_code >= 300:
        raise _http_error(endpoint, response, data)
    if cut:
        raise ServiceError(
            f"{endpoint.tool}: {endpoint.service} sent an answer larger than {MAX_API_BYTES} bytes"
        )
    try:
        return json.loads(data)
    except ValueError:
        raise ServiceError(
            f"{endpoint.tool}: {endpoint.service} answered HTTP {response.status_code} with "
            "something that is not JSON"
        ) from None
