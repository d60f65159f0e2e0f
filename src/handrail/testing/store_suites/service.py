"""The conformance suite every :class:`~handrail.stores.service.ServiceStore` backend must pass.

The built-in snapshot stores keep approvals too, so the suite also checks that approval changes write their
events (it skips those tests for a store that is not an :class:`~handrail.stores.approvals.ApprovalStore`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from handrail.dataclasses.service import RunRecord
from handrail.errors import ConfigurationError, ConfigurationTypeError, RunConflictError, RunNotFoundError
from handrail.stores.approvals import ApprovalStore
from handrail.stores.service import ServiceStore
from handrail.testing.store_suites.approvals import T0, make_approval

__all__ = ["ServiceStoreSuite", "make_run"]


def make_run(run_id: str = "run-1", *, minutes: int = 0, **changes: Any) -> RunRecord:
    """A queued run of agent ``payer`` recorded ``minutes`` after ``T0`` (the approval suite's)."""
    at = T0 + dt.timedelta(minutes=minutes)
    fields: dict[str, Any] = {
        "agent_name": "payer",
        "status": "queued",
        "created_at": at,
        "updated_at": at,
        "initiator": "ann",
        "input": {"messages": [{"role": "user", "text": "Zürich 🌦"}]},
    }
    fields.update(changes)
    return RunRecord(run_id, **fields)


class ServiceStoreSuite:
    """Tests every service store must pass. Subclass it as ``Test...`` and implement :meth:`make_store`.

    Every :meth:`make_store` call within one test must return a new handle on the same backing data, which starts
    empty for each test (handles stand for processes). Stores with a ``close()`` method are closed after the test.
    """

    def make_store(self) -> ServiceStore:
        """Return a new handle on the backend under test."""
        raise NotImplementedError("Subclasses of ServiceStoreSuite implement make_store().")

    @pytest.fixture(autouse=True)
    def _close_service_stores(self) -> Iterator[None]:
        self._service_stores: list[object] = []
        yield
        for store in self._service_stores:
            close: Callable[[], None] | None = getattr(store, "close", None)
            if close is not None:
                close()

    def new_service_store(self) -> ServiceStore:
        """A new handle from :meth:`make_store`, closed after the test."""
        store = self.make_store()
        self._service_stores.append(store)
        return store

    @pytest.fixture
    def service(self) -> ServiceStore:
        """The store handle most tests use."""
        return self.new_service_store()

    def _approvals(self, store: ServiceStore) -> ApprovalStore:
        if not isinstance(store, ApprovalStore):
            pytest.skip("the store keeps no approvals")
        return store

    # -- tokens -------------------------------------------------------------------------------------

    def test_a_token_authenticates_from_another_handle_and_is_shown_once(self, service: ServiceStore) -> None:
        """A token's text is ``<id>.<secret>``; another handle authenticates it to the same record."""
        info, text = service.add_token("ann", "approver", tools=("read_*",), at=T0)
        token_id, _, secret = text.partition(".")
        assert token_id == info.token_id and len(token_id) == 19 and len(secret) >= 40
        assert (info.name, info.role, info.tools, info.created_at, info.revoked_at) == (
            "ann", "approver", ("read_*",), T0, None
        )  # fmt: skip
        found = self.new_service_store().authenticate(text)
        assert found == info and found is not None and found.principal().may_decide("read_file")
        assert text not in repr(service.list_tokens()) and service.list_tokens() == [info]

    def test_malformed_unknown_or_wrong_tokens_authenticate_nobody(self, service: ServiceStore) -> None:
        """Malformed, unknown and wrong-secret tokens give None, never an error."""
        info, text = service.add_token("ann", "viewer", at=T0)
        wrong = f"{info.token_id}.{'x' * len(text.partition('.')[2])}"
        for candidate in ("", "nonsense", info.token_id, f"{info.token_id}.", "tk_0123456789abcdef.secret", wrong,
                          text + "x", text.upper(), "tk_" + "0" * 300, None, 5):  # fmt: skip
            assert service.authenticate(candidate) is None, candidate  # type: ignore[arg-type]
        assert service.authenticate(text) == info

    def test_names_are_unique_among_tokens_not_revoked(self, service: ServiceStore) -> None:
        """A second valid token with a name is refused naming it; after a revocation the name is free."""
        first, _ = service.add_token("ann", "admin", at=T0)
        with pytest.raises(ConfigurationError, match="'ann'"):
            self.new_service_store().add_token("ann", "viewer", at=T0)
        service.revoke_token("ann", at=T0)
        second, text = service.add_token("ann", "viewer", at=T0 + dt.timedelta(seconds=1))
        assert service.authenticate(text) == second and second.token_id != first.token_id
        assert [t.token_id for t in service.list_tokens(include_revoked=True)] == [first.token_id, second.token_id]

    def test_concurrent_adds_of_one_name_store_one_token(self) -> None:
        """Of handles adding the same name at once, exactly one succeeds."""
        stores = [self.new_service_store() for _ in range(4)]
        gate = threading.Barrier(len(stores))

        def add(store: ServiceStore) -> str:
            gate.wait()
            try:
                store.add_token("ann", "viewer", at=T0)
            except ConfigurationError:
                return "refused"
            return "added"

        with ThreadPoolExecutor(len(stores)) as pool:
            outcomes = sorted(pool.map(add, stores))
        assert outcomes == ["added"] + ["refused"] * 3 and len(stores[0].list_tokens()) == 1

    def test_a_revoked_token_authenticates_nobody_in_any_handle(self, service: ServiceStore) -> None:
        """Revoking by name or id takes effect at once for every handle; revoking again is refused."""
        ann, ann_text = service.add_token("ann", "approver", at=T0)
        bob, bob_text = service.add_token("bob", "viewer", at=T0 + dt.timedelta(seconds=1))
        other = self.new_service_store()
        assert other.authenticate(ann_text) == ann
        revoked = service.revoke_token("ann", at=T0 + dt.timedelta(minutes=1))
        assert revoked.revoked_at == T0 + dt.timedelta(minutes=1) and other.authenticate(ann_text) is None
        assert other.revoke_token(bob.token_id, at=T0).name == "bob" and service.authenticate(bob_text) is None
        with pytest.raises(ConfigurationError, match="No valid token"):
            service.revoke_token("ann", at=T0)
        with pytest.raises(ConfigurationError, match="No valid token"):
            service.revoke_token("nobody", at=T0)
        assert service.list_tokens() == []
        assert [t.name for t in service.list_tokens(include_revoked=True)] == ["ann", "bob"]

    def test_a_session_key_is_shared_by_handles_secret_per_token_and_gone_once_revoked(
        self, service: ServiceStore
    ) -> None:
        """Every handle derives the same key for a token (never its text or hash); revoking it ends the key."""
        ann, text = service.add_token("ann", "approver", at=T0)
        bob, _ = service.add_token("bob", "viewer", at=T0)
        found = service.session_key(ann.token_id)
        assert found is not None and found[0] == ann and len(found[1]) >= 32
        assert self.new_service_store().session_key(ann.token_id) == found
        other = service.session_key(bob.token_id)
        assert other is not None and other[1] != found[1]
        assert text.encode() not in found[1] and text.partition(".")[2].encode() not in found[1]
        for unknown in ("tk_0123456789abcdef", "nonsense", "", text):
            assert service.session_key(unknown) is None, unknown
        service.revoke_token("ann", at=T0)
        assert self.new_service_store().session_key(ann.token_id) is None

    def test_a_bad_principal_is_refused_before_anything_is_written(self, service: ServiceStore) -> None:
        """Names, roles and patterns follow the Principal rules."""
        for name, role, tools in (("", "viewer", ("*",)), ("ann", "root", ("*",)), ("ann", "approver", ()),
                                  ("a\nb", "viewer", ("*",)), ("ann", "approver", ("",))):  # fmt: skip
            with pytest.raises((ConfigurationError, ConfigurationTypeError)):
                service.add_token(name, role, tools=tools, at=T0)  # type: ignore[arg-type]
        with pytest.raises(ConfigurationError, match="timezone"):
            service.add_token("ann", "viewer", at=dt.datetime(2025, 1, 1))  # a naive time
        assert service.list_tokens(include_revoked=True) == []

    # -- events -------------------------------------------------------------------------------------

    def test_appended_events_read_back_in_order_from_another_handle(self, service: ServiceStore) -> None:
        """Ids increase; events_after gives the events after an id, oldest first, with the newest id."""
        made = [service.append_event("run.started", {"run_id": f"r{i}", "n": i}, at=T0) for i in range(5)]
        ids = [e.id for e in made]
        assert ids == sorted(ids) and len(set(ids)) == 5
        page = self.new_service_store().events_after(0)
        assert page.events == tuple(made) and page.last_id == ids[-1] and not page.gap
        assert page.events[0].data == {"run_id": "r0", "n": 0} and page.events[0].at == T0
        assert self.new_service_store().events_after(ids[1], limit=2).events == tuple(made[2:4])
        assert service.events_after(ids[-1]) == dataclasses.replace(page, events=())

    def test_append_event_refuses_approval_kinds_and_bad_data(self, service: ServiceStore) -> None:
        """approval.* events come from approval changes only; unknown kinds and non-JSON data are refused."""
        with pytest.raises(ConfigurationError, match="approval changes"):
            service.append_event("approval.decided", {"approval_id": "x"}, at=T0)
        with pytest.raises(ConfigurationError, match="Unknown event kind"):
            service.append_event("run.exploded", {}, at=T0)  # type: ignore[arg-type]
        with pytest.raises((ConfigurationError, ConfigurationTypeError)):
            service.append_event("run.started", {"x": {1, 2}}, at=T0)
        with pytest.raises(ConfigurationError):
            service.events_after(-1)
        with pytest.raises(ConfigurationError):
            service.events_after(0, limit=0)
        assert service.events_after(0).events == ()

    def test_approval_changes_write_their_events(self, service: ServiceStore) -> None:
        """Creating, deciding, cancelling and expiring an approval each append its event with the record's data."""
        approvals = self._approvals(service)
        a = approvals.create_approval(make_approval("c1"))
        b = approvals.create_approval(make_approval("c2", expires_at=T0 + dt.timedelta(minutes=5)))
        c = approvals.create_approval(make_approval("c3"))
        approvals.create_approval(make_approval("c1"))  # the same again: stored already, no event
        approvals.decide_approval(a.id, "reject", expected_version=1, principal="ann", at=T0, feedback="no")
        with pytest.raises(ConfigurationError):
            approvals.decide_approval(c.id, "approve", expected_version=2, principal="ann", at=T0)  # stale: none
        approvals.cancel_approval(c.id, expected_version=1, at=T0, principal="bob")
        approvals.expire_approvals(T0 + dt.timedelta(minutes=5))
        events = self.new_service_store().events_after(0).events
        assert [(e.kind, e.data["approval_id"]) for e in events] == [
            ("approval.created", a.id), ("approval.created", b.id), ("approval.created", c.id),
            ("approval.decided", a.id), ("approval.cancelled", c.id), ("approval.expired", b.id),
        ]  # fmt: skip
        assert events[0].data == {"approval_id": a.id, "run_id": "run-1", "tool_name": "transfer",
                                  "agent_name": "payer", "status": "pending", "version": 1}  # fmt: skip
        decided = events[3].data
        assert (decided["status"], decided["version"], decided["decided_by"], decided["decision"]) == (
            "rejected", 2, "ann", "reject"
        )  # fmt: skip
        assert events[5].data["decision"] == "reject" and events[5].at == T0 + dt.timedelta(minutes=5)

    def test_a_batch_and_a_late_decision_write_their_events(self, service: ServiceStore) -> None:
        """create_approvals writes one created event per new approval; a decision that finds it due, its expiry."""
        approvals = self._approvals(service)
        first = approvals.create_approval(make_approval("c1", expires_at=T0 + dt.timedelta(minutes=1)))
        batch = [make_approval(f"c{i}") for i in range(1, 6)]
        approvals.create_approvals(batch)
        with pytest.raises(ConfigurationError, match="expired"):
            approvals.decide_approval(first.id, "approve", expected_version=1, principal="ann",
                                      at=T0 + dt.timedelta(minutes=2))  # fmt: skip
        kinds = [(e.kind, e.data["approval_id"]) for e in service.events_after(0).events]
        assert kinds == [("approval.created", a.id) for a in [first, *batch[1:]]] + [("approval.expired", first.id)]

    def test_concurrent_appends_get_distinct_increasing_ids(self) -> None:
        """Handles appending at once never share an id, and each sees its own ids increase."""
        stores = [self.new_service_store() for _ in range(4)]
        gate = threading.Barrier(len(stores))

        def append(index: int) -> list[int]:
            gate.wait()
            return [stores[index].append_event("run.paused", {"i": index}, at=T0).id for _ in range(25)]

        with ThreadPoolExecutor(len(stores)) as pool:
            results = list(pool.map(append, range(len(stores))))
        every = [i for ids in results for i in ids]
        assert len(set(every)) == 100 and all(ids == sorted(ids) for ids in results)
        assert [e.id for e in stores[0].events_after(0, limit=1000).events] == sorted(every)

    def test_the_log_is_bounded_and_says_when_a_reader_missed_events(self, service: ServiceStore) -> None:
        """Beyond events_kept the oldest go; a reader asking for them gets gap=True, the newest are all kept."""
        handles = [service, self.new_service_store()]
        for handle in handles:
            handle.events_kept, handle.prune_every = 10, 5  # type: ignore[attr-defined]
        ids = [handles[i % 2].append_event("run.resumed", {"i": i}, at=T0).id for i in range(60)]
        page = self.new_service_store().events_after(0, limit=1000)
        assert page.gap and page.last_id == ids[-1]
        kept = [e.id for e in page.events]
        assert kept[-10:] == ids[-10:] and len(kept) < 60 and kept == sorted(kept)
        assert not service.events_after(ids[-5]).gap and service.events_after(ids[-5]).events[0].id == ids[-4]

    def test_wait_for_events_wakes_every_waiter_when_another_handle_appends(self, service: ServiceStore) -> None:
        """Waiters on one handle all return True once another handle appends; with nothing new, False at timeout."""
        first = service.append_event("run.started", {}, at=T0)
        assert service.wait_for_events(0, timeout=0) is True
        assert service.wait_for_events(first.id, timeout=0.05) is False
        results: list[bool] = []
        started = threading.Barrier(9)

        def wait() -> None:
            started.wait()
            results.append(service.wait_for_events(first.id, timeout=30))

        threads = [threading.Thread(target=wait) for _ in range(8)]
        for thread in threads:
            thread.start()
        started.wait()
        self.new_service_store().append_event("run.finished", {"run_id": "r"}, at=T0)
        for thread in threads:
            thread.join(timeout=60)
        assert results == [True] * 8
        with pytest.raises(ConfigurationError, match="timeout"):
            service.wait_for_events(0, timeout=-1)

    # -- runs ---------------------------------------------------------------------------------------

    def test_a_created_run_reads_back_equal_from_another_handle(self, service: ServiceStore) -> None:
        """create_run then get_run returns an equal record; the same id again is refused."""
        run = service.create_run(make_run())
        assert run == make_run() and self.new_service_store().get_run("run-1") == run
        with pytest.raises(ConfigurationError, match="run-1"):
            self.new_service_store().create_run(make_run(status="running"))
        for unknown in ("run-2", "../etc/passwd", ""):
            with pytest.raises(RunNotFoundError):
                service.get_run(unknown)

    def test_a_bad_run_record_is_refused(self, service: ServiceStore) -> None:
        """Bad fields are refused naming them, before anything is written."""
        for bad in (make_run(status="lost"), make_run("bad/id"), make_run(input={"x": {1}}),
                    make_run(created_at=dt.datetime(2025, 1, 1)), make_run(version=0)):  # fmt: skip
            with pytest.raises((ConfigurationError, ConfigurationTypeError)):
                service.create_run(bad)
        assert service.list_runs() == []

    def test_update_run_is_a_compare_and_set_on_the_version(self, service: ServiceStore) -> None:
        """An update bumps the version; a stale one is a RunConflictError holding the record as it is."""
        service.create_run(make_run())
        later = T0 + dt.timedelta(minutes=1)
        running = service.update_run("run-1", expected_version=1, at=later, status="running", snapshot_id="s1")
        assert (running.status, running.version, running.snapshot_id, running.updated_at) == ("running", 2, "s1", later)
        assert self.new_service_store().get_run("run-1") == running
        with pytest.raises(RunConflictError, match="version 2") as caught:
            self.new_service_store().update_run("run-1", expected_version=1, at=later, status="paused")
        assert caught.value.current == running and caught.value.expected_version == 1
        with pytest.raises(ConfigurationError, match="'agent_name'"):
            service.update_run("run-1", expected_version=2, at=later, agent_name="other")
        with pytest.raises(ConfigurationError, match="status"):
            service.update_run("run-1", expected_version=2, at=later, status="lost")
        with pytest.raises(RunNotFoundError):
            service.update_run("run-9", expected_version=1, at=later, status="running")
        assert service.get_run("run-1") == running

    def test_a_finished_run_takes_no_more_changes(self, service: ServiceStore) -> None:
        """A finished or failed run is terminal."""
        service.create_run(make_run())
        done = service.update_run("run-1", expected_version=1, at=T0, status="finished",
                                  result={"exit_reason": "text"})  # fmt: skip
        assert done.result == {"exit_reason": "text"}
        with pytest.raises(RunConflictError, match="finished"):
            service.update_run("run-1", expected_version=2, at=T0, status="running")

    def test_concurrent_updates_exactly_one_wins(self) -> None:
        """Of handles updating one version at once, exactly one wins."""
        self.new_service_store().create_run(make_run())
        stores = [self.new_service_store() for _ in range(4)]
        gate = threading.Barrier(len(stores))

        def update(index: int) -> str:
            gate.wait()
            try:
                stores[index].update_run("run-1", expected_version=1, at=T0, status="running", error=f"p{index}")
            except RunConflictError:
                return "refused"
            return "won"

        with ThreadPoolExecutor(len(stores)) as pool:
            assert sorted(pool.map(update, range(len(stores)))) == ["refused"] * 3 + ["won"]
        assert stores[0].get_run("run-1").version == 2

    def test_runs_are_listed_newest_first_and_filtered(self, service: ServiceStore) -> None:
        """list_runs is newest first (created_at, then id), by status, at most limit."""
        for index, run_id in enumerate(["a", "b", "c", "d"]):
            service.create_run(make_run(run_id, minutes=index % 3))
        service.update_run("b", expected_version=1, at=T0, status="paused")
        assert [r.run_id for r in service.list_runs()] == ["c", "b", "d", "a"]
        assert [r.run_id for r in service.list_runs(status="queued")] == ["c", "d", "a"]
        assert [r.run_id for r in service.list_runs(status="paused")] == ["b"]
        assert [r.run_id for r in service.list_runs(limit=2)] == ["c", "b"]
        with pytest.raises(ConfigurationError):
            service.list_runs(limit=0)

    def test_runs_are_paged_by_the_key_of_the_last_one_listed(self, service: ServiceStore) -> None:
        """list_runs(before=(created_at, run_id)) lists what comes after that run, each run once, as runs are added."""
        for index, run_id in enumerate(["a", "b", "c", "d", "e"]):
            service.create_run(make_run(run_id, minutes=index % 2))  # b, d share a time with each other; a, c, e too
        seen: list[str] = []
        page = service.list_runs(limit=2)
        while page:
            seen += [r.run_id for r in page]
            service.create_run(make_run(f"new{len(seen)}", minutes=10))  # newer than every page: never listed here
            page = service.list_runs(limit=2, before=(page[-1].created_at, page[-1].run_id))
        assert seen == ["d", "b", "e", "c", "a"]
        last = service.list_runs(status="queued", limit=1, before=(T0 + dt.timedelta(minutes=1), "b"))
        assert [r.run_id for r in last] == ["e"]
        for bad in ((T0, 5), (T0.replace(tzinfo=None), "a"), (T0,), "a"):
            with pytest.raises((ConfigurationError, ConfigurationTypeError), match="before"):
                service.list_runs(before=bad)  # type: ignore[arg-type]

    def test_a_run_claim_excludes_other_claims_until_released(self, service: ServiceStore) -> None:
        """claim_run returns None while held (this handle or another), and a lease again once released."""
        service.create_run(make_run())
        lease = service.claim_run("run-1")
        assert lease is not None
        assert self.new_service_store().claim_run("run-1") is None and service.claim_run("run-1") is None
        other = self.new_service_store().claim_run("run-2")
        assert other is not None
        lease.release()
        lease.release()  # twice is harmless
        again = self.new_service_store().claim_run("run-1")
        assert again is not None
        again.release()
        other.release()
