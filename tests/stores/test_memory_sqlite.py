from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from handrail.dataclasses.chat_message import ChatMessage
from handrail.errors import CorruptRecordError, StoreError
from handrail.stores.memory_sqlite import SQLiteMemoryStore
from handrail.testing.store_suites.memory import MemoryStoreSuite


class TestSQLiteMemoryStore(MemoryStoreSuite):
    @pytest.fixture(autouse=True)
    def _database(self, tmp_path: Path) -> Iterator[None]:
        self.path = tmp_path / "memories.db"
        self.stores: list[SQLiteMemoryStore] = []
        yield
        for store in self.stores:
            store.close()

    def make_store(self) -> SQLiteMemoryStore:
        store = SQLiteMemoryStore(self.path)
        self.stores.append(store)
        return store


class TestSQLiteMemoryStoreInMemoryDatabase(MemoryStoreSuite):
    def make_store(self) -> SQLiteMemoryStore:
        return SQLiteMemoryStore(":memory:")


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "handrail.db"


def _add(store: SQLiteMemoryStore, *texts: str, user_id: str = "ada") -> list[str]:
    return store.add_memories(messages=[ChatMessage.from_user(t) for t in texts], user_id=user_id)


def test_memories_persist_in_the_file(path: Path) -> None:
    store = SQLiteMemoryStore(path)
    _add(store, "Ada's cat is called Turing")
    store.close()
    again = SQLiteMemoryStore.from_dict(store.to_dict())
    assert [m.text for m in again.search_memories(query="cat", user_id="ada")] == ["Ada's cat is called Turing"]
    again.close()


def test_accents_and_case_are_folded(path: Path) -> None:
    store = SQLiteMemoryStore(path)
    _add(store, "Grüße aus MÜNCHEN")
    assert [m.text for m in store.search_memories(query="munchen grusse")] == ["Grüße aus MÜNCHEN"]
    store.close()


_CHILD = """
import sys
from handrail.dataclasses.chat_message import ChatMessage
from handrail.stores.memory_sqlite import SQLiteMemoryStore
store = SQLiteMemoryStore(sys.argv[1])
for i in range(40):
    store.add_memories(messages=[ChatMessage.from_user(f"child note {i} {j}") for j in range(5)], user_id="ada")
print(len(store.search_memories(query="child", user_id="ada", top_k=1000)))
"""


def test_two_processes_share_the_file(path: Path) -> None:
    store = SQLiteMemoryStore(path)
    _add(store, "parent note first")  # the schema exists before the child starts
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    for i in range(40):
        _add(store, *(f"parent note {i} {j}" for j in range(5)))
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    assert out.strip() == "200"
    assert len(store.search_memories(query="parent", user_id="ada", top_k=1000)) == 201
    assert len(store.search_memories(query="child", user_id="ada", top_k=1000)) == 200
    assert store.delete_all_memories() == 401
    store.close()


def test_threads_share_a_store(path: Path) -> None:
    store = SQLiteMemoryStore(path)
    _add(store, "start")
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for i in range(25):
                _add(store, f"worker {worker} note {i}")
                store.search_memories(query="note", user_id="ada")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            store.close()

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(store.search_memories(query="note", user_id="ada", top_k=1000)) == 100
    store.close()


def test_a_newer_schema_version_is_refused(path: Path) -> None:
    store = SQLiteMemoryStore(path)
    _add(store, "tea")
    store.close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE handrail_schema SET version = 99 WHERE store = 'SQLiteMemoryStore'")
    conn.close()
    newer = SQLiteMemoryStore(path)
    with pytest.raises(StoreError, match=r"SQLiteMemoryStore.*schema version 99"):
        newer.search_memories(query="tea")
    newer.close()


def test_a_file_that_is_not_a_database(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_bytes(b"this is not a SQLite database, not at all" * 100)
    store = SQLiteMemoryStore(path)
    with pytest.raises(StoreError, match="SQLiteMemoryStore"):
        _add(store, "tea")
    store.close()


@pytest.mark.parametrize(("column", "value"), [("role", "wizard"), ("metadata", "{not json"), ("metadata", "[1, 2]")])
def test_a_corrupt_row_names_the_memory(path: Path, column: str, value: str) -> None:
    store = SQLiteMemoryStore(path)
    (memory_id,) = _add(store, "tea")
    with sqlite3.connect(path) as conn:
        conn.execute(f"UPDATE handrail_memories SET {column} = ?", (value,))
    conn.close()
    with pytest.raises(CorruptRecordError, match=f"SQLiteMemoryStore.*{memory_id}"):
        store.search_memories(query="tea", include_memory_metadata=True)
    store.close()


def test_shares_the_file_with_the_chat_store(path: Path) -> None:
    from handrail.stores.chat_sqlite import SQLiteChatMessageStore

    memories = SQLiteMemoryStore(path)
    chats = SQLiteChatMessageStore(path)
    messages = [ChatMessage.from_user("I drink green tea"), ChatMessage.from_assistant("Noted: green tea")]
    assert chats.write_messages("chat-1", messages) == 2
    assert len(memories.add_memories(messages=messages, user_id="ada")) == 2
    assert memories.delete_all_memories() == 2
    assert chats.count_messages("chat-1") == 2
    memories.close()
    chats.close()


def test_search_uses_the_full_text_index(path: Path) -> None:
    store = SQLiteMemoryStore(path)
    _add(store, "tea")
    conn = store._db.connection()
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    assert len(store.search_memories(query="tea", user_id="ada")) == 1
    conn.set_trace_callback(None)
    (search,) = [s for s in statements if "MATCH" in s]
    plan = " | ".join(str(row[-1]) for row in conn.execute(f"EXPLAIN QUERY PLAN {search}").fetchall())
    assert "VIRTUAL TABLE INDEX" in plan and "handrail_memories_fts" in plan
    store.close()
