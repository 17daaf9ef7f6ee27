"""`perplexitySearch`: a researched answer with sources from Perplexity `sonar-reasoning-pro`.

Request (https://docs.perplexity.ai/api-reference/chat-completions-post): `POST
{base_url}/chat/completions` with `Authorization: Bearer <key>` and `{"model":
"sonar-reasoning-pro", "messages": [{"role": "user", "content": query}], "stream": false}`.
The answer is an OpenAI-style chat completion (`choices[0].message.content`) plus
`citations` (URLs, in the order the `[n]` markers in the text refer to) and `search_results`
(`[{"title", "url", "date"?}]`). Reasoning models put their chain of thought in a
`<think>...</think>` section at the start of `content`
(https://docs.perplexity.ai/docs/sonar/models/sonar-reasoning-pro).

Invariants: the output never contains the `<think>` reasoning (a section left unclosed by a
cut answer is dropped to the end); it is the answer followed by a numbered `Sources:` list,
numbered like the citations so `[n]` in the answer is source n; titles come from
`search_results` when they match a citation. With no citations, `search_results` are the
sources. The model is fixed: `ToolConfig` has no model field. Needs approval; the key comes
from `[tools.perplexitySearch]` `env_key` or `PERPLEXITY_API_KEY` (see `common`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from cody_protocol.content import ContentToolCallContent, TextContent, ToolCallContent
from pydantic import BaseModel, ConfigDict, Field

from ...config.model import ToolConfig
from ..base import ToolContext, ToolResult
from .common import ServiceError, WebTool, base_url_for, missing_key, post_json
from .web_search import (
    PERPLEXITY_BASE_URL,
    PERPLEXITY_ENV_KEY,
    PERPLEXITY_SERVICE,
    perplexity_endpoint,
)

if TYPE_CHECKING:
    pass

__all__ = ["MODEL", "PerplexitySearchArgs", "PerplexitySearchTool", "strip_think"]

MODEL: Final = "sonar-reasoning-pro"
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_OPEN_THINK = re.compile(r"<think>", re.IGNORECASE)


class PerplexitySearchArgs(BaseModel):
    model_config = ConfigDict(
        extra="forbid", validate_by_name=True, validate_by_alias=True, defer_build=True
    )

    query: str = Field(
        min_length=1,
        description="The question to research, in plain language, with any context needed.",
    )


class PerplexitySearchTool(WebTool[PerplexitySearchArgs]):
    name = "perplexitySearch"
    description = (
        f"Ask Perplexity ({MODEL}), which searches the web and reasons over what it finds. "
        "Returns a written answer with numbered sources ([n] in the answer is source n). "
        "Slower than webSearch; use it for questions that need several sources combined."
    )
    kind = "fetch"
    args_model = PerplexitySearchArgs

    def unavailable(
        self,
        env: Mapping[str, str],
        tool_config: Mapping[str, ToolConfig],
        session_id: str | None = None,
    ) -> str | None:
        return super().unavailable(env, tool_config, session_id) or missing_key(
            env, tool_config, self.name, PERPLEXITY_ENV_KEY, PERPLEXITY_SERVICE
        )

    def title(self, args: PerplexitySearchArgs) -> str:
        query = args.query if len(args.query) <= 80 else args.query[:77] + "..."
        return f"Ask Perplexity: {query}"

    def preview(self, args: PerplexitySearchArgs, ctx: ToolContext) -> list[ToolCallContent]:
        base = base_url_for(ctx, self.name, PERPLEXITY_BASE_URL)
        text = f"POST {base.rstrip('/')}/chat/completions (model {MODEL})\nquery: {args.query}"
        return [ContentToolCallContent(content=TextContent(text=text))]

    async def run(self, args: PerplexitySearchArgs, ctx: ToolContext) -> ToolResult:
        endpoint = perplexity_endpoint(ctx, self.name)
        body = {
            "model": MODEL,
            "messages": [{"role": "user", "content": args.query}],
            "stream": False,
        }
        data = await post_json(self._http.get(), endpoint, "chat/completions", body)
        answer = strip_think(_content(data))
        if not answer:
            raise ServiceError(
                f"{self.name}: the Perplexity API returned no answer (only reasoning, or "
                "nothing at all); try again or rephrase the question"
            )
        sources = _sources(data)
        text = answer
        if sources:
            listed = [
                f"{i}. {title} - {url}" if title else f"{i}. {url}"
                for i, (title, url) in enumerate(sources, start=1)
            ]
            text += "\n\nSources:\n" + "\n".join(listed)
        model = data.get("model") if isinstance(data.get("model"), str) else MODEL
        return ToolResult(
            output=text,
            raw_output={
                "model": model,
                "sources": [{"title": title, "url": url} for title, url in sources],
            },
            content=[ContentToolCallContent(content=TextContent(text=text))],
        )


def strip_think(content: str) -> str:
    """`content` without `<think>...</think>` sections (an unclosed one runs to the end)."""
    content = _THINK.sub("", content)
    opened = _OPEN_THINK.search(content)
    if opened is not None:
        content = content[: opened.start()]
    return content.strip()


def _content(data: Any) -> str:
    """`choices[0].message.content`; ServiceError when the answer has another shape."""
    try:
        content = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        content = None
    if not isinstance(content, str):
        raise ServiceError(
            "perplexitySearch: the Perplexity API answer has no choices[0].message.content"
        )
    return content


def _sources(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(title, url) pairs: the citations in order (titled from search_results when they
    match), else the search results; the title is "" when unknown."""
    results: list[tuple[str, str]] = []
    raw_results = data.get("search_results")
    for item in raw_results if isinstance(raw_results, list) else []:
        if isinstance(item, Mapping) and isinstance(item.get("url"), str):
            title = item.get("title")
            results.append((" ".join(title.split()) if isinstance(title, str) else "", item["url"]))
    raw_citations = data.get("citations")
    citations = (
        [c for c in raw_citations if isinstance(c, str)] if isinstance(raw_citations, list) else []
    )
    if not citations:
        return results
    titles = {url: title for title, url in results if title}
    return [(titles.get(url, ""), url) for url in citations]
