"""A run started over HTTP on one ``handrail serve``, which is killed with SIGKILL; a second server finishes it."""

from __future__ import annotations

import os
import signal
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from handrail.stores import open_snapshot_store
from tests.server._agents import AGENT_FILE, GATE_ENV, LEDGER_ENV, ledger_lines
from tests.server._processes import ServeProcess, serving, start_serve
from tests.server._workers import read_fifo
from tests.server.conftest import bearer

WAIT = 120.0


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str, list[str], dict[str, str]]:
    """``(store URL, admin token, serve options, env)`` for servers running the payer agent file."""
    url = (
        f"sqlite:///{tmp_path / 'service.db'}" if request.param == "sqlite" else request.getfixturevalue("postgres_dsn")
    )
    store: Any = open_snapshot_store(url)
    _, token = store.add_token("ada", "admin", at=datetime.now(UTC))
    store.close()
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "payer.yaml").write_text(AGENT_FILE, encoding="utf-8")
    (tmp_path / "gate").mkdir()
    env = {LEDGER_ENV: str(tmp_path / "ledger.txt"), GATE_ENV: str(tmp_path / "gate")}
    return url, token, ["--agents", str(agents), "--allow-module", "tests.server"], env


def _run(server: ServeProcess, token: str, run_id: str) -> dict[str, Any]:
    return httpx.get(f"{server.url}/api/v1/runs/{run_id}", headers=bearer(token), timeout=30).json()  # type: ignore[no-any-return]


def _until(server: ServeProcess, token: str, run_id: str, statuses: tuple[str, ...]) -> dict[str, Any]:
    """The run once its status is one of ``statuses`` (a generous deadline: not a timing assertion)."""
    deadline = time.monotonic() + WAIT
    while True:
        found = _run(server, token, run_id)
        if found["run"]["status"] in statuses:
            return found
        assert time.monotonic() < deadline, found
        time.sleep(0.02)


def _start(server: ServeProcess, token: str, text: str) -> str:
    started = httpx.post(f"{server.url}/api/v1/runs", json={"agent_name": "payer", "messages": [text]},
                         headers=bearer(token), timeout=30)  # fmt: skip
    assert started.status_code == 201, started.text
    return str(started.json()["run"]["run_id"])


def _approve(server: ServeProcess, token: str, run: dict[str, Any]) -> None:
    (approval,) = run["pending"]
    decided = httpx.post(f"{server.url}/api/v1/approvals/{approval['id']}/decision", json={"decision": "approve"},
                         headers=bearer(token), timeout=30)  # fmt: skip
    assert decided.status_code == 200, decided.text


def test_a_paused_run_of_a_killed_server_is_approved_and_finished_through_another(
    place: tuple[str, str, list[str], dict[str, str]],
) -> None:
    url, token, options, env = place
    first = start_serve(url, *options, env=env)
    try:
        run_id = _start(first, token, "pay 5")
        paused = _until(first, token, run_id, ("paused",))
    finally:
        first.process.kill()  # SIGKILL: no shutdown, nothing flushed
        first.process.communicate(timeout=60)
    assert first.process.returncode == -signal.SIGKILL
    with serving(url, *options, env=env) as second:
        _approve(second, token, paused)
        done = _until(second, token, run_id, ("finished", "failed"))
        lines = ledger_lines(Path(env[LEDGER_ENV]))
        assert lines == [f"5 {second.process.pid}"]  # ran once, in the second server
    assert done["run"]["status"] == "finished" and done["run"]["initiator"] == "ada"
    assert done["run"]["result"]["last_message"]["content"][0]["text"] == "paid: sent 5"


def test_a_server_killed_inside_the_tool_is_taken_over_by_another(
    place: tuple[str, str, list[str], dict[str, str]],
) -> None:
    url, token, options, env = place
    gate = Path(env[GATE_ENV])
    first = start_serve(url, *options, env=env)
    try:
        run_id = _start(first, token, "pay 7")
        paused = _until(first, token, run_id, ("paused",))
        (gate / "hold").write_text("", encoding="utf-8")
        os.mkfifo(gate / "started")
        os.mkfifo(gate / "release")
        _approve(first, token, paused)  # its resumer continues the run and blocks inside transfer
        assert read_fifo(gate / "started") == b"started\n"
    finally:
        first.process.kill()
        first.process.communicate(timeout=60)
    (gate / "hold").unlink()
    with serving(url, *options, env=env) as second:
        done = _until(second, token, run_id, ("finished", "failed"))
    assert ledger_lines(Path(env[LEDGER_ENV])) == [f"7 {first.process.pid}"]  # never run twice
    assert done["run"]["status"] == "finished"
    assert "Outcome unknown" in done["run"]["result"]["last_message"]["content"][0]["text"]
