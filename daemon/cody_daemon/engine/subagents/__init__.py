"""Subagents: child sessions a `task` call starts, their agent profiles and limits."""
