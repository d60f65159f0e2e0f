"""``handrail worker`` processes for the service tests, and waiting on a store's event log."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from handrail.server import RunLauncher
from tests.server._agents import AGENT_FILE, GATE_ENV, LEDGER_ENV
from tests.stores.snapshot_worker import REPO_ROOT, poll

__all__ = ["Workers", "paused_runs", "read_fifo", "wait_until_ended"]


class Workers:
    """``handrail worker`` processes on one store, stopped (SIGTERM, then kill) at the end."""

    def __init__(self, store_url: str, agents: Path, ledger: Path, gate: Path) -> None:
        self.store_url, self.agents, self.ledger, self.gate = store_url, agents, ledger, gate
        self.processes: list[subprocess.Popen[str]] = []

    @classmethod
    def in_folder(cls, store_url: str, folder: Path) -> Workers:
        """Workers running the payer agent file of ``folder/agents``, their ledger and gate in ``folder``."""
        agents = folder / "agents"
        agents.mkdir()
        (agents / "payer.yaml").write_text(AGENT_FILE, encoding="utf-8")
        gate = folder / "gate"
        gate.mkdir()
        return cls(store_url, agents, folder / "ledger.txt", gate)

    def start(self, *options: str) -> subprocess.Popen[str]:
        paths = [str(REPO_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), LEDGER_ENV: str(self.ledger),
               GATE_ENV: str(self.gate), "COLUMNS": "400"}  # fmt: skip
        command = [sys.executable, "-m", "handrail.cli", "worker", "--store", self.store_url, "--agents",
                   str(self.agents), "--allow-module", "tests.server", *options]  # fmt: skip
        process = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)  # fmt: skip
        self.processes.append(process)
        first = process.stdout.readline() if process.stdout else ""
        assert first.startswith("handrail worker: watching"), (first, process.communicate(timeout=30))
        return process

    def stop(self, process: subprocess.Popen[str]) -> tuple[int, str, str]:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
        return process.returncode, out, err

    def close(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
                process.communicate()


def paused_runs(store: Any, agents: Path, texts: list[str]) -> list[str]:
    launcher = RunLauncher(store, agents_dir=agents)
    try:
        runs = [launcher.start_run("payer", [text]).run_id for text in texts]
        assert launcher.wait(120)
    finally:
        launcher.close()
    assert all(store.get_run(r).status == "paused" for r in runs)
    return runs


def read_fifo(path: Path, timeout: float = 120) -> bytes:
    """What a writer of the FIFO ``path`` writes first (waiting for it at most ``timeout`` seconds)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
        assert ready, f"nobody wrote to {path}"
        return os.read(fd, 100)
    finally:
        os.close(fd)


def wait_until_ended(store: Any, runs: list[str], timeout: float = 120) -> None:
    """Wait on the store's event log until every run is finished or failed."""
    after = 0

    def ended() -> bool:
        nonlocal after
        store.wait_for_events(after, timeout=1.0)
        after = store.events_after(0, limit=1).last_id
        return all(store.get_run(r).status in ("finished", "failed") for r in runs)

    poll(ended, "the runs to end", timeout=timeout)
