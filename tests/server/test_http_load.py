"""Load, bounded and on loopback: 200 paused runs decided through the API by 4 concurrent clients.

Every client tries to approve every approval (in its own order), so most requests race another client's: each
approval gets exactly one 200 and the rest 409, and each run's tool runs exactly once (counted in the ledger file
the payer's ``transfer`` writes, across processes): 0 lost, 0 duplicated executions.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from handrail.stores import open_snapshot_store
from tests.server._agents import AGENT_FILE, LEDGER_ENV, ledger_lines
from tests.server._processes import serving
from tests.server.conftest import bearer

RUNS = 200
CLIENTS = 4
WAIT = 300.0


def _until(what: str, condition: Any) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_200_paused_runs_decided_by_4_clients_lose_nothing_and_run_nothing_twice(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = f"sqlite:///{tmp_path / 'load.db'}" if kind == "sqlite" else request.getfixturevalue("postgres_dsn")
    store: Any = open_snapshot_store(url)
    tokens = [store.add_token(f"approver-{i}", "approver", at=datetime.now(UTC))[1] for i in range(CLIENTS)]
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "payer.yaml").write_text(AGENT_FILE, encoding="utf-8")
    ledger = tmp_path / "ledger.txt"
    options = ("--agents", str(agents), "--allow-module", "tests.server")
    with (
        serving(url, *options, env={LEDGER_ENV: str(ledger)}) as server,
        httpx.Client(base_url=server.url, headers=bearer(tokens[0]), timeout=60) as client,
    ):
        amounts = list(range(1000, 1000 + RUNS))
        runs = [client.post("/api/v1/runs", json={"agent_name": "payer", "messages": [f"pay {a}"]}).json()["run"]
                for a in amounts]  # fmt: skip
        _until("every run to pause", lambda: client.get("/api/v1/approvals").json()["counts"]["pending"] == RUNS)
        ids: list[str] = []
        cursor = None
        while True:
            params = {"status": "pending", "limit": 100, **({"cursor": cursor} if cursor else {})}
            page = client.get("/api/v1/approvals", params=params).json()
            ids += [item["id"] for item in page["items"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert len(set(ids)) == RUNS
        outcomes: Counter[tuple[str, int]] = Counter()
        lock = threading.Lock()

        def decide(token: str, seed: int) -> None:
            order = ids[:]
            random.Random(seed).shuffle(order)
            with httpx.Client(base_url=server.url, headers=bearer(token), timeout=60) as mine:
                for approval_id in order:
                    status = mine.post(f"/api/v1/approvals/{approval_id}/decision", json={"decision": "approve"})
                    with lock:
                        outcomes[(approval_id, status.status_code)] += 1

        threads = [threading.Thread(target=decide, args=(t, i)) for i, t in enumerate(tokens)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for approval_id in ids:
            assert outcomes[(approval_id, 200)] == 1, approval_id
            assert outcomes[(approval_id, 409)] == CLIENTS - 1, (approval_id, outcomes)
        _until("every run to end", lambda: all(store.get_run(r["run_id"]).status == "finished" for r in runs))
    executed = [int(line.split()[0]) for line in ledger_lines(ledger)]
    assert sorted(executed) == amounts  # none lost, none twice
    store.close()
