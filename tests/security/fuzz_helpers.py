"""A user's chat generator class, importable by agent files under ``allowed_modules`` (for the fuzz tests)."""

from __future__ import annotations

from typing import Any

from handrail.dataclasses import ChatMessage


class KeyedGenerator:
    """Reads its replies with ``kwargs["replies"]``: a file without them makes its constructor raise KeyError."""

    def __init__(self, **kwargs: Any) -> None:
        self.replies = [str(reply) for reply in kwargs["replies"]]

    def run(self, messages: list[ChatMessage], tools: Any = None, **kwargs: Any) -> dict[str, list[ChatMessage]]:
        """Answer with the first reply."""
        return {"replies": [ChatMessage.from_assistant(self.replies[0])]}


def shout(text: str) -> str:
    """A Jinja2 filter (and a tool function): the text in capitals."""
    return str(text).upper()


def keep_last(current: object, new: object) -> object:
    """A State merge handler: the new value wins."""
    return new
