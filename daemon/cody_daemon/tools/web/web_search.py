"""`webSearch`: ranked web results (title, URL, snippet) from the Perplexity Search API.

Request (https://docs.perplexity.ai/api-reference/search-post): `POST {base_url}/search`
with `Authorization: Bearer <key>` and `{"query": ..., "max_results": n}` (1..20); the
answer is `{"id", "results": [{"title", "url", "snippet", "date"?, "last_updated"?}]}`.

Invariants: the output is a numbered list, one result per entry in the API's rank order,
`N. Title` / `   URL` / `   snippet` (snippet whitespace collapsed to one line and cut at
`MAX_SNIPPET_CHARS`), so the model can cite results by number and URL; results without a URL
are skipped. `raw_output` is `{"results": [{"title", "url"}]}` (no snippets: kept small).
Needs approval (the query leaves the machine); the key comes from `[tools.webSearch]`
`env_key` or `PERPLEXITY_API_KEY` (see `common`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Final

from cody_protocol.content import ContentToolCallContent, TextContent, ToolCallContent
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from ...config.model import ToolConfig
from ..base import ToolContext, ToolResult
from .common import (
    Endpoint,
    ServiceError,
    WebTool,
    base_url_for,
    missing_key,
    post_json,
    resolve_endpoint,
)

if TYPE_CHECKING:
    pass

__all__ = [
    "DEFAULT_MAX_RESULTS",
    "PERPLEXITY_BASE_URL",
    "PERPLEXITY_ENV_KEY",
    "PERPLEXITY_SERVICE",
    "WebSearchArgs",
    "WebSearchTool",
    "perplexity_endpoint",
]

PERPLEXITY_BASE_URL: Final = "https://api.perplexity.ai"
PERPLEXITY_ENV_KEY: Final = "PERPLEXITY_API_KEY"
PERPLEXITY_SERVICE: Final = "the Perplexity API"
DEFAULT_MAX_RESULTS: Final = 5
MAX_RESULTS: Final = 20
MAX_SNIPPET_CHARS: Final = 1500


def perplexity_endpoint(ctx: ToolContext, name: str) -> Endpoint:
    """The Perplexity API endpoint and key for tool `name` (webSearch, perplexitySearch)."""
    return resolve_endpoint(
        ctx,
        name,
        service=PERPLEXITY_SERVICE,
        default_base_url=PERPLEXITY_BASE_URL,
        default_env=PERPLEXITY_ENV_KEY,
    )


class WebSearchArgs(BaseModel):
    model_config = ConfigDict(
        extra="forbid", validate_by_name=True, validate_by_alias=True, defer_build=True
    )

    query: str = Field(min_length=1, description="What to search the web for.")
    max_results: Annotated[
        int | None, WithJsonSchema({"type": "integer", "minimum": 1, "maximum": MAX_RESULTS})
    ] = Field(
        default=None,
        alias="maxResults",
        ge=1,
        le=MAX_RESULTS,
        description=f"How many results to return (1-{MAX_RESULTS}, default {DEFAULT_MAX_RESULTS}).",
    )


class WebSearchTool(WebTool[WebSearchArgs]):
    name = "webSearch"
    description = (
        "Search the web (Perplexity Search API). Returns a numbered list of ranked results, "
        "each with its title, URL and a snippet of the page; cite results by URL. Use "
        "fetchUrl to read a result in full."
    )
    kind = "fetch"
    args_model = WebSearchArgs

    def unavailable(
        self,
        env: Mapping[str, str],
        tool_config: Mapping[str, ToolConfig],
        session_id: str | None = None,
    ) -> str | None:
        return super().unavailable(env, tool_config, session_id) or missing_key(
            env, tool_config, self.name, PERPLEXITY_ENV_KEY, PERPLEXITY_SERVICE
        )

    def title(self, args: WebSearchArgs) -> str:
        return f"Search the web: {_cut(args.query, 80)}"

    def preview(self, args: WebSearchArgs, ctx: ToolContext) -> list[ToolCallContent]:
        base = base_url_for(ctx, self.name, PERPLEXITY_BASE_URL)
        text = f"POST {base.rstrip('/')}/search\nquery: {args.query}"
        return [ContentToolCallContent(content=TextContent(text=text))]

    async def run(self, args: WebSearchArgs, ctx: ToolContext) -> ToolResult:
        endpoint = perplexity_endpoint(ctx, self.name)
        count = args.max_results or DEFAULT_MAX_RESULTS
        body = {"query": args.query, "max_results": count}
        data = await post_json(self._http.get(), endpoint, "search", body)
        results = _results(data)[:count]
        if not results:
            text = f"No web results for: {args.query}"
        else:
            text = "\n\n".join(_entry(i, r) for i, r in enumerate(results, start=1))
        return ToolResult(
            output=text,
            raw_output={"results": [{"title": r["title"], "url": r["url"]} for r in results]},
            content=[ContentToolCallContent(content=TextContent(text=text))],
        )


def _results(data: Any) -> list[dict[str, str]]:
    """The usable results of a Search API answer; ServiceError when the shape is wrong."""
    raw = data.get("results") if isinstance(data, Mapping) else None
    if not isinstance(raw, list):
        raise ServiceError("webSearch: the Perplexity API answer has no `results` list")
    results: list[dict[str, str]] = []
    for item in raw:
        if not isinstance(item, Mapping) or not isinstance(item.get("url"), str):
            continue
        title = item.get("title")
        snippet = item.get("snippet")
        results.append(
            {
                "url": item["url"],
                "title": " ".join(title.split()) if isinstance(title, str) else "",
                "snippet": " ".join(snippet.split()) if isinstance(snippet, str) else "",
            }
        )
    return results


def _entry(number: int, result: dict[str, str]) -> str:
    lines = [f"{number}. {result['title'] or result['url']}", f"   {result['url']}"]
    if result["snippet"]:
        lines.append(f"   {_cut(result['snippet'], MAX_SNIPPET_CHARS)}")
    return "\n".join(lines)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
