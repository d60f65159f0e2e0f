"""Run one ``handrail`` command line in a process of its own, when a gate opens.

``python -m tests.cli.cli_worker GATE NAME ARGS...`` imports the CLI, writes ``GATE/ready-NAME``, waits for
``GATE/go`` and runs ``handrail ARGS...``, exiting with its exit code. :func:`run_together` starts several
at once and opens the gate when all are ready, so their commands overlap.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.stores.snapshot_worker import REPO_ROOT, poll


def _start(gate: Path, name: str, args: list[str]) -> subprocess.Popen[str]:
    paths = [str(REPO_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "COLUMNS": "400"}
    command = [sys.executable, "-m", "tests.cli.cli_worker", str(gate), name, *args]
    return subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run_together(gate: Path, commands: dict[str, list[str]]) -> dict[str, subprocess.CompletedProcess[str]]:
    """Run each named ``handrail`` command line in its own process, all released at the same moment.

    Returns:
        ``{name: the finished process (returncode, stdout, stderr)}``.
    """
    gate.mkdir(parents=True, exist_ok=True)
    processes = {name: _start(gate, name, args) for name, args in commands.items()}
    try:
        poll(
            lambda: (
                len(list(gate.glob("ready-*"))) == len(processes)
                or any(p.poll() is not None for p in processes.values())
            ),
            "the workers to start",
        )
        (gate / "go").write_text("", encoding="utf-8")
        done = {}
        for name, process in processes.items():
            out, err = process.communicate(timeout=120)
            done[name] = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.kill()
                process.communicate()
    return done


def main() -> None:
    gate, name, *args = sys.argv[1:]
    from handrail.cli import main as handrail

    (Path(gate) / f"ready-{name}").write_text("", encoding="utf-8")
    while not (Path(gate) / "go").exists():
        time.sleep(0.001)
    handrail.main(args=args, prog_name="handrail")


if __name__ == "__main__":
    main()
