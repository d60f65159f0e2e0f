"""The conformance suite every :class:`~handrail.stores.approvals.ApprovalStore` backend must pass."""

from __future__ import annotations

import base64
import datetime as dt
import json
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from handrail.dataclasses.approval import Approval, approval_id
from handrail.errors import (
    ApprovalClosedError,
    ApprovalConflictError,
    ApprovalNotFoundError,
    ConfigurationError,
)
from handrail.stores.approvals import ApprovalFilter, ApprovalStore

__all__ = ["T0", "ApprovalStoreSuite", "make_approval"]

T0 = dt.datetime(2025, 1, 2, 3, 4, 5, 123456, tzinfo=dt.UTC)
"""The ``created_at`` of :func:`make_approval`'s approvals (to the microsecond: stores keep it exactly)."""

_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]}


def make_approval(call: str = "c1", *, run: str = "run-1", minutes: int = 0, **changes: Any) -> Approval:
    """A pending approval of ``transfer`` for call ``call`` of run ``run``, created ``minutes`` after :data:`T0`."""
    fields: dict[str, Any] = {
        "run_id": run,
        "tool_call_id": call,
        "snapshot_id": f"snap-{run}",
        "agent_name": "payer",
        "step": 1,
        "tool_name": "transfer",
        "tool_description": "Move money.",
        "arguments": {"amount": 5, "memo": "Zürich 東京 🌦"},
        "arguments_schema": _SCHEMA,
        "description": "Pay **5**?",
        "created_at": T0 + dt.timedelta(minutes=minutes),
    }
    fields.update(changes)
    return Approval.new(**fields)


class ApprovalStoreSuite:
    """Tests every approval store must pass. Subclass it as ``Test...`` and implement :meth:`make_store`.

    Every :meth:`make_store` call within one test must return a new handle on the same backing data, which starts
    empty for each test (concurrency is tested between handles as between processes). Stores with a ``close()``
    method are closed after the test.
    """

    def make_store(self) -> ApprovalStore:
        """Return a new handle on the backend under test."""
        raise NotImplementedError("Subclasses of ApprovalStoreSuite implement make_store().")

    @pytest.fixture(autouse=True)
    def _close_approval_stores(self) -> Iterator[None]:
        self._approval_stores: list[object] = []
        yield
        for store in self._approval_stores:
            close: Callable[[], None] | None = getattr(store, "close", None)
            if close is not None:
                close()

    def new_approval_store(self) -> ApprovalStore:
        """A new handle from :meth:`make_store`, closed after the test."""
        store = self.make_store()
        self._approval_stores.append(store)
        return store

    @pytest.fixture
    def approvals(self) -> ApprovalStore:
        """The store handle most tests use."""
        return self.new_approval_store()

    # -- create and get -----------------------------------------------------------------------------

    def test_a_created_approval_reads_back_equal_from_another_handle(self, approvals: ApprovalStore) -> None:
        """A created approval reads back equal from another handle."""
        approval = make_approval(labels=("finance", "eu"), expires_at=T0 + dt.timedelta(hours=1))
        assert approvals.create_approval(approval) == approval
        again = self.new_approval_store().get_approval(approval.id)
        assert again == approval and again.created_at == T0 and again.id == approval_id("run-1", "c1")

    def test_creating_twice_returns_the_stored_one_and_audits_once(self, approvals: ApprovalStore) -> None:
        """Creating twice returns the stored one and audits once."""
        approval = make_approval()
        approvals.create_approval(approval)
        decided = approvals.decide_approval(approval.id, "approve", expected_version=1, principal="ann", at=T0)
        assert approvals.create_approval(approval) == decided
        assert [e.kind for e in approvals.audit_trail(approval.id)] == ["created", "decided"]

    def test_creating_the_same_id_for_other_arguments_is_refused(self, approvals: ApprovalStore) -> None:
        """Creating the same id for other arguments is refused."""
        approvals.create_approval(make_approval())
        with pytest.raises(ApprovalConflictError, match="differs"):
            approvals.create_approval(make_approval(arguments={"amount": 500}))
        assert approvals.get_approval(make_approval().id).arguments["amount"] == 5

    def test_concurrent_creates_store_one_record(self) -> None:
        """Concurrent creates store one record."""
        approval = make_approval()
        stores = [self.new_approval_store() for _ in range(4)]
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(lambda s: s.create_approval(approval), stores))
        assert all(r == approval for r in results)
        assert len(stores[0].audit_trail(approval.id)) == 1

    def test_a_batch_creates_each_new_approval_once_and_returns_a_taken_id_as_stored(
        self, approvals: ApprovalStore
    ) -> None:
        """A pause's batch creates each new approval with its created entry; a taken id comes back as stored."""
        first = make_approval()
        approvals.create_approval(first)
        decided = approvals.decide_approval(first.id, "approve", expected_version=1, principal="ann", at=T0)
        held_again = make_approval(arguments={"amount": 500})  # the same call, held again with other arguments
        others = [make_approval(f"c{i}") for i in (2, 3)]
        stored = approvals.create_approvals([others[0], held_again, others[1]], details={"snapshot_id": "s2"})
        assert stored == [others[0], decided, others[1]]
        for approval in others:
            assert approvals.get_approval(approval.id) == approval
            assert [e.kind for e in approvals.audit_trail(approval.id)] == ["created"]
        assert [e.kind for e in approvals.audit_trail(first.id)] == ["created", "decided"]
        assert approvals.create_approvals([]) == []

    def test_an_unknown_or_malformed_id_is_not_found(self, approvals: ApprovalStore) -> None:
        """An unknown or malformed id is not found."""
        with pytest.raises(ApprovalNotFoundError):
            approvals.get_approval(approval_id("run-x", "c9"))
        with pytest.raises(ApprovalNotFoundError):
            approvals.get_approval("../../etc/passwd")
        with pytest.raises(ApprovalNotFoundError):
            approvals.audit_trail(approval_id("run-x", "c9"))

    # -- decide -------------------------------------------------------------------------------------

    def test_approving_is_terminal_and_audited_with_the_digest(self, approvals: ApprovalStore) -> None:
        """Approving is terminal and audited with the digest."""
        approval = approvals.create_approval(make_approval())
        at = T0 + dt.timedelta(minutes=3)
        done = approvals.decide_approval(
            approval.id, "approve", expected_version=1, principal="ann", at=at, idempotency_key="k1",
            details={"client": "127.0.0.1"},
        )  # fmt: skip
        assert (done.status, done.version, done.decided_by, done.decided_at) == ("approved", 2, "ann", at)
        assert done.idempotency_key == "k1" and self.new_approval_store().get_approval(approval.id) == done
        created, decided = approvals.audit_trail(approval.id)
        assert created.args_digest == decided.args_digest == approval.args_digest
        assert (decided.principal, decided.decision, decided.details) == ("ann", "approve", {"client": "127.0.0.1"})
        assert decided.prev_hash == created.hash and decided.at == at

    def test_an_edit_replaces_the_arguments_and_the_digest(self, approvals: ApprovalStore) -> None:
        """An edit replaces the arguments and the digest."""
        approval = approvals.create_approval(make_approval())
        edited = approvals.decide_approval(
            approval.id, "edit", expected_version=1, principal="ann", at=T0, arguments={"amount": 7}
        )
        assert edited.status == "edited" and edited.arguments == {"amount": 7}
        assert edited.args_digest != approval.args_digest
        decided = approvals.audit_trail(approval.id)[-1]
        assert decided.args_digest == edited.args_digest
        assert [c.to_dict() for c in decided.changes] == [
            {"op": "replace", "path": "/amount", "old": 5, "new": 7},
            {"op": "remove", "path": "/memo", "old": "Zürich 東京 🌦"},
        ]

    def test_a_rejection_keeps_its_feedback(self, approvals: ApprovalStore) -> None:
        """A rejection keeps its feedback."""
        approval = approvals.create_approval(make_approval())
        done = approvals.decide_approval(
            approval.id, "reject", expected_version=1, principal="ann", at=T0, feedback="not today"
        )
        assert (done.status, done.feedback) == ("rejected", "not today")
        assert approvals.audit_trail(approval.id)[-1].feedback == "not today"

    def test_a_decision_outside_allowed_decisions_changes_nothing(self, approvals: ApprovalStore) -> None:
        """A decision outside allowed decisions changes nothing."""
        approval = approvals.create_approval(make_approval(allowed_decisions=("approve", "reject")))
        with pytest.raises(ConfigurationError, match="allows approve, reject"):
            approvals.decide_approval(approval.id, "edit", expected_version=1, principal="a", at=T0, arguments={})
        with pytest.raises(ConfigurationError, match="only with one"):
            approvals.decide_approval(approval.id, "approve", expected_version=1, principal="a", at=T0, arguments={})
        assert approvals.get_approval(approval.id) == approval and len(approvals.audit_trail(approval.id)) == 1

    def test_a_stale_version_is_a_conflict_naming_the_current_version(self, approvals: ApprovalStore) -> None:
        """A stale version is a conflict naming the current version."""
        approval = approvals.create_approval(make_approval())
        with pytest.raises(ApprovalConflictError, match=r"version 1 \(still pending\)") as caught:
            approvals.decide_approval(approval.id, "approve", expected_version=2, principal="ann", at=T0)
        assert not isinstance(caught.value, ApprovalClosedError) and caught.value.current == approval

    def test_a_decided_approval_refuses_names_status_decider_and_time(self, approvals: ApprovalStore) -> None:
        """A decided approval refuses names status decider and time."""
        approval = approvals.create_approval(make_approval())
        done = approvals.decide_approval(approval.id, "reject", expected_version=1, principal="ann", at=T0)
        with pytest.raises(ApprovalClosedError, match="is rejected by ann at 2025-01-02T03:04:05") as caught:
            self.new_approval_store().decide_approval(
                approval.id, "approve", expected_version=1, principal="bob", at=T0
            )
        assert caught.value.current == done
        assert approvals.get_approval(approval.id) == done and len(approvals.audit_trail(approval.id)) == 2

    def test_a_cancelled_approval_takes_no_decision(self, approvals: ApprovalStore) -> None:
        """A cancelled approval takes no decision."""
        approval = approvals.create_approval(make_approval())
        gone = approvals.cancel_approval(approval.id, expected_version=1, at=T0, reason="run stopped")
        assert (gone.status, gone.version, gone.feedback) == ("cancelled", 2, "run stopped")
        with pytest.raises(ApprovalClosedError, match="cancelled"):
            approvals.decide_approval(approval.id, "approve", expected_version=2, principal="ann", at=T0)

    def test_concurrent_deciders_exactly_one_wins(self) -> None:
        """Concurrent deciders exactly one wins."""
        approval = self.new_approval_store().create_approval(make_approval())
        stores = [self.new_approval_store() for _ in range(4)]
        gate = threading.Barrier(len(stores))

        def decide(index: int) -> str:
            gate.wait()
            try:
                stores[index].decide_approval(
                    approval.id, "approve" if index % 2 else "reject", expected_version=1, principal=f"p{index}", at=T0
                )
            except ApprovalClosedError:
                return "refused"
            return "won"

        with ThreadPoolExecutor(len(stores)) as pool:
            outcomes = list(pool.map(decide, range(len(stores))))
        assert sorted(outcomes) == ["refused"] * 3 + ["won"]
        trail = stores[0].audit_trail(approval.id)
        assert [e.kind for e in trail] == ["created", "decided"]
        assert stores[0].get_approval(approval.id).decided_by == trail[-1].principal

    # -- quorum -------------------------------------------------------------------------------------

    def test_a_quorum_stays_pending_until_enough_distinct_approvers_vote(self, approvals: ApprovalStore) -> None:
        """A vote short of the quorum keeps it pending at version + 1 (audit 'voted'); the N-th approver decides."""
        approval = approvals.create_approval(make_approval(quorum=2))
        first = approvals.decide_approval(approval.id, "approve", expected_version=1, principal="ann", at=T0)
        assert (first.status, first.version, first.approvers, first.decided_by) == ("pending", 2, ("ann",), None)
        other = self.new_approval_store()
        assert other.get_approval(approval.id) == first  # the status and version columns agree with the record
        assert [a.id for a in other.list_approvals(ApprovalFilter(status="pending")).items] == [approval.id]
        with pytest.raises(ConfigurationError, match="approved these arguments already"):
            other.decide_approval(approval.id, "approve", expected_version=2, principal="ann", at=T0)
        done = other.decide_approval(approval.id, "approve", expected_version=2, principal="bob", at=T0)
        assert (done.status, done.version, done.decided_by, done.approvers) == ("approved", 3, "bob", ("ann", "bob"))
        trail = approvals.audit_trail(approval.id)
        assert [(e.kind, e.principal) for e in trail] == [("created", None), ("voted", "ann"), ("decided", "bob")]
        assert trail[1].details == {"quorum": 2, "approvers": ["ann"]} and approvals.count_approvals()["approved"] == 1

    def test_one_reject_decides_a_quorum_and_an_edit_restarts_the_count(self, approvals: ApprovalStore) -> None:
        """A reject decides at once; an edit counts for its editor only, earlier approvals stop counting."""
        approval = approvals.create_approval(make_approval(quorum=2))
        approvals.decide_approval(approval.id, "approve", expected_version=1, principal="ann", at=T0)
        edited = approvals.decide_approval(
            approval.id, "edit", expected_version=2, principal="bob", at=T0, arguments={"amount": 9}
        )
        assert (edited.status, edited.approvers, edited.arguments) == ("pending", ("bob",), {"amount": 9})
        done = approvals.decide_approval(approval.id, "reject", expected_version=3, principal="cy", at=T0,
                                         feedback="no")  # fmt: skip
        assert (done.status, done.decided_by, done.feedback, len(done.votes)) == ("rejected", "cy", "no", 3)
        assert [e.kind for e in approvals.audit_trail(approval.id)] == ["created", "voted", "voted", "decided"]

    # -- expiry -------------------------------------------------------------------------------------

    def test_expiry_applies_on_expiry_at_the_injected_time(self, approvals: ApprovalStore) -> None:
        """Expiry applies on expiry at the injected time."""
        soon = approvals.create_approval(make_approval("c1", expires_at=T0 + dt.timedelta(minutes=10)))
        later = approvals.create_approval(
            make_approval("c2", expires_at=T0 + dt.timedelta(minutes=20), on_expiry="approve")
        )
        never = approvals.create_approval(make_approval("c3"))
        assert approvals.expire_approvals(T0 + dt.timedelta(minutes=9)) == []
        first = approvals.expire_approvals(T0 + dt.timedelta(minutes=10))
        assert [(a.id, a.status, a.decision, a.feedback) for a in first] == [
            (soon.id, "expired", "reject", "Approval request expired")
        ]
        second = approvals.expire_approvals(T0 + dt.timedelta(days=9))
        assert [(a.id, a.decision, a.decided_by) for a in second] == [(later.id, "approve", None)]
        assert approvals.get_approval(never.id).status == "pending"
        assert [e.kind for e in approvals.audit_trail(soon.id)] == ["created", "expired"]

    def test_deciding_after_the_expiry_time_expires_it_and_refuses(self, approvals: ApprovalStore) -> None:
        """Deciding after the expiry time expires it and refuses."""
        approval = approvals.create_approval(make_approval(expires_at=T0 + dt.timedelta(minutes=1)))
        late = T0 + dt.timedelta(minutes=2)
        with pytest.raises(ApprovalClosedError, match="expired") as caught:
            approvals.decide_approval(approval.id, "approve", expected_version=1, principal="ann", at=late)
        assert caught.value.current == approvals.get_approval(approval.id)
        assert approvals.get_approval(approval.id).status == "expired"
        assert approvals.expire_approvals(late) == []

    # -- list and count -----------------------------------------------------------------------------

    def _several(self, store: ApprovalStore) -> list[Approval]:
        made = [
            make_approval("c1", minutes=1, labels=("eu",)),
            make_approval("c2", minutes=2, tool_name="refund", expires_at=T0 + dt.timedelta(hours=1)),
            make_approval("c3", minutes=3, run="run-2", agent_name="clerk", labels=("eu", "vip")),
            make_approval("c4", minutes=3),  # same created_at as c3: the id breaks the tie
        ]
        for approval in made:
            store.create_approval(approval)
        store.decide_approval(made[0].id, "approve", expected_version=1, principal="ann", at=T0)
        return made

    def test_listing_is_newest_first_and_filters(self, approvals: ApprovalStore) -> None:
        """Listing is newest first and filters."""
        c1, c2, c3, c4 = self._several(approvals)

        def ids(**fields: Any) -> list[str]:
            return [a.id for a in approvals.list_approvals(ApprovalFilter(**fields)).items]

        newest = sorted([c3, c4], key=lambda a: a.id, reverse=True)
        assert ids() == [newest[0].id, newest[1].id, c2.id, c1.id]
        assert ids(status="pending") == [newest[0].id, newest[1].id, c2.id]
        assert ids(status="approved") == ids(decided_by="ann") == [c1.id]
        assert ids(tool_name="refund") == ids(expires_before=T0 + dt.timedelta(hours=2)) == [c2.id]
        assert ids(agent_name="clerk") == ids(run_id="run-2") == ids(label="vip") == [c3.id]
        assert ids(label="eu") == [c3.id, c1.id]
        assert ids(created_after=T0 + dt.timedelta(minutes=2)) == [newest[0].id, newest[1].id]
        assert ids(created_before=T0 + dt.timedelta(minutes=2)) == [c1.id]
        assert ids(status="pending", label="eu", run_id="run-2") == [c3.id]
        assert ids(tool_name="nothing") == []

    def test_counts_per_status(self, approvals: ApprovalStore) -> None:
        """Counts per status."""
        self._several(approvals)
        counts = approvals.count_approvals()
        assert counts == {"pending": 3, "approved": 1, "edited": 0, "rejected": 0, "expired": 0, "cancelled": 0}
        assert approvals.count_approvals(ApprovalFilter(label="eu", status="approved"))["pending"] == 1

    def test_paging_returns_every_item_once_while_items_are_added(self, approvals: ApprovalStore) -> None:
        """Paging returns every item once while items are added."""
        for index in range(7):
            approvals.create_approval(make_approval(f"c{index}", minutes=index % 3))
        seen: list[str] = []
        page = approvals.list_approvals(limit=3)
        added = 0
        while True:
            seen.extend(a.id for a in page.items)
            approvals.create_approval(make_approval(f"new{added}", minutes=100 + added))  # newer than any page
            added += 1
            if page.next_cursor is None:
                break
            page = approvals.list_approvals(limit=3, cursor=page.next_cursor)
        assert len(seen) == len(set(seen)) == 7

    def test_limits_and_cursors_are_checked(self, approvals: ApprovalStore) -> None:
        """Limits and cursors are checked."""
        for limit in (0, 101, "5"):
            with pytest.raises(ConfigurationError, match="limit"):
                approvals.list_approvals(limit=limit)  # type: ignore[arg-type]
        forged = base64.urlsafe_b64encode(json.dumps([10**30, "ap_x"]).encode()).decode()  # beyond the calendar
        for cursor in ("not-a-cursor", forged):
            with pytest.raises(ConfigurationError, match="cursor"):
                approvals.list_approvals(cursor=cursor)
        assert approvals.list_approvals(limit=100).items == ()

    def test_filter_times_at_the_ends_of_the_calendar(self, approvals: ApprovalStore) -> None:
        """A filter time UTC can hold works to the calendar's ends; one it cannot is refused, naming the field."""
        approval = approvals.create_approval(make_approval(expires_at=T0 + dt.timedelta(hours=1)))
        east, west = dt.timezone(dt.timedelta(hours=14)), dt.timezone(dt.timedelta(hours=-14))
        last, first = dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=east), dt.datetime(1, 1, 1, tzinfo=west)
        for fits in (ApprovalFilter(created_before=last), ApprovalFilter(expires_before=last),
                     ApprovalFilter(created_after=first)):  # fmt: skip
            assert [a.id for a in approvals.list_approvals(fits).items] == [approval.id]
        beyond: dict[str, dt.datetime] = {"created_before": last.replace(tzinfo=west),
                                          "expires_before": last.replace(tzinfo=west),
                                          "created_after": first.replace(tzinfo=east)}  # fmt: skip
        for name, moment in beyond.items():
            with pytest.raises(ConfigurationError, match=f"ApprovalFilter.{name} .*UTC"):
                ApprovalFilter(**{name: moment})  # type: ignore[arg-type]

    # -- audit --------------------------------------------------------------------------------------

    def test_execution_is_appended_to_the_chained_trail(self, approvals: ApprovalStore) -> None:
        """Execution is appended to the chained trail."""
        approval = approvals.create_approval(make_approval())
        approvals.decide_approval(approval.id, "approve", expected_version=1, principal="ann", at=T0)
        entry = self.new_approval_store().append_audit(
            approval.id,
            at=T0 + dt.timedelta(seconds=1),
            outcome="ok",
            duration_ms=12.5,
            args_digest=approval.args_digest,
        )
        trail = approvals.audit_trail(approval.id)
        assert [e.kind for e in trail] == ["created", "decided", "executed"] and trail[-1] == entry
        assert [e.seq for e in trail] == [1, 2, 3] and entry.prev_hash == trail[1].hash
        assert entry.duration_ms == 12.5 and entry.at.tzinfo is not None
