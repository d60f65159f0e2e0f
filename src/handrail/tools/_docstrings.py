"""Reading a docstring: the description and the parameters' texts, in Google, reST/Sphinx or NumPy style.

The three styles may be mixed in one docstring. The description is the text before the first section
of any style; the parameters' texts come from every parameter section found:

- Google: ``Args:`` (``Arguments:``, ``Parameters:``, ``Attributes:``) with ``name: text`` or
  ``name (type): text`` entries;
- reST/Sphinx: ``:param name: text`` (also ``:param type name:``, ``:arg``, ``:argument``, ``:key``,
  ``:keyword``, ``:ivar``, ``:var``, ``:cvar``) fields; ``:type``, ``:returns:``, ``:raises ...:`` and
  the other fields end the description but give no parameter text;
- NumPy: a ``Parameters`` (``Other Parameters``, ``Attributes``) header underlined with dashes, with
  ``name : type`` entries (or ``a, b : type``) whose text is on the more-indented lines below.

An entry's continuation lines (more indented than the entry) are joined with single spaces.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["docstring_of", "parse_docstring"]

# Google-style section headers (each alone on a line, followed by a colon).
_PARAM_SECTIONS = frozenset({"Args", "Arguments", "Parameters", "Attributes"})
_SECTIONS = _PARAM_SECTIONS | frozenset({"Returns", "Yields", "Raises", "Example", "Examples", "Note", "Notes"})
# ``name: text`` or ``name (type): text`` opening an entry of an ``Args:`` section.
_PARAM_ENTRY = re.compile(r"(?P<name>\*{0,2}\w+)\s*(?:\((?P<type>.*?)\))?\s*:\s*(?P<text>.*)")

# NumPy-style section headers (alone on a line, underlined with dashes on the next one).
_NUMPY_PARAM_SECTIONS = frozenset({"Parameters", "Other Parameters", "Attributes"})
_NUMPY_SECTIONS = _NUMPY_PARAM_SECTIONS | frozenset(
    {"Returns", "Yields", "Receives", "Raises", "Warns", "Warnings", "See Also", "Notes", "References", "Examples"}
)
_UNDERLINE = re.compile(r"-{3,}")
# ``name``, ``name : type`` or ``a, b : type`` opening an entry of a NumPy ``Parameters`` section.
_NUMPY_ENTRY = re.compile(r"(?P<names>\*{0,2}\w+(?:\s*,\s*\*{0,2}\w+)*)\s*(?::.*)?")

# A reST field list line: ``:kind args: text`` (``:returns:`` has no args).
_REST_FIELD = re.compile(r":(?P<kind>\w+)(?P<args>(?:\s+[^:\s][^:]*)?):(?:\s+(?P<text>.*))?")
_REST_PARAM_FIELDS = frozenset({"param", "parameter", "arg", "argument", "key", "keyword", "ivar", "var", "cvar"})
_REST_FIELDS = _REST_PARAM_FIELDS | frozenset(
    {"type", "vartype", "returns", "return", "rtype", "raises", "raise", "except", "exception"}
    | {"yields", "yield", "ytype", "meta"}
)


def docstring_of(function: Callable[..., Any]) -> str:
    """Return ``function``'s docstring (a partial's is its underlying function's), or ``""``."""
    while isinstance(function, functools.partial):
        function = function.func
    doc = getattr(function, "__doc__", None)
    return doc if isinstance(doc, str) else ""


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a docstring into ``(description, {parameter: description})``.

    The description is the cleaned text before the first section (Google, reST field or NumPy
    header); the parameters' descriptions come from every parameter section, in any of the three
    styles (see the module's docstring). A docstring without sections is the description whole.
    """
    lines = inspect.cleandoc(doc).splitlines()
    starts = sorted(_section_starts(lines))
    if not starts:
        return "\n".join(lines).rstrip(), {}
    description = "\n".join(lines[: starts[0][0]]).rstrip()
    param_docs: dict[str, str] = {}
    for index, (start, kind) in enumerate(starts):
        end = starts[index + 1][0] if index + 1 < len(starts) else len(lines)
        if kind == "google" and lines[start].strip()[:-1] in _PARAM_SECTIONS:
            # cleandoc dedents the first line on its own: a header there has no indent to compare.
            header_indent = -1 if start == 0 else _indent(lines[start])
            param_docs.update(_parse_args_section(header_indent, lines[start + 1 : end]))
        elif kind == "numpy" and lines[start].strip() in _NUMPY_PARAM_SECTIONS:
            param_docs.update(_parse_numpy_section(lines[start + 2 : end]))
        elif kind == "rest":
            param_docs.update(_parse_rest_field(lines[start:end]))
    return description, param_docs


def _section_starts(lines: list[str]) -> Iterator[tuple[int, str]]:
    """Yield ``(line index, style)`` for every section header and reST field line."""
    for i, line in enumerate(lines):
        text = line.strip()
        if text.endswith(":") and text[:-1] in _SECTIONS:
            yield i, "google"
        elif text in _NUMPY_SECTIONS and i + 1 < len(lines) and _UNDERLINE.fullmatch(lines[i + 1].strip()):
            yield i, "numpy"
        elif (match := _REST_FIELD.fullmatch(text)) is not None and match["kind"] in _REST_FIELDS:
            yield i, "rest"


def _parse_args_section(header_indent: int, body: list[str]) -> dict[str, str]:
    """Parse the entries of a Google ``Args:`` section (``body`` ends at the next section)."""
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
    return _joined(entries)


def _parse_numpy_section(body: list[str]) -> dict[str, str]:
    """Parse the entries of a NumPy ``Parameters`` section (``body`` starts below the underline)."""
    entry_indent: int | None = None
    entries: dict[str, list[str]] = {}
    current: list[list[str]] = []
    for line in body:
        if not line.strip():
            continue
        indent = _indent(line)
        if entry_indent is None:
            entry_indent = indent
        if indent < entry_indent:
            break
        if indent > entry_indent:
            for parts in current:
                parts.append(line.strip())
            continue
        match = _NUMPY_ENTRY.fullmatch(line.strip())
        current = []
        if match is not None:
            for name in match["names"].split(","):
                current.append(entries.setdefault(name.strip().lstrip("*"), []))
    return _joined(entries)


def _parse_rest_field(body: list[str]) -> dict[str, str]:
    """Parse one reST field (its line and the more-indented lines after it) into ``{name: text}``."""
    match = _REST_FIELD.fullmatch(body[0].strip())
    if match is None or match["kind"] not in _REST_PARAM_FIELDS or not match["args"].split():
        return {}
    name = match["args"].split()[-1].lstrip("*")  # ``:param int x:`` names x
    parts = [match["text"] or ""]
    field_indent = _indent(body[0])
    for line in body[1:]:
        if not line.strip():
            continue
        if _indent(line) <= field_indent:
            break
        parts.append(line.strip())
    return _joined({name: parts})


def _joined(entries: dict[str, list[str]]) -> dict[str, str]:
    """Join each entry's non-empty parts with spaces; entries without text are left out."""
    return {name: text for name, parts in entries.items() if (text := " ".join(p for p in parts if p))}


def _indent(line: str) -> int:
    """The number of leading whitespace characters of ``line``."""
    return len(line) - len(line.lstrip())
