"""Stores: chat message stores, memory stores and snapshot stores.

Each kind has a protocol (:class:`ChatMessageStore`, :class:`MemoryStore`, :class:`SnapshotStore`), an
in-memory or file implementation, an embedded SQLite one (WAL mode, safe for several processes on one
machine) and a PostgreSQL one (psycopg 3 with a connection pool; ``pip install 'handrail[postgres]'``).
Every backend passes the same conformance suite (:mod:`handrail.testing.store_suites`).

The Agent takes a ``chat_message_store`` and a ``memory_store``; approvals paused into a snapshot store
are listed, decided and resumed from any process that opens the same store
(:func:`open_snapshot_store` turns a directory, ``sqlite:///path``, ``postgresql://...`` or a URL of a scheme
added with :func:`register_snapshot_store` into one). A store of your own is best built on
:class:`SnapshotStoreBase` (the ``handrail`` commands need one: they list and check claims through its backend
primitives); :class:`MessageCache` is the ``cache`` argument of ``SnapshotStore.continue_in`` / ``replace`` /
``append_entries``.
"""

import typing as _typing

from handrail.core._lazy import lazy_exports as _lazy_exports

_EXPORTS = {
    "ChatMessageStore": "handrail.stores.types",
    "MemoryStore": "handrail.stores.types",
    "SnapshotStore": "handrail.stores.types",
    "Lease": "handrail.stores.types",
    "PendingApproval": "handrail.stores.types",
    "MESSAGE_ID_KEY": "handrail.stores.types",
    "ensure_message_id": "handrail.stores.types",
    "InMemoryChatMessageStore": "handrail.stores.chat_memory",
    "SQLiteChatMessageStore": "handrail.stores.chat_sqlite",
    "PostgresChatMessageStore": "handrail.stores.chat_postgres",
    "InMemoryMemoryStore": "handrail.stores.memory_memory",
    "SQLiteMemoryStore": "handrail.stores.memory_sqlite",
    "PostgresMemoryStore": "handrail.stores.memory_postgres",
    "FileSnapshotStore": "handrail.stores.snapshot_file",
    "SQLiteSnapshotStore": "handrail.stores.snapshot_sqlite",
    "PostgresSnapshotStore": "handrail.stores.snapshot_postgres",
    "open_snapshot_store": "handrail.stores._snapshot_locations",
    "store_for_location": "handrail.stores._snapshot_locations",
    "register_snapshot_store": "handrail.stores._snapshot_locations",
    "SnapshotStoreFactory": "handrail.stores._snapshot_locations",
    "SnapshotStoreBase": "handrail.stores._snapshot_base",
    "MessageCache": "handrail.dataclasses.snapshot",
}

if _typing.TYPE_CHECKING:
    from handrail.dataclasses.snapshot import MessageCache
    from handrail.stores._snapshot_base import SnapshotStoreBase
    from handrail.stores._snapshot_locations import (
        SnapshotStoreFactory,
        open_snapshot_store,
        register_snapshot_store,
        store_for_location,
    )
    from handrail.stores.chat_memory import InMemoryChatMessageStore
    from handrail.stores.chat_postgres import PostgresChatMessageStore
    from handrail.stores.chat_sqlite import SQLiteChatMessageStore
    from handrail.stores.memory_memory import InMemoryMemoryStore
    from handrail.stores.memory_postgres import PostgresMemoryStore
    from handrail.stores.memory_sqlite import SQLiteMemoryStore
    from handrail.stores.snapshot_file import FileSnapshotStore
    from handrail.stores.snapshot_postgres import PostgresSnapshotStore
    from handrail.stores.snapshot_sqlite import SQLiteSnapshotStore
    from handrail.stores.types import (
        MESSAGE_ID_KEY,
        ChatMessageStore,
        Lease,
        MemoryStore,
        PendingApproval,
        SnapshotStore,
        ensure_message_id,
    )

__all__ = [
    "ChatMessageStore",
    "FileSnapshotStore",
    "InMemoryChatMessageStore",
    "InMemoryMemoryStore",
    "Lease",
    "MESSAGE_ID_KEY",
    "MemoryStore",
    "MessageCache",
    "PendingApproval",
    "PostgresChatMessageStore",
    "PostgresMemoryStore",
    "PostgresSnapshotStore",
    "SQLiteChatMessageStore",
    "SQLiteMemoryStore",
    "SQLiteSnapshotStore",
    "SnapshotStore",
    "SnapshotStoreBase",
    "SnapshotStoreFactory",
    "ensure_message_id",
    "open_snapshot_store",
    "register_snapshot_store",
    "store_for_location",
]
__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals(), __all__)
