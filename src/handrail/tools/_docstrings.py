"""Reading a function's Google-style docstring: the description and the parameters' texts."""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from typing import Any

__all__ = ["docstring_of", "parse_docstring"]

# Google-style docstring section headers (each alone on a line, followed by a colon).
_PARAM_SECTIONS = frozenset({"Args", "Arguments", "Parameters"})
_SECTIONS = _PARAM_SECTIONS | frozenset({"Returns", "Yields", "Raises", "Example", "Examples", "Note", "Notes"})
# ``name: text`` or ``name (type): text`` opening an entry of an ``Args:`` section.
_PARAM_ENTRY = re.compile(r"(?P<name>\*{0,2}\w+)\s*(?:\((?P<type>.*?)\))?\s*:\s*(?P<text>.*)")


def docstring_of(function: Callable[..., Any]) -> str:
    """Return ``function``'s docstring (a partial's is its underlying function's), or ``""``."""
    while isinstance(function, functools.partial):
        function = function.func
    doc = getattr(function, "__doc__", None)
    return doc if isinstance(doc, str) else ""


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into ``(description, {parameter: description})``.

    The description is the cleaned text before the first section header; the parameters'
    descriptions come from the ``Args:``/``Arguments:``/``Parameters:`` sections.
    """
    lines = inspect.cleandoc(doc).splitlines()
    headers = [i for i, line in enumerate(lines) if line.strip().endswith(":") and line.strip()[:-1] in _SECTIONS]
    if not headers:
        return "\n".join(lines).rstrip(), {}
    description = "\n".join(lines[: headers[0]]).rstrip()
    param_docs: dict[str, str] = {}
    for index, start in enumerate(headers):
        if lines[start].strip()[:-1] in _PARAM_SECTIONS:
            end = headers[index + 1] if index + 1 < len(headers) else len(lines)
            # cleandoc dedents the first line on its own: a header there has no indent to compare.
            header_indent = -1 if start == 0 else _indent(lines[start])
            param_docs.update(_parse_args_section(header_indent, lines[start + 1 : end]))
    return description, param_docs


def _parse_args_section(header_indent: int, body: list[str]) -> dict[str, str]:
    """Parse the entries of an ``Args:`` section (``body`` ends at the next header)."""
    entry_indent: int | None = None
    entries: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in body:
        if not line.strip():
            continue
        indent = _indent(line)
        if indent <= header_indent:  # text back at the header's level ends the section
            break
        if entry_indent is None:
            entry_indent = indent
        if indent > entry_indent:
            if current is not None:
                current.append(line.strip())
            continue
        match = _PARAM_ENTRY.fullmatch(line.strip())
        current = None
        if match is not None:
            current = entries[match["name"].lstrip("*")] = [match["text"]]
    return {name: text for name, parts in entries.items() if (text := " ".join(p for p in parts if p))}


def _indent(line: str) -> int:
    """The number of leading whitespace characters of ``line``."""
    return len(line) - len(line.lstrip())
