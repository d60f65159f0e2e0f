"""InMemoryMemoryStore: long-term memories held in this process, ranked with BM25 over their words."""

from __future__ import annotations

import itertools
import math
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from handrail.core.serialization import default_from_dict, default_to_dict
from handrail.dataclasses.chat_message import ChatMessage
from handrail.stores._memory_common import (
    Condition,
    build_memory_message,
    check_memory_id,
    check_scope,
    check_top_k,
    json_equal,
    new_memories,
    parse_filters,
    query_terms,
    text_words,
    utc_now,
)

__all__ = ["InMemoryMemoryStore"]

_STORE = "InMemoryMemoryStore"
_K1 = 1.2
_B = 0.75


@dataclass(frozen=True, slots=True)
class _Memory:
    seq: int
    memory_id: str
    message_id: str
    user_id: str | None
    run_id: str | None
    agent_id: str | None
    role: str
    name: str | None
    content: str
    metadata: dict[str, Any]
    created_at: str
    words: Counter[str]
    length: int

    def row(self) -> tuple[Any, ...]:
        return (
            self.memory_id,
            self.role,
            self.name,
            self.content,
            self.user_id,
            self.run_id,
            self.agent_id,
            self.created_at,
            dict(self.metadata),
        )

    def in_scope(self, user_id: str | None, run_id: str | None, agent_id: str | None) -> bool:
        return (
            (user_id is None or self.user_id == user_id)
            and (run_id is None or self.run_id == run_id)
            and (agent_id is None or self.agent_id == agent_id)
        )

    def matches(self, conditions: list[Condition]) -> bool:
        for c in conditions:
            if c.kind == "column":
                if getattr(self, c.key) != c.value:
                    return False
            elif not json_equal(self.metadata.get(c.key), c.value):
                return False
        return True


class InMemoryMemoryStore:
    """A :class:`~handrail.stores.types.MemoryStore` that keeps memories in a dict of this process (for tests).

    Search ranks with BM25 (k1 = 1.2, b = 0.75) over words: runs of letters and digits, casefolded, accents
    removed; a query matches the memories holding at least one of its words. Thread-safe. ``to_dict`` writes
    no data: a store rebuilt by ``from_dict`` is empty.

    Example:
        >>> store = InMemoryMemoryStore()
        >>> ids = store.add_memories(messages=[ChatMessage.from_user("I drink green tea")], user_id="ada")
        >>> [m.text for m in store.search_memories(query="tea?", user_id="ada")]
        ['I drink green tea']
    """

    def __init__(self) -> None:
        self._memories: dict[str, _Memory] = {}
        self._seq = itertools.count(1)
        self._lock = threading.Lock()

    def add_memories(
        self,
        *,
        messages: list[ChatMessage],
        user_id: str | None = None,
        run_id: str | None = None,
        agent_id: str | None = None,
    ) -> list[str]:
        """Store each message's text (its text parts joined by newlines) as one memory.

        Messages without text (tool calls, tool results, empty text) are skipped. Each stored message gets an id
        in ``meta["message_id"]`` (assigned IN PLACE when missing); a message whose id is already stored in
        exactly this scope is skipped, so adding the same messages again adds nothing.

        Args:
            messages: The messages, in order.
            user_id: The user the memories belong to.
            run_id: The run they come from.
            agent_id: The agent they belong to.

        Returns:
            The new memory ids, in message order (skipped messages have none).

        Raises:
            ConfigurationError: No id given, or an empty id.
            ConfigurationTypeError: An id is not a string, or ``messages`` is not a list of ChatMessage.
            SerializationError: A message's ``meta`` is not JSON-serializable (nothing is added).
        """
        check_scope(user_id, run_id, agent_id, required=True, operation="add_memories")
        new = new_memories(messages)
        created_at = utc_now()
        added: list[str] = []
        with self._lock:
            stored = {(m.message_id, m.user_id, m.run_id, m.agent_id) for m in self._memories.values()}
            for item in new:
                if (item.message_id, user_id, run_id, agent_id) in stored:
                    continue
                words = Counter(text_words(item.content))
                self._memories[item.memory_id] = _Memory(
                    next(self._seq), item.memory_id, item.message_id, user_id, run_id, agent_id, item.role,
                    item.name, item.content, item.metadata, created_at, words, sum(words.values()),
                )  # fmt: skip
                added.append(item.memory_id)
        return added

    def search_memories(
        self,
        *,
        query: str | None = None,
        filters: dict[str, Any] | None = None,
        top_k: int = 5,
        user_id: str | None = None,
        run_id: str | None = None,
        agent_id: str | None = None,
        include_memory_metadata: bool = False,
    ) -> list[ChatMessage]:
        """The best ``top_k`` memories for ``query`` among those of the scope that pass ``filters``.

        Args:
            query: Free text (any characters); None for the most recent memories. A query with no word
                (only punctuation) matches nothing.
            filters: Equality filters (see :mod:`handrail.stores._memory_common`).
            top_k: At most this many results (at least 1).
            user_id: Only memories of this user.
            run_id: Only memories of this run.
            agent_id: Only memories of this agent (the three ids are ANDed; none given: every memory).
            include_memory_metadata: Add scope ids, ``created_at``, ``score`` and ``metadata`` to each ``meta``.

        Returns:
            Messages best first (most recent first without a query, and among equal scores).

        Raises:
            ConfigurationError: ``top_k <= 0``, an empty id, or an unsupported filter.
            ConfigurationTypeError: ``top_k``, ``query`` or an id of the wrong type.
        """
        check_scope(user_id, run_id, agent_id, required=False, operation="search_memories")
        top_k = check_top_k(top_k)
        conditions = parse_filters(filters)
        terms = None if query is None else query_terms(query)
        with self._lock:
            every = list(self._memories.values())
        candidates = [m for m in every if m.in_scope(user_id, run_id, agent_id) and m.matches(conditions)]
        ranked: list[tuple[_Memory, float | None]]
        if terms is None:
            ranked = [(m, None) for m in sorted(candidates, key=lambda m: -m.seq)[:top_k]]
        else:
            scorer = _bm25_scorer(terms, every)
            scored = [(m, scorer(m)) for m in candidates]
            hits = [(m, s) for m, s in scored if s > 0]
            ranked = [(m, s) for m, s in sorted(hits, key=lambda h: (-h[1], -h[0].seq))[:top_k]]
        return [
            build_memory_message(_STORE, (*m.row(), score), include_metadata=include_memory_metadata)
            for m, score in ranked
        ]

    def delete_memory(self, memory_id: str) -> None:
        """Delete one memory (an unknown id is not an error).

        Raises:
            ConfigurationTypeError: ``memory_id`` is not a string.
        """
        check_memory_id(memory_id)
        with self._lock:
            self._memories.pop(memory_id, None)

    def delete_all_memories(
        self, *, user_id: str | None = None, run_id: str | None = None, agent_id: str | None = None
    ) -> int:
        """Delete the memories of a scope (the ids ANDed; none given: every memory).

        Returns:
            How many memories were deleted.

        Raises:
            ConfigurationError: An empty id.
            ConfigurationTypeError: An id is not a string.
        """
        check_scope(user_id, run_id, agent_id, required=False, operation="delete_all_memories")
        with self._lock:
            doomed = [k for k, m in self._memories.items() if m.in_scope(user_id, run_id, agent_id)]
            for key in doomed:
                del self._memories[key]
        return len(doomed)

    def to_dict(self) -> dict[str, Any]:
        """``{"type": "handrail.stores.memory_memory.InMemoryMemoryStore", "init_parameters": {}}``."""
        return default_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InMemoryMemoryStore:
        """A new, empty store from :meth:`to_dict` output.

        Raises:
            SerializationError: ``data`` is not this class's envelope.
        """
        store: InMemoryMemoryStore = default_from_dict(cls, data)
        return store


def _bm25_scorer(terms: list[str], every: list[_Memory]) -> Callable[[_Memory], float]:
    """BM25 for the query words, with statistics (document frequency, average length) over every memory."""
    words = list(dict.fromkeys(w for t in terms for w in text_words(t)))
    total = len(every)
    average = (sum(m.length for m in every) / total if total else 0.0) or 1.0
    idf = {}
    for word in words:
        df = sum(1 for m in every if word in m.words)
        idf[word] = math.log(1 + (total - df + 0.5) / (df + 0.5))

    def score(memory: _Memory) -> float:
        total_score = 0.0
        norm = _K1 * (1 - _B + _B * memory.length / average)
        for word, weight in idf.items():
            tf = memory.words.get(word, 0)
            if tf:
                total_score += weight * tf * (_K1 + 1) / (tf + norm)
        return total_score

    return score
