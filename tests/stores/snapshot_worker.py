"""Snapshot store checks that need real processes: deciding at once, and a claim dying with its process.

Run as ``python -m tests.stores.snapshot_worker decide|hold STORE SNAPSHOT_ID ...`` (STORE as
``open_snapshot_store`` takes it); the tests use :func:`two_processes_decide` and
:func:`claim_dies_with_its_process`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.errors import DecisionConflictError, SnapshotUnavailableError
from handrail.stores._snapshot_locations import open_snapshot_store
from handrail.stores.types import SnapshotStore

REPO_ROOT = Path(__file__).resolve().parents[2]
_DECISIONS = {
    "approve": ToolExecutionDecision("transfer", execute=True, tool_call_id="c1"),
    "reject": ToolExecutionDecision("transfer", execute=False, tool_call_id="c1", feedback="no"),
}


def _start(*args: str) -> subprocess.Popen[str]:
    paths = [str(REPO_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    command = [sys.executable, "-m", "tests.stores.snapshot_worker", *args]
    return subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def poll(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    """Wait until ``condition()`` holds (a generous deadline: this is not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def two_processes_decide(store: str, snapshot_id: str, gate: Path) -> list[dict[str, Any]]:
    """Two processes record different decisions for call c1 of one snapshot at the same moment.

    Returns:
        Their reports, sorted by outcome (``"conflict"`` before ``"recorded"``).
    """
    gate.mkdir(parents=True, exist_ok=True)
    processes = [_start("decide", store, snapshot_id, verdict, str(gate)) for verdict in ("approve", "reject")]
    try:
        poll(lambda: len(list(gate.glob("ready-*"))) == 2 or any(p.poll() is not None for p in processes), "workers")
        (gate / "go").write_text("")
        reports = []
        for process in processes:
            out, err = process.communicate(timeout=120)
            assert process.returncode == 0, err
            reports.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.communicate()
    return sorted(reports, key=lambda r: str(r["outcome"]))


def claim_dies_with_its_process(store: str, snapshot_id: str, here: SnapshotStore) -> None:
    """A process claims the snapshot and is SIGKILLed: the claim is refused while it lives, then free again."""
    process = _start("hold", store, snapshot_id)
    try:
        line = process.stdout.readline() if process.stdout else ""
        assert line.strip() == "claimed", (
            line,
            process.communicate(timeout=60)[1] if process.poll() is not None else "",
        )
        try:
            here.claim(snapshot_id)
        except SnapshotUnavailableError:
            pass
        else:
            raise AssertionError("a second claim succeeded while another process held the first")
    finally:
        process.kill()
        process.communicate(timeout=60)

    def claimable() -> bool:
        try:
            here.claim(snapshot_id).release()
        except SnapshotUnavailableError:
            return False
        return True

    poll(claimable, "the dead process's claim to be released")


def _decide(store: SnapshotStore, snapshot_id: str, verdict: str, gate: Path) -> dict[str, Any]:
    store.load(snapshot_id)  # connect and read before the race starts
    (gate / f"ready-{os.getpid()}").write_text("")
    poll(lambda: (gate / "go").exists(), "the go signal")
    try:
        store.record_decision(snapshot_id, _DECISIONS[verdict], decided_by=verdict)
    except DecisionConflictError as exc:
        return {"outcome": "conflict", "verdict": verdict, "message": str(exc)}
    except Exception as exc:
        return {"outcome": "error", "verdict": verdict, "type": type(exc).__name__, "message": str(exc)}
    return {"outcome": "recorded", "verdict": verdict}


def main(argv: list[str]) -> int:
    command, location, snapshot_id, *rest = argv
    store = open_snapshot_store(location)
    if command == "decide":
        print(json.dumps(_decide(store, snapshot_id, rest[0], Path(rest[1]))), flush=True)
        return 0
    if command == "hold":
        store.claim(snapshot_id)
        print("claimed", flush=True)
        time.sleep(600)
        return 0
    raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
