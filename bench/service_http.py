"""Measurement (not a test): the approval service's HTTP API on a real ``handrail serve`` over loopback.

Usage: python bench/service_http.py [--postgres DSN] [--approvals 2000] [--clients 4] [--runs-per-pause 1]

For SQLite (a temporary file) and, with ``--postgres``, PostgreSQL (the database's handrail tables are emptied
first), it

1. pauses ``--approvals`` tool calls into the store (``--runs-per-pause`` calls per paused run) and adds a token;
2. starts ``handrail serve --store URL --port 0`` and times the start: process spawn → the URL printed, and
   → the first ``/healthz`` answered (median of 3 starts);
3. decides every approval through ``POST /api/v1/approvals/{id}/decision`` from ``--clients`` threads, each
   on its own keep-alive connection (``http.client``: little client CPU), and reports decisions/s and the
   p50 / p99 latency of the endpoint;
4. measures SSE delivery: a stream is open; for 50 more approvals, one at a time at random moments, the time
   from sending the decision to reading its ``approval.decided`` event (p50 / p99): decided through the server
   of the stream, then through a second server on the store (the event reaches the stream through the log).

One JSON line per store on stdout. The server and the clients share the machine's cores.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import queue
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from handrail.components.agents import Agent
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.stores import open_snapshot_store
from handrail.stores.approvals import ApprovalFilter
from handrail.testing import ScriptedChatGenerator, call, reply, user
from handrail.tools import tool


@tool
def transfer(amount: int) -> str:
    """Send money."""
    return f"sent {amount}"


def paused(store: Any, count: int, per_pause: int) -> list[str]:
    """Pause ``count`` calls into ``store``; their approval ids."""
    strategy = BreakpointConfirmationStrategy(snapshot_store=store)
    made = 0
    while made < count:
        n = min(per_pause, count - made)
        calls = [call("transfer", {"amount": made + i}, f"c{i}") for i in range(n)]
        agent = Agent(chat_generator=ScriptedChatGenerator([reply(*calls)]), tools=[transfer],
                      confirmation_strategies={"transfer": strategy})  # fmt: skip
        with contextlib.suppress(HITLBreakpointException):
            agent.run([user("pay")])
        made += n
    ids: list[str] = []
    cursor = None
    while True:
        page = store.list_approvals(ApprovalFilter(status="pending"), limit=100, cursor=cursor)
        ids += [a.id for a in page.items]
        cursor = page.next_cursor
        if cursor is None:
            return ids


class Server:
    """``handrail serve`` in a subprocess on a free port."""

    def __init__(self, url: str, *options: str) -> None:
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "handrail.cli", "serve", "--store", url, "--port", "0", "--log-level", "error",
             *options],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        self.printed = time.perf_counter() - self.started
        self.base = line.split("listening on ", 1)[1].split(" ", 1)[0]
        self.host, port = self.base.removeprefix("http://").rsplit(":", 1)
        self.port = int(port)
        while True:
            try:
                connection = http.client.HTTPConnection(self.host, self.port, timeout=5)
                connection.request("GET", "/healthz")
                if connection.getresponse().status == 200:
                    break
            except OSError:
                time.sleep(0.005)
        self.ready = time.perf_counter() - self.started

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(20)


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))]


def decide_all(server: Server, token: str, ids: list[str], clients: int) -> dict[str, Any]:
    work: queue.Queue[str] = queue.Queue()
    for approval_id in ids:
        work.put(approval_id)
    latencies: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()
    body = json.dumps({"decision": "approve"}).encode()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def client() -> None:
        connection = http.client.HTTPConnection(server.host, server.port, timeout=30)
        mine: list[float] = []
        while True:
            try:
                approval_id = work.get_nowait()
            except queue.Empty:
                break
            start = time.perf_counter()
            connection.request("POST", f"/api/v1/approvals/{approval_id}/decision", body=body, headers=headers)
            response = connection.getresponse()
            response.read()
            mine.append(time.perf_counter() - start)
            if response.status != 200:
                with lock:
                    failures.append(f"{response.status}")
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - start
    return {
        "decisions": len(ids), "clients": clients, "failures": len(failures), "wall_s": round(wall, 3),
        "decisions_per_s": round(len(ids) / wall, 1), "p50_ms": round(_pct(latencies, 50) * 1000, 2),
        "p99_ms": round(_pct(latencies, 99) * 1000, 2), "max_ms": round(max(latencies) * 1000, 2),
    }  # fmt: skip


def sse_latency(server: Server, token: str, ids: list[str], decider: Server | None = None) -> dict[str, Any]:
    stream = http.client.HTTPConnection(server.host, server.port, timeout=30)
    stream.request("GET", "/api/v1/events", headers={"Authorization": f"Bearer {token}"})
    response = stream.getresponse()
    seen: dict[str, float] = {}
    arrived = threading.Condition()

    def reader() -> None:
        with contextlib.suppress(OSError, AttributeError, ValueError):  # the stream closed at the end
            read_events()

    def read_events() -> None:
        event = None
        for raw in response:
            line = raw.decode().rstrip("\n")
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: ") and event == "approval.decided":
                with arrived:
                    seen[json.loads(line[6:])["approval_id"]] = time.perf_counter()
                    arrived.notify_all()

    threading.Thread(target=reader, daemon=True).start()
    target = decider or server
    connection = http.client.HTTPConnection(target.host, target.port, timeout=30)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    delays = []
    for approval_id in ids:
        time.sleep(random.uniform(0, 0.1))  # not in step with a poll of the event log
        start = time.perf_counter()
        connection.request("POST", f"/api/v1/approvals/{approval_id}/decision", body=b'{"decision": "approve"}',
                           headers=headers)  # fmt: skip
        connection.getresponse().read()
        with arrived:
            assert arrived.wait_for(lambda a=approval_id: a in seen, 30), "no event"  # type: ignore[misc]
        delays.append(seen[approval_id] - start)
    stream.close()
    return {"events": len(delays), "p50_ms": round(_pct(delays, 50) * 1000, 2),
            "p99_ms": round(_pct(delays, 99) * 1000, 2)}  # fmt: skip


def measure(name: str, url: str, args: argparse.Namespace) -> dict[str, Any]:
    store = open_snapshot_store(url)
    ids = paused(store, args.approvals + 100, args.runs_per_pause)
    _, token = store.add_token("bench", "admin", at=datetime.now(UTC))
    store.close()
    starts = []
    for _ in range(3):
        server = Server(url)
        starts.append((server.printed, server.ready))
        server.stop()
    server = Server(url, "--workers", str(args.workers), *(() if args.resume else ("--no-resume",)))
    other = Server(url)
    try:
        decided = decide_all(server, token, ids[: args.approvals], args.clients)
        sse = sse_latency(server, token, ids[args.approvals : args.approvals + 50])
        sse_other = sse_latency(server, token, ids[args.approvals + 50 :], decider=other)
    finally:
        server.stop()
        other.stop()
    return {
        "store": name, "approvals_per_pause": args.runs_per_pause, "resumer": args.resume, "workers": args.workers,
        "decision": decided,
        "sse_delivery": sse,
        "sse_delivery_other_process": sse_other,
        "serve_start_ms": {"url_printed": round(statistics.median(s[0] for s in starts) * 1000),
                           "healthz_answered": round(statistics.median(s[1] for s in starts) * 1000)},
    }  # fmt: skip


def _empty_postgres(dsn: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
                            "AND tablename LIKE 'handrail_%'").fetchall()  # fmt: skip
        for (table,) in rows:
            conn.execute(f'DROP TABLE IF EXISTS "{table}" CASCADE')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", metavar="DSN", help="Also measure on this PostgreSQL database (emptied).")
    parser.add_argument("--approvals", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--runs-per-pause", type=int, default=1, help="Calls held per paused run.")
    parser.add_argument("--workers", type=int, default=1, help="Server processes (handrail serve --workers).")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="Keep the server's resumer on while deciding (it looks at every decided run).",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        print(json.dumps(measure("sqlite", f"sqlite:///{Path(folder) / 'bench.db'}", args)), flush=True)
    if args.postgres:
        _empty_postgres(args.postgres)
        print(json.dumps(measure("postgres", args.postgres, args)), flush=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    main()
