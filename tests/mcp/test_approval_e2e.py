"""An MCP tool's call approved (or rejected) later, through the approval service, across real processes.

1. Process A (``python -m tests.mcp._approval_processes start``) starts a run of the agent ``files``
   (tests/mcp/_approval_agent.py): a scripted model asks for the test double's ``delete_file`` over stdio, which
   the server marks destructive, so the toolset's ``BreakpointConfirmationStrategy`` pauses the run into a SQLite
   store. A exits; the double's process it started is gone.
2. The approval service (``python -m tests.mcp._approval_processes serve``: ``handrail.server.serve`` with the
   agent as a Python factory, on 127.0.0.1) lists the pending approval over its HTTP API; the preview shows the
   server, the tool's name on the server, its hints and the arguments. An approver decides it over HTTP, with a
   bearer token.
3. The service's resumer continues the run in its own process: a new MCP connection to a new double process,
   ``delete_file`` runs exactly once there (counted in the double's log file), and the run finishes with the
   model's scripted answer. Rejected instead, the model reads the rejection and ``delete_file`` never runs.

Timeouts are generous "does not hang" bounds; nothing asserts on wall time.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from handrail.stores import SQLiteSnapshotStore
from tests.mcp._approval_agent import ANSWER, SEEN_ENV, SERVER, seen
from tests.mcp.conftest import wait_until
from tests.mcp.server_double import LOG_ENV, log_lines
from tests.server._processes import REPO, ServeProcess, serving

TIMEOUT = 120.0
"""Seconds a process or a run may take before the test calls it hung (the machine may be loaded)."""
TEXT = "Delete notes.txt, please."


@dataclass
class Setup:
    """The store, the files the processes write, and their environment."""

    store_url: str
    log: Path
    seen: Path
    env: dict[str, str]
    token: str


@pytest.fixture
def setup(tmp_path: Path) -> Setup:
    """A SQLite store holding an approver's token; the double's log and the model's reading file, empty."""
    path = tmp_path / "service.db"
    store = SQLiteSnapshotStore(path)
    try:
        _, token = store.add_token("ann", "approver", at=datetime.now(UTC))
    finally:
        store.close()
    log, read = tmp_path / "double.log", tmp_path / "seen.jsonl"
    paths = [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), LOG_ENV: str(log), SEEN_ENV: str(read)}
    return Setup(f"sqlite:///{path}", log, read, env, token)


@pytest.fixture
def service(setup: Setup) -> Iterator[ServeProcess]:
    """The approval service over the store (stopped with SIGTERM at the end)."""
    with serving(setup.store_url, env=setup.env, module="tests.mcp._approval_processes") as server:
        yield server


def start_run(setup: Setup) -> str:
    """Process A: start the run, which pauses; the run's id, once A has exited."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.mcp._approval_processes", "start", setup.store_url, TEXT],
        cwd=REPO, env=setup.env, capture_output=True, text=True, timeout=TIMEOUT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout.strip().splitlines()[-1])
    assert printed["status"] == "paused", printed
    return str(printed["run_id"])


def server_pids(setup: Setup) -> list[int]:
    """The double's processes so far, in start order (from its log)."""
    return [int(words[1]) for words in log_lines(setup.log) if words[0] == "start"]


def deletions(setup: Setup) -> list[list[str]]:
    """One ``["delete_file", PATH, PID]`` per execution of ``delete_file``, in any process."""
    return [words for words in log_lines(setup.log) if words[0] == "delete_file"]


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie does not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except OSError:
        return False
    return "\nState:\tZ" not in status


def api(server: ServeProcess, token: str) -> httpx.Client:
    return httpx.Client(base_url=f"{server.url}/api/v1", headers={"Authorization": f"Bearer {token}"}, timeout=30)


def wait_for_run(client: httpx.Client, run_id: str) -> dict[str, Any]:
    """``GET /runs/{id}`` until the run is finished or failed (the service's resumer drives it)."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        answer = client.get(f"/runs/{run_id}")
        assert answer.status_code == 200, answer.text
        run: dict[str, Any] = answer.json()["run"]
        if run["status"] in ("finished", "failed"):
            return run
        assert time.monotonic() < deadline, f"the run is still {run['status']} after {TIMEOUT:g} s"
        time.sleep(0.1)


def paused_in_process_a(setup: Setup) -> tuple[str, int]:
    """Step 1 of both tests: the run, paused by process A, whose double process is gone. (run id, that pid)"""
    run_id = start_run(setup)
    (first_server,) = server_pids(setup)  # A started one double process and called nothing on it
    assert deletions(setup) == [] and seen(setup.seen) == []
    assert wait_until(lambda: not alive(first_server), timeout=TIMEOUT), "process A's MCP server outlived it"
    return run_id, first_server


def pending_approval(client: httpx.Client, run_id: str) -> dict[str, Any]:
    """The run's one pending approval, as the approver lists it."""
    listed = client.get("/approvals", params={"status": "pending"})
    assert listed.status_code == 200, listed.text
    (approval,) = listed.json()["items"]
    assert approval["run_id"] == run_id and approval["agent_name"] == "files"
    assert approval["tool_name"] == "delete_file" and approval["arguments"] == {"path": "notes.txt"}
    return dict(approval)


def test_an_mcp_call_paused_in_one_process_is_approved_over_http_and_runs_once_in_another(
    setup: Setup, service: ServeProcess
) -> None:
    run_id, first_server = paused_in_process_a(setup)
    with api(service, setup.token) as client:
        approval = pending_approval(client, run_id)
        assert f"MCP server '{SERVER}', tool 'delete_file'" in approval["tool_description"]
        assert "destructive=True" in approval["tool_description"]

        answer = client.get(f"/approvals/{approval['id']}/preview")
        assert answer.status_code == 200, answer.text
        preview = answer.json()["preview"]
        assert preview is not None, answer.json()["unavailable"]
        assert preview["kind"] == "json" and preview["title"] == f"{SERVER} · delete_file"
        assert json.loads(preview["content"]) == {
            "server": SERVER, "tool": "delete_file", "hints (from the server, unverified)": {"destructive_hint": True},
            "arguments": {"path": "notes.txt"},
        }  # fmt: skip
        assert deletions(setup) == []  # a preview calls nothing

        decided = client.post(f"/approvals/{approval['id']}/decision", json={"decision": "approve"})
        assert decided.status_code == 200, decided.text
        assert decided.json()["approval"]["status"] == "approved"
        assert decided.json()["approval"]["decided_by"] == "ann"

        run = wait_for_run(client, run_id)
    assert run["status"] == "finished", run
    assert run["result"]["last_message"]["content"] == [{"text": ANSWER[0].text}]
    ((_, path, pid),) = deletions(setup)  # exactly once
    assert path == "notes.txt" and int(pid) != first_server
    assert server_pids(setup) == [first_server, int(pid)]  # one more process: the service's, for preview and call
    assert seen(setup.seen) == [{"tool": "delete_file", "result": "deleted notes.txt", "error": False}]

    assert service.stop() in (0, -signal.SIGTERM)  # uvicorn re-raises the signal once it has shut down
    assert wait_until(lambda: not any(alive(p) for p in server_pids(setup)), timeout=TIMEOUT)
    assert len(deletions(setup)) == 1


def test_an_mcp_call_rejected_over_http_never_runs_and_the_model_reads_the_rejection(
    setup: Setup, service: ServeProcess
) -> None:
    run_id, _ = paused_in_process_a(setup)
    with api(service, setup.token) as client:
        approval = pending_approval(client, run_id)
        decided = client.post(f"/approvals/{approval['id']}/decision",
                              json={"decision": "reject", "feedback": "Keep my notes."})  # fmt: skip
        assert decided.status_code == 200, decided.text
        assert decided.json()["approval"]["status"] == "rejected"
        run = wait_for_run(client, run_id)
    assert run["status"] == "finished", run
    assert run["result"]["last_message"]["content"] == [{"text": ANSWER[0].text}]
    (told,) = seen(setup.seen)
    assert told["tool"] == "delete_file" and told["error"] is True
    assert "delete_file" in told["result"] and "Keep my notes." in told["result"]
    assert service.stop() in (0, -signal.SIGTERM)  # uvicorn re-raises the signal once it has shut down
    assert deletions(setup) == []
