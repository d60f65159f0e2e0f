"""What the embedded model is doing while it writes a reply, as the ``meta["progress"]`` of content-less chunks.

A constrained reply of :class:`~handrail.components.generators.chat.llama_cpp.LlamaCppChatGenerator` is JSON: a
tool call ``{"name": "search", "arguments": {...}}`` or ``{"final_answer": "..."}``. Nothing of a tool call is
text to show, so without these chunks a streaming consumer sees nothing for the seconds the model takes to
write one. :class:`ReplyWatcher` reads the raw reply as it grows and tells which of the two it is, and the
tool's name as soon as it is written; :func:`progress_meta` is the one shape every progress chunk carries::

    {"phase": "reading" | "writing",   # evaluating the prompt, or writing the reply
     "prompt_tokens": int | None,      # the prompt's length in tokens (None: not known)
     "cached_tokens": int | None,      # of those, how many were reused from the previous call's cache
     "tokens": int,                    # reply tokens written so far
     "writing": "tool_call" | "final_answer" | None,   # None: not known yet
     "tool": str | None}               # the tool being called, once its name is written
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

__all__ = ["PROGRESS_KEY", "ReplyWatcher", "Writing", "progress_meta"]

PROGRESS_KEY = "progress"
"""The ``StreamingChunk.meta`` key of a progress chunk (its content is empty)."""

Writing = Literal["tool_call", "final_answer"]
"""What a constrained reply turned out to be."""

_CALL = re.compile(r'\s*\{\s*"n(?:ame"\s*:\s*"((?:[^"\\]|\\.)*)(")?)?')
_ANSWER = re.compile(r'\s*\{\s*"f')
"""The schema allows two keys first, ``name`` and ``final_answer``: the first letter tells which."""


class ReplyWatcher:
    """Follows a constrained reply as its fragments arrive: how many, and whether it is a call (of which tool).

    Examples:
        >>> w = ReplyWatcher()
        >>> [w.feed(f) for f in ['{"', 'name": "sea', 'rch", "arguments": {']]
        [False, True, True]
        >>> w.tokens, w.writing, w.tool
        (3, 'tool_call', 'search')
    """

    def __init__(self) -> None:
        self._raw = ""
        self.tokens = 0
        """Fragments fed so far (the runtime sends one per token)."""
        self.writing: Writing | None = None
        """What the reply is, once its first key says so."""
        self.tool: str | None = None
        """The called tool's name, once it is written in full."""

    def feed(self, fragment: str) -> bool:
        """Take the next fragment; return True when :attr:`writing` or :attr:`tool` changed with it."""
        self.tokens += 1
        if self.tool is not None or self.writing == "final_answer":
            return False
        self._raw += fragment
        before = (self.writing, self.tool)
        call = _CALL.match(self._raw)
        if call is not None:
            self.writing = "tool_call"
            if call.group(2) is not None:
                try:
                    self.tool = json.loads(f'"{call.group(1)}"')
                except ValueError:
                    self.tool = call.group(1)
        elif _ANSWER.match(self._raw):
            self.writing = "final_answer"
        return (self.writing, self.tool) != before


def progress_meta(
    phase: Literal["reading", "writing"],
    *,
    tokens: int = 0,
    writing: Writing | None = None,
    tool: str | None = None,
    prompt_tokens: int | None = None,
    cached_tokens: int | None = None,
) -> dict[str, Any]:
    """The ``meta["progress"]`` value of one progress chunk (the shape is in this module's docstring)."""
    return {"phase": phase, "prompt_tokens": prompt_tokens, "cached_tokens": cached_tokens, "tokens": tokens,
            "writing": writing, "tool": tool}  # fmt: skip
