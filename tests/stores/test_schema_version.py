"""A damaged ``handrail_schema`` row (not a version number, or deleted while the tables stay) is refused.

Every SQLite and PostgreSQL store reads its version row through the same plumbing; a bad value used to raise a
bare ValueError from ``int()``, and a deleted row made the migrations run again ("table ... already exists",
or for PostgreSQL's ``IF NOT EXISTS`` tables a silent re-stamp). Now each is a StoreError naming the store,
the database and what was found, before anything is changed.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from handrail.errors import StoreError
from handrail.stores import SQLiteChatMessageStore, SQLiteMemoryStore, open_snapshot_store
from handrail.stores._sqlite import SQLiteDatabase
from handrail.testing.store_suites.chat import make_round
from tests.human_in_the_loop.test_snapshots import paused_snapshot
from tests.stores.conftest import postgres_database, postgres_dsn, postgres_server_dsn  # noqa: F401 - fixtures


def _sql(path: Path, statement: str) -> None:
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(statement)
    conn.close()


def _snapshots(path: Path) -> Callable[[], Any]:
    store = open_snapshot_store(f"sqlite:///{path}")
    store.save(paused_snapshot())
    return lambda: open_snapshot_store(f"sqlite:///{path}").list_pending()


def _chat(path: Path) -> Callable[[], Any]:
    store = SQLiteChatMessageStore(path)
    store.write_messages("h", make_round("a"))
    store.close()
    return lambda: SQLiteChatMessageStore(path).retrieve_messages("h")


def _memory(path: Path) -> Callable[[], Any]:
    from handrail.dataclasses import ChatMessage

    store = SQLiteMemoryStore(path)
    store.add_memories(messages=[ChatMessage.from_user("tea")], user_id="ada")
    store.close()
    return lambda: SQLiteMemoryStore(path).search_memories(query="tea", user_id="ada")


STORES = {
    "SQLiteSnapshotStore": (_snapshots, "handrail_snapshots"),
    "SQLiteChatMessageStore": (_chat, "handrail_chat_messages"),
    "SQLiteMemoryStore": (_memory, "handrail_memories"),
}


@pytest.mark.parametrize("store", sorted(STORES))
@pytest.mark.parametrize(("value", "shown"), [("'x'", "'x'"), ("-1", "-1"), ("2.5", "2.5"), ("X'01'", "b'\\x01'")])
def test_a_version_that_is_not_a_number_is_a_store_error(tmp_path: Path, store: str, value: str, shown: str) -> None:
    path = tmp_path / "v.db"
    make, _ = STORES[store]
    use = make(path)
    _sql(path, f"UPDATE handrail_schema SET version = {value} WHERE store = '{store}'")
    with pytest.raises(StoreError) as caught:
        use()
    message = str(caught.value)
    assert store in message and str(path) in message, message
    assert f"schema version {shown} " in message and "damaged" in message, message


@pytest.mark.parametrize("store", sorted(STORES))
def test_a_deleted_version_row_says_the_store_is_damaged(tmp_path: Path, store: str) -> None:
    path = tmp_path / "v.db"
    make, table = STORES[store]
    use = make(path)
    _sql(path, f"DELETE FROM handrail_schema WHERE store = '{store}'")
    with pytest.raises(StoreError) as caught:
        use()
    message = str(caught.value)
    assert store in message and str(path) in message, message
    assert "has no version row" in message and table in message and "already exists" not in message, message
    # nothing was changed: the row is still missing, the tables are still there
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT count(*) FROM handrail_schema WHERE store = ?", (store,)).fetchone() == (0,)
    conn.close()


def test_a_new_store_beside_another_in_one_file_still_migrates(tmp_path: Path) -> None:
    """A missing row with none of the store's tables present is a first use, not damage."""
    path = tmp_path / "shared.db"
    _snapshots(path)
    SQLiteChatMessageStore(path).write_messages("h", make_round("a"))
    db = SQLiteDatabase(path, store="t", migrations=["CREATE TABLE handrail_t (x INTEGER);"])
    db.connection().execute("INSERT INTO handrail_t VALUES (1)")
    db.close()


# ----------------------------------------------------------------------------- PostgreSQL


@pytest.mark.postgres
@pytest.mark.parametrize("damage", ["delete", "negative", "zero"])
def test_a_damaged_postgres_version_row_is_a_store_error(postgres_dsn: str, damage: str) -> None:  # noqa: F811
    import psycopg

    from handrail.stores._postgres import PostgresDatabase

    name = f"t_{uuid.uuid4().hex[:8]}"
    table = f"handrail_{name}"
    migrations = [f"CREATE TABLE {table} (x INTEGER);"]
    first = PostgresDatabase(postgres_dsn, store=name, migrations=migrations)
    with first.connection() as conn:
        conn.execute(f"INSERT INTO {table} VALUES (1)")
    first.close()
    change = {
        "delete": "DELETE FROM handrail_schema WHERE store = %s",
        "negative": "UPDATE handrail_schema SET version = -2 WHERE store = %s",
        "zero": "UPDATE handrail_schema SET version = 0 WHERE store = %s",
    }[damage]
    try:
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            conn.execute(change, (name,))
        again = PostgresDatabase(postgres_dsn, store=name, migrations=migrations)
        with pytest.raises(StoreError) as caught, again.connection():
            pass
        message = str(caught.value)
        assert name in message and "damaged" in message and "already exists" not in message, message
        expected = {"delete": "has no version row", "negative": "schema version -2 ", "zero": "records version 0"}
        assert expected[damage] in message, message
        if damage != "negative":
            assert table in message, message
        again.close()
    finally:
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            conn.execute("DELETE FROM handrail_schema WHERE store = %s", (name,))
            conn.execute(f"DROP TABLE IF EXISTS {table}")
