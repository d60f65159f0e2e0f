"""Measurement (not a test): how soon a decided run resumes by itself, and what finding decided runs costs.

Usage: python bench/service_resume.py [--runs 50] [--paused 200] [postgres DSN]

For each store (SQLite, a directory, and PostgreSQL when a DSN is given or HANDRAIL_TEST_POSTGRES_DSN is set):

* **decision → tool start**: ``--runs`` runs are paused for approval, a :class:`~handrail.server.Resumer` runs its
  background loop, and each run is approved in turn through ``ApprovalService.decide``; the time from ``decide``
  returning to the first line of the tool's body (one run at a time, so the figures do not queue; each decision at
  a random moment, so they do not fall in step with the 50 ms poll of SQLite and directories); then the same
  with ``Resumer.wake()`` called right after ``decide`` (a server that made the decision itself);
* **finding decided runs**: with ``--paused`` runs paused (none decided), the resumer's first pass (it looks at
  every paused snapshot once) and an idle pass afterwards (the event log only), and a pass that finds one decision
  among them and sends its run (not waiting for the run).

Figures: median and p95 (nearest rank) in milliseconds.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from typing import Any

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, ChatRole
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.human_in_the_loop.service import ApprovalService
from handrail.server import Resumer
from handrail.stores import open_snapshot_store
from handrail.stores.approvals import ApprovalFilter
from handrail.testing import FunctionChatGenerator, call, reply, user
from handrail.tools import create_tool_from_function

STARTED: dict[int, float] = {}
ARRIVED = threading.Condition()


def transfer(amount: int) -> str:
    """Send money.

    Args:
        amount: How much.
    """
    with ARRIVED:
        STARTED[amount] = time.perf_counter()
        ARRIVED.notify_all()
    return f"sent {amount}"


def model(messages: list[ChatMessage], tools: Any) -> ChatMessage:
    if any(m.role is ChatRole.TOOL for m in messages):
        return reply("done")
    amount = int((messages[-1].text or "0").split()[-1])
    return reply(call("transfer", {"amount": amount}, "c1"))


def payer(store: Any) -> Agent:
    strategy = BreakpointConfirmationStrategy(snapshot_store=store)
    return Agent(chat_generator=FunctionChatGenerator(model), tools=[create_tool_from_function(transfer)],
                 confirmation_strategies={"transfer": strategy})  # fmt: skip


def pause_runs(store: Any, amounts: range) -> list[str]:
    agent = payer(store)
    runs = []
    for amount in amounts:
        try:
            agent.run([user(f"pay {amount}")])
        except HITLBreakpointException as pause:
            assert pause.snapshot.snapshot_id is not None
            runs.append(pause.snapshot.snapshot_id)
    return runs


def stats(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[max(0, round(0.95 * len(ordered)) - 1)]
    return f"median {statistics.median(ordered) * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms (n={len(ordered)})"


def decision_to_tool(store: Any, runs: int, *, wake: bool = False, first: int = 1) -> list[float]:
    amounts = range(first, first + runs)
    paused = pause_runs(store, amounts)
    service = ApprovalService(store)
    latencies = []
    with Resumer(store, agents={"payer": payer}) as resumer:
        for amount, run_id in zip(amounts, paused, strict=True):
            (approval,) = service.list(ApprovalFilter(run_id=run_id)).items
            time.sleep(random.uniform(0, 0.1))  # decisions at random moments: not in step with a poll
            service.decide(approval.id, "approve", principal="bench")
            decided = time.perf_counter()
            if wake:  # what a server does after a decision it made itself
                resumer.wake()
            with ARRIVED:
                assert ARRIVED.wait_for(lambda a=amount: a in STARTED, timeout=30), f"run {run_id} did not resume"
            latencies.append(STARTED[amount] - decided)
    return latencies


def finding(store: Any, paused: int) -> tuple[float, list[float], float]:
    runs = pause_runs(store, range(10_000, 10_000 + paused))
    resumer = Resumer(store, agents={"payer": payer})
    try:
        began = time.perf_counter()
        assert resumer.run_once().resumed == ()
        first = time.perf_counter() - began
        idle = []
        for _ in range(20):
            began = time.perf_counter()
            assert resumer.run_once().resumed == ()
            idle.append(time.perf_counter() - began)
        service = ApprovalService(store)
        (approval,) = service.list(ApprovalFilter(run_id=runs[paused // 2])).items
        service.decide(approval.id, "approve", principal="bench")
        began = time.perf_counter()
        assert resumer.run_once(wait=False).resumed == (runs[paused // 2],)
        one = time.perf_counter() - began
        resumer.launcher.wait(30)
    finally:
        resumer.stop()
    return first, idle, one


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--paused", type=int, default=200)
    parser.add_argument("dsn", nargs="?", default=os.environ.get("HANDRAIL_TEST_POSTGRES_DSN"))
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="handrail-bench-")
    stores = {"sqlite": lambda n: f"sqlite:///{folder}/{n}.db", "directory": lambda n: f"{folder}/{n}"}
    if args.dsn:
        stores["postgres"] = lambda n: args.dsn
    for name, url_of in stores.items():
        if name == "postgres":
            _empty_postgres(args.dsn)
        store = open_snapshot_store(url_of("latency"))
        try:
            STARTED.clear()
            print(f"{name:9}  decision -> tool start: {stats(decision_to_tool(store, args.runs))}", flush=True)
            woken = decision_to_tool(store, args.runs, wake=True, first=1000)
            print(f"{name:9}  the same with Resumer.wake() after the decision: {stats(woken)}", flush=True)
            first, idle, one = finding(store, args.paused)
            print(f"{name:9}  {args.paused} paused runs: first pass {first * 1000:.1f} ms; idle pass {stats(idle)}; "
                  f"pass finding one decision {one * 1000:.1f} ms", flush=True)  # fmt: skip
        finally:
            store.close()


def _empty_postgres(dsn: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE tablename LIKE 'handrail\\_%' "
                                             "AND tablename <> 'handrail_schema'").fetchall()]  # fmt: skip
        if tables:
            conn.execute("TRUNCATE " + ", ".join(f'"{t}"' for t in tables) + " CASCADE")


if __name__ == "__main__":
    sys.exit(main())
