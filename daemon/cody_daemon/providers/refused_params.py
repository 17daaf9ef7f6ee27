"""Which optional request parameters a provider's 400 says it does not take.

Servers that speak an OpenAI wire for another model refuse parameters only OpenAI knows.
They name them in different ways, all handled here:

- OpenAI and servers that copy its errors: `{"error": {"param": "reasoning.summary", ...}}`;
- LiteLLM's proxy (`litellm.UnsupportedParamsError`, raised by `_check_valid_arg` in
  litellm/responses/utils.py, sent by the proxy as `{"error": {"message", "type": "None",
  "param": "None", "code": "400"}}`, litellm/proxy/_types.py `ProxyException`): the
  message says `... does not support parameters: {'prompt_cache_key': '...'}, for model=...`;
- others in words: `Unsupported parameter: prompt_cache_key`, `Unrecognized request
  argument supplied: prompt_cache_key`, `prompt_cache_key: Extra inputs are not permitted`.

Invariants: only a 400 counts; only names from the caller's `candidates` are returned (the
optional parameters it sent), and a name counts only as a whole parameter name (a message
about `reasoning.effort` never names `reasoning`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .base import ProviderError

__all__ = ["refused_params"]

_DICT_KEYS = re.compile(r"'([A-Za-z_][\w.]*)'\s*:")
_LITELLM_LIST = re.compile(r"does not support parameters?:\s*([\[{].*?[\]}])", re.DOTALL)


def refused_params(error: ProviderError, candidates: Iterable[str]) -> set[str]:
    """The names among `candidates` that the 400 `error` refuses (see the module docstring)."""
    if error.http_status != 400:
        return set()
    wanted = set(candidates)
    named: set[str] = set()
    param = error.details.get("param")
    if param in wanted:
        named.add(param)
    text = error.message
    listed = _LITELLM_LIST.search(text)
    if listed is not None:
        group = listed.group(1)
        keys = (
            _DICT_KEYS.findall(group) if group.startswith("{") else re.findall(r"'([^']+)'", group)
        )
        named.update(key for key in keys if key in wanted)
        text = text.replace(group, "")  # its values are not names
    for name in wanted - named:
        pattern = rf"(?<![\w.]){re.escape(name)}(?![\w.])"
        if re.search(pattern, text):
            named.add(name)
    return named
