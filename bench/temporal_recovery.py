"""Measure how fast a handrail run on Temporal recovers from a ``kill -9`` of its worker (not a test).

Usage: python bench/temporal_recovery.py [--reps 5]

Needs the ``temporal-dev`` extra (temporalio, and the ``temporal`` binary next to the Python executable); runs an
in-memory dev server on 127.0.0.1 and worker processes of ``tests/temporal/_worker_main.py``. Each case kills the
worker holding the run while a second worker already polls, and prints the median (and range) of ``--reps``
repetitions of the wall time from the kill to:

* ``mid-tool``: the run's completion, the worker killed after the tool's effect, before the activity completed
  (the idempotent tool under ``unknown_outcome="retry"``: it runs again on the other worker without asking);
* ``mid-model``: the run's completion, the worker killed while the model reads the tool's result (a local
  activity inside a workflow task);
* ``waiting``: the decision applied (``decide`` returns), the worker killed while the run waits for approval, the
  decision sent right after the kill.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.temporal._procs import Site
from tests.temporal.conftest import DevServer

from handrail import temporal as ht


async def one(address: str, case: str, heartbeat: float) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        site = Site(address, f"bench-{uuid.uuid4().hex[:8]}", f"sqlite:///{Path(tmp) / 'ledger.db'}", Path(tmp))
        store = ht.open_temporal_store(site.ledger)
        try:
            client = await ht.connect(address, store)
            knobs = {"mid-tool": {"sleep_after": 60.0}, "mid-model": {"answer_sleep": 60.0}, "waiting": {}}[case]
            a = await site.ready("a", **knobs)
            run = f"b{uuid.uuid4().hex[:8]}"
            ref = f"{run}/c1"
            options = ht.RunOptions(unknown_outcome="retry", heartbeat_seconds=heartbeat)
            await ht.start_run(client, "pay_once", f"pay for {run}", task_queue=site.task_queue, run_id=run,
                               options=options)  # fmt: skip
            while not (await ht.describe(client, run)).get("waiting"):
                await asyncio.sleep(0.02)
            if case == "waiting":
                await site.ready("b")
                a.kill()
                start = time.monotonic()
                await ht.decide(client, run, "c1", "approve", decided_by="bench")
                took = time.monotonic() - start
                await ht.get_result(client, run)
                return took
            await ht.decide(client, run, "c1", "approve", decided_by="bench")
            event = "effect" if case == "mid-tool" else "answer"
            await site.until(lambda: site.marked(event, ref, "a"), f"{event} on a")
            await site.ready("b")
            a.kill()
            start = time.monotonic()
            await asyncio.wait_for(ht.get_result(client, run), 120)
            return time.monotonic() - start
        finally:
            site.stop_all()
            store.close()


async def main(reps: int) -> None:
    server = DevServer().start()
    rows = []
    try:
        for case, heartbeat in [("mid-tool", 1.0), ("mid-tool", 2.0), ("mid-model", 1.0), ("waiting", 1.0)]:
            times = [await one(server.address, case, heartbeat) for _ in range(reps)]
            rows.append((case, heartbeat, statistics.median(times), min(times), max(times)))
            print(f"{case} heartbeat={heartbeat}: {', '.join(f'{t:.2f}' for t in times)}", file=sys.stderr)
    finally:
        server.kill()
    print(f"| kill -9 of the worker | heartbeat_seconds | median of {reps} (s) | min–max (s) |")
    print("|---|---|---|---|")
    for case, heartbeat, median, low, high in rows:
        print(f"| {case} | {heartbeat} | {median:.2f} | {low:.2f}–{high:.2f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    asyncio.run(main(parser.parse_args().reps))
    sys.stdout.flush()
    os._exit(0)  # the SDK can abort at interpreter exit (sdk-python #300)
