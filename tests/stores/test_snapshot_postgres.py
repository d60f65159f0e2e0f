from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from handrail.core.secret import Secret
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.snapshot import encode_snapshot
from handrail.errors import SerializationError, StoreError
from handrail.stores.snapshot_postgres import PostgresSnapshotStore, dsn_without_password
from handrail.stores.types import SnapshotStore
from handrail.testing.store_suites.snapshots import SnapshotStoreSuite, make_paused_snapshot
from tests.stores.snapshot_worker import claim_dies_with_its_process, two_processes_decide

pytestmark = pytest.mark.postgres

APPROVE = ToolExecutionDecision("transfer", execute=True, tool_call_id="c1")


class TestPostgresSnapshotStore(SnapshotStoreSuite):
    @pytest.fixture(autouse=True)
    def _database(self, postgres_dsn: str) -> None:
        self.dsn = postgres_dsn

    def make_store(self) -> SnapshotStore:
        return PostgresSnapshotStore(self.dsn, lock_timeout=0.2)


@pytest.fixture
def store(postgres_dsn: str) -> Iterator[PostgresSnapshotStore]:
    made = PostgresSnapshotStore(postgres_dsn, lock_timeout=0.2)
    yield made
    made.close()


def _url(store: PostgresSnapshotStore, snapshot_id: str) -> str:
    """The store's URL as a locator names it (a DSN another process can open)."""
    return store.locator(snapshot_id).rpartition("#")[0]


def _sql(dsn: str, statement: str, *params: object) -> list[tuple[object, ...]]:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        cursor = conn.execute(statement, params)
        return cursor.fetchall() if cursor.description else []


def test_a_row_holds_the_snapshot_file_bytes(postgres_dsn: str, store: PostgresSnapshotStore) -> None:
    snapshot = make_paused_snapshot()
    store.save(snapshot)
    rows = _sql(postgres_dsn, "SELECT status, created_at, continued_in, data FROM handrail_snapshots")
    assert rows == [("paused", snapshot.timestamp, None, encode_snapshot(snapshot))]


@pytest.mark.parametrize("data", [b"{not json", b"[1, 2]", b'{"schema_version": 1}'])
def test_a_corrupt_row_names_the_store_and_the_id(postgres_dsn: str, store: PostgresSnapshotStore, data: bytes) -> None:
    good = store.save(make_paused_snapshot())
    bad = store.save(make_paused_snapshot())
    _sql(postgres_dsn, "UPDATE handrail_snapshots SET data = %s WHERE snapshot_id = %s", data, bad)
    with pytest.raises(StoreError, match=rf"PostgresSnapshotStore\(.*snapshot {bad}"):
        store.load(bad)
    with pytest.raises(StoreError, match=bad):
        store.record_decision(bad, APPROVE)
    with pytest.warns(UserWarning, match=rf"{bad} in PostgresSnapshotStore"):
        assert {p.snapshot_id for p in store.list_pending()} == {good}


def test_an_unreachable_server_is_a_store_error_without_the_password() -> None:
    store = PostgresSnapshotStore("postgresql://ann:s3cret@127.0.0.1:1/nowhere", timeout=1)
    with pytest.raises(StoreError, match=r"PostgresSnapshotStore.*127\.0\.0\.1:1") as caught:
        store.list_pending()
    assert "s3cret" not in str(caught.value)
    with pytest.raises(StoreError):
        store.save(make_paused_snapshot())
    store.close()


def test_the_locator_and_to_dict_never_hold_a_password(postgres_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with_password = PostgresSnapshotStore("postgresql://ann:s3cret@db.example:5432/app?sslmode=require")
    assert with_password.locator("x") == "postgresql://ann@db.example:5432/app?sslmode=require#x"
    with pytest.raises(SerializationError, match="password"):
        with_password.to_dict()
    monkeypatch.setenv("HANDRAIL_TEST_SNAPSHOT_DSN", postgres_dsn)
    secret = PostgresSnapshotStore(Secret.from_env_var("HANDRAIL_TEST_SNAPSHOT_DSN"))
    data = secret.to_dict()
    assert data["init_parameters"]["dsn"] == {"type": "env_var", "env_vars": ["HANDRAIL_TEST_SNAPSHOT_DSN"],
                                              "strict": True}  # fmt: skip
    again = PostgresSnapshotStore.from_dict(data)
    snapshot = make_paused_snapshot()
    assert secret.load(again.save(snapshot)) == snapshot
    for made in (with_password, secret, again):
        made.close()


def test_dsn_without_password() -> None:
    assert dsn_without_password("postgres://u:p@h/db") == "postgresql://u@h/db"
    assert dsn_without_password("postgresql://h:5432/db?password=x") == "postgresql://h:5432/db"
    assert (
        dsn_without_password("postgresql://u@h/db?sslmode=require&password=x") == "postgresql://u@h/db?sslmode=require"
    )
    assert dsn_without_password("host=h port=5 password='a b' user=u") == "postgresql://?host=h&port=5&user=u"


def test_two_processes_deciding_at_once_one_wins(store: PostgresSnapshotStore, tmp_path: Path) -> None:
    snapshot_id = store.save(make_paused_snapshot())
    conflict, recorded = two_processes_decide(_url(store, snapshot_id), snapshot_id, tmp_path / "gate")
    assert (conflict["outcome"], recorded["outcome"]) == ("conflict", "recorded"), (conflict, recorded)
    decisions = store.load(snapshot_id).tool_execution_decisions
    assert [d.decided_by for d in decisions] == [recorded["verdict"]]


def test_a_claim_is_released_when_its_process_is_killed(store: PostgresSnapshotStore) -> None:
    snapshot_id = store.save(make_paused_snapshot())
    claim_dies_with_its_process(_url(store, snapshot_id), snapshot_id, store)
    assert store.record_decision(snapshot_id, APPROVE).ledger["c1"].status == "approved"
