from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from handrail.stores.service import ServiceStore
from handrail.stores.snapshot_postgres import PostgresSnapshotStore
from handrail.testing.store_suites.approvals import T0, make_approval
from handrail.testing.store_suites.service import ServiceStoreSuite, make_run
from tests.stores import service_worker as worker

pytestmark = pytest.mark.postgres


class TestPostgresService(ServiceStoreSuite):
    @pytest.fixture(autouse=True)
    def _database(self, postgres_dsn: str) -> None:
        self.dsn = postgres_dsn

    def make_store(self) -> ServiceStore:
        return PostgresSnapshotStore(self.dsn)


@pytest.fixture
def store(postgres_dsn: str) -> Iterator[PostgresSnapshotStore]:
    made = PostgresSnapshotStore(postgres_dsn)
    yield made
    made.close()


def _where(store: PostgresSnapshotStore) -> str:
    return store.locator("x").rpartition("#")[0]


def test_a_version_3_database_opens_keeps_its_approvals_and_gains_the_service_tables(postgres_dsn: str) -> None:
    import psycopg

    from handrail.dataclasses._approval_checks import canonical_json
    from handrail.stores import snapshot_postgres
    from handrail.stores._postgres import PostgresDatabase
    from handrail.stores._schema_version import tables_created_by

    with psycopg.connect(postgres_dsn, autocommit=True) as conn:  # back to nothing: the old code builds version 3
        conn.execute("DELETE FROM handrail_schema WHERE store = 'PostgresSnapshotStore'")
        for table in tables_created_by(snapshot_postgres._MIGRATIONS):
            conn.execute(f"DROP TABLE IF EXISTS {table}")
    old = PostgresDatabase(postgres_dsn, store="PostgresSnapshotStore", migrations=snapshot_postgres._MIGRATIONS[:3])
    approval = make_approval()
    try:
        with old.transaction() as handle:  # what version 3 wrote for a created approval: the row and its audit entry
            primitives = PostgresSnapshotStore(postgres_dsn)  # (its primitives on the old database's transaction)
            primitives._approval_write(handle, approval, canonical_json(approval.to_dict()), expected_version=None)
            primitives._append_entry(handle, approval.id, kind="created", at=T0, args_digest=approval.args_digest)
    finally:
        old.close()
    store = PostgresSnapshotStore(postgres_dsn)
    try:
        assert store.get_approval(approval.id) == approval and store.events_after(0).events == ()
        store.add_token("ann", "admin", at=T0)
        store.create_run(make_run())
        store.decide_approval(approval.id, "approve", expected_version=1, principal="ann", at=T0)
        assert [e.kind for e in store.events_after(0).events] == ["approval.decided"]
        assert [e.kind for e in store.audit_trail(approval.id)] == ["created", "decided"]
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            row = conn.execute("SELECT version FROM handrail_schema WHERE store = 'PostgresSnapshotStore'").fetchone()
        assert row == (4,)
    finally:
        store.close()


def test_a_token_added_here_authenticates_in_another_process(store: PostgresSnapshotStore) -> None:
    worker.check_a_token_added_here_authenticates_in_another_process(store, _where(store))


def test_two_processes_appending_at_once_get_distinct_increasing_ids(
    store: PostgresSnapshotStore, tmp_path: Path
) -> None:
    worker.check_two_processes_appending_at_once_get_distinct_increasing_ids(store, _where(store), tmp_path / "gate")


def test_a_waiter_in_another_process_wakes_when_one_is_appended(store: PostgresSnapshotStore, tmp_path: Path) -> None:
    worker.check_a_waiter_in_another_process_wakes_when_one_is_appended(store, _where(store), tmp_path / "gate")


def test_a_claim_held_by_a_killed_process_becomes_free(store: PostgresSnapshotStore, tmp_path: Path) -> None:
    worker.check_a_claim_held_by_a_killed_process_becomes_free(store, _where(store), tmp_path / "gate")
