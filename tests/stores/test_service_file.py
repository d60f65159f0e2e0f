from __future__ import annotations

import json
from pathlib import Path

import pytest

from handrail.errors import CorruptRecordError
from handrail.stores.service import ServiceStore
from handrail.stores.snapshot_file import FileSnapshotStore
from handrail.testing.store_suites.approvals import T0
from handrail.testing.store_suites.service import ServiceStoreSuite, make_run
from tests.stores import service_worker as worker


class TestFileService(ServiceStoreSuite):
    @pytest.fixture(autouse=True)
    def _folder(self, tmp_path: Path) -> None:
        self.folder = tmp_path / "snapshots"

    def make_store(self) -> ServiceStore:
        return FileSnapshotStore(self.folder, lock_timeout=5)


def test_the_service_files_are_private_and_hold_no_token_text(tmp_path: Path) -> None:
    store = FileSnapshotStore(tmp_path)
    _, text = store.add_token("ann", "admin", at=T0)
    store.append_event("run.started", {"run_id": "r"}, at=T0)
    store.create_run(make_run())
    service = tmp_path / "service"
    files = [service / "tokens.json", service / "events.jsonl", service / "runs" / "run-1.json"]
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in files) and service.stat().st_mode & 0o777 == 0o700
    secret = text.partition(".")[2]
    assert all(secret.encode() not in p.read_bytes() for p in service.rglob("*") if p.is_file())
    header, event = (service / "events.jsonl").read_bytes().splitlines()
    assert json.loads(header) == {"pruned_up_to": 0, "schema_version": 1} and json.loads(event)["kind"] == "run.started"
    assert store.list_pending() == [] and store.list_approvals().items == ()  # the service folder is no snapshot


def test_a_torn_last_event_line_is_ignored_and_cut_by_the_next_append(tmp_path: Path) -> None:
    store = FileSnapshotStore(tmp_path)
    first = store.append_event("run.started", {}, at=T0)
    with (tmp_path / "service" / "events.jsonl").open("ab") as log:
        log.write(b'{"at":"2025-01-02T03:04:05')  # a crash mid-append
    assert FileSnapshotStore(tmp_path).events_after(0).events == (first,)
    second = FileSnapshotStore(tmp_path).append_event("run.paused", {}, at=T0)
    assert second.id == first.id + 1 and store.events_after(0).events == (first, second)


def test_damaged_service_files_are_refused_by_name(tmp_path: Path) -> None:
    store = FileSnapshotStore(tmp_path)
    _, text = store.add_token("ann", "admin", at=T0)
    store.create_run(make_run())
    store.create_run(make_run("run-2"))
    (tmp_path / "service" / "tokens.json").write_text('{"schema_version": 1, "tokens": [{"name": "x"}]}')
    with pytest.raises(CorruptRecordError, match=r"tokens\.json"):
        FileSnapshotStore(tmp_path).authenticate(text)
    run_file = tmp_path / "service" / "runs" / "run-1.json"
    run_file.write_text("{not json")
    with pytest.raises(CorruptRecordError, match=r"run-1\.json"):
        store.get_run("run-1")
    assert [r.run_id for r in store.list_runs()] == ["run-2"]  # a damaged run is skipped when listing
    store.append_event("run.started", {}, at=T0)
    log = tmp_path / "service" / "events.jsonl"
    log.write_bytes(log.read_bytes().replace(b'"run.started"', b'"run.nope"'))
    with pytest.raises(CorruptRecordError, match=r"events\.jsonl"):
        FileSnapshotStore(tmp_path).events_after(0)


def test_reading_a_missing_directory_creates_nothing(tmp_path: Path) -> None:
    store = FileSnapshotStore(tmp_path / "none")
    assert store.list_tokens() == [] and store.events_after(0).events == () and store.list_runs() == []
    assert store.authenticate("tk_0123456789abcdef.x") is None and not (tmp_path / "none").exists()


def test_a_token_added_here_authenticates_in_another_process(tmp_path: Path) -> None:
    worker.check_a_token_added_here_authenticates_in_another_process(FileSnapshotStore(tmp_path), str(tmp_path))


def test_two_processes_appending_at_once_get_distinct_increasing_ids(tmp_path: Path) -> None:
    store = FileSnapshotStore(tmp_path / "s")
    worker.check_two_processes_appending_at_once_get_distinct_increasing_ids(store, str(tmp_path / "s"),
                                                                              tmp_path / "gate")  # fmt: skip


def test_a_waiter_in_another_process_wakes_when_one_is_appended(tmp_path: Path) -> None:
    store = FileSnapshotStore(tmp_path / "s")
    worker.check_a_waiter_in_another_process_wakes_when_one_is_appended(store, str(tmp_path / "s"), tmp_path / "gate")


def test_a_claim_held_by_a_killed_process_becomes_free(tmp_path: Path) -> None:
    store = FileSnapshotStore(tmp_path / "s")
    worker.check_a_claim_held_by_a_killed_process_becomes_free(store, str(tmp_path / "s"), tmp_path / "gate")
