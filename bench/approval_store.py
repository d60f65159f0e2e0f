"""Measure the approval store's hot paths (not a test): a pause holding many calls, expiring them, one decision.

Usage: python bench/approval_store.py [--calls 200] [--reps 5] [--json]

For a directory store and a SQLite file (and PostgreSQL when ``HANDRAIL_TEST_POSTGRES_DSN`` is set), each
figure is the median wall time of ``--reps`` repetitions, each on a fresh store (PostgreSQL: a fresh run):

* ``pause``: an Agent run whose one step calls ``transfer`` ``--calls`` times, every call held by a
  BreakpointConfirmationStrategy: the snapshot write plus one approval record per call (and its event).
* ``create_approvals``: the store's ``create_approvals`` of that many new approvals alone.
* ``expire_store``: the store's ``expire_approvals`` of that many due approvals alone.
* ``expire_service``: ``ApprovalService.expire_due`` of a paused run's due approvals: the store's sweep plus each
  expiry's decision written into the paused snapshot.
* ``decide_one``: ``ApprovalService.decide`` of one approval of the paused run (approval, audit entry, event and
  the snapshot's decision).
* ``wake``: from an ``append_event`` through one store object to the return of a ``wait_for_events`` waiting on
  another (a second "process"): the poll interval (50 ms) bounds it on SQLite and directories, ``NOTIFY`` on
  PostgreSQL (the median of 20).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.dataclasses.approval import Approval
from handrail.human_in_the_loop import BreakpointConfirmationStrategy, HITLBreakpointException
from handrail.human_in_the_loop.service import ApprovalService
from handrail.stores import open_snapshot_store
from handrail.stores.service import POLL_INTERVAL
from handrail.stores.snapshot_file import FileSnapshotStore
from handrail.stores.snapshot_sqlite import SQLiteSnapshotStore
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function

Factory = Callable[[Path], Any]


def transfer(amount: int) -> str:
    """Send money."""
    return f"sent {amount}"


def _pause(store: Any, calls: int, *, expires_after: timedelta | None = None) -> str:
    """Run until the one step's ``calls`` held calls pause the run; returns the snapshot id."""
    reply = ChatMessage.from_assistant(
        tool_calls=[ToolCall("transfer", {"amount": i}, id=f"c{i}") for i in range(calls)]
    )
    strategy = BreakpointConfirmationStrategy(snapshot_store=store, expires_after=expires_after)
    agent = Agent(chat_generator=ScriptedChatGenerator([reply]), tools=[create_tool_from_function(transfer)],
                  confirmation_strategies={"transfer": strategy})  # fmt: skip
    try:
        agent.run([ChatMessage.from_user("pay")])
    except HITLBreakpointException as paused:
        assert paused.snapshot.snapshot_id is not None
        return paused.snapshot.snapshot_id
    raise AssertionError("the run did not pause")


def _approvals(calls: int, run: str, expires: datetime | None) -> list[Approval]:
    now = datetime.now(UTC)
    return [
        Approval.new(
            run_id=run,
            tool_call_id=f"c{i}",
            snapshot_id=run,
            agent_name="bench",
            step=0,
            tool_name="transfer",
            tool_description="Send money.",
            arguments={"amount": i},
            arguments_schema={"type": "object"},
            description="",
            created_at=now,
            expires_at=expires,
        )
        for i in range(calls)
    ]


def _timed(action: Callable[..., object], *args: Any, **kwargs: Any) -> float:
    start = time.perf_counter()
    action(*args, **kwargs)
    return (time.perf_counter() - start) * 1000


def measure(make: Callable[[], Any], calls: int, reps: int) -> dict[str, float]:
    """The medians (ms) of one backend; ``make`` gives a fresh store (closed after each repetition)."""
    found: dict[str, list[float]] = {}

    def keep(name: str, ms: float) -> None:
        found.setdefault(name, []).append(ms)

    for rep in range(reps):
        with _fresh(make) as store:
            keep("pause", _timed(_pause, store, calls))
        with _fresh(make) as store:
            batch = _approvals(calls, f"bench-create-{rep}-{time.time_ns()}", None)
            keep("create_approvals", _timed(store.create_approvals, batch))
        with _fresh(make) as store:
            past = datetime.now(UTC) + timedelta(minutes=1)
            store.create_approvals(_approvals(calls, f"bench-expire-{rep}-{time.time_ns()}", past))
            keep("expire_store", _timed(store.expire_approvals, past + timedelta(minutes=1)))
        with _fresh(make) as store:
            _pause(store, calls, expires_after=timedelta(minutes=1))
            later = datetime.now(UTC) + timedelta(minutes=2)
            service = ApprovalService(store)
            keep("expire_service", _timed(service.expire_due, now=later))
        with _fresh(make) as store:
            snapshot_id = _pause(store, calls)
            service = ApprovalService(store)
            (first, *_) = [a for a in service.list(limit=1).items if a.snapshot_id == snapshot_id]
            keep("decide_one", _timed(service.decide, first.id, "approve", principal="ann"))
        with _fresh(make) as store, _fresh(lambda: type(store).from_dict(store.to_dict())) as other:
            found.setdefault("wake", []).extend(_wakes(store, other, 20 // reps + 1))
    return {name: round(statistics.median(values), 1) for name, values in found.items()}


def _wakes(store: Any, other: Any, count: int) -> list[float]:
    """``count`` times: another object's waiter, then an append here; ms from the append's start to the wake."""
    took: list[float] = []
    for _ in range(count):
        last = store.append_event("run.started", {}, at=datetime.now(UTC)).id
        other.wait_for_events(last - 1, timeout=5)  # the watcher runs (a waiter in a loop keeps it running)
        woke: list[float] = []
        ready = threading.Event()
        thread = threading.Thread(target=_stamp_wake, args=(other, last, ready, woke))
        thread.start()
        ready.wait()
        time.sleep(0.1 + random.random() * POLL_INTERVAL)  # asleep in its wait; the append at any phase of a poll
        start = time.perf_counter()
        store.append_event("run.finished", {}, at=datetime.now(UTC))
        thread.join()
        took.extend((w - start) * 1000 for w in woke)
    return took


def _stamp_wake(store: Any, after: int, ready: threading.Event, woke: list[float]) -> None:
    ready.set()
    if store.wait_for_events(after, timeout=5):
        woke.append(time.perf_counter())


@contextmanager
def _fresh(make: Callable[[], Any]) -> Iterator[Any]:
    store = make()
    try:
        yield store
    finally:
        close = getattr(store, "close", None)
        if callable(close):
            close()


def backends(folder: Path) -> dict[str, Callable[[], Any]]:
    """The stores to measure: each call makes a fresh one (a new directory or file)."""
    counter = iter(range(1_000_000))
    made: dict[str, Callable[[], Any]] = {
        "directory": lambda: FileSnapshotStore(folder / f"dir{next(counter)}"),
        "sqlite": lambda: SQLiteSnapshotStore(folder / f"db{next(counter)}.sqlite"),
    }
    dsn = os.environ.get("HANDRAIL_TEST_POSTGRES_DSN")
    if dsn:
        made["postgres"] = lambda: open_snapshot_store(dsn)
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="one JSON line instead of a table")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = {name: measure(make, args.calls, args.reps) for name, make in backends(Path(tmp)).items()}
    if args.json:
        print(json.dumps({"calls": args.calls, "reps": args.reps, "ms": results}))
        return
    names = list(next(iter(results.values())))
    print(f"{'median ms, ' + str(args.calls) + ' calls':24s}" + "".join(f"{n:>18s}" for n in names))
    for backend, figures in results.items():
        print(f"{backend:24s}" + "".join(f"{figures[n]:18.1f}" for n in names))


if __name__ == "__main__":
    main()
