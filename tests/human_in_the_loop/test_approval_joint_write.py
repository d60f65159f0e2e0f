"""A decision's two writes: the approval's compare-and-set and its snapshot's decision.

On SQL stores both go in one transaction when the snapshot's claim is free (they change together or not at all);
when a resume holds the claim, the approval is decided alone and the same request again writes the snapshot.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from handrail.errors import SnapshotUnavailableError, StoreError
from handrail.human_in_the_loop.service import ApprovalService
from handrail.stores import FileSnapshotStore, SQLiteSnapshotStore, open_snapshot_store
from tests.human_in_the_loop.test_approval_service import _pause
from tests.stores.conftest import postgres_database, postgres_dsn, postgres_server_dsn  # noqa: F401 - fixtures

_QUICK = 0.2
"""The stores' lock_timeout here: how long a decision waits for a claim held elsewhere."""


def _open(kind: str, where: Any, *, lock_timeout: float = _QUICK) -> Any:
    if kind == "directory":
        return FileSnapshotStore(where, lock_timeout=lock_timeout)
    if kind == "sqlite":
        return SQLiteSnapshotStore(where, lock_timeout=lock_timeout)
    return open_snapshot_store(where, lock_timeout=lock_timeout)


@pytest.fixture(params=["directory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Any]:
    """A store kind and where it lives (two handles on it are two processes' stores)."""
    where: dict[str, Any] = {"directory": tmp_path / "snaps", "sqlite": tmp_path / "a.db"}
    if request.param == "postgres":
        where["postgres"] = request.getfixturevalue("postgres_dsn")
    return request.param, where[request.param]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def sql_kind_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    where = tmp_path / "a.db" if request.param == "sqlite" else request.getfixturevalue("postgres_dsn")
    yield from _closing(_open(request.param, where))


def _closing(store: Any) -> Iterator[Any]:
    yield store
    close = getattr(store, "close", None)
    if callable(close):
        close()


def test_a_decision_while_a_resume_holds_the_snapshot_decides_the_approval_and_a_repeat_completes_it(
    place: tuple[str, Any],
) -> None:
    kind, where = place
    store, resumer = _open(kind, where), _open(kind, where)
    try:
        snapshot_id = _pause(store, [("c1", "transfer", {"amount": 5})])
        service = ApprovalService(store)
        (approval,) = service.list().items
        lease = resumer.claim(snapshot_id)
        with pytest.raises(SnapshotUnavailableError):
            service.decide(approval.id, "approve", principal="ann")
        assert store.get_approval(approval.id).status == "approved"  # the approval is decided: it was the arbiter
        assert store.load(snapshot_id).ledger["c1"].decision is None  # the snapshot is not, while held
        lease.release()
        again = service.decide(approval.id, "approve", principal="ann")
        assert again.replayed and again.approval.status == "approved"
        decision = store.load(snapshot_id).ledger["c1"].decision
        assert decision is not None and decision.execute and decision.decided_by == "ann"
    finally:
        for handle in (store, resumer):
            close = getattr(handle, "close", None)
            if callable(close):
                close()


def test_on_a_sql_store_a_failed_snapshot_write_leaves_the_approval_pending(
    sql_kind_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    snapshot_id = _pause(sql_kind_store, [("c1", "transfer", {"amount": 5})])
    service = ApprovalService(sql_kind_store)
    (approval,) = service.list().items

    def broken(*args: Any, **kwargs: Any) -> None:
        raise StoreError("the disk is full")

    monkeypatch.setattr(sql_kind_store, "_decide_in_scope", broken)
    with pytest.raises(StoreError, match="disk is full"):
        service.decide(approval.id, "reject", principal="ann", feedback="no")
    kept = sql_kind_store.get_approval(approval.id)
    assert kept.status == "pending" and kept.version == approval.version
    assert [e.kind for e in service.audit_trail(approval.id)] == ["created"]
    assert [e.kind for e in sql_kind_store.events_after(0).events] == ["approval.created"]
    monkeypatch.undo()
    done = service.decide(approval.id, "reject", principal="ann", feedback="no")
    assert done.approval.status == "rejected" and not done.replayed
    decision = sql_kind_store.load(snapshot_id).ledger["c1"].decision
    assert decision is not None and not decision.execute and decision.feedback == "no"
