r"""Previews of a tool call: what the call would do, shown to the person who decides it.

A tool may carry a preview function (``Tool(preview=fn)``, ``@tool(preview=fn)``): ``fn(arguments)`` gets the
call's arguments (a copy of the approval's effective arguments, as stored) and returns a :class:`Preview` or a
``str`` (plain text). It should only compute, never act: it runs whenever someone opens the approval, before
anyone decided anything. The approval service runs it in a worker thread with a time limit
(``GET /api/v1/approvals/{id}/preview``); a preview that fails or is slow is shown as "preview unavailable" and
never holds up the decision.

A preview is built from model-made arguments, so it is untrusted text: the inbox page shows ``text``, ``json``
and ``diff`` as text and renders ``markdown`` sanitized (no raw HTML, no scripts, no ``javascript:`` links).

Examples:
    >>> Preview("diff", "-old\n+new", title="config.yaml")
    Preview(kind='diff', content='-old\n+new', title='config.yaml')
    >>> as_preview("DELETE FROM users WHERE id = 7").kind
    'text'
    >>> len(Preview("text", "x" * 200_000).content) < 100_100
    True
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal, get_args

from handrail.errors import ConfigurationError, ConfigurationTypeError

__all__ = ["MAX_PREVIEW_CHARS", "PREVIEW_KINDS", "Preview", "PreviewKind", "as_preview"]

PreviewKind = Literal["text", "markdown", "json", "diff"]
"""How a preview's content is shown: as text, as sanitized markdown, as a JSON tree, as a unified diff."""
PREVIEW_KINDS: tuple[str, ...] = get_args(PreviewKind)
"""The kinds a :class:`Preview` may have."""
MAX_PREVIEW_CHARS = 100_000
"""The most characters of content a preview keeps; beyond, it is cut and ends with a truncation mark."""
_MAX_TITLE_CHARS = 200
_SURROGATE = re.compile("[\ud800-\udfff]")


def _truncation_mark(dropped: int) -> str:
    return f"\n… [preview truncated: {dropped:,} more characters not shown]"


def _clean(text: str) -> str:
    """``text`` with lone surrogates (which JSON escapes can carry, but UTF-8 cannot) replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


@dataclass(frozen=True, slots=True)
class Preview:
    """What a tool call would do, for the person deciding it.

    Content longer than :data:`MAX_PREVIEW_CHARS` is cut and ends with a mark saying how much was left out
    (a cut ``json`` preview is no longer JSON, so it becomes ``text``). Lone surrogates are replaced by U+FFFD.

    Raises:
        ConfigurationError: ``kind`` is not one of :data:`PREVIEW_KINDS`, or a ``json`` preview's content is not
            JSON text.
        ConfigurationTypeError: ``content`` is not a str, or ``title`` is neither None nor a str.
    """

    kind: PreviewKind
    """``text``, ``markdown`` (rendered sanitized), ``json`` (JSON text, shown as a tree) or ``diff`` (unified)."""
    content: str
    """The preview itself, at most :data:`MAX_PREVIEW_CHARS` characters (plus the truncation mark)."""
    title: str | None = None
    """A short heading (``"Email to ann@example.com"``, ``"config.yaml"``), at most 200 characters; None: none."""

    def __post_init__(self) -> None:
        if self.kind not in PREVIEW_KINDS:
            raise ConfigurationError(
                f"A preview's kind must be one of {', '.join(PREVIEW_KINDS)}, got {self.kind!r:.60}."
            )
        if not isinstance(self.content, str):
            raise ConfigurationTypeError(
                f"A preview's content must be a str, got {type(self.content).__name__} (for kind 'json', pass "
                f"json.dumps(value))."
            )
        if self.title is not None and not isinstance(self.title, str):
            raise ConfigurationTypeError(f"A preview's title must be a str or None, got {type(self.title).__name__}.")
        content, kind = _clean(self.content), self.kind
        if len(content) > MAX_PREVIEW_CHARS:
            dropped = len(content) - MAX_PREVIEW_CHARS
            content = content[:MAX_PREVIEW_CHARS] + _truncation_mark(dropped)
            kind = "text" if kind == "json" else kind
        elif kind == "json":
            try:
                json.loads(content)
            except ValueError as exc:
                raise ConfigurationError(
                    f"A 'json' preview's content must be JSON text (json.dumps(value)): {exc}."
                ) from exc
        object.__setattr__(self, "content", content)
        object.__setattr__(self, "kind", kind)
        if self.title is not None:
            title = _clean(self.title)
            object.__setattr__(self, "title", title if len(title) <= _MAX_TITLE_CHARS else title[:199] + "…")

    def to_dict(self) -> dict[str, Any]:
        """``{"kind", "content", "title"}``: the preview as the HTTP API sends it."""
        return {"kind": self.kind, "content": self.content, "title": self.title}


def as_preview(value: object) -> Preview:
    """What a preview function returned, as a :class:`Preview` (a ``str`` is plain text).

    Raises:
        ConfigurationTypeError: ``value`` is neither a Preview nor a str.
    """
    if isinstance(value, Preview):
        return value
    if isinstance(value, str):
        return Preview("text", value)
    raise ConfigurationTypeError(f"A preview function must return a Preview or a str, got {type(value).__name__}.")
