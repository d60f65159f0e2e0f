"""The conformance suite every :class:`~handrail.stores.types.SnapshotStore` backend must pass."""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from handrail.dataclasses.breakpoints import AgentBreakpoint, ToolBreakpoint
from handrail.dataclasses.chat_message import ChatMessage, ToolCall
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.snapshot import AgentSnapshot, LedgerEntry, MessageCache
from handrail.errors import (
    ConfigurationError,
    ConfigurationTypeError,
    CorruptRecordError,
    DecisionConflictError,
    SnapshotError,
    SnapshotUnavailableError,
)
from handrail.stores._snapshot_locations import store_for_location
from handrail.stores.types import PendingApproval, SnapshotStore
from handrail.testing.store_suites._corrupt_snapshots import CorruptSnapshotCases

__all__ = ["T0", "SnapshotStoreSuite", "make_paused_snapshot"]

T0 = dt.datetime(2025, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
"""The timestamp of :func:`make_paused_snapshot`'s snapshots."""

_TRANSFER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"amount": {"type": "integer", "minimum": 1}},
    "required": ["amount"],
    "additionalProperties": False,
}


def make_paused_snapshot(**changes: Any) -> AgentSnapshot:
    """A run paused before a tool step: calls ``c1`` and ``c2`` (to ``transfer``) wait; ``c3`` (``lookup``) ran.

    Args:
        **changes: Fields to replace (``dataclasses.replace``), e.g. ``status="done"`` or ``timestamp=...``.

    Returns:
        The snapshot: typed state values (a date, a tuple), the transfer tool's JSON Schema (``amount``: an
        integer >= 1, nothing else) in its fingerprint, timestamp :data:`T0`.
    """
    calls = [
        ToolCall("transfer", {"amount": 5}, "c1"),
        ToolCall("transfer", {"amount": 7}, "c2"),
        ToolCall("lookup", {"q": "rent"}, "c3"),
    ]
    snapshot = AgentSnapshot(
        messages=[
            ChatMessage.from_system("You pay bills."),
            ChatMessage.from_user("Pay the rent twice. Zürich, 東京 🌦"),
            ChatMessage.from_assistant(tool_calls=calls),
        ],
        state={
            "step_count": 1,
            "token_usage": {},
            "tool_call_counts": {"lookup": 1},
            "exit_reason": None,
            "stop_run": False,
            "continue_run": False,
            "when": dt.date(2025, 1, 2),
            "pair": (1, 2),
        },
        component_visits={"chat_generator": 1, "tool_invoker": 0},
        break_point=AgentBreakpoint("payer", ToolBreakpoint("tool_invoker", 0, None, "transfer")),
        position="tool_invoker",
        ledger={
            "c1": LedgerEntry("c1", "transfer", "pending", {"amount": 5}),
            "c2": LedgerEntry("c2", "transfer", "pending", {"amount": 7}),
            "c3": LedgerEntry("c3", "lookup", "done", {"q": "rent"}, result={"text": "found", "error": False}),
        },
        fingerprint={
            "tools": {
                "transfer": {"description": "Move money.", "parameters": _TRANSFER_SCHEMA},
                "lookup": {"description": "Look a thing up.", "parameters": {"type": "object", "properties": {}}},
            },
            "system_prompt": "You pay bills.",
            "user_prompt": None,
            "exit_conditions": ["text"],
            "state_schema": {},
        },
        metadata={"agent_file": "/abs/agent.yaml"},
        timestamp=T0,
    )
    return dataclasses.replace(snapshot, **changes)


class _Crash(Exception):
    """The process 'dies' here (a test stands in for kill -9)."""


def _approve(call_id: str = "c1", **kwargs: Any) -> ToolExecutionDecision:
    return ToolExecutionDecision("transfer", execute=True, tool_call_id=call_id, **kwargs)


def _reject(call_id: str = "c1", feedback: str = "no") -> ToolExecutionDecision:
    return ToolExecutionDecision("transfer", execute=False, tool_call_id=call_id, feedback=feedback)


class SnapshotStoreSuite(CorruptSnapshotCases):
    """Tests every snapshot store must pass. Subclass it as ``Test...`` and implement :meth:`make_store`.

    The cases for unreadable records (:class:`CorruptSnapshotCases`) write raw bytes through the backend
    primitives of ``SnapshotStoreBase``; a store built otherwise overrides :meth:`write_raw_record`.

    Within one test, every :meth:`make_store` call must return a new handle (its own claims; it may share
    connections with the others, as PostgreSQL stores of one process do) on the same backing data, which
    starts empty for each test: claims are tested between two handles as between two processes. Give the
    stores a short ``lock_timeout`` (e.g. 0.2 s): some tests wait for a claim held elsewhere. Stores with a
    ``close()`` method are closed after the test. Set :attr:`locations_reopen` to False for a backend whose
    ``locator`` cannot be opened again (``:memory:``).
    """

    locations_reopen: bool = True
    """Whether ``store_for_location(store.locator(id))`` reaches the same data."""

    def make_store(self) -> SnapshotStore:
        """Return a new handle on the backend under test (see the class docstring)."""
        raise NotImplementedError("Subclasses of SnapshotStoreSuite implement make_store().")

    @pytest.fixture(autouse=True)
    def _close_snapshot_stores(self) -> Iterator[None]:
        self._snapshot_stores: list[object] = []
        yield
        for store in self._snapshot_stores:
            close: Callable[[], None] | None = getattr(store, "close", None)
            if close is not None:
                close()

    def new_store(self) -> SnapshotStore:
        """:meth:`make_store`, remembering the store so it is closed after the test."""
        store = self.make_store()
        self._snapshot_stores.append(store)
        return store

    @pytest.fixture
    def store(self) -> SnapshotStore:
        """A handle on the (empty) backend."""
        return self.new_store()

    # -- save and load ---------------------------------------------------------------------------------

    def test_is_a_snapshot_store(self, store: SnapshotStore) -> None:
        """The store satisfies the SnapshotStore protocol."""
        assert isinstance(store, SnapshotStore)

    def test_save_and_load_round_trip(self, store: SnapshotStore) -> None:
        """A saved snapshot loads back equal, typed state included, with ``location`` set to its locator."""
        snapshot = make_paused_snapshot()
        snapshot_id = store.save(snapshot)
        loaded = store.load(snapshot_id)
        assert loaded == snapshot and loaded.to_dict() == snapshot.to_dict()
        assert loaded.state["pair"] == (1, 2) and loaded.state["when"] == dt.date(2025, 1, 2)
        assert loaded.location == store.locator(snapshot_id)
        assert loaded is not store.load(snapshot_id)

    def test_save_gives_unique_ids(self, store: SnapshotStore) -> None:
        """Every save gets a new id."""
        ids = [store.save(make_paused_snapshot(metadata={"n": n})) for n in range(12)]
        assert len(set(ids)) == 12
        assert [store.load(i).metadata["n"] for i in ids] == list(range(12))

    def test_an_unknown_id_is_named_with_known_ones(self, store: SnapshotStore) -> None:
        """Loading an unknown id raises SnapshotError naming it and listing known ids."""
        known = store.save(make_paused_snapshot())
        with pytest.raises(SnapshotError, match=r"'nope'.*" + known):
            store.load("nope")

    @pytest.mark.parametrize("bad", ["", "../escape", "a/b", "x#y", ".hidden"])
    def test_an_invalid_id_is_refused(self, store: SnapshotStore, bad: str) -> None:
        """Ids that could escape a directory or a locator are refused."""
        with pytest.raises(ConfigurationError):
            store.load(bad)

    # -- listing ---------------------------------------------------------------------------------------

    def test_list_pending_lists_paused_calls_oldest_first(self, store: SnapshotStore) -> None:
        """Only paused snapshots' undecided calls are listed, oldest snapshot first, calls in order."""
        assert store.list_pending() == []
        newer = store.save(make_paused_snapshot(timestamp=T0 + dt.timedelta(minutes=5)))
        older = store.save(make_paused_snapshot())
        store.save(make_paused_snapshot(status="done", outcome={"exit_reason": "text"}))
        store.save(make_paused_snapshot(status="resumed", continued_in=newer))
        store.save(make_paused_snapshot(status="running"))
        store.save(make_paused_snapshot(tool_execution_decisions=[_approve("c1"), _reject("c2")]))
        pending = store.list_pending()
        assert [(p.snapshot_id, p.tool_call_id) for p in pending] == [
            (older, "c1"), (older, "c2"), (newer, "c1"), (newer, "c2")
        ]  # fmt: skip
        first = dataclasses.replace(pending[0], path=None)
        assert first == PendingApproval(older, "transfer", {"amount": 5}, "c1", T0)
        pending[0].arguments["amount"] = 99
        assert store.list_pending()[0].arguments == {"amount": 5}

    # -- decisions -------------------------------------------------------------------------------------

    def test_record_decision_is_stored(self, store: SnapshotStore) -> None:
        """A decision lands in the ledger and the decisions; the call stops being pending."""
        snapshot_id = store.save(make_paused_snapshot())
        edit = _approve("c2", final_tool_params={"amount": 6})
        updated = store.record_decision(snapshot_id, edit, decided_by="carol")
        assert updated.location == store.locator(snapshot_id)
        for snapshot in (updated, store.load(snapshot_id)):
            assert snapshot.tool_execution_decisions == [dataclasses.replace(edit, decided_by="carol")]
            entry = snapshot.ledger["c2"]
            assert (entry.status, entry.decided_by, entry.arguments) == ("approved", "carol", {"amount": 6})
            assert snapshot.state["pair"] == (1, 2)
        assert [p.tool_call_id for p in store.list_pending()] == ["c1"]
        store.record_decision(snapshot_id, _reject("c1", "too much"))
        assert store.list_pending() == []
        assert store.load(snapshot_id).ledger["c1"].status == "rejected"

    @pytest.mark.parametrize(
        ("decision", "error", "fragment"),
        [
            (_approve("c9"), ConfigurationError, r"'c9' is not a paused call.*\['c1', 'c2'\]"),
            (ToolExecutionDecision("lookup", True, "c1"), ConfigurationError, "is to 'transfer'"),
            (ToolExecutionDecision("lookup", True, "c3"), ConfigurationError, r"not pending \(status 'done'\)"),
            (ToolExecutionDecision("transfer", True), ConfigurationError, "must name its call"),
            (_approve("c1", final_tool_params={"amount": 0}), ConfigurationError, "schema validation.*minimum"),
            (_approve("c1", final_tool_params={"amount": 5, "to": "x"}), ConfigurationError, "Additional properties"),
        ],
    )
    def test_a_refused_decision_writes_nothing(
        self, store: SnapshotStore, decision: ToolExecutionDecision, error: type[Exception], fragment: str
    ) -> None:
        """Unknown, non-pending or other-tool calls and schema-failing edits are refused; nothing is written."""
        snapshot_id = store.save(make_paused_snapshot())
        before = store.load(snapshot_id).to_dict()
        with pytest.raises(error, match=fragment):
            store.record_decision(snapshot_id, decision)
        assert store.load(snapshot_id).to_dict() == before

    @pytest.mark.parametrize("decided_by", ["", "   ", "\t\n", "\u200b", "\u3164", "\u2800", "\ufeff", "\u202e"])
    def test_an_empty_or_blank_decider_is_refused_and_nothing_is_written(
        self, store: SnapshotStore, decided_by: str
    ) -> None:
        """decided_by names somebody (as the CLI's --by must): empty or blank is refused; None means the default."""
        snapshot_id = store.save(make_paused_snapshot())
        before = store.load(snapshot_id).to_dict()
        with pytest.raises(ConfigurationError, match=r"^decided_by is (empty|blank)"):
            store.record_decision(snapshot_id, _approve("c1"), decided_by=decided_by)
        with pytest.raises(ConfigurationError, match=r"^decided_by is (empty|blank)"):
            store.record_decision(snapshot_id, _reject("c1"), decided_by=decided_by)
        with pytest.raises(ConfigurationTypeError, match="decided_by must be a str or None"):
            store.record_decision(snapshot_id, _approve("c1"), decided_by=7)  # type: ignore[arg-type]
        assert store.load(snapshot_id).to_dict() == before
        with pytest.raises(ConfigurationError, match=r"^ToolExecutionDecision\.decided_by is (empty|blank)"):
            _approve("c1", decided_by=decided_by)
        recorded = store.record_decision(snapshot_id, _approve("c1"), decided_by=None)
        assert recorded.ledger["c1"].decided_by not in (None, "", decided_by)  # the OS user (or 'unknown')

    @pytest.mark.parametrize("decided_by", ["\x1b[2J", "\x00", "a\nb", "ann\u200e", "x" * 201])
    def test_a_decider_with_a_control_or_too_long_is_refused_and_nothing_is_written(
        self, store: SnapshotStore, decided_by: str
    ) -> None:
        """decided_by is shown in listings: a control or format character or a text's length is refused."""
        snapshot_id = store.save(make_paused_snapshot())
        before = store.load(snapshot_id).to_dict()
        with pytest.raises(ConfigurationError, match=r"^decided_by (holds the control|has 201 characters)"):
            store.record_decision(snapshot_id, _approve("c1"), decided_by=decided_by)
        assert store.load(snapshot_id).to_dict() == before

    def test_not_a_decision_is_a_type_error(self, store: SnapshotStore) -> None:
        """record_decision takes a ToolExecutionDecision."""
        snapshot_id = store.save(make_paused_snapshot())
        with pytest.raises(ConfigurationTypeError):
            store.record_decision(snapshot_id, {"execute": True})  # type: ignore[arg-type]

    def test_a_different_decision_conflicts_and_the_same_one_is_a_no_op(self, store: SnapshotStore) -> None:
        """Compare-and-set: the same decision again changes nothing, a different one conflicts."""
        snapshot_id = store.save(make_paused_snapshot())
        store.record_decision(snapshot_id, _reject("c1", "no"), decided_by="alice")
        recorded = store.load(snapshot_id).to_dict()
        again = store.record_decision(snapshot_id, _reject("c1", "no"), decided_by="bob")
        assert again.ledger["c1"].decided_by == "alice"
        assert store.load(snapshot_id).to_dict() == recorded
        with pytest.raises(DecisionConflictError, match=r"'c1'.*already decided.*alice"):
            store.record_decision(snapshot_id, _approve("c1"))
        assert store.load(snapshot_id).to_dict() == recorded

    def test_decisions_need_a_paused_snapshot(self, store: SnapshotStore) -> None:
        """A finished snapshot takes no decision; an unknown id is a SnapshotError."""
        done = store.save(make_paused_snapshot(status="done", outcome={"exit_reason": "text"}))
        with pytest.raises(SnapshotUnavailableError, match="finished run"):
            store.record_decision(done, _approve())
        with pytest.raises(SnapshotError):
            store.record_decision("missing", _approve())

    def test_two_threads_deciding_at_once_one_wins(self, store: SnapshotStore) -> None:
        """Two handles deciding one call at once: exactly one wins, the other conflicts."""
        snapshot_id = store.save(make_paused_snapshot())
        handles = [self.new_store(), self.new_store()]
        start = threading.Barrier(2)

        def decide(args: tuple[SnapshotStore, ToolExecutionDecision]) -> str:
            handle, decision = args
            start.wait()
            try:
                handle.record_decision(snapshot_id, decision)
            except DecisionConflictError:
                return "conflict"
            return "recorded"

        with ThreadPoolExecutor(2) as pool:
            outcomes = sorted(pool.map(decide, zip(handles, [_approve(), _reject()], strict=True)))
        assert outcomes == ["conflict", "recorded"]
        assert len(store.load(snapshot_id).tool_execution_decisions) == 1

    # -- claims ----------------------------------------------------------------------------------------

    def test_a_claim_is_exclusive_until_released(self, store: SnapshotStore) -> None:
        """A second claim fails, from any handle, until the lease is released."""
        snapshot_id = store.save(make_paused_snapshot())
        other = self.new_store()
        claimed: Callable[[str], bool] | None = getattr(other, "claimed", None)  # an optional extra
        assert claimed is None or not claimed(snapshot_id)
        lease = store.claim(snapshot_id)
        assert claimed is None or claimed(snapshot_id)
        with pytest.raises(SnapshotUnavailableError, match=snapshot_id):
            other.claim(snapshot_id)
        with pytest.raises(SnapshotUnavailableError, match=snapshot_id):
            store.claim(snapshot_id)
        lease.release()
        lease.release()  # harmless
        second = other.claim(snapshot_id)
        with pytest.raises(SnapshotUnavailableError):
            store.claim(snapshot_id)
        second.release()
        store.claim(snapshot_id).release()

    def test_claiming_an_unknown_id_fails_and_holds_nothing(self, store: SnapshotStore) -> None:
        """Claiming an unknown id raises SnapshotError."""
        with pytest.raises(SnapshotError, match="ghost"):
            store.claim("ghost")

    def test_decisions_are_refused_while_claimed(self, store: SnapshotStore) -> None:
        """While a run holds the claim no decision lands, not even through the holder's handle."""
        snapshot_id = store.save(make_paused_snapshot())
        other = self.new_store()
        lease = store.claim(snapshot_id)
        before = store.load(snapshot_id).to_dict()
        for handle in (other, store):
            with pytest.raises(SnapshotUnavailableError, match=f"{snapshot_id} is being resumed"):
                handle.record_decision(snapshot_id, _approve())
        assert store.load(snapshot_id).to_dict() == before
        lease.release()
        assert other.record_decision(snapshot_id, _approve()).ledger["c1"].status == "approved"

    def test_create_saves_under_the_name_and_claims(self, store: SnapshotStore) -> None:
        """``create`` stores under the name (without .json) and claims it; an existing id is refused."""
        running = make_paused_snapshot(status="running")
        snapshot_id, lease = store.create(running, "payer_tool_invoker_0_2025_01_02_03_04_05_0a1b2c3d.json")
        assert snapshot_id == "payer_tool_invoker_0_2025_01_02_03_04_05_0a1b2c3d"
        assert store.load(snapshot_id) == running
        other = self.new_store()
        with pytest.raises(SnapshotUnavailableError):
            other.claim(snapshot_id)
        with pytest.raises(SnapshotUnavailableError):
            other.create(make_paused_snapshot(), f"{snapshot_id}.json")
        lease.release()
        with pytest.raises(SnapshotUnavailableError, match="already exists"):
            other.create(make_paused_snapshot(), snapshot_id)
        assert store.load(snapshot_id) == running
        other.claim(snapshot_id).release()

    def test_the_holder_replaces_the_record(self, store: SnapshotStore) -> None:
        """The holder rewrites the record; another handle cannot while the claim is held."""
        snapshot_id, lease = store.create(make_paused_snapshot(status="running"), "run_1")
        ledger = dict(make_paused_snapshot().ledger)
        ledger["c1"] = dataclasses.replace(ledger["c1"], status="running")
        store.replace(snapshot_id, make_paused_snapshot(status="running", ledger=ledger))
        assert store.load(snapshot_id).ledger["c1"].status == "running"
        other = self.new_store()
        with pytest.raises(SnapshotUnavailableError):  # not the holder: waits for the claim, in vain
            other.replace(snapshot_id, make_paused_snapshot())
        assert store.load(snapshot_id).ledger["c1"].status == "running"
        with pytest.raises(SnapshotError, match="missing"):
            store.replace("missing", make_paused_snapshot())
        lease.release()

    # -- entries kept beside the record (append_entries) -------------------------------------------

    def write_raw_entry(self, store: SnapshotStore, snapshot_id: str, call_id: str, data: bytes) -> None:
        """Keep ``data`` (the bytes of one ``{call_id: entry}`` change) beside the record, as append_entries would.

        The default works for stores built on ``SnapshotStoreBase``; override it for other backends.
        """
        with store._scope(None) as handle:  # type: ignore[attr-defined]
            assert store._append(handle, snapshot_id, [(call_id, data)])  # type: ignore[attr-defined]

    def crash_before_dropping_kept_entries(self, store: SnapshotStore, monkeypatch: pytest.MonkeyPatch) -> None:
        """Make the next full write of a record fail after its new bytes are written, before its kept entries go.

        Like a process killed there. The default works for stores built on ``SnapshotStoreBase``.
        """

        def crash(handle: Any, snapshot_id: str) -> None:
            raise _Crash(snapshot_id)

        monkeypatch.setattr(store, "_drop_kept", crash)

    def _running(self, store: SnapshotStore) -> tuple[str, Any, dict[str, LedgerEntry]]:
        ledger = dict(make_paused_snapshot().ledger)
        ledger["c1"] = dataclasses.replace(ledger["c1"], status="approved")
        snapshot_id, lease = store.create(make_paused_snapshot(status="running", ledger=ledger), "run_1")
        return snapshot_id, lease, ledger

    def test_appended_entries_are_seen_by_every_read(self, store: SnapshotStore) -> None:
        """append_entries keeps the changed entries only; load, listings and decisions see them folded in."""
        snapshot_id, lease, ledger = self._running(store)
        running = dataclasses.replace(ledger["c1"], status="running")
        store.append_entries(snapshot_id, {"c1": running})
        extra = LedgerEntry("c4", "lookup", "running", {"q": "x"})
        done = dataclasses.replace(running, status="done", result={"text": "sent", "error": False})
        store.append_entries(snapshot_id, {"c4": extra})
        store.append_entries(snapshot_id, {"c1": done})
        store.append_entries(snapshot_id, {})
        other = self.new_store()
        loaded = other.load(snapshot_id)
        assert list(loaded.ledger) == ["c1", "c2", "c3", "c4"]  # the record's order, then the new calls in order
        assert (loaded.ledger["c1"], loaded.ledger["c4"], loaded.ledger["c2"]) == (done, extra, ledger["c2"])
        assert loaded == make_paused_snapshot(status="running", ledger={**ledger, "c1": done, "c4": extra})
        listed: Any = other  # list_snapshots: SnapshotStoreBase's, beyond the protocol
        assert [s.ledger["c1"].status for s in listed.list_snapshots(("running",))] == ["done"]
        with pytest.raises(SnapshotUnavailableError):  # not the holder: waits for the claim, in vain
            other.append_entries(snapshot_id, {"c1": running})
        with pytest.raises(SnapshotError, match="missing"):
            store.append_entries("missing", {"c1": running})
        with pytest.raises(ConfigurationTypeError):
            store.append_entries(snapshot_id, {"c1": "done"})  # type: ignore[dict-item]
        lease.release()
        store.mark_done(snapshot_id, {"exit_reason": "text"})  # a full write absorbs them
        assert other.load(snapshot_id).ledger == {**ledger, "c1": done, "c4": extra}

    def test_kept_entries_reach_listings_and_decisions(self, store: SnapshotStore) -> None:
        """A paused record with entries kept beside it lists and decides on the folded ledger."""
        snapshot_id = store.save(make_paused_snapshot())
        lease = store.claim(snapshot_id)
        c2 = make_paused_snapshot().ledger["c2"]
        store.append_entries(snapshot_id, {"c2": dataclasses.replace(c2, status="approved")})
        lease.release()
        assert [p.tool_call_id for p in store.list_pending()] == ["c1"]
        updated = self.new_store().record_decision(snapshot_id, _approve("c1"), decided_by="ann")
        assert (updated.ledger["c1"].status, updated.ledger["c2"].status) == ("approved", "approved")
        assert store.load(snapshot_id) == updated
        assert store.list_pending() == []

    def test_a_full_write_absorbs_the_kept_entries(self, store: SnapshotStore) -> None:
        """Replace writes the whole record; entries kept before it are never applied over it."""
        snapshot_id, lease, ledger = self._running(store)
        store.append_entries(snapshot_id, {"c1": dataclasses.replace(ledger["c1"], status="running")})
        newer = {**ledger, "c1": dataclasses.replace(ledger["c1"], status="failed", result={"error": True})}
        store.replace(snapshot_id, make_paused_snapshot(status="running", ledger=newer, metadata={"n": 2}))
        assert self.new_store().load(snapshot_id).ledger == newer
        c2 = dataclasses.replace(ledger["c2"], status="running")
        store.append_entries(snapshot_id, {"c2": c2})
        assert self.new_store().load(snapshot_id).ledger == {**newer, "c2": c2}
        lease.release()

    def test_a_crash_between_a_full_write_and_dropping_the_kept_entries(
        self, store: SnapshotStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Killed after the new record is written, before its old kept entries go: never stale entries over it.

        A read sees the record as it was (with them) or as it became (without them).
        """
        snapshot_id, lease, ledger = self._running(store)
        running = {**ledger, "c1": dataclasses.replace(ledger["c1"], status="running")}
        store.append_entries(snapshot_id, {"c1": running["c1"]})
        before = make_paused_snapshot(status="running", ledger=running)
        c1 = dataclasses.replace(running["c1"], status="done", result={"text": "sent", "error": False})
        after = make_paused_snapshot(status="running", ledger={**running, "c1": c1}, metadata={"n": 2})
        with monkeypatch.context() as patch:
            self.crash_before_dropping_kept_entries(store, patch)
            with pytest.raises(_Crash):
                store.replace(snapshot_id, after)
        found = self.new_store().load(snapshot_id)
        assert found in (before, after), found.ledger["c1"]
        c2 = dataclasses.replace(ledger["c2"], status="running")
        store.append_entries(snapshot_id, {"c2": c2})  # the run goes on: its next append is not mixed with them
        assert self.new_store().load(snapshot_id).ledger == {**found.ledger, "c2": c2}
        lease.release()

    @pytest.mark.parametrize(
        "data",
        [
            b'{"c1":{"tool_call_id":"c1","tool_name":"transfer","status":"sideways","arguments":{}}}',
            b'{"c1":{"tool_call_id":"c1","tool_name":"transfer","status":"done","arguments":[]}}',
            b'{"c1":"done"}',
            b"[1]",
            b'{"c1":',
            b"\xff\xfe",
        ],
    )
    def test_a_bad_kept_entry_is_refused_naming_it(self, store: SnapshotStore, data: bytes) -> None:
        """A kept entry that is not a valid ledger entry is refused like a bad record, naming store, id and entry."""
        snapshot_id, lease, ledger = self._running(store)
        store.append_entries(snapshot_id, {"c2": dataclasses.replace(ledger["c2"], status="running")})
        self.write_raw_entry(store, snapshot_id, "c1", data)
        lease.release()
        with pytest.raises((SnapshotError, CorruptRecordError)) as refused:
            self.new_store().load(snapshot_id)
        message = str(refused.value)
        named = type(store).__name__ in message or store.locator(snapshot_id) in message  # the store (or its file)
        assert snapshot_id in message and named, message
        assert ("journal" in message and " line 3" in message) or "row of call 'c1'" in message, message
        with pytest.raises((SnapshotError, CorruptRecordError)):
            store.record_decision(snapshot_id, _approve("c1"))
        errors: list[str] = []
        listed: Any = store
        assert listed.list_snapshots(("running",), on_error=lambda i, e: errors.append(i)) == []
        assert errors == [snapshot_id]

    def test_continue_in_moves_the_pause_to_a_new_id(self, store: SnapshotStore) -> None:
        """continue_in stores the new pause and leaves the old record resumed, pointing at it."""
        old = store.save(make_paused_snapshot())
        lease = store.claim(old)
        cache = MessageCache()  # one cache for the run's writes, passed positionally, as the Agent does
        store.replace(old, make_paused_snapshot(status="running"), cache)
        pause = make_paused_snapshot(timestamp=T0 + dt.timedelta(hours=1), metadata={"pause": 2})
        new = store.continue_in(old, pause, "payer_tool_invoker_1_next.json", cache)
        assert new == "payer_tool_invoker_1_next"
        tombstone = store.load(old)
        assert (tombstone.status, tombstone.continued_in) == ("resumed", new)
        assert store.load(new) == pause and store.load(new).location == store.locator(new)
        assert [p.snapshot_id for p in store.list_pending()] == [new, new]
        lease.release()
        other = self.new_store()
        with pytest.raises(SnapshotUnavailableError, match=f"already resumed; it continued in {new}"):
            other.record_decision(old, _approve())
        assert other.record_decision(new, _approve()).ledger["c1"].status == "approved"

    def test_continue_in_writes_nothing_when_it_cannot(self, store: SnapshotStore) -> None:
        """An existing new id or an unknown old id leaves every record as it was."""
        old, taken = store.save(make_paused_snapshot()), store.save(make_paused_snapshot(metadata={"n": 1}))
        lease = store.claim(old)
        before = store.load(old).to_dict()
        with pytest.raises(SnapshotUnavailableError, match="already exists"):
            store.continue_in(old, make_paused_snapshot(metadata={"n": 2}), taken, MessageCache())
        with pytest.raises(SnapshotError, match="missing"):
            store.continue_in("missing", make_paused_snapshot(), "fresh_name", MessageCache())
        assert store.load(old).to_dict() == before
        assert store.load(taken).metadata == {"n": 1}
        with pytest.raises(SnapshotError):
            store.load("fresh_name")
        lease.release()

    def test_update_ledger_merges_by_call_id(self, store: SnapshotStore) -> None:
        """update_ledger replaces and adds entries by call id, keeping the others."""
        snapshot_id = store.save(make_paused_snapshot())
        done = LedgerEntry("c1", "transfer", "done", {"amount": 5}, result={"text": "sent", "error": False})
        extra = LedgerEntry("c4", "lookup", "pending", {"q": "x"})
        store.update_ledger(snapshot_id, {"c1": done, "c4": extra})
        ledger = store.load(snapshot_id).ledger
        assert ledger["c1"] == done and ledger["c4"] == extra
        assert (ledger["c2"].status, ledger["c2"].arguments, ledger["c3"].status) == ("pending", {"amount": 7}, "done")
        assert [p.tool_call_id for p in store.list_pending()] == ["c2"]

    def test_mark_done_ends_the_pause(self, store: SnapshotStore) -> None:
        """mark_done sets status and outcome; the snapshot is no longer pending."""
        snapshot_id = store.save(make_paused_snapshot())
        store.mark_done(snapshot_id, {"exit_reason": "text"})
        done = store.load(snapshot_id)
        assert (done.status, done.outcome) == ("done", {"exit_reason": "text"})
        assert store.list_pending() == []
        with pytest.raises(SnapshotUnavailableError):
            store.record_decision(snapshot_id, _approve())

    def test_a_location_leads_back_to_the_store(self, store: SnapshotStore) -> None:
        """store_for_location(locator(id)) reaches the same record."""
        snapshot_id = store.save(make_paused_snapshot())
        location = store.locator(snapshot_id)
        assert snapshot_id in location
        if not self.locations_reopen:
            return
        found, found_id = store_for_location(location)
        try:
            assert found_id == snapshot_id
            assert found.load(found_id) == store.load(snapshot_id)
            assert found.locator(found_id) == location
        finally:
            close: Callable[[], None] | None = getattr(found, "close", None)
            if close is not None:
                close()
