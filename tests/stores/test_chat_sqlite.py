from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from handrail.dataclasses.chat_message import ChatMessage
from handrail.errors import CorruptRecordError, StoreError
from handrail.stores.chat_sqlite import SQLiteChatMessageStore
from handrail.stores.types import MESSAGE_ID_KEY, ChatMessageStore
from handrail.testing.store_suites import ChatMessageStoreSuite
from handrail.testing.store_suites.chat import make_round


class TestSQLiteChatMessageStore(ChatMessageStoreSuite):
    @pytest.fixture(autouse=True)
    def _folder(self, tmp_path: Path) -> None:
        self.folder = tmp_path
        self.made = 0

    def make_store(self, *, store_system_messages: bool = False) -> ChatMessageStore:
        self.made += 1
        return SQLiteChatMessageStore(self.folder / f"chat-{self.made}.db", store_system_messages=store_system_messages)


class TestSQLiteInMemoryChatMessageStore(ChatMessageStoreSuite):
    def make_store(self, *, store_system_messages: bool = False) -> ChatMessageStore:
        return SQLiteChatMessageStore(":memory:", store_system_messages=store_system_messages)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "nested" / "folder" / "handrail.db"


@pytest.fixture
def store(db_path: Path) -> SQLiteChatMessageStore:
    return SQLiteChatMessageStore(db_path)


def _sql(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for statement in statements:
            conn.execute(statement)
    finally:
        conn.close()


_CHILD = textwrap.dedent(
    """
    import sys
    from handrail.stores.chat_sqlite import SQLiteChatMessageStore
    from handrail.testing.store_suites.chat import make_round

    store = SQLiteChatMessageStore(sys.argv[1])
    for j in range(int(sys.argv[2])):
        assert store.write_messages("shared", make_round(f"child-{j}", meta={"w": "child", "j": j})) == 4
    store.close()
    """
)


def test_two_processes_share_one_file(db_path: Path, store: SQLiteChatMessageStore) -> None:
    rounds = 25
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(db_path), str(rounds)])
    try:
        for j in range(rounds):
            assert store.write_messages("shared", make_round(f"parent-{j}", meta={"w": "parent", "j": j})) == 4
    finally:
        assert child.wait(timeout=120) == 0
    stored = store.retrieve_messages("shared")
    assert len(stored) == store.count_messages("shared") == 2 * rounds * 4
    assert len({m.meta[MESSAGE_ID_KEY] for m in stored}) == len(stored)
    batches = [stored[i : i + 4] for i in range(0, len(stored), 4)]
    for batch in batches:
        assert [m.meta["pos"] for m in batch] == [0, 1, 2, 3]
        assert len({(m.meta["w"], m.meta["j"]) for m in batch}) == 1
    for writer in ("child", "parent"):
        assert [b[0].meta["j"] for b in batches if b[0].meta["w"] == writer] == list(range(rounds))
    store.close()


def test_a_second_store_on_the_file_sees_the_messages(db_path: Path, store: SQLiteChatMessageStore) -> None:
    messages = make_round("a")
    store.write_messages("h", messages)
    other = SQLiteChatMessageStore.from_dict(store.to_dict())
    assert other.retrieve_messages("h", last_k=1) == messages
    assert other.write_messages("h", messages) == 0
    other.close()
    store.close()


@pytest.mark.parametrize("data", ["{not json", "[1, 2]", '{"role": "wizard", "content": []}', '{"role": "user"}'])
def test_a_corrupt_row_names_the_store_history_and_message(
    db_path: Path, store: SQLiteChatMessageStore, data: str
) -> None:
    messages = make_round("a", tools=0)
    store.write_messages("chat-7", messages)
    bad_id = messages[1].meta[MESSAGE_ID_KEY]
    _sql(db_path, f"UPDATE handrail_chat_messages SET data = '{data}' WHERE message_id = '{bad_id}'")
    with pytest.raises(CorruptRecordError) as caught:
        store.retrieve_messages("chat-7")
    assert "SQLiteChatMessageStore" in str(caught.value)
    assert "'chat-7'" in str(caught.value) and repr(bad_id) in str(caught.value)
    assert store.count_messages("chat-7") == 2
    store.close()


def test_a_newer_schema_version_is_refused(db_path: Path, store: SQLiteChatMessageStore) -> None:
    store.write_messages("h", make_round("a"))
    store.close()
    _sql(db_path, "UPDATE handrail_schema SET version = 99 WHERE store = 'SQLiteChatMessageStore'")
    newer = SQLiteChatMessageStore(db_path)
    with pytest.raises(StoreError, match=r"SQLiteChatMessageStore.*schema version 99"):
        newer.retrieve_messages("h")
    newer.close()


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"these are not the tables you are looking for" * 100)
    store = SQLiteChatMessageStore(path)
    with pytest.raises(StoreError, match="SQLiteChatMessageStore"):
        store.count_messages("h")
    store.close()


def test_no_partial_write_when_the_database_refuses_a_row(db_path: Path, store: SQLiteChatMessageStore) -> None:
    kept = make_round("kept")
    store.write_messages("h", kept)
    _sql(
        db_path,
        "CREATE TRIGGER refuse BEFORE INSERT ON handrail_chat_messages WHEN NEW.message_id = 'boom' "
        "BEGIN SELECT RAISE(ABORT, 'refused by a test trigger'); END",
    )
    batch = make_round("b")
    batch[2].meta[MESSAGE_ID_KEY] = "boom"
    with pytest.raises(StoreError, match=r"SQLiteChatMessageStore.*'h'.*refused by a test trigger"):
        store.write_messages("h", batch)
    assert store.retrieve_messages("h") == kept
    _sql(db_path, "DROP TRIGGER refuse")
    assert store.write_messages("h", batch) == 4
    assert store.retrieve_messages("h", last_k=1) == batch
    store.close()


def test_delete_all_leaves_other_stores_in_the_file_alone(db_path: Path, store: SQLiteChatMessageStore) -> None:
    store.write_messages("h", [ChatMessage.from_user("x")])
    _sql(db_path, "CREATE TABLE handrail_other (x INTEGER)", "INSERT INTO handrail_other VALUES (1)")
    store.delete_all_messages()
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("SELECT count(*) FROM handrail_other").fetchone() == (1,)
        assert conn.execute("SELECT version FROM handrail_schema WHERE store = 'SQLiteChatMessageStore'").fetchone()
    finally:
        conn.close()
    store.close()


def test_to_dict(db_path: Path) -> None:
    store = SQLiteChatMessageStore(db_path, store_system_messages=True)
    assert store.to_dict() == {
        "type": "handrail.stores.chat_sqlite.SQLiteChatMessageStore",
        "init_parameters": {"path": str(db_path), "store_system_messages": True},
    }
