"""Reading documents for the search tool and splitting them into passages.

Documents are ``.md``, ``.markdown`` and ``.txt`` files. A passage is one or more whole
paragraphs of one Markdown section, packed up to a character budget; a paragraph too long
for the budget is split at sentence ends, and a sentence too long at word boundaries.
"""

from __future__ import annotations

import os
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Final

from handrail.errors import ConfigurationError

__all__ = [
    "DOCUMENT_SUFFIXES",
    "MAX_FILE_BYTES",
    "MAX_FOLDER_BYTES",
    "MAX_FOLDER_ENTRIES",
    "MAX_PASSAGE_CHARS",
    "Passage",
    "read_folder",
    "read_package_corpus",
    "split_passages",
]

DOCUMENT_SUFFIXES: Final = (".md", ".markdown", ".txt")
"""File name endings that are indexed (compared case-insensitively)."""
MAX_FILE_BYTES: Final = 2_000_000
"""Files larger than this many bytes are skipped."""
MAX_PASSAGE_CHARS: Final = 600
"""The longest passage, in characters, heading included."""
MAX_FOLDER_BYTES: Final = 200_000_000
"""The most document bytes one folder may hold (all files together)."""
MAX_FOLDER_ENTRIES: Final = 100_000
"""The most files (documents or not) a folder walk may visit, so a folder such as ``/`` is refused quickly."""
_MAX_HEADING_CHARS: Final = 150

_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.+?)(?:\s+#+)?\s*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True, slots=True)
class Passage:
    """A piece of a document small enough to hand to a model."""

    source: str
    """The file it comes from, relative to the searched folder with ``/`` separators, e.g. ``"haystack.md"``."""
    heading: str
    """The Markdown headings above it joined with ``" > "``, e.g. ``"Maplebrook > Population"``; ``""`` if none."""
    text: str
    """Whole paragraphs (blank-line separated) where they fit; at most :data:`MAX_PASSAGE_CHARS` with the heading."""


def split_passages(source: str, text: str, max_chars: int = MAX_PASSAGE_CHARS) -> list[Passage]:
    r"""Split one document into passages of at most ``max_chars`` characters (heading included).

    Args:
        source: The document's name, copied into every passage.
        text: The document's text (Markdown or plain text).
        max_chars: The budget per passage, in characters; at least 100.

    Returns:
        The passages in document order; empty for a document without text.

    Examples:
        >>> [p.heading for p in split_passages("a.md", "# A\n\nIntro.\n\n## B\n\nMore.")]
        ['A', 'A > B']
    """
    max_chars = max(max_chars, 100)
    passages: list[Passage] = []
    heading: str | None = None
    chunk: list[str] = []
    heading_cap = min(_MAX_HEADING_CHARS, max_chars // 3)
    for full_section, paragraph in _paragraphs(text):
        section = full_section[-heading_cap:]  # the most specific headings are at the end
        budget = max_chars - (len(section) + 1 if section else 0)
        for piece in _fit(paragraph, budget):
            if chunk and (section != heading or len("\n\n".join(chunk)) + 2 + len(piece) > budget):
                passages.append(Passage(source, heading or "", "\n\n".join(chunk)))
                chunk = []
            heading = section
            chunk.append(piece)
    if chunk:
        passages.append(Passage(source, heading or "", "\n\n".join(chunk)))
    return passages


def _paragraphs(text: str) -> Iterator[tuple[str, str]]:
    """Yield ``(heading path, paragraph)`` pairs; headings and blank lines end a paragraph."""
    headings: list[tuple[int, str]] = []
    lines: list[str] = []
    in_fence = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        match = None if in_fence else _HEADING.match(line)
        if match is None and (line.strip() or in_fence):
            lines.append(line.rstrip())
            continue
        if lines:
            yield _heading_path(headings), "\n".join(lines).strip()
            lines = []
        if match is not None:
            level = len(match.group(1))
            headings = [h for h in headings if h[0] < level] + [(level, match.group(2))]
    if lines:
        yield _heading_path(headings), "\n".join(lines).strip()


def _heading_path(headings: list[tuple[int, str]]) -> str:
    return " > ".join(text for _, text in headings)


def _fit(paragraph: str, budget: int) -> list[str]:
    """Cut a paragraph into pieces of at most ``budget`` characters, at sentence ends where possible."""
    if len(paragraph) <= budget:
        return [paragraph]
    units: list[str] = []
    for sentence in _SENTENCE_END.split(paragraph):
        if len(sentence) <= budget:
            units.append(sentence)
        else:
            units.extend(textwrap.wrap(sentence, budget, break_on_hyphens=False))
    pieces: list[str] = []
    for unit in units:
        if pieces and len(pieces[-1]) + 1 + len(unit) <= budget:
            pieces[-1] = f"{pieces[-1]} {unit}"
        else:
            pieces.append(unit)
    return pieces


def _is_document(name: str) -> bool:
    return not name.startswith(".") and name.lower().endswith(DOCUMENT_SUFFIXES)


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def read_folder(folder: Path) -> list[tuple[str, str]]:
    """Read every document under ``folder``, recursively (hidden files and folders are skipped).

    Symbolic links to folders are not followed (no loops); files over :data:`MAX_FILE_BYTES`
    are skipped; invalid UTF-8 is replaced, never an error.

    Args:
        folder: The folder to read.

    Returns:
        ``(relative name with "/" separators, text)`` pairs, sorted by name.

    Raises:
        ConfigurationError: The folder holds more than :data:`MAX_FOLDER_ENTRIES` files or more than
            :data:`MAX_FOLDER_BYTES` bytes of documents (it is read into memory whole).
    """
    documents: list[tuple[str, str]] = []
    visited = total = 0
    for directory, subdirectories, files in os.walk(folder):
        subdirectories[:] = sorted(d for d in subdirectories if not d.startswith("."))
        visited += len(files)
        if visited > MAX_FOLDER_ENTRIES:
            raise ConfigurationError(
                f"The search folder {folder} holds more than {MAX_FOLDER_ENTRIES:,} files; point the tool at the "
                f"folder of your documents."
            )
        for name in files:
            path = Path(directory, name)
            if not _is_document(name) or not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
                continue
            data = path.read_bytes()
            total += len(data)
            if total > MAX_FOLDER_BYTES:
                raise ConfigurationError(
                    f"The documents under {folder} hold more than {MAX_FOLDER_BYTES:,} bytes; the search tool reads "
                    f"its folder into memory, so point it at a smaller one."
                )
            documents.append((path.relative_to(folder).as_posix(), _decode(data)))
    return sorted(documents)


def read_package_corpus() -> list[tuple[str, str]]:
    """Read the documents shipped with handrail (``handrail/tools/builtin/corpus/``).

    Read through :mod:`importlib.resources`, so it works from an installed wheel.

    Returns:
        ``(relative name, text)`` pairs, sorted by name.
    """
    root = resources.files("handrail.tools.builtin").joinpath("corpus")
    documents: list[tuple[str, str]] = []
    pending: list[tuple[str, Traversable]] = [("", root)]
    while pending:
        prefix, directory = pending.pop()
        for entry in directory.iterdir():
            if entry.is_dir() and not entry.name.startswith("."):
                pending.append((f"{prefix}{entry.name}/", entry))
            elif entry.is_file() and _is_document(entry.name):
                documents.append((f"{prefix}{entry.name}", _decode(entry.read_bytes())))
    return sorted(documents)
