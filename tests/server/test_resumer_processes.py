"""Resumers in several processes (``handrail worker``) on one store: each decided run continued exactly once.

The workers run the payer agent file (``tests/server/_agents.py``); its ``transfer`` writes a line per execution
to a ledger file, which the tests count (not log lines). The kill -9 tests hold a worker inside ``transfer``
(blocked on a FIFO), kill it, and let another worker take the run over under ``--unknown-outcome``.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.server._agents import ledger_lines
from tests.server._workers import Workers, paused_runs, read_fifo, wait_until_ended
from tests.server.test_resumer import approve_all


@pytest.fixture
def store(any_store: Any) -> Any:
    """A directory, SQLite or PostgreSQL store (``any_store``)."""
    return any_store


def test_two_workers_on_one_store_run_each_decided_call_exactly_once(store: Any, workers: Workers) -> None:
    runs = paused_runs(store, workers.agents, [f"pay {n}" for n in range(100, 120)])
    first, second = workers.start(), workers.start()
    for run_id in runs:
        approve_all(store, run_id)
    wait_until_ended(store, runs)
    assert {store.get_run(r).status for r in runs} == {"finished"}
    amounts = sorted(int(line.split()[0]) for line in ledger_lines(workers.ledger))
    assert amounts == list(range(100, 120))  # every call once: none lost, none twice
    outputs = [workers.stop(p) for p in (first, second)]
    assert [code for code, _, _ in outputs] == [0, 0], outputs
    finished = [line for _, out, _ in outputs for line in out.splitlines() if line.startswith("finished run")]
    assert len(finished) == 20 and all("exit text, 2 steps: paid: sent 1" in line for line in finished)


@pytest.mark.parametrize(("policy", "executions", "words"), [
    ("fail", 1, "Outcome unknown: the process running tool 'transfer'"),
    ("retry", 2, "paid: sent 7"),
])  # fmt: skip
def test_a_worker_killed_mid_tool_is_taken_over_and_the_call_follows_unknown_outcome(
    store: Any, workers: Workers, policy: str, executions: int, words: str
) -> None:
    (run_id,) = paused_runs(store, workers.agents, ["pay 7"])
    (workers.gate / "hold").write_text("", encoding="utf-8")
    os.mkfifo(workers.gate / "started")
    os.mkfifo(workers.gate / "release")
    doomed = workers.start()
    approve_all(store, run_id)
    assert read_fifo(workers.gate / "started") == b"started\n"  # the tool is inside the call now
    assert len(ledger_lines(workers.ledger)) == 1 and store.get_run(run_id).status == "running"
    (workers.gate / "hold").unlink()  # a retried call does not block again
    taker = workers.start("--unknown-outcome", policy)  # watching already: the run is held by the doomed worker
    doomed.kill()  # SIGKILL in the middle of the call: its claims die with it
    doomed.communicate(timeout=60)
    wait_until_ended(store, [run_id])
    record = store.get_run(run_id)
    assert record.status == "finished", record
    assert words in record.result["last_message"]["content"][0]["text"]
    assert len(ledger_lines(workers.ledger)) == executions
    code, out, _ = workers.stop(taker)
    assert code == 0 and f"finished run {run_id}" in out
