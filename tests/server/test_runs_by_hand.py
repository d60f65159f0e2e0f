"""A service run continued with ``handrail resume`` (as ``handrail approvals`` suggests) keeps its record current.

The runs are started by the service's launcher on a real store (a directory or SQLite; PostgreSQL under its
marker), decided and resumed with the CLI; ``GET /api/v1/runs/{id}`` reads the record these tests read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from handrail.cli import main
from handrail.server import Resumer
from handrail.stores.approvals import ApprovalFilter
from tests.server._agents import AGENT_FILE, SENT
from tests.server._workers import paused_runs


@pytest.fixture
def store(any_store: Any) -> Any:
    """A directory, SQLite or PostgreSQL store (``any_store``)."""
    return any_store


@pytest.fixture
def agents(tmp_path: Path) -> Path:
    folder = tmp_path / "agents"
    folder.mkdir()
    (folder / "payer.yaml").write_text(AGENT_FILE, encoding="utf-8")
    return folder


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def approve_with_the_cli(store: Any, url: str, run_id: str) -> str:
    """Approve the run's pending calls with ``handrail approvals approve``; the resume command it suggests."""
    suggested = ""
    for approval in store.list_approvals(ApprovalFilter(run_id=run_id, status="pending")).items:
        approved = cli("approvals", "approve", approval.id, "--store", url, "--by", "carol")
        assert approved.exit_code == 0, approved.output
        suggested = approved.output.rpartition("Continue the run with: ")[2].strip() or suggested
    return suggested


def run_kinds(store: Any, run_id: str) -> list[str]:
    return [e.kind for e in store.events_after(0).events if e.kind.startswith("run.") and e.data["run_id"] == run_id]


def test_a_run_finished_with_the_suggested_handrail_resume_is_finished_in_its_record(
    store: Any, agents: Path, service_store_url: str
) -> None:
    (run_id,) = paused_runs(store, agents, ["pay 3"])
    suggested = approve_with_the_cli(store, service_store_url, run_id)
    assert suggested.startswith(f"handrail resume {store.get_run(run_id).snapshot_id} --store ")
    resumed = cli("resume", store.get_run(run_id).snapshot_id, "--store", service_store_url)
    assert resumed.exit_code == 0, resumed.output
    record = store.get_run(run_id)
    assert record.status == "finished", record
    assert record.result["last_message"]["content"][0]["text"] == "paid: sent 3"
    assert record.result["exit_reason"] == "text" and record.result["step_count"] == 2
    assert run_kinds(store, run_id) == ["run.started", "run.paused", "run.resumed", "run.finished"]
    assert SENT == [3]


def test_a_run_paused_again_by_hand_is_paused_at_the_new_snapshot_and_the_service_goes_on(
    store: Any, agents: Path, service_store_url: str
) -> None:
    (run_id,) = paused_runs(store, agents, ["pay 1 | 2"])
    first = store.get_run(run_id).snapshot_id
    approve_with_the_cli(store, service_store_url, run_id)
    resumed = cli("resume", first, "--store", service_store_url)
    assert resumed.exit_code == 4, resumed.output  # paused again, on the call of the second step
    record = store.get_run(run_id)
    assert record.status == "paused" and record.snapshot_id not in (None, first) and SENT == [1]
    (waiting,) = store.list_approvals(ApprovalFilter(run_id=run_id, status="pending")).items
    assert waiting.snapshot_id == record.snapshot_id
    approve_with_the_cli(store, service_store_url, run_id)
    resumer = Resumer(store, agents_dir=agents)
    try:
        assert resumer.run_once().outcomes == {run_id: "finished"}  # the service continues it from there
    finally:
        resumer.stop()
    assert store.get_run(run_id).status == "finished" and SENT == [1, 2]


def test_a_resume_refused_before_anything_ran_leaves_the_run_paused_for_the_service(
    store: Any, agents: Path, service_store_url: str, tmp_path: Path
) -> None:
    (run_id,) = paused_runs(store, agents, ["pay 5"])
    snapshot_id = store.get_run(run_id).snapshot_id
    approve_with_the_cli(store, service_store_url, run_id)
    changed = tmp_path / "changed.yaml"
    changed.write_text(AGENT_FILE + "system_prompt: Pay only on Mondays.\n", encoding="utf-8")
    refused = cli("resume", snapshot_id, "--store", service_store_url, "--agent", str(changed))
    assert refused.exit_code == 2 and "system_prompt" in refused.output, refused.output  # the agent drifted
    record = store.get_run(run_id)
    assert record.status == "paused" and record.snapshot_id == snapshot_id and SENT == []
    resumer = Resumer(store, agents_dir=agents)
    try:
        assert resumer.run_once().outcomes == {run_id: "finished"}
    finally:
        resumer.stop()
    assert SENT == [5]


def test_a_run_the_service_is_continuing_is_not_resumed_by_hand(
    store: Any, agents: Path, service_store_url: str
) -> None:
    (run_id,) = paused_runs(store, agents, ["pay 8"])
    approve_with_the_cli(store, service_store_url, run_id)
    lease = store.claim_run(run_id)  # a resumer of the service holds the run
    assert lease is not None
    try:
        busy = cli("resume", store.get_run(run_id).snapshot_id, "--store", service_store_url)
    finally:
        lease.release()
    assert busy.exit_code == 5 and "being continued by the service" in " ".join(busy.output.split()), busy.output
    assert store.get_run(run_id).status == "paused" and SENT == []


def test_a_run_resumed_from_python_is_finished_in_its_record_by_the_next_resumer_to_start(
    store: Any, agents: Path, service_store_url: str
) -> None:
    import handrail
    from handrail.server import AgentRegistry

    (run_id,) = paused_runs(store, agents, ["pay 2"])
    approve_with_the_cli(store, service_store_url, run_id)
    snapshot = store.load(store.get_run(run_id).snapshot_id)
    agent = AgentRegistry(store, agents_dir=agents).agent_for(snapshot)
    handrail.resume(snapshot.snapshot_id, store=store, agent=agent)  # the library alone: no record is written
    assert store.get_run(run_id).status == "paused" and SENT == [2]
    resumer = Resumer(store, agents_dir=agents)  # its first pass looks at every paused run
    try:
        assert resumer.run_once().outcomes == {run_id: "finished"}
    finally:
        resumer.stop()
    record = store.get_run(run_id)
    assert record.status == "finished" and record.result["last_message"]["content"][0]["text"] == "paid: sent 2"
    assert SENT == [2]
