"""Damaged approval records (a hand edit, a bad disk) and odd times, on real stores.

One damaged record is refused by name, and never blocks the others: listing, counting and the expiry sweep skip
it (the service's ``unreadable()`` names it), and a pause that meets it still pauses. A SQL row whose columns
disagree with its ``data`` is damage too. An expiry is recorded at the approval's ``expires_at``, not at the
sweep's clock.
"""

from __future__ import annotations

import re
import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from handrail import resume
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.errors import ConfigurationError, CorruptRecordError
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.human_in_the_loop.service import ApprovalService
from handrail.stores import FileSnapshotStore
from handrail.stores.approvals import ApprovalFilter
from tests.cases._helpers import asst
from tests.human_in_the_loop import test_approval_service as _service_tests
from tests.human_in_the_loop.test_approval_service import _agent, _pause
from tests.stores.conftest import postgres_database, postgres_dsn, postgres_server_dsn  # noqa: F401 - fixtures

store = _service_tests.store
"""The same store fixture (directory, SQLite, PostgreSQL) as the service tests."""


def _sql(store: Any, statement: str, *params: Any) -> None:
    with store._approval_scope(params[-1]) as handle:
        store._approval_exec(handle, statement, *params)


def damage(store: Any, approval_id: str) -> None:
    """Make the record unreadable: a file overwritten by ``{not json``, a row's data ``garbage{``."""
    if isinstance(store, FileSnapshotStore):
        store.approval_path(approval_id).write_text("{not json")
    else:
        _sql(store, "UPDATE handrail_approvals SET data = ? WHERE approval_id = ?", b"garbage{", approval_id)


def _two_approvals_one_damaged(store: Any, **settings: Any) -> tuple[str, Any, Any]:
    snapshot_id = _pause(store, [("c1", "transfer", {"amount": 5}), ("c2", "transfer", {"amount": 7})], **settings)
    by_call = {a.tool_call_id: a for a in ApprovalService(store).list().items}
    damage(store, by_call["c2"].id)
    return snapshot_id, by_call["c1"], by_call["c2"]


def test_one_damaged_record_is_refused_and_the_others_are_listed_counted_and_named(store: Any) -> None:
    _, good, bad = _two_approvals_one_damaged(store)
    service = ApprovalService(store)
    with pytest.raises(CorruptRecordError, match=bad.id):
        service.get(bad.id)
    assert [a.id for a in service.list().items] == [good.id]
    assert [a.id for a in service.list(ApprovalFilter(status="pending")).items] == [good.id]
    # a directory store skips it; SQL stores count by the status column (documented), and never fail on it
    assert service.counts()["pending"] == (1 if isinstance(store, FileSnapshotStore) else 2)
    ((named, error),) = service.unreadable()
    assert named == bad.id and bad.id in error


def test_paging_past_a_damaged_record_still_finds_the_rest(store: Any) -> None:
    _pause(store, [(f"c{i}", "transfer", {"amount": i}) for i in range(5)])
    service = ApprovalService(store)
    items = service.list().items
    damage(store, items[1].id)
    seen, cursor = [], None
    while True:
        page = service.list(cursor=cursor, limit=1)
        seen += [a.id for a in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == [a.id for a in items if a.id != items[1].id]


def test_the_sweep_expires_the_others_and_skips_the_damaged_one(store: Any) -> None:
    _, good, bad = _two_approvals_one_damaged(store, expires_after=timedelta(minutes=5))
    service = ApprovalService(store)
    expired = service.expire_due(datetime.now(UTC) + timedelta(hours=1))
    assert [a.id for a in expired] == [good.id]
    assert service.get(good.id).approval.status == "expired"
    assert [u[0] for u in service.unreadable()] == [bad.id]


def test_a_resume_that_pauses_again_on_a_damaged_call_still_pauses(store: Any) -> None:
    snapshot_id, good, bad = _two_approvals_one_damaged(store)
    service = ApprovalService(store)
    service.decide(good.id, "approve", principal="ann")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(HITLBreakpointException) as info:
            resume(snapshot_id, store=store, agent=_agent([asst("unused")], store))
    paused = info.value.snapshot
    assert paused.snapshot_id != snapshot_id and store.load(paused.snapshot_id).status == "paused"
    assert any(bad.id in str(w.message) for w in caught), [str(w.message) for w in caught]


def test_a_row_whose_status_column_disagrees_with_its_data_is_damaged(store: Any) -> None:
    if isinstance(store, FileSnapshotStore):
        pytest.skip("a directory store has no columns")
    snapshot_id = _pause(store, [("c1", "transfer", {"amount": 5}), ("c2", "transfer", {"amount": 7})])
    service = ApprovalService(store)
    by_call = {a.tool_call_id: a for a in service.list().items}
    bad, good = by_call["c1"], by_call["c2"]
    _sql(store, "UPDATE handrail_approvals SET status = 'approved' WHERE approval_id = ?", bad.id)
    with pytest.raises(CorruptRecordError, match=f"{bad.id}.*status"):
        service.get(bad.id)
    with pytest.raises(CorruptRecordError, match=bad.id):
        service.decide(bad.id, "approve", principal="ann")
    assert [a.id for a in service.list().items] == [good.id]
    assert [u[0] for u in service.unreadable()] == [bad.id]
    _sql(store, "UPDATE handrail_approvals SET status = 'pending', version = 5 WHERE approval_id = ?", bad.id)
    with pytest.raises(CorruptRecordError, match=f"{bad.id}.*version"):
        service.get(bad.id)
    assert store.load(snapshot_id).status == "paused"


def test_an_expiry_is_recorded_at_expires_at_not_at_the_sweeps_clock(store: Any) -> None:
    _pause(store, [("c1", "transfer", {"amount": 5})], expires_after=timedelta(minutes=5))
    service = ApprovalService(store)
    (approval,) = service.list().items
    sweep = datetime(2099, 1, 1, tzinfo=UTC)
    (expired,) = service.expire_due(sweep)
    assert expired.decided_at == approval.expires_at
    assert service.get(approval.id).approval.decided_at == approval.expires_at
    entry = service.audit_trail(approval.id)[-1]
    assert entry.kind == "expired" and entry.at == approval.expires_at
    assert entry.details["swept_at"].startswith("2099-01-01")


def test_a_late_decision_records_the_expiry_at_expires_at(store: Any) -> None:
    _pause(store, [("c1", "transfer", {"amount": 5})], expires_after=timedelta(minutes=5))
    (approval,) = ApprovalService(store).list().items
    late = ApprovalService(store, clock=lambda: datetime(2099, 1, 1, tzinfo=UTC))
    with pytest.raises(Exception, match=re.escape(f"expired at {approval.expires_at.isoformat()}")):
        late.decide(approval.id, "approve", principal="ann")
    assert late.get(approval.id).approval.decided_at == approval.expires_at


@pytest.mark.parametrize("huge", [timedelta(days=367), timedelta(days=3_000_000), timedelta.max])
def test_an_expiry_too_far_away_is_refused_when_the_strategy_is_built(huge: timedelta, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="at most 366 days"):
        BreakpointConfirmationStrategy(snapshot_file_path=tmp_path, expires_after=huge)


def test_a_year_of_expiry_is_accepted(store: Any) -> None:
    _pause(store, [("c1", "transfer", {"amount": 5})], expires_after=timedelta(days=366))
    (approval,) = ApprovalService(store).list().items
    assert approval.expires_at is not None


@pytest.mark.parametrize("seconds", [1e300, float("inf"), float("nan"), 10**30])
def test_a_serialised_strategy_with_an_absurd_expiry_is_refused_by_name(seconds: float, tmp_path: Path) -> None:
    strategy = BreakpointConfirmationStrategy(snapshot_file_path=tmp_path, expires_after=timedelta(hours=1))
    data = strategy.to_dict()
    data["init_parameters"]["expires_after_seconds"] = seconds
    with pytest.raises(ConfigurationError, match="expires_after"):
        BreakpointConfirmationStrategy.from_dict(data)
