from __future__ import annotations

import dataclasses
import os
import stat
from pathlib import Path

import pytest

from handrail.core._files import FileLock, lock_path_for
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.snapshot import encode_snapshot, load_snapshot
from handrail.errors import SnapshotError, SnapshotUnavailableError
from handrail.human_in_the_loop.snapshots import record_decision
from handrail.stores.snapshot_file import FileSnapshotStore
from handrail.stores.types import SnapshotStore
from handrail.testing.store_suites.snapshots import SnapshotStoreSuite, make_paused_snapshot
from tests.stores.snapshot_worker import claim_dies_with_its_process, two_processes_decide

APPROVE = ToolExecutionDecision("transfer", execute=True, tool_call_id="c1")


class TestFileSnapshotStore(SnapshotStoreSuite):
    @pytest.fixture(autouse=True)
    def _folder(self, tmp_path: Path) -> None:
        self.folder = tmp_path / "snapshots"

    def make_store(self) -> SnapshotStore:
        return FileSnapshotStore(self.folder, lock_timeout=0.2)

    def append_torn_entry(self, store: SnapshotStore, snapshot_id: str) -> None:
        assert isinstance(store, FileSnapshotStore)
        with open(store.journal_of(snapshot_id), "ab") as journal:
            journal.write(b'{"c2":{"tool_call_id":"c2","tool_name":"transfer","status":"run')

    def test_a_torn_last_entry_is_ignored(self, store: SnapshotStore) -> None:
        """A crash in the middle of an append leaves a torn last entry: reads ignore it, the next append goes on."""
        snapshot_id, lease, ledger = self._running(store)
        try:
            running = dataclasses.replace(ledger["c1"], status="running")
            store.append_entries(snapshot_id, {"c1": running})
            self.append_torn_entry(store, snapshot_id)
            assert self.new_store().load(snapshot_id).ledger == {**ledger, "c1": running}
            c2 = dataclasses.replace(ledger["c2"], status="running")
            store.append_entries(snapshot_id, {"c2": c2})
            assert self.new_store().load(snapshot_id).ledger == {**ledger, "c1": running, "c2": c2}
        finally:
            lease.release()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path / "approvals"


@pytest.fixture
def store(folder: Path) -> FileSnapshotStore:
    return FileSnapshotStore(folder, lock_timeout=0.2)


def test_each_snapshot_is_a_snapshot_file(folder: Path, store: FileSnapshotStore) -> None:
    snapshot = make_paused_snapshot()
    snapshot_id = store.save(snapshot)
    path = folder / f"{snapshot_id}.json"
    assert store.locator(snapshot_id) == str(path) == str(store.path_of(snapshot_id))
    assert path.read_bytes() == encode_snapshot(snapshot)
    assert load_snapshot(path) == snapshot and load_snapshot(path).snapshot_id == snapshot_id
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert snapshot_id.startswith("payer_tool_invoker_0_")
    assert store.load(f"{snapshot_id}.json") == snapshot  # a file name works as the id too
    assert store.list_pending()[0].path == path


def test_continue_in_leaves_the_new_file_and_a_tombstone(folder: Path, store: FileSnapshotStore) -> None:
    old = store.save(make_paused_snapshot())
    with store.claim(old):
        new = store.continue_in(old, make_paused_snapshot(metadata={"pause": 2}), "next.json")
    assert sorted(p.name for p in store.files()) == sorted([f"{old}.json", "next.json"])
    assert load_snapshot(folder / "next.json").metadata == {"pause": 2}
    assert load_snapshot(folder / f"{old}.json").continued_in == new == "next"


def test_a_corrupt_file_is_named_and_skipped_when_listing(folder: Path, store: FileSnapshotStore) -> None:
    good = store.save(make_paused_snapshot())
    (folder / "broken.json").write_text('{"schema_version": 1, "messa', encoding="utf-8")
    with pytest.raises(SnapshotError, match=r"broken\.json.*truncated"):
        store.load("broken")
    with pytest.warns(UserWarning, match=r"broken in FileSnapshotStore"):
        assert [p.snapshot_id for p in store.list_pending()] == [good, good]
    seen: list[tuple[str, type]] = []
    quiet = FileSnapshotStore(folder, on_error=lambda snapshot_id, exc: seen.append((snapshot_id, type(exc))))
    assert len(quiet.list_pending()) == 2
    assert seen == [("broken", SnapshotError)]


def test_an_empty_or_missing_directory_lists_nothing(folder: Path, store: FileSnapshotStore) -> None:
    assert store.list_pending() == [] and not folder.exists()
    with pytest.raises(FileNotFoundError):
        store.files()


def test_the_claim_is_the_lock_of_the_durable_approval_files(folder: Path, store: FileSnapshotStore) -> None:
    snapshot_id = store.save(make_paused_snapshot())
    path = store.path_of(snapshot_id)
    with FileLock(lock_path_for(path)):
        with pytest.raises(SnapshotUnavailableError, match=snapshot_id):
            store.claim(snapshot_id)
        with pytest.raises(SnapshotUnavailableError, match=f"{snapshot_id} is being resumed"):
            store.record_decision(snapshot_id, APPROVE)
    with store.claim(snapshot_id), pytest.raises(SnapshotUnavailableError, match="is being resumed"):
        record_decision(path, APPROVE, lock_timeout=0)
    assert record_decision(path, APPROVE).ledger["c1"].status == "approved"


def test_two_processes_deciding_at_once_one_wins(folder: Path, store: FileSnapshotStore, tmp_path: Path) -> None:
    snapshot_id = store.save(make_paused_snapshot())
    conflict, recorded = two_processes_decide(str(folder), snapshot_id, tmp_path / "gate")
    assert (conflict["outcome"], recorded["outcome"]) == ("conflict", "recorded"), (conflict, recorded)
    assert "already decided" in conflict["message"]
    decisions = store.load(snapshot_id).tool_execution_decisions
    assert [d.decided_by for d in decisions] == [recorded["verdict"]]


def test_a_claim_is_released_when_its_process_is_killed(folder: Path, store: FileSnapshotStore) -> None:
    snapshot_id = store.save(make_paused_snapshot())
    claim_dies_with_its_process(str(folder), snapshot_id, store)
    assert store.record_decision(snapshot_id, APPROVE).ledger["c1"].status == "approved"


def test_to_dict_round_trip(folder: Path) -> None:
    store = FileSnapshotStore(folder, allowed_modules=["myapp"], lock_timeout=1)
    data = store.to_dict()
    assert data == {
        "type": "handrail.stores.snapshot_file.FileSnapshotStore",
        "init_parameters": {"directory": str(folder), "lock_timeout": 1.0, "allowed_modules": ["myapp"]},
    }
    again = FileSnapshotStore.from_dict(data)
    assert (again.directory, again.allowed_modules, again.lock_timeout) == (folder, ("myapp",), 1.0)
