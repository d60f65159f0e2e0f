"""Worker processes for the crash tests: start one (``tests.temporal._worker_main``), wait for it, ``kill -9`` it.

Shared by ``tests/temporal/test_kill.py`` and ``bench/temporal_recovery.py``.
"""

from __future__ import annotations

import asyncio
import collections
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.temporal._worker_main import marker_name, read_effects

_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Site:
    """Where the worker processes of one test meet: the server, the queue, the ledger, the effects, the markers."""

    address: str
    task_queue: str
    ledger: str
    dir: Path
    workers: list[WorkerProcess] = field(default_factory=list)

    @property
    def effects(self) -> Path:
        return self.dir / "effects.log"

    @property
    def markers(self) -> Path:
        return self.dir / "markers"

    def worker(self, name: str, **knobs: float) -> WorkerProcess:
        """Start worker process ``name`` (knobs: sleep_before, sleep_after, answer_sleep); not yet waited for."""
        proc = WorkerProcess(self, name, knobs)
        self.workers.append(proc)
        return proc

    async def ready(self, name: str, **knobs: float) -> WorkerProcess:
        """Start worker process ``name`` and wait until it polls."""
        proc = self.worker(name, **knobs)
        await proc.wait_ready()
        return proc

    def effect_counts(self) -> collections.Counter[str]:
        """How many times each ref's effect happened."""
        return collections.Counter(read_effects(self.effects))

    def marked(self, event: str, ref: str, worker: str | None = None) -> bool:
        """Whether ``event`` happened for ``ref`` (on ``worker``, or on any)."""
        if worker is not None:
            return (self.markers / marker_name(event, worker, ref)).exists()
        return any(self.markers.glob(marker_name(event, "*", ref)))

    def refs_marked(self, event: str, worker: str) -> set[str]:
        """The refs (``RUN/c1``, as ``RUN_c1``) of the ``event`` markers ``worker`` wrote."""
        prefix = f"{event}.{worker}."
        return {p.name[len(prefix) :] for p in self.markers.glob(prefix + "*")}

    async def until(self, condition: Any, what: str, timeout: float = 30.0) -> None:
        """Wait until ``condition()`` holds (a failure guard, not a time assertion)."""
        deadline = time.monotonic() + timeout
        while not condition():
            for w in self.workers:
                w.check_alive_if_expected()
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: not within {timeout} s{self.logs()}")
            await asyncio.sleep(0.02)

    def logs(self) -> str:
        return "".join(f"\n--- worker {w.name} log:\n{w.log_text()[-3000:]}" for w in self.workers)

    def stop_all(self) -> None:
        for w in self.workers:
            w.kill()


class WorkerProcess:
    """One worker process."""

    def __init__(self, site: Site, name: str, knobs: dict[str, float]) -> None:
        self.site = site
        self.name = name
        self.log = site.dir / f"worker-{name}.log"
        args = [sys.executable, "-m", "tests.temporal._worker_main", "--address", site.address,
                "--task-queue", site.task_queue, "--ledger", site.ledger, "--effects", str(site.effects),
                "--markers", str(site.markers), "--name", name]  # fmt: skip
        for key, value in knobs.items():
            args += [f"--{key.replace('_', '-')}", str(value)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(_ROOT / "src"), str(_ROOT)])}
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(args, cwd=_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        self.killed = False

    async def wait_ready(self, timeout: float = 30.0) -> None:
        ready = self.site.markers / f"ready.{self.name}"
        await self.site.until(ready.exists, f"worker {self.name} ready", timeout)

    def check_alive_if_expected(self) -> None:
        if not self.killed and self.process.poll() is not None:
            self.killed = True  # report once
            raise AssertionError(f"worker {self.name} exited with {self.process.returncode}:\n{self.log_text()}")

    def kill(self) -> None:
        """``kill -9`` the worker (no-op when it is gone) and reap it."""
        self.killed = True
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""
