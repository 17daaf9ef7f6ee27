"""The neutral types every layer shares: the conversation model and tool/grant vocabulary.

`core` sits below engine, providers, tools, policy and store; it imports only the standard
library, pydantic and `cody_protocol` (an import-direction test enforces this).
"""
