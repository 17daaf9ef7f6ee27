"""The network tools: `webSearch`, `perplexitySearch` (Perplexity) and `fetchUrl`.

Each needs approval (kind `fetch`), reads its endpoint and key from `[tools.<name>]` and the
daemon's environment (see `common`), and owns one lazily created HTTP client that its
`aclose()` closes.
"""

from __future__ import annotations

from .fetch_url import FetchUrlArgs, FetchUrlTool
from .perplexity_search import PerplexitySearchArgs, PerplexitySearchTool
from .web_search import WebSearchArgs, WebSearchTool

__all__ = [
    "FetchUrlArgs",
    "FetchUrlTool",
    "PerplexitySearchArgs",
    "PerplexitySearchTool",
    "WebSearchArgs",
    "WebSearchTool",
]
