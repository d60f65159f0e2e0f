"""Decided runs no event will name again are continued: their holder, or their decider, was killed with SIGKILL.

In the first test the doomed process is a real ``handrail worker``: it claims the decided run and is held while it
builds the run's agent (:class:`~tests.server._agents.GatedGenerator`), before it records anything, then killed.
The survivor, a :class:`~handrail.server.Resumer` in the test process, saw the decision while the run was held;
no event comes after the kill, yet it continues the run. In the last one the decider is killed between the
approval's file and its event (a directory store writes them one after the other): no event at all.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from typing import Any

import pytest

from handrail.server import Resumer
from handrail.stores import open_snapshot_store
from handrail.stores.approvals import ApprovalFilter
from tests.server._agents import GATED_AGENT_FILE, LEDGER_ENV, ledger_lines
from tests.server._workers import Workers, paused_runs, read_fifo, wait_until_ended
from tests.server.test_resumer import approve_all
from tests.stores.snapshot_worker import REPO_ROOT, poll

_DIES_BEFORE_THE_EVENT = """
import os, signal, sys
from handrail.human_in_the_loop.service import ApprovalService
from handrail.stores import open_snapshot_store

store = open_snapshot_store(sys.argv[1])
store._events_append = lambda events: os.kill(os.getpid(), signal.SIGKILL)  # the approval's file is written
ApprovalService(store).decide(sys.argv[2], "approve", principal="bob")
"""


@pytest.fixture
def store(any_store: Any) -> Any:
    """A directory, SQLite or PostgreSQL store (``any_store``)."""
    return any_store


def test_a_run_held_by_a_worker_killed_right_after_claiming_it_is_continued_by_the_survivor(
    store: Any, workers: Workers, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(LEDGER_ENV, str(workers.ledger))  # the survivor's executions go to the same ledger
    (workers.agents / "payer.yaml").write_text(GATED_AGENT_FILE, encoding="utf-8")
    (run_id,) = paused_runs(store, workers.agents, ["pay 7"])
    survivor = Resumer(store, agents_dir=workers.agents, takeover_interval=0.2)
    try:
        survivor.run_once()  # watching from here on: the decision reaches it as an event
        (workers.gate / "hold-build").write_text("", encoding="utf-8")
        os.mkfifo(workers.gate / "building")
        os.mkfifo(workers.gate / "release")
        doomed = workers.start()
        approve_all(store, run_id)
        assert read_fifo(workers.gate / "building") == b"building\n"  # the doomed worker holds the run's claim
        (workers.gate / "hold-build").unlink()
        assert survivor.run_once().outcomes == {run_id: "busy"}  # it saw the decided run, held by the other
        assert store.get_run(run_id).status == "paused"  # nothing recorded by the doomed worker
        doomed.kill()  # SIGKILL: its claim dies with it; no event follows
        doomed.communicate(timeout=60)
        survivor.start()
        wait_until_ended(store, [run_id])
    finally:
        survivor.stop()
    record = store.get_run(run_id)
    assert record.status == "finished", record
    assert record.result["last_message"]["content"][0]["text"] == "paid: sent 7"
    assert [line.split()[0] for line in ledger_lines(workers.ledger)] == ["7"]  # the tool ran once, here
    assert ledger_lines(workers.ledger)[0].split()[1] == str(os.getpid())


def test_a_run_recorded_running_by_a_process_that_died_before_its_event_is_taken_over(
    store: Any, workers: Workers, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(LEDGER_ENV, str(workers.ledger))
    (run_id,) = paused_runs(store, workers.agents, ["pay 4"])
    survivor = Resumer(store, agents_dir=workers.agents, takeover_interval=0.2)
    try:
        survivor.run_once()
        lease = store.claim_run(run_id)  # another process drives it: it recorded 'running', and died before the
        assert lease is not None  # event run.resumed (so the record says running and the log says nothing)
        approve_all(store, run_id)
        record = store.get_run(run_id)
        store.update_run(run_id, expected_version=record.version, at=datetime.now(UTC), status="running")
        assert survivor.run_once().resumed == ()  # running, under a claim: not this process's to continue
        lease.release()  # the process died

        def ended() -> bool:
            survivor.run_once()
            return bool(store.get_run(run_id).status == "finished")

        poll(ended, "the survivor to take the run over")
    finally:
        survivor.stop()
    assert [line.split()[0] for line in ledger_lines(workers.ledger)] == ["4"]


def test_a_decision_whose_decider_died_before_its_event_is_found_by_the_recheck(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = str(tmp_path / "store")
    store = open_snapshot_store(url)
    workers = Workers.in_folder(url, tmp_path)
    monkeypatch.setenv(LEDGER_ENV, str(workers.ledger))
    (run_id,) = paused_runs(store, workers.agents, ["pay 6"])
    survivor = Resumer(store, agents_dir=workers.agents, recheck_interval=0.2)
    try:
        survivor.run_once()
        (approval,) = store.list_approvals(ApprovalFilter(run_id=run_id)).items
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
        decider = subprocess.run([sys.executable, "-c", _DIES_BEFORE_THE_EVENT, url, approval.id], env=env,
                                 capture_output=True, text=True, timeout=120)  # fmt: skip
        assert decider.returncode == -9, decider.stderr
        assert store.get_approval(approval.id).status == "approved"
        assert all(e.kind != "approval.decided" for e in store.events_after(0).events)  # nothing announces it
        survivor.start()
        wait_until_ended(store, [run_id])
    finally:
        survivor.stop()
        store.close()
    assert store.get_run(run_id).status == "finished"
    assert [line.split()[0] for line in ledger_lines(workers.ledger)] == ["6"]
