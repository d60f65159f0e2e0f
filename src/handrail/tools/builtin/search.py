"""The ``search`` tool: full-text search over a local folder of text and Markdown files.

Documents (``.md``, ``.markdown``, ``.txt``, found recursively) are split into passages of
at most 600 characters and indexed in an in-memory SQLite FTS5 table (standard library
``sqlite3``, Porter stemming) on first use. A query is cut into words, each word quoted, and
the words joined with ``OR``; passages are ranked by BM25 (headings weigh three times as
much as body text). Quoting every word means no query text can be an FTS5 syntax error.

Without a folder, the tool searches the small corpus shipped inside handrail
(``handrail/tools/builtin/corpus/``): notes on handrail and Haystack, the fictional town of
Maplebrook, a price list, unit conversions, astronomy figures and the marathon, used by the README's demo.
"""

from __future__ import annotations

import copy
import os
import re
import sqlite3
import threading
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from handrail.core.serialization import default_to_dict
from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError
from handrail.tools.builtin._passages import Passage, read_folder, read_package_corpus, split_passages
from handrail.tools.tool import Tool

__all__ = ["DEFAULT_SEARCH_DESCRIPTION", "SearchTool", "make_search_tool", "match_expression", "search"]

DEFAULT_SEARCH_DESCRIPTION: Final = (
    "Search the local knowledge base (an offline stand-in for web search). "
    "Returns the best matching passages, each with its file name."
)
"""The description the model sees unless another one is given."""

_MAX_QUERY_CHARS: Final = 2000
_MAX_QUERY_TERMS: Final = 32
_WORD: Final = re.compile(r"[^\W_]+")
_STOPWORD_TEXT: Final = (
    "a about an and any are as at be by can details do does find for from give how i in info information is it its "
    "know me of on or please show some tell than that the their there this to was what when where which who why "
    "will with you"
)
_STOPWORDS: Final = frozenset(_STOPWORD_TEXT.split())
_PARAMETERS: Final = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": "Keywords to look for, e.g. 'Haystack pipelines' or 'marathon distance'.",
        }
    },
    "required": ["query"],
    "additionalProperties": False,
}


class _PassageIndex:
    """An FTS5 index built on first use; safe to query from several threads (one lock)."""

    def __init__(self, load: Callable[[], list[tuple[str, str]]]) -> None:
        self._load = load
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None

    def build(self) -> sqlite3.Connection:
        """Return the connection, building the index first if needed (the caller holds the lock)."""
        if self._connection is None:
            rows = [(p.source, p.heading, p.text) for name, text in self._load() for p in split_passages(name, text)]
            connection = sqlite3.connect(":memory:", check_same_thread=False)
            weakref.finalize(self, connection.close)
            connection.execute(
                "CREATE VIRTUAL TABLE passages USING fts5("
                "source UNINDEXED, heading, text, tokenize='porter unicode61 remove_diacritics 2')"
            )
            connection.executemany("INSERT INTO passages (source, heading, text) VALUES (?, ?, ?)", rows)
            connection.commit()
            self._connection = connection
        return self._connection

    def warm_up(self) -> None:
        with self._lock:
            self.build()

    def query(self, match: str, limit: int) -> list[Passage]:
        """Return the best ``limit`` passages for an FTS5 ``MATCH`` expression, best first."""
        with self._lock:
            rows = (
                self.build()
                .execute(
                    "SELECT source, heading, text FROM passages WHERE passages MATCH ? "
                    "ORDER BY bm25(passages, 0.0, 3.0, 1.0), rowid LIMIT ?",
                    (match, limit),
                )
                .fetchall()
            )
        return [Passage(source, heading, text) for source, heading, text in rows]


def match_expression(query: str) -> str | None:
    """Turn free text into an FTS5 query that cannot be a syntax error.

    Words (letters and digits) are lower-cased, de-duplicated, stripped of common English
    stop words (unless nothing else is left), quoted, and joined with ``OR``; at most 32 are used.

    Args:
        query: Anything the model sent.

    Returns:
        The ``MATCH`` expression, or None when the query holds no word.

    Examples:
        >>> match_expression('What is "Haystack" AND (NEAR pipelines*)?')
        '"haystack" OR "near" OR "pipelines"'
    """
    words = list(dict.fromkeys(word.lower() for word in _WORD.findall(query[:_MAX_QUERY_CHARS])))
    terms = [word for word in words if word not in _STOPWORDS] or words
    if not terms:
        return None
    return " OR ".join(f'"{term}"' for term in terms[:_MAX_QUERY_TERMS])


def _format(passage: Passage) -> str:
    title = f" {passage.heading}" if passage.heading else ""
    return f"[{passage.source}]{title}\n{passage.text}"


class SearchTool(Tool):
    """A Tool searching a folder of ``.md``/``.txt`` files (or the shipped corpus) with SQLite FTS5.

    The folder is read once, on the first search or :meth:`warm_up`; the tool may be called
    from several threads at once. It takes ``{"query": str}`` and returns text: the top
    ``top_k`` passages, each as ``[file name] heading`` then the passage, separated by blank
    lines; or ``No results for "<query>". ...`` when nothing matches.

    Args:
        folder: The folder to search (recursively); ``None`` searches the corpus shipped
            with handrail.
        top_k: How many passages to return at most; at least 1.
        name: The tool's name.
        description: What the model is told the tool does.

    Raises:
        ConfigurationError: When ``folder`` is not an existing directory or ``top_k`` is below 1.
        ConfigurationTypeError: When ``folder`` is not a str or path, or ``top_k`` not an int.

    Examples:
        >>> tool = SearchTool(top_k=1)
        >>> tool.invoke(query="Maplebrook population").startswith("[maplebrook.md]")
        True
    """

    def __init__(
        self,
        folder: str | os.PathLike[str] | None = None,
        *,
        top_k: int = 3,
        name: str = "search",
        description: str = DEFAULT_SEARCH_DESCRIPTION,
    ) -> None:
        if folder is not None and not isinstance(folder, str | os.PathLike):
            raise ConfigurationTypeError(f"folder must be a str or a path, got {type(folder).__name__}.")
        if isinstance(top_k, bool) or not isinstance(top_k, int):
            raise ConfigurationTypeError(f"top_k must be an int, got {type(top_k).__name__}.")
        if top_k < 1:
            raise ConfigurationError(f"top_k must be at least 1, got {top_k}.")
        self.folder: Path | None = None if folder is None else Path(folder)
        """The searched folder; ``None`` for the shipped corpus."""
        self.top_k: int = top_k
        """How many passages a search returns at most."""
        if self.folder is not None and not self.folder.is_dir():
            raise ConfigurationError(f"Search folder '{self.folder}' does not exist or is not a directory.")
        root = self.folder
        self._index = _PassageIndex(read_package_corpus if root is None else lambda: read_folder(root))
        super().__init__(
            name=name, description=description, parameters=copy.deepcopy(_PARAMETERS), function=self.search
        )

    def search(self, query: str) -> str:
        """Search for ``query`` and return the formatted top passages (the tool's function).

        Args:
            query: Free text; FTS5 syntax in it is treated as plain words.

        Returns:
            The top passages as text, or a ``No results for ...`` message.
        """
        match = match_expression(query)
        if match is None:
            return f'No results for "{query}": the query has no words to search for.'
        passages = self._index.query(match, self.top_k)
        if not passages:
            return f'No results for "{query}". Try other or fewer keywords.'
        return "\n\n".join(_format(p) for p in passages)

    def warm_up(self) -> None:
        """Read the folder and build the index now instead of at the first search (idempotent)."""
        self._index.warm_up()

    def to_dict(self) -> dict[str, Any]:
        """Serialize to ``{"type", "init_parameters": {"folder", "top_k", "name", "description"}}``."""
        return default_to_dict(
            self,
            folder=None if self.folder is None else str(self.folder),
            top_k=self.top_k,
            name=self.name,
            description=self.description,
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SearchTool:
        """Rebuild a SearchTool from :meth:`to_dict` output (``data`` is not modified).

        Raises:
            SerializationError: When ``init_parameters`` is missing or holds unknown keys.
        """
        params = data.get("init_parameters")
        if not isinstance(params, Mapping):
            raise SerializationError(f"SearchTool data has no 'init_parameters': {data!r}")
        unknown = set(params) - {"folder", "top_k", "name", "description"}
        if unknown:
            raise SerializationError(f"SearchTool data has unknown init_parameters {sorted(unknown)}.")
        return cls(**copy.deepcopy(dict(params)))

    def _config(self) -> tuple[Path | None, int, str, str]:
        return (self.folder, self.top_k, self.name, self.description)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SearchTool):
            return NotImplemented
        return type(self) is type(other) and self._config() == other._config()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(folder={self.folder!r}, top_k={self.top_k}, name={self.name!r})"

    def __copy__(self) -> SearchTool:
        return type(self)(self.folder, top_k=self.top_k, name=self.name, description=self.description)

    def __deepcopy__(self, memo: dict[int, Any]) -> SearchTool:
        return self.__copy__()


def make_search_tool(
    folder: str | os.PathLike[str] | None = None,
    *,
    top_k: int = 3,
    name: str = "search",
    description: str = DEFAULT_SEARCH_DESCRIPTION,
) -> SearchTool:
    """Build a ``search`` tool over a folder of ``.md``/``.txt`` files (see :class:`SearchTool`).

    Args:
        folder: The folder to search recursively; ``None`` searches the corpus shipped with handrail.
        top_k: How many passages a search returns at most; at least 1.
        name: The tool's name.
        description: What the model is told the tool does.

    Returns:
        The tool; it serializes its folder and ``top_k``.

    Raises:
        ConfigurationError: When ``folder`` is not an existing directory or ``top_k`` is below 1.
        ConfigurationTypeError: When an argument has the wrong type.
    """
    return SearchTool(folder, top_k=top_k, name=name, description=description)


search = SearchTool()
"""The ``search`` tool over the corpus shipped with handrail: takes ``{"query": str}``, returns text."""
