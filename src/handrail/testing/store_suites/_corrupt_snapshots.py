"""The conformance cases for unreadable records, mixed into :class:`~handrail.testing.store_suites.SnapshotStoreSuite`.

One damaged record must never hide the others: every listing names it and skips it, and every operation on it
refuses with a handrail error naming the store (or its file) and the id.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from typing import Any

import pytest

from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.snapshot import AgentSnapshot, encode_snapshot
from handrail.errors import CorruptRecordError, SnapshotError
from handrail.stores.types import SnapshotStore

__all__ = ["CORRUPTIONS", "CorruptSnapshotCases"]


def _edited(change: Callable[[dict[str, Any]], None]) -> Callable[[AgentSnapshot], bytes]:
    def corrupt(snapshot: AgentSnapshot) -> bytes:
        data = json.loads(encode_snapshot(snapshot))
        change(data)
        return json.dumps(data).encode("utf-8")

    return corrupt


def _set_call_id(data: dict[str, Any]) -> None:
    data["messages"][-1]["content"][0]["tool_call"]["id"] = {"x": 1}


CORRUPTIONS: dict[str, Callable[[AgentSnapshot], bytes]] = {
    "meta is a list": _edited(lambda d: d["messages"][0].__setitem__("meta", [["a", 1]])),
    "a call id is an object": _edited(_set_call_id),
    "a tool call count is a string": _edited(lambda d: d["state"].__setitem__("tool_call_counts", {"lookup": "1"})),
    "a ledger entry is a list": _edited(lambda d: d["ledger"].__setitem__("c1", [])),
    "a newer schema version": _edited(lambda d: d.__setitem__("schema_version", 99)),
    "not JSON": lambda snapshot: encode_snapshot(snapshot)[:-7],
    "a JSON list": lambda snapshot: b"[1, 2]",
}
"""Ways a record can be damaged: each turns a snapshot into the bytes of an unreadable record."""


class CorruptSnapshotCases:
    """The unreadable-record cases (see the module docstring).

    Backends not built on :class:`~handrail.stores._snapshot_base.SnapshotStoreBase` override
    :meth:`write_raw_record`.
    """

    new_store: Callable[[], SnapshotStore]

    def write_raw_record(self, store: SnapshotStore, snapshot_id: str, snapshot: AgentSnapshot, data: bytes) -> None:
        """Replace the stored bytes of ``snapshot_id`` with ``data`` (indexed columns as for ``snapshot``).

        The default works for stores built on ``SnapshotStoreBase``; override it for other backends.
        """
        with store._scope(snapshot_id) as handle:  # type: ignore[attr-defined]
            assert store._update(handle, snapshot_id, snapshot, data)  # type: ignore[attr-defined]

    def _corrupt_one(self, store: SnapshotStore, how: str) -> tuple[str, str]:
        from handrail.testing.store_suites.snapshots import make_paused_snapshot

        good = store.save(make_paused_snapshot())
        snapshot = make_paused_snapshot(metadata={"damaged": True})
        bad = store.save(snapshot)
        self.write_raw_record(store, bad, snapshot, CORRUPTIONS[how](snapshot))
        return good, bad

    @pytest.mark.parametrize("how", sorted(CORRUPTIONS))
    def test_an_unreadable_record_is_named_and_skipped_by_every_listing(self, store: SnapshotStore, how: str) -> None:
        """list_pending (and list_paused / list_snapshots, when the store has them) skip it and name it."""
        good, bad = self._corrupt_one(store, how)
        listings: list[tuple[str, Callable[[], list[Any]], Callable[[Any], str | None]]] = [
            ("list_pending", store.list_pending, lambda p: p.snapshot_id)
        ]
        for name in ("list_paused", "list_snapshots"):
            method = getattr(store, name, None)
            if method is not None:
                listings.append((name, method, lambda s: s.snapshot_id))
        for name, listing, key in listings:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                found = {key(item) for item in listing()}
            assert found == {good}, name
            named = [str(w.message) for w in caught if bad in str(w.message)]
            assert len(named) == 1, (name, [str(w.message) for w in caught])

    @pytest.mark.parametrize("how", sorted(CORRUPTIONS))
    def test_an_unreadable_record_is_refused_naming_the_store_and_the_id(self, store: SnapshotStore, how: str) -> None:
        """Loading it and deciding in it raise SnapshotError / CorruptRecordError naming the store (or file) and id."""
        _, bad = self._corrupt_one(store, how)
        location = store.locator(bad) if hasattr(store, "locator") else bad
        decision = ToolExecutionDecision("transfer", execute=True, tool_call_id="c1")
        attempts: list[Callable[[], object]] = [lambda: store.load(bad), lambda: store.record_decision(bad, decision)]
        for attempt in attempts:
            with pytest.raises((SnapshotError, CorruptRecordError)) as caught:
                attempt()
            message = str(caught.value)
            # (the store by its class: a DSN in its name may be masked like any secret the process has read)
            assert bad in message and (type(store).__name__ in message or location in message), message
            assert "\n" not in message
        with pytest.raises((SnapshotError, CorruptRecordError)):
            self.new_store().load(bad)  # the refused decision wrote nothing: still unreadable, from any handle
