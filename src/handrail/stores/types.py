"""The store protocols: chat message stores, memory stores and snapshot stores, and what they share.

Every store is a plain object satisfying one of the :class:`typing.Protocol` classes below; the Agent and the
CLI depend on the protocols only. Backends: in memory, SQLite (standard library ``sqlite3``), PostgreSQL
(psycopg 3) and, for snapshots, a directory of JSON files.

Messages written to a chat message store or a memory store carry their id in ``message.meta["message_id"]``
(:data:`MESSAGE_ID_KEY`); :func:`ensure_message_id` assigns one in place when a message has none.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from handrail.dataclasses.chat_message import ChatMessage
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.errors import ConfigurationTypeError

if TYPE_CHECKING:  # annotations only: the Agent imports this module, and these are slow to import
    from datetime import datetime

    from handrail.dataclasses.snapshot import AgentSnapshot, LedgerEntry, MessageCache

__all__ = [
    "MESSAGE_ID_KEY",
    "ChatMessageStore",
    "Lease",
    "MemoryStore",
    "PendingApproval",
    "SnapshotStore",
    "ensure_message_id",
]

MESSAGE_ID_KEY = "message_id"
"""The ``ChatMessage.meta`` key that holds a stored message's id (a string)."""


def ensure_message_id(message: ChatMessage) -> str:
    """The message's id, assigning a fresh ``uuid4().hex`` IN PLACE when it has none.

    The id lives in ``message.meta["message_id"]``. Stores call this on every message they write, so writing
    the same message objects a second time is a no-op.

    Args:
        message: The message; its ``meta`` dict is modified when it holds no id yet.

    Returns:
        The id (a non-empty string).

    Raises:
        ConfigurationTypeError: When ``meta["message_id"]`` holds something other than a non-empty string.

    Examples:
        >>> message = ChatMessage.from_user("Hi", meta={"message_id": "m-1"})
        >>> ensure_message_id(message)
        'm-1'
        >>> fresh = ChatMessage.from_user("Hi")
        >>> ensure_message_id(fresh) == fresh.meta["message_id"]
        True
    """
    existing = message.meta.get(MESSAGE_ID_KEY)
    if existing is None:
        new_id = uuid.uuid4().hex
        message.meta[MESSAGE_ID_KEY] = new_id
        return new_id
    if not isinstance(existing, str) or not existing:
        raise ConfigurationTypeError(
            f"meta[{MESSAGE_ID_KEY!r}] must be a non-empty string, got {type(existing).__name__} {existing!r}."
        )
    return existing


@runtime_checkable
class ChatMessageStore(Protocol):
    """Keeps the messages of chat histories, each history named by an id, in the order they were written."""

    def write_messages(self, chat_history_id: str, messages: list[ChatMessage]) -> int:
        """Append messages to a chat history, all or nothing.

        Each message gets an id in ``meta["message_id"]`` (assigned in place when missing); messages whose id
        is already stored in this history are skipped, and so are system messages unless the store was made
        with ``store_system_messages=True``.

        Args:
            chat_history_id: The history to append to (created on first write).
            messages: The messages, in order.

        Returns:
            The number of messages written (skipped ones not counted).

        Raises:
            StoreError: The backend failed; nothing was written.
            SerializationError: A message cannot be serialized; nothing was written.
        """
        ...

    def retrieve_messages(self, chat_history_id: str, last_k: int | None = None) -> list[ChatMessage]:
        """The history's messages in write order.

        Args:
            chat_history_id: The history; an unknown id gives ``[]``.
            last_k: Only the last ``k`` rounds (a round runs from a user message to the assistant's final
                answer, tool calls and results included); ``None`` for all, ``0`` for none.

        Returns:
            New ChatMessage objects (their ``meta`` holds ``message_id``).

        Raises:
            ConfigurationError: ``last_k`` is negative or not an int.
            StoreError: The backend failed or a stored row is corrupt (the error names the message id).
        """
        ...

    def count_messages(self, chat_history_id: str) -> int:
        """How many messages the history holds (0 for an unknown id)."""
        ...

    def delete_messages(self, chat_history_id: str) -> None:
        """Delete one history (an unknown id is not an error)."""
        ...

    def delete_all_messages(self) -> None:
        """Delete every history of this store."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """``{"type": <import path>, "init_parameters": {...}}`` (never a password)."""
        ...


@runtime_checkable
class MemoryStore(Protocol):
    """Long-term memories scoped by user, run and agent ids, searched by text.

    - ``add_memories(*, messages, user_id=None, run_id=None, agent_id=None) -> list[str]``: memory ids; each
      message's text is one memory; messages with no text are skipped; at least one of the ids must be given
      (ConfigurationError otherwise).
    - ``search_memories(*, query=None, filters=None, top_k=5, user_id=None, run_id=None, agent_id=None,
      include_memory_metadata=False) -> list[ChatMessage]``: scoped to the given ids (AND); ``query=None`` gives
      the most recent ``top_k``; results ranked best first; returned as ChatMessage (role as stored, text = the
      memory, ``meta["memory_id"]`` and, with ``include_memory_metadata``, ``user_id``/``run_id``/``agent_id``/
      ``created_at``/``score``/``metadata``); ``filters`` is equality on metadata keys and the scope ids, unknown
      filter shapes and ``top_k <= 0`` raise ConfigurationError; query text with full-text syntax characters
      must not raise.
    - ``delete_memory(memory_id) -> None`` (an unknown id is not an error).
    - ``delete_all_memories(*, user_id=None, run_id=None, agent_id=None) -> int``: no ids deletes all; returns
      the number deleted.
    """

    def add_memories(
        self,
        *,
        messages: list[ChatMessage],
        user_id: str | None = None,
        run_id: str | None = None,
        agent_id: str | None = None,
    ) -> list[str]:
        """Store each message's text as one memory; returns the new memory ids (see the class docstring)."""
        ...

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
        """The best ``top_k`` memories for ``query`` within the given scope (see the class docstring)."""
        ...

    def delete_memory(self, memory_id: str) -> None:
        """Delete one memory (an unknown id is not an error)."""
        ...

    def delete_all_memories(
        self, *, user_id: str | None = None, run_id: str | None = None, agent_id: str | None = None
    ) -> int:
        """Delete the memories of a scope (all with no ids); returns how many were deleted."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """``{"type": <import path>, "init_parameters": {...}}`` (never a password)."""
        ...


@runtime_checkable
class Lease(Protocol):
    """An exclusive claim on a snapshot, held by one resumed run; released explicitly or when its process dies."""

    def release(self) -> None:
        """Give the claim up (calling it twice is harmless)."""
        ...


@dataclass(frozen=True, slots=True)
class PendingApproval:
    """One paused tool call waiting for a person, as ``list_pending`` reports it."""

    snapshot_id: str
    """The snapshot's id (for a directory of files: the file's stem, what the CLI takes as SNAPSHOT_ID)."""
    tool_name: str
    """The tool the call is for."""
    arguments: dict[str, Any]
    """The arguments the model proposed (a copy)."""
    tool_call_id: str
    """The call's id: decisions name it."""
    created_at: datetime
    """When the run paused (the snapshot's timestamp, UTC)."""
    path: Path | None = None
    """The snapshot file (absolute) for file-based stores; ``None`` for database stores."""


@runtime_checkable
class SnapshotStore(Protocol):
    """Keeps paused-run snapshots and the decisions people record on them.

    - ``save(snapshot) -> str``: a new, unique snapshot id; the record is self-contained JSON exactly as
      ``encode_snapshot`` writes it.
    - ``load(snapshot_id) -> AgentSnapshot``: ``location`` set to ``self.locator(snapshot_id)``; an unknown id
      raises SnapshotError naming the id and listing a few known ids.
    - ``list_pending() -> list[PendingApproval]``: status "paused" only; one entry per pending call; sorted by
      ``created_at``.
    - ``record_decision(snapshot_id, decision, *, decided_by=None) -> AgentSnapshot``: atomic compare-and-set; a
      second, different decision raises DecisionConflictError, the same again is a no-op; the snapshot must be
      "paused" and not claimed by a running resume (SnapshotUnavailableError otherwise).
    - ``update_ledger(snapshot_id, entries)``: merged by call id, atomically.
    - ``mark_done(snapshot_id, outcome=None)``.
    - ``claim(snapshot_id) -> Lease``: exclusive for one resumed run, across processes; SnapshotUnavailableError
      naming the id when already claimed; released by ``lease.release()`` or when the process dies.
    - ``create(snapshot, name) -> tuple[str, Lease]``: save under a new id derived from ``name`` and claim it.
    - ``replace(snapshot_id, snapshot, cache=None)``: rewrite the whole record atomically (the claim's holder).
    - ``continue_in(snapshot_id, snapshot, name, cache=None) -> str``: the run paused again: store ``snapshot``
      under a new id and leave the old record with status "resumed", ``continued_in=<new id>``, atomically;
      returns the id.
    - ``locator(snapshot_id) -> str``: what ``AgentSnapshot.location`` holds for it (files: the absolute path;
      SQLite: ``sqlite:///<abs path>#<id>``; PostgreSQL: ``postgresql://...redacted...#<id>``).
    """

    def save(self, snapshot: AgentSnapshot) -> str:
        """Store a snapshot under a new id and return the id."""
        ...

    def load(self, snapshot_id: str) -> AgentSnapshot:
        """The stored snapshot (SnapshotError for an unknown id).

        A record that cannot be read raises SnapshotError or CorruptRecordError naming the store and the id.
        """
        ...

    def list_pending(self) -> list[PendingApproval]:
        """One entry per tool call waiting for a decision in a paused snapshot, oldest first.

        A record that cannot be read is reported (named) and skipped, never raised: one bad record must not hide
        the others.
        """
        ...

    def record_decision(
        self, snapshot_id: str, decision: ToolExecutionDecision, *, decided_by: str | None = None
    ) -> AgentSnapshot:
        """Record a person's decision on one pending call, atomically; returns the updated snapshot."""
        ...

    def update_ledger(self, snapshot_id: str, entries: Mapping[str, LedgerEntry]) -> None:
        """Merge ledger entries (by call id) into the stored snapshot, atomically."""
        ...

    def mark_done(self, snapshot_id: str, outcome: dict[str, Any] | None = None) -> None:
        """Mark the snapshot's run as finished, with an optional outcome."""
        ...

    def claim(self, snapshot_id: str) -> Lease:
        """Claim the snapshot for one resumed run (SnapshotUnavailableError when already claimed)."""
        ...

    def create(self, snapshot: AgentSnapshot, name: str) -> tuple[str, Lease]:
        """Save under a new id derived from ``name`` and claim it; returns the id and the lease."""
        ...

    def replace(self, snapshot_id: str, snapshot: AgentSnapshot, cache: MessageCache | None = None) -> None:
        """Rewrite the whole record atomically (called by the claim's holder)."""
        ...

    def append_entries(
        self, snapshot_id: str, entries: Mapping[str, LedgerEntry], cache: MessageCache | None = None
    ) -> None:
        """Keep changed ledger entries beside the record durably (the claim's holder, mid-step); reads fold them in."""
        ...

    def continue_in(
        self, snapshot_id: str, snapshot: AgentSnapshot, name: str, cache: MessageCache | None = None
    ) -> str:
        """Store ``snapshot`` under a new id and mark the old record resumed into it; returns the new id.

        The Agent passes its run's message cache as the fourth argument, positionally (as to :meth:`replace`
        and :meth:`append_entries`): messages already encoded by the run are not encoded again.
        """
        ...

    def locator(self, snapshot_id: str) -> str:
        """What ``AgentSnapshot.location`` holds for the snapshot."""
        ...
