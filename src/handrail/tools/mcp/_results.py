"""What an MCP server's ``tools/call`` answer becomes for the model.

Text blocks are joined with blank lines; structured content is used instead when asked for (the SDK has checked
it against the tool's output schema); an image stays an :class:`~handrail.dataclasses.ImageContent` part, which a
generator that cannot take images shows as a placeholder; audio, resource links and embedded resources become a
line of text naming what they are. A result marked ``is_error`` raises :class:`~handrail.errors.MCPToolError` with
the server's text, which the tool step turns into an error result the model reads. A text longer than
``max_chars`` keeps its head and tail around a marker (and, with an ``offload`` function, the marker names where
the whole text went).

Everything here reads the SDK's objects by attribute, so this module never imports ``mcp``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from handrail.core._middle_cut import cut_middle
from handrail.dataclasses.chat_message import TextContent
from handrail.dataclasses.image_content import ImageContent
from handrail.errors import MCPToolError

__all__ = ["ResultOptions", "convert_result", "cut_text"]

Offload = Callable[[str], str]
"""``offload(text) -> reference``: keeps a whole long result somewhere and says where (a path, a URL, an id)."""


@dataclass(frozen=True, slots=True)
class ResultOptions:
    """How one toolset turns results into what the model reads."""

    server: str
    """The server's label, for messages."""
    max_chars: int
    """The longest text result kept whole, in characters."""
    use_structured_content: bool = False
    """True: a result's ``structured_content`` (JSON text) is what the model reads, when there is one."""
    offload: Offload | None = None
    """Where the whole text of a cut result goes (its reference is in the marker); None: it is dropped."""


def cut_text(text: str, max_chars: int, offload: Offload | None = None) -> str:
    """``text`` itself when it fits, else its head and tail around a marker naming how much was cut.

    Examples:
        >>> cut = cut_text("a" * 300 + "b" * 300, 100)
        >>> len(cut), cut.startswith("a"), cut.endswith("b"), "[... 530 characters cut ...]" in cut
        (100, True, True, True)
    """
    if len(text) <= max_chars:
        return text
    where = ""
    if offload is not None:
        try:
            reference = offload(text)
        except Exception as exc:  # the cut text still reaches the model; the failure is logged
            logging.getLogger("handrail.tools.mcp").warning("result_offload failed, the result is only cut: %r", exc)
            reference = None
        if isinstance(reference, str) and reference:
            where = f"; the whole result ({len(text):,} characters) is at {reference[:500]}"
    return cut_middle(text, max_chars, where)


def convert_result(tool: str, result: Any, options: ResultOptions) -> str | list[TextContent | ImageContent]:
    """The model-facing form of a ``CallToolResult``.

    Returns:
        The text (a ``str``), or a list of text and image parts when the result holds an image.

    Raises:
        MCPToolError: The result is marked ``is_error`` (the message holds the server's text).
    """
    parts = [_part(block) for block in (getattr(result, "content", None) or [])]
    if getattr(result, "is_error", False):
        text = "\n\n".join(p for p in parts if isinstance(p, str)) or "(the server gave no text)"
        raise MCPToolError(
            f"MCP server '{options.server}' reported an error from tool '{tool}': {cut_text(text, options.max_chars)}",
            server=options.server,
            tool=tool,
        )
    structured = getattr(result, "structured_content", None)
    if options.use_structured_content and structured is not None:
        text = json.dumps(structured, ensure_ascii=False, default=str)
        return cut_text(text, options.max_chars, options.offload)
    if not any(isinstance(p, ImageContent) for p in parts):
        return cut_text("\n\n".join(p for p in parts if isinstance(p, str)), options.max_chars, options.offload)
    out: list[TextContent | ImageContent] = []
    for part in parts:
        if isinstance(part, str):
            out.append(TextContent(cut_text(part, options.max_chars, options.offload)))
        else:
            out.append(part)
    return out


def _part(block: Any) -> str | ImageContent:
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(getattr(block, "text", ""))
    if kind == "image":
        mime = str(getattr(block, "mime_type", "") or "image/png")
        data = getattr(block, "data", "")
        try:
            return ImageContent(base64_image=str(data), mime_type=mime)
        except Exception as exc:  # a server's bad image must not lose the rest of the result
            return f"[an image ({mime}) the server sent could not be read: {exc}]"
    if kind == "audio":
        return f"[audio ({getattr(block, 'mime_type', 'unknown type')}) not shown to the model]"
    if kind == "resource_link":
        name = getattr(block, "name", None) or ""
        return f"[resource link: {getattr(block, 'uri', '')}{f' ({name})' if name else ''}]"
    if kind == "resource":
        resource = getattr(block, "resource", None)
        text = getattr(resource, "text", None)
        if isinstance(text, str):
            return text
        return f"[embedded resource {getattr(resource, 'uri', '')} ({getattr(resource, 'mime_type', '')})]"
    return f"[a {kind or 'unknown'} content block not shown to the model]"
