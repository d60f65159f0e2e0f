"""Importable helpers for the agent-file tests."""

from __future__ import annotations


def shout(text: str) -> str:
    """Return the text in capitals."""
    return text.upper()
