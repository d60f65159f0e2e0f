"""Real processes sharing one store's tokens, event log and run claims (the ServiceStore's cross-process rules).

Run as ``python -m tests.stores.service_worker STORE COMMAND ARGS...`` (STORE as ``open_snapshot_store`` takes
it); the tests use the helpers below. Commands:

* ``authenticate TEXT``: prints ``{"token": <the token's record as a dict, or null>}``.
* ``append N GATE``: writes ``GATE/ready-<pid>``, waits for ``GATE/go``, appends N run events, prints the ids.
* ``wait AFTER TIMEOUT GATE``: writes ``GATE/ready-<pid>`` just before waiting, prints ``{"woke": bool}``.
* ``claim RUN_ID GATE``: claims the run, writes ``GATE/claimed-<pid>`` and sleeps until it is killed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from handrail.stores._snapshot_locations import open_snapshot_store
from handrail.testing.store_suites.approvals import T0
from tests.stores.snapshot_worker import REPO_ROOT, poll


def start(store: str, *args: str) -> subprocess.Popen[str]:
    """Start a worker process."""
    paths = [str(REPO_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    command = [sys.executable, "-m", "tests.stores.service_worker", store, *args]
    return subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def report(process: subprocess.Popen[str]) -> Any:
    """The JSON a worker printed last (it must have exited with 0)."""
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def two_processes_append(store: str, count: int, gate: Path) -> list[list[int]]:
    """Two processes append ``count`` events each, started together; returns each one's ids."""
    gate.mkdir(parents=True, exist_ok=True)
    processes = [start(store, "append", str(count), str(gate)) for _ in range(2)]
    try:
        poll(lambda: len(list(gate.glob("ready-*"))) == 2 or any(p.poll() is not None for p in processes), "workers")
        (gate / "go").write_text("")
        return [report(p)["ids"] for p in processes]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.communicate()


def kill_holder_of_claim(store: str, run_id: str, gate: Path) -> subprocess.Popen[str]:
    """A process that holds the run's claim (returned once it holds it); the caller kills it."""
    gate.mkdir(parents=True, exist_ok=True)
    process = start(store, "claim", run_id, str(gate))
    poll(lambda: any(gate.glob("claimed-*")) or process.poll() is not None, "the claim")
    assert process.poll() is None, process.communicate()[1]
    return process


def sigkill(process: subprocess.Popen[str]) -> None:
    """Kill with SIGKILL (no cleanup runs) and reap it."""
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=60)


# -- the checks each backend's test module runs (``store``: a handle in this process; ``where``: its location) --


def check_a_token_added_here_authenticates_in_another_process(store: Any, where: str) -> None:
    info, text = store.add_token("ann", "approver", tools=("read_*",), at=T0)
    found = report(start(where, "authenticate", text))["token"]
    assert found is not None
    assert (found["token_id"], found["name"], found["tools"]) == (info.token_id, "ann", ["read_*"])
    store.revoke_token("ann", at=T0)
    assert report(start(where, "authenticate", text))["token"] is None


def check_two_processes_appending_at_once_get_distinct_increasing_ids(store: Any, where: str, gate: Path) -> None:
    first, second = two_processes_append(where, 200, gate)
    assert first == sorted(first) and second == sorted(second)
    assert len(set(first) | set(second)) == 400
    logged = [e.id for e in store.events_after(0, limit=1000).events]
    assert logged == sorted(first + second)


def check_a_waiter_in_another_process_wakes_when_one_is_appended(store: Any, where: str, gate: Path) -> None:
    gate.mkdir(parents=True, exist_ok=True)
    last = store.append_event("run.started", {}, at=T0).id
    waiter = start(where, "wait", str(last), "60", str(gate))
    try:
        poll(lambda: any(gate.glob("ready-*")) or waiter.poll() is not None, "the waiter")
        store.append_event("run.finished", {}, at=T0)
        assert report(waiter) == {"woke": True}
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.communicate()


def check_a_claim_held_by_a_killed_process_becomes_free(store: Any, where: str, gate: Path) -> None:
    holder = kill_holder_of_claim(where, "run-1", gate)
    try:
        assert store.claim_run("run-1") is None
    finally:
        sigkill(holder)
    leases: list[Any] = []
    poll(lambda: leases.append(store.claim_run("run-1")) or leases[-1] is not None, "the claim to be free")
    leases[-1].release()


def main(argv: list[str]) -> int:
    location, command, *args = argv
    store: Any = open_snapshot_store(location)
    if command == "authenticate":
        found = store.authenticate(args[0])
        print(json.dumps({"token": None if found is None else dataclasses.asdict(found)}, default=str), flush=True)
    elif command == "append":
        count, gate = int(args[0]), Path(args[1])
        store.events_after(0, limit=1)  # connect (and migrate) before the race starts
        (gate / f"ready-{os.getpid()}").write_text("")
        poll(lambda: (gate / "go").exists(), "the go signal")
        ids = [store.append_event("run.resumed", {"pid": os.getpid(), "i": i}, at=T0).id for i in range(count)]
        print(json.dumps({"ids": ids}), flush=True)
    elif command == "wait":
        after, timeout, gate = int(args[0]), float(args[1]), Path(args[2])
        store.events_after(0, limit=1)
        (gate / f"ready-{os.getpid()}").write_text("")
        print(json.dumps({"woke": store.wait_for_events(after, timeout=timeout)}), flush=True)
    elif command == "claim":
        lease = store.claim_run(args[0])
        if lease is None:
            print(json.dumps({"claimed": False}), flush=True)
            return 1
        (Path(args[1]) / f"claimed-{os.getpid()}").write_text("")
        while True:
            time.sleep(60)
    store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
