"""The Agent's chat message store and memory store; memories join the one system message, never a second.

Before the loop: the stored history of ``chat_history_id`` (its last ``last_k`` rounds) goes before the
input, and memories found for the run's ids go into a delimited section of the one system message.
After a run that completes: the new exchange (the input and every message the run added, system
messages aside) is written to the chat store, and stored as memories. A run that pauses or fails
writes nothing; the run that completes after a resume writes the whole exchange once (messages carry
ids in ``meta["message_id"]``, kept in snapshots, and stores skip ids they hold).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from handrail.dataclasses.chat_message import ChatMessage, ChatRole
from handrail.errors import ConfigurationError, ConfigurationTypeError

if TYPE_CHECKING:
    from handrail.stores.types import ChatMessageStore, MemoryStore

__all__ = ["MEMORY_END", "MEMORY_START", "StoreUse", "check_store_kwargs", "with_ids"]

MESSAGE_ID_KEY = "message_id"
MEMORY_START = "<long_term_memory>"
MEMORY_END = "</long_term_memory>"
_MEMORY_INTRO = (
    "Memories from earlier conversations (long-term context; they may be outdated, and the conversation "
    "below takes precedence):"
)
_CHAT_KEYS = frozenset({"chat_history_id", "last_k"})
_MEMORY_KEYS = frozenset({"user_id", "run_id", "agent_id", "search_criteria"})
_SEARCH_KEYS = frozenset({"query", "filters", "top_k", "include_memory_metadata"})


def check_store_kwargs(
    store: ChatMessageStore | MemoryStore | None, kwargs: object, name: str
) -> dict[str, Any] | None:
    """Validate ``chat_message_store_kwargs`` / ``memory_store_kwargs``.

    Returns:
        The kwargs as a dict, or None when the store is not used this run (no ids given).

    Raises:
        ConfigurationTypeError: Not a dict.
        ConfigurationError: Unknown keys, or ids given while the Agent has no such store.
    """
    if kwargs is None:
        return None
    if not isinstance(kwargs, Mapping):
        raise ConfigurationTypeError(f"{name} must be a dict or None, got {type(kwargs).__name__}.")
    allowed = _CHAT_KEYS if name == "chat_message_store_kwargs" else _MEMORY_KEYS
    unknown = sorted(set(kwargs) - allowed)
    if unknown:
        raise ConfigurationError(f"{name} has unknown keys {unknown}; allowed: {sorted(allowed)}.")
    criteria = kwargs.get("search_criteria")
    if criteria is not None and (not isinstance(criteria, Mapping) or set(criteria) - _SEARCH_KEYS):
        raise ConfigurationError(
            f"memory_store_kwargs['search_criteria'] must be a dict with keys {sorted(_SEARCH_KEYS)}."
        )
    ids = ("chat_history_id",) if name == "chat_message_store_kwargs" else ("user_id", "run_id", "agent_id")
    if all(kwargs.get(k) is None for k in ids):
        return None  # nothing happens without the ids
    store_name = name.removesuffix("_kwargs")
    if store is None:
        raise ConfigurationError(f"{name} were given, but the Agent has no {store_name}.")
    return dict(kwargs)


def with_ids(messages: list[ChatMessage]) -> list[ChatMessage]:
    """``messages`` where each one lacking ``meta["message_id"]`` is replaced by a copy holding a new id."""
    out = []
    for m in messages:
        if isinstance(m.meta.get(MESSAGE_ID_KEY), str):
            out.append(m)
        else:
            out.append(ChatMessage(m.role, list(m._content), m.name, {**m.meta, MESSAGE_ID_KEY: uuid.uuid4().hex}))
    return out


@dataclass(slots=True)
class StoreUse:
    """The stores one run reads before its loop and writes after it."""

    chat_store: Any = None
    chat_kwargs: dict[str, Any] | None = None
    memory_store: Any = None
    memory_kwargs: dict[str, Any] | None = None
    new_from: int = 0
    """Index in the run's history where the new exchange starts (after the system message and stored history)."""
    loaded: list[ChatMessage] = field(default_factory=list)

    @property
    def active(self) -> bool:
        """True when the run reads or writes a store."""
        return self.chat_kwargs is not None or self.memory_kwargs is not None

    def to_metadata(self) -> dict[str, Any]:
        """What a snapshot records so a resumed run writes the same stores without loading again."""
        return {"chat_message_store_kwargs": self.chat_kwargs, "memory_store_kwargs": self.memory_kwargs,
                "new_from": self.new_from}  # fmt: skip

    def load_history(self) -> list[ChatMessage]:
        """The stored messages of the chat history (last ``last_k`` rounds), system messages left out."""
        if self.chat_kwargs is None:
            return []
        kwargs = self.chat_kwargs
        stored = self.chat_store.retrieve_messages(kwargs["chat_history_id"], last_k=kwargs.get("last_k"))
        self.loaded = [m for m in stored if m.role is not ChatRole.SYSTEM]
        return self.loaded

    def memory_text(self, history: list[ChatMessage]) -> str | None:
        """The delimited memory section for the system message, or None when nothing was found."""
        if self.memory_kwargs is None:
            return None
        kwargs = self.memory_kwargs
        criteria = dict(kwargs.get("search_criteria") or {})
        query = criteria.pop("query", None)
        if query is None:
            users = [m.text for m in history if m.role is ChatRole.USER and m.text]
            query = users[-1] if users else None
        found = self.memory_store.search_memories(
            query=query, **criteria, **{k: kwargs.get(k) for k in ("user_id", "run_id", "agent_id")}
        )
        lines = [f"- {m.text}" for m in found if m.text]
        if not lines:
            return None
        return "\n".join([MEMORY_START, _MEMORY_INTRO, *lines, MEMORY_END])

    def load_into(self, history: list[ChatMessage]) -> None:
        """Insert the stored history after the system message, add the memory section, note where the run starts."""
        at = 1 if history and history[0].role is ChatRole.SYSTEM else 0
        loaded = self.load_history()
        history[at:at] = loaded
        self.new_from = at + len(loaded)
        section = self.memory_text(history)
        if section is not None:
            add_memory_section(history, section)
            if at == 0:
                self.new_from += 1

    def write_after(self, messages: list[ChatMessage]) -> None:
        """Write the completed run's new exchange to the chat store and the memory store."""
        new = [m for m in messages[self.new_from :] if m.role is not ChatRole.SYSTEM]
        if self.chat_kwargs is not None and new:
            self.chat_store.write_messages(self.chat_kwargs["chat_history_id"], new)
        if self.memory_kwargs is not None and new:
            ids = {k: self.memory_kwargs.get(k) for k in ("user_id", "run_id", "agent_id")}
            self.memory_store.add_memories(messages=new, **ids)


def add_memory_section(history: list[ChatMessage], section: str) -> None:
    """Put ``section`` into the one system message (created when there is none), at its end."""
    if history and history[0].role is ChatRole.SYSTEM:
        first = history[0]
        text = f"{first.text}\n\n{section}" if first.text else section
        history[0] = ChatMessage.from_system(text, meta={**first.meta, "long_term_memory": True}, name=first.name)
    else:
        history.insert(0, ChatMessage.from_system(section, meta={"long_term_memory": True}))
