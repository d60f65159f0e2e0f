"""InMemoryMemoryStore: long-term memories held in this process, ranked with BM25 over their words."""

from __future__ import annotations

import itertools
import math
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from handrail.stores._memory_base import MemoryStoreBase
from handrail.stores._memory_common import Condition, NewMemory, Scope, json_equal, text_words, utc_now

__all__ = ["InMemoryMemoryStore"]

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

    def in_scope(self, scope: Scope) -> bool:
        return all(wanted is None or getattr(self, column) == wanted for column, wanted in scope.items())

    def matches(self, conditions: list[Condition]) -> bool:
        for c in conditions:
            if c.kind == "column":
                if getattr(self, c.key) != c.value:
                    return False
            elif not json_equal(self.metadata.get(c.key), c.value):
                return False
        return True


class InMemoryMemoryStore(MemoryStoreBase):
    """A :class:`~handrail.stores.types.MemoryStore` that keeps memories in a dict of this process (for tests).

    Search ranks with BM25 (k1 = 1.2, b = 0.75) over words: runs of letters and digits, casefolded, accents
    removed; a query matches the memories holding at least one of its words; ``score`` is the BM25 score (higher
    is better). Thread-safe. ``to_dict`` writes no data: a store rebuilt by ``from_dict`` is empty.

    Examples:
        >>> from handrail.dataclasses.chat_message import ChatMessage
        >>> store = InMemoryMemoryStore()
        >>> ids = store.add_memories(messages=[ChatMessage.from_user("I drink green tea")], user_id="ada")
        >>> [m.text for m in store.search_memories(query="tea?", user_id="ada")]
        ['I drink green tea']
    """

    def __init__(self) -> None:
        self._memories: dict[str, _Memory] = {}
        self._seq = itertools.count(1)
        self._lock = threading.Lock()

    def _add(self, new: list[NewMemory], scope: Scope) -> list[str]:
        created_at = utc_now()
        added: list[str] = []
        with self._lock:
            stored = {(m.message_id, m.user_id, m.run_id, m.agent_id) for m in self._memories.values()}
            for item in new:
                if (item.message_id, scope.user_id, scope.run_id, scope.agent_id) in stored:
                    continue
                words = Counter(text_words(item.content))
                self._memories[item.memory_id] = _Memory(
                    next(self._seq), item.memory_id, item.message_id, scope.user_id, scope.run_id, scope.agent_id,
                    item.role, item.name, item.content, item.metadata, created_at, words, sum(words.values()),
                )  # fmt: skip
                added.append(item.memory_id)
        return added

    def _search(
        self, scope: Scope, conditions: list[Condition], terms: list[str] | None, top_k: int
    ) -> list[tuple[Any, ...]]:
        with self._lock:
            every = list(self._memories.values())
        candidates = [m for m in every if m.in_scope(scope) and m.matches(conditions)]
        ranked: list[tuple[_Memory, float | None]]
        if terms is None:
            ranked = [(m, None) for m in sorted(candidates, key=lambda m: -m.seq)[:top_k]]
        else:
            scorer = _bm25_scorer(terms, every)
            scored = [(m, scorer(m)) for m in candidates]
            hits = [(m, s) for m, s in scored if s > 0]
            ranked = [(m, s) for m, s in sorted(hits, key=lambda h: (-h[1], -h[0].seq))[:top_k]]
        return [(*m.row(), score) for m, score in ranked]

    def _delete(self, memory_id: str) -> None:
        with self._lock:
            self._memories.pop(memory_id, None)

    def _delete_all(self, scope: Scope) -> int:
        with self._lock:
            doomed = [k for k, m in self._memories.items() if m.in_scope(scope)]
            for key in doomed:
                del self._memories[key]
        return len(doomed)


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
