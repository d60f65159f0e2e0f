"""The memory store template: the MemoryStore protocol written once, over a backend's primitives.

:class:`MemoryStoreBase` checks the arguments, turns messages into memories and stored rows into messages, and
serializes the store; a backend only adds, searches and deletes. :class:`SQLMemoryStore` writes the SQL the
database backends share (scope and filter tests, the most recent memories, deletes) for either placeholder
style; a backend adds its insert, its tests on metadata and its ranked search.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from handrail.dataclasses.chat_message import ChatMessage
from handrail.stores._memory_common import (
    Condition,
    NewMemory,
    Scope,
    build_memory_message,
    check_memory_id,
    check_scope,
    check_top_k,
    new_memories,
    parse_filters,
    query_terms,
)
from handrail.stores._store_base import StoreBase

__all__ = ["COLUMNS", "MemoryStoreBase", "SQLMemoryStore"]

COLUMNS = "m.memory_id, m.role, m.name, m.content, m.user_id, m.run_id, m.agent_id, m.created_at, m.metadata"
"""The columns :func:`~handrail.stores._memory_common.build_memory_message` reads (then a score), on alias ``m``."""


class MemoryStoreBase(StoreBase, ABC):
    """A :class:`~handrail.stores.types.MemoryStore` over a backend's primitives (see the module docstring)."""

    def add_memories(
        self,
        *,
        messages: list[ChatMessage],
        user_id: str | None = None,
        run_id: str | None = None,
        agent_id: str | None = None,
    ) -> list[str]:
        """See :class:`~handrail.stores.types.MemoryStore`; all or nothing.

        A memory is the message's text parts joined by newlines. Each stored message gets an id in
        ``meta["message_id"]`` (assigned IN PLACE when missing); one whose id is already stored in exactly this
        scope is skipped, so adding the same messages again adds nothing.
        """
        scope = check_scope(user_id, run_id, agent_id, required=True, operation="add_memories")
        new = new_memories(messages)
        return self._add(new, scope) if new else []

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
        """See :class:`~handrail.stores.types.MemoryStore` (filters: :mod:`handrail.stores._memory_common`).

        A query without a word (only punctuation) matches nothing; without a query, and among equal scores, the
        most recent memories come first.
        """
        scope = check_scope(user_id, run_id, agent_id, required=False, operation="search_memories")
        top_k = check_top_k(top_k)
        conditions = parse_filters(filters)
        terms = None if query is None else query_terms(query)
        if terms == []:
            return []
        name = type(self).__name__
        return [
            build_memory_message(name, row, include_metadata=include_memory_metadata)
            for row in self._search(scope, conditions, terms, top_k)
        ]

    def delete_memory(self, memory_id: str) -> None:
        """See :class:`~handrail.stores.types.MemoryStore`."""
        self._delete(check_memory_id(memory_id))

    def delete_all_memories(
        self, *, user_id: str | None = None, run_id: str | None = None, agent_id: str | None = None
    ) -> int:
        """See :class:`~handrail.stores.types.MemoryStore`."""
        return self._delete_all(check_scope(user_id, run_id, agent_id, required=False, operation="delete_all_memories"))

    # -- backend primitives ------------------------------------------------------------------------

    @abstractmethod
    def _add(self, new: list[NewMemory], scope: Scope) -> list[str]:
        """Add the memories (at least one) not yet stored in exactly this scope, all or nothing; their ids."""

    @abstractmethod
    def _search(
        self, scope: Scope, conditions: list[Condition], terms: list[str] | None, top_k: int
    ) -> Sequence[Sequence[Any]]:
        """The best ``top_k`` rows (:data:`COLUMNS`, then the score) matching any of ``terms`` (at least one).

        ``terms`` None: the most recent ``top_k``, score None.
        """

    @abstractmethod
    def _delete(self, memory_id: str) -> None:
        """Delete one memory, if stored."""

    @abstractmethod
    def _delete_all(self, scope: Scope) -> int:
        """Delete the memories of a scope; how many were deleted."""


def _where_sql(clauses: list[str]) -> str:
    return f"WHERE {' AND '.join(clauses)}" if clauses else ""


class SQLMemoryStore(MemoryStoreBase):
    """A memory store in the SQL table ``handrail_memories``: the tests, reads and deletes written once."""

    _param: ClassVar[str]
    """The positional placeholder: ``?`` (sqlite3) or ``%s`` (psycopg)."""

    @abstractmethod
    def _session(self, *, write: bool, key: str = "") -> contextlib.AbstractContextManager[Any]:
        """A connection, in one transaction when ``write``; its errors become StoreError naming the store."""

    @abstractmethod
    def _metadata_test(self, condition: Condition) -> tuple[str, list[Any]]:
        """The SQL test (on alias ``m``) and parameters for equality of a metadata key (value None: missing)."""

    @abstractmethod
    def _ranked(self, terms: list[str], clauses: list[str], params: list[Any]) -> tuple[str, list[Any]]:
        """The ranked search for ``terms`` within ``clauses``: SQL and parameters, all but the last ``LIMIT``."""

    def _where(self, scope: Scope, conditions: list[Condition]) -> tuple[list[str], list[Any]]:
        """SQL tests (ANDed) and their parameters for a scope and filter conditions, on the alias ``m``."""
        clauses: list[str] = []
        params: list[Any] = []
        for column, value in scope.items():
            if value is not None:
                clauses.append(f"m.{column} = {self._param}")
                params.append(value)
        for c in conditions:
            if c.kind == "metadata":
                clause, values = self._metadata_test(c)
            elif c.value is None:  # c.key is one of COLUMN_KEYS: a fixed column name
                clause, values = f"m.{c.key} IS NULL", []
            else:
                clause, values = f"m.{c.key} = {self._param}", [c.value]
            clauses.append(clause)
            params += values
        return clauses, params

    def _search(
        self, scope: Scope, conditions: list[Condition], terms: list[str] | None, top_k: int
    ) -> Sequence[Sequence[Any]]:
        clauses, params = self._where(scope, conditions)
        if terms is None:
            sql = (
                f"SELECT {COLUMNS}, NULL FROM handrail_memories m {_where_sql(clauses)} "
                f"ORDER BY m.seq DESC LIMIT {self._param}"
            )
        else:
            sql, params = self._ranked(terms, clauses, params)
        with self._session(write=False) as conn:
            return list(conn.execute(sql, (*params, top_k)).fetchall())

    def _delete(self, memory_id: str) -> None:
        with self._session(write=True) as conn:
            conn.execute(f"DELETE FROM handrail_memories WHERE memory_id = {self._param}", (memory_id,))

    def _delete_all(self, scope: Scope) -> int:
        clauses, params = self._where(scope, [])
        with self._session(write=True) as conn:
            return int(conn.execute(f"DELETE FROM handrail_memories AS m {_where_sql(clauses)}", params).rowcount)
