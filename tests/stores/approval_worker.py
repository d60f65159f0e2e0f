"""Two real processes decide one approval at the same moment: exactly one wins.

Run as ``python -m tests.stores.approval_worker STORE APPROVAL_ID VERDICT GATE`` (STORE as
``open_snapshot_store`` takes it); the tests use :func:`two_processes_decide_an_approval`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from handrail.errors import ApprovalConflictError
from handrail.stores._snapshot_locations import open_snapshot_store
from handrail.testing.store_suites.approvals import T0
from tests.stores.snapshot_worker import REPO_ROOT, poll


def two_processes_decide_an_approval(store: str, approval_id: str, gate: Path) -> list[dict[str, Any]]:
    """Returns the two processes' reports, sorted by outcome (``"refused"`` before ``"won"``)."""
    gate.mkdir(parents=True, exist_ok=True)
    paths = [str(REPO_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.stores.approval_worker", store, approval_id, verdict, str(gate)],
            cwd=REPO_ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for verdict in ("approve", "reject")
    ]
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


def main(argv: list[str]) -> int:
    location, approval_id, verdict, gate = argv
    store: Any = open_snapshot_store(location)
    store.get_approval(approval_id)  # connect and read before the race starts
    (Path(gate) / f"ready-{os.getpid()}").write_text("")
    poll(lambda: (Path(gate) / "go").exists(), "the go signal")
    try:
        store.decide_approval(approval_id, verdict, expected_version=1, principal=verdict, at=T0)
    except ApprovalConflictError as exc:
        report = {"outcome": "refused", "verdict": verdict, "type": type(exc).__name__, "message": str(exc)}
    else:
        report = {"outcome": "won", "verdict": verdict}
    print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
