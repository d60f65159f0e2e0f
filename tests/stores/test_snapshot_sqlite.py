from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.snapshot import encode_snapshot
from handrail.errors import CorruptRecordError, SnapshotUnavailableError, StoreError
from handrail.stores.snapshot_sqlite import SQLiteSnapshotStore
from handrail.stores.types import SnapshotStore
from handrail.testing.store_suites.snapshots import SnapshotStoreSuite, make_paused_snapshot
from tests.stores.snapshot_worker import claim_dies_with_its_process, two_processes_decide

APPROVE = ToolExecutionDecision("transfer", execute=True, tool_call_id="c1")


class TestSQLiteSnapshotStore(SnapshotStoreSuite):
    @pytest.fixture(autouse=True)
    def _path(self, tmp_path: Path) -> None:
        self.path = tmp_path / "db" / "handrail.db"

    def make_store(self) -> SnapshotStore:
        return SQLiteSnapshotStore(self.path, lock_timeout=0.2)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "nested" / "handrail.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[SQLiteSnapshotStore]:
    made = SQLiteSnapshotStore(db_path, lock_timeout=0.2)
    yield made
    made.close()


def _sql(path: Path, statement: str, *params: object) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        return conn.execute(statement, params).fetchall()
    finally:
        conn.close()


def test_a_row_holds_the_snapshot_file_bytes(db_path: Path, store: SQLiteSnapshotStore) -> None:
    snapshot = make_paused_snapshot()
    snapshot_id = store.save(snapshot)
    rows = _sql(db_path, "SELECT status, created_at, continued_in, data FROM handrail_snapshots")
    assert rows == [("paused", snapshot.timestamp.timestamp(), None, encode_snapshot(snapshot))]
    assert store.locator(snapshot_id) == f"sqlite:///{db_path}#{snapshot_id}"
    assert store.locator(snapshot_id).startswith("sqlite:////")


def test_claims_are_lock_files_beside_the_database(db_path: Path, store: SQLiteSnapshotStore) -> None:
    snapshot_id = store.save(make_paused_snapshot())
    with store.claim(snapshot_id):
        assert (db_path.parent / "handrail.db.locks" / f"{snapshot_id}.lock").exists()


@pytest.mark.parametrize(
    "data",
    # SQLite keeps any type in any column: a hand-edited row may hold text or a number instead of bytes.
    [b"{not json", b"[1, 2]", b'{"schema_version": 1}', b'{"schema_version": 99}', "{bad", '{"a": 1}', 42, 1.5],
)
def test_a_corrupt_row_names_the_store_and_the_id(
    db_path: Path, store: SQLiteSnapshotStore, data: bytes | str | float
) -> None:
    good = store.save(make_paused_snapshot())
    bad = store.save(make_paused_snapshot())
    _sql(db_path, "UPDATE handrail_snapshots SET data = ? WHERE snapshot_id = ?", data, bad)
    with pytest.raises(CorruptRecordError, match=rf"SQLiteSnapshotStore\('{db_path}'\).*snapshot {bad}"):
        store.load(bad)
    with pytest.raises(StoreError, match=bad):
        store.record_decision(bad, APPROVE)
    with pytest.warns(UserWarning, match=rf"{bad} in SQLiteSnapshotStore"):
        assert {p.snapshot_id for p in store.list_pending()} == {good}
    assert _sql(db_path, "SELECT data FROM handrail_snapshots WHERE snapshot_id = ?", bad) == [(data,)]


def test_a_newer_schema_version_is_refused(db_path: Path, store: SQLiteSnapshotStore) -> None:
    store.save(make_paused_snapshot())
    store.close()
    _sql(db_path, "UPDATE handrail_schema SET version = 7 WHERE store = 'SQLiteSnapshotStore'")
    newer = SQLiteSnapshotStore(db_path)
    with pytest.raises(StoreError, match=r"SQLiteSnapshotStore.*schema version 7"):
        newer.list_pending()
    newer.close()


def test_a_version_1_database_is_migrated_to_keep_ledger_entries(db_path: Path) -> None:
    """A database written before the entries table (schema version 1) gets it on first use; its records load."""
    from handrail.stores.snapshot_sqlite import _MIGRATIONS

    snapshot = make_paused_snapshot()
    db_path.parent.mkdir(parents=True)
    conn = sqlite3.connect(db_path, isolation_level=None)
    try:
        conn.executescript(_MIGRATIONS[0])
        conn.execute("CREATE TABLE handrail_schema (store TEXT PRIMARY KEY, version INTEGER NOT NULL)")
        conn.execute("INSERT INTO handrail_schema VALUES ('SQLiteSnapshotStore', 1)")
        conn.execute(
            "INSERT INTO handrail_snapshots VALUES ('old', 'paused', ?, ?, NULL, ?)",
            (snapshot.timestamp.timestamp(), snapshot.timestamp.timestamp(), encode_snapshot(snapshot)),
        )
    finally:
        conn.close()
    store = SQLiteSnapshotStore(db_path, lock_timeout=0.2)
    assert store.load("old") == snapshot
    with store.claim("old"):
        running = dataclasses.replace(snapshot.ledger["c1"], status="running")
        store.append_entries("old", {"c1": running})
    assert store.load("old").ledger["c1"] == running
    assert _sql(db_path, "SELECT version FROM handrail_schema WHERE store = 'SQLiteSnapshotStore'") == [
        (len(_MIGRATIONS),)
    ]  # the latest (3 added the approval tables)
    store.close()


def test_an_in_memory_database_works_in_one_process() -> None:
    store = SQLiteSnapshotStore(":memory:", lock_timeout=0)
    snapshot_id = store.save(make_paused_snapshot())
    lease = store.claim(snapshot_id)
    with pytest.raises(SnapshotUnavailableError):
        store.claim(snapshot_id)
    with pytest.raises(SnapshotUnavailableError):
        store.record_decision(snapshot_id, APPROVE)
    lease.release()
    assert store.record_decision(snapshot_id, APPROVE).ledger["c1"].status == "approved"
    assert store.locator(snapshot_id) == f"sqlite:///:memory:#{snapshot_id}"
    store.close()


def test_two_processes_deciding_at_once_one_wins(db_path: Path, store: SQLiteSnapshotStore, tmp_path: Path) -> None:
    snapshot_id = store.save(make_paused_snapshot())
    conflict, recorded = two_processes_decide(f"sqlite:///{db_path}", snapshot_id, tmp_path / "gate")
    assert (conflict["outcome"], recorded["outcome"]) == ("conflict", "recorded"), (conflict, recorded)
    decisions = store.load(snapshot_id).tool_execution_decisions
    assert [d.decided_by for d in decisions] == [recorded["verdict"]]


def test_a_claim_is_released_when_its_process_is_killed(db_path: Path, store: SQLiteSnapshotStore) -> None:
    snapshot_id = store.save(make_paused_snapshot())
    claim_dies_with_its_process(f"sqlite:///{db_path}", snapshot_id, store)
    assert store.record_decision(snapshot_id, APPROVE).ledger["c1"].status == "approved"


def test_to_dict_round_trip(db_path: Path) -> None:
    store = SQLiteSnapshotStore(db_path)
    data = store.to_dict()
    assert data == {
        "type": "handrail.stores.snapshot_sqlite.SQLiteSnapshotStore",
        "init_parameters": {"path": str(db_path), "lock_timeout": 5.0},
    }
    assert SQLiteSnapshotStore.from_dict(data).path == str(db_path)
