#!/usr/bin/env python
"""handrail's Temporal driver on the local dev server: ms and history events per agent step, runs/s at 50 in flight.

The workload is the one of the peer scripts (``bench/peers/temporal_pydantic_ai.py``, and the shared reference notes
§8): a fake model inside the framework's own model call (here handrail's ``handrail.call_model`` activity) asks for
one call of a trivial tool per step for N steps, then answers; no approvals (no ``confirmation_strategies``). The
worker is a separate process; the dev server is started here (in memory; ``--db-file`` for an SQLite file) unless
``--address`` names a running one. Measured for both ways of calling the model: local activities (the default,
``RunOptions(local_model_calls=True)``) and remote activities (``False``). See ``temporal_common`` for what each
figure is. Benchmarks are not tests: nothing here asserts a time.

Usage:
    python bench/bench_temporal.py                        # both modes, prints a table and one JSON line
    python bench/bench_temporal.py --quick                # fewer runs (smoke test)
    python bench/bench_temporal.py --modes local --json /tmp/t.json
    python bench/bench_temporal.py --address 127.0.0.1:7233 --server-pid 1234   # a running dev server
    python bench/bench_temporal.py --db-file /tmp/temporal.db                    # the server on an SQLite file
    python bench/bench_temporal.py --modes local --variant unsandboxed           # where the worker's CPU goes

Variants (what the worker's CPU goes to, measured; not handrail's defaults): ``unsandboxed`` runs the workflow with
Temporal's ``UnsandboxedWorkflowRunner``; ``no-codec`` connects client and worker without handrail's claim-check
payload codec (the same payloads here, all under its 128 KB threshold, but no codec for the SDK to visit).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import temporal_common as tc

FRAMEWORK = "handrail"
AGENT = "bench"


class FakeChatGenerator:
    """A stateless fake model: one ``ping`` call per step until the N of the question (``steps=N``), then text.

    Counts the tool messages after the last user message, as the peer scripts' fake models do, so one instance
    serves every run of the worker at once.
    """

    def run(self, messages: list[Any], tools: Any = None, **_: Any) -> dict[str, list[Any]]:
        from handrail.dataclasses import ChatMessage, ChatRole, ToolCall

        done, steps = 0, 0
        for m in reversed(messages):
            if m.role is ChatRole.TOOL:
                done += 1
            elif m.role is ChatRole.USER:
                steps = int((m.text or "steps=0").rsplit("=", 1)[1])
                break
        if done >= steps:
            return {"replies": [ChatMessage.from_assistant("final answer", meta={"finish_reason": "stop"})]}
        call = ToolCall(tool_name="ping", arguments={"x": "a"}, id=f"call_{done}_0")
        return {"replies": [ChatMessage.from_assistant(tool_calls=[call], meta={"finish_reason": "tool_calls"})]}

    async def run_async(self, messages: list[Any], tools: Any = None, **kw: Any) -> dict[str, list[Any]]:
        return self.run(messages, tools, **kw)

    def to_dict(self) -> dict[str, Any]:
        return {"type": f"{type(self).__module__}.{type(self).__qualname__}", "init_parameters": {}}


def ping(x: str) -> str:
    """Trivial tool: returns a short string.

    Args:
        x: Anything.
    """
    return "pong"


def make_agent() -> Any:
    from handrail.components.agents import Agent
    from handrail.tools import create_tool_from_function

    return Agent(chat_generator=FakeChatGenerator(), tools=[create_tool_from_function(ping)], max_agent_steps=1000)


# -- the worker process -------------------------------------------------------------------------------------------


VARIANTS = ("default", "unsandboxed", "no-codec")


async def _connect(address: str, store: Any, variant: str) -> Any:
    from handrail import temporal as ht

    if variant == "no-codec":
        from temporalio.client import Client

        return await Client.connect(address)
    return await ht.connect(address, store)


async def _worker(address: str, task_queue: str, ledger: str, variant: str) -> None:
    from handrail import temporal as ht

    store = ht.open_temporal_store(ledger)
    client = await _connect(address, store, variant)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    options: dict[str, Any] = {}
    if variant == "unsandboxed":
        from temporalio.worker import UnsandboxedWorkflowRunner

        options["workflow_runner"] = UnsandboxedWorkflowRunner()
    async with ht.create_worker(client, task_queue, {AGENT: make_agent}, store, **options):
        print("ready", flush=True)
        await stop.wait()
    store.close()


def worker_main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(prog="bench_temporal.py worker")
    p.add_argument("--address", required=True)
    p.add_argument("--task-queue", required=True)
    p.add_argument("--ledger", required=True)
    p.add_argument("--variant", choices=VARIANTS, default="default")
    a = p.parse_args(argv)
    asyncio.run(_worker(a.address, a.task_queue, a.ledger, a.variant))
    sys.stdout.flush()
    os._exit(0)  # the SDK can abort at interpreter exit (sdk-python #300)


# -- the client ---------------------------------------------------------------------------------------------------


async def measure_mode(address: str, server_pid: int | None, mode: str, quick: bool,
                       variant: str = "default") -> dict[str, Any]:  # fmt: skip
    """Start a worker process, measure one mode (``local`` or ``remote`` model calls), stop the worker."""
    from handrail import temporal as ht

    task_queue = f"tbench-{mode}-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory(prefix="tbench-") as tmp:
        ledger = f"sqlite:///{tmp}/ledger.db"
        cmd = [sys.executable, os.path.abspath(__file__), "worker", "--address", address, "--task-queue", task_queue,
               "--ledger", ledger, "--variant", variant]  # fmt: skip
        store = ht.open_temporal_store(ledger)
        client = await _connect(address, store, variant)
        options = ht.RunOptions(local_model_calls=(mode == "local"))

        async def run_once(run_id: str, steps: int) -> None:
            await ht.start_run(client, AGENT, f"steps={steps}", task_queue=task_queue, run_id=run_id, options=options)
            result = await ht.get_result(client, run_id)
            if result["answer"] != "final answer" or result["usage"]["tool_calls"] != steps:
                raise RuntimeError(f"run {run_id} did not do the workload: {result['usage']} {result['answer']!r}")

        with tc.Worker(cmd) as worker:
            label = f"handrail, model calls as {mode} activities" + ("" if variant == "default" else f", {variant}")
            res = await tc.measure(client, run_once, tc.Cpu(worker.pid, server_pid), label=label,
                                   **_sizes(quick))  # fmt: skip
        store.close()
    res["framework"] = FRAMEWORK
    res["mode"] = mode
    res["variant"] = variant
    return res


def _sizes(quick: bool) -> dict[str, Any]:
    if quick:
        return {"reps": {10: 3, 50: 2}, "concurrent_runs": 50, "warmup": 2}
    return {"reps": {10: 10, 50: 5}, "concurrent_runs": 100, "warmup": 3}


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {"handrail": version("handrail"), "temporalio": version("temporalio")}


async def _main(a: argparse.Namespace) -> dict[str, Any]:
    server = None
    address, server_pid = a.address, a.server_pid
    if address is None:
        server = tc.DevServer(tc.default_temporal_bin(), db_file=a.db_file).start()
        assert server.process is not None
        address, server_pid = server.address, server.process.pid
    try:
        results = [await measure_mode(address, server_pid, mode, a.quick, a.variant) for mode in a.modes]
    finally:
        if server is not None:
            server.stop()
    return {"framework": FRAMEWORK, "versions": versions(), "python": platform.python_version(),
            "cpus": os.cpu_count(), "quick": a.quick, "server": "sqlite file" if a.db_file else "in-memory",
            "results": results}  # fmt: skip


def main() -> None:
    if sys.argv[1:2] == ["worker"]:
        worker_main(sys.argv[2:])
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--modes", nargs="+", choices=["local", "remote"], default=["local", "remote"])
    p.add_argument("--address", help="a running dev server (else one is started here)")
    p.add_argument("--server-pid", type=int, help="its pid, for its CPU figures")
    p.add_argument("--db-file", help="start the dev server on this SQLite file instead of in memory")
    p.add_argument("--variant", choices=VARIANTS, default="default", help="see the module docstring")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--json", help="also write the JSON here")
    p.add_argument("--no-table", action="store_true", help="print the JSON line only")
    a = p.parse_args()
    out = asyncio.run(_main(a))
    if not a.no_table:
        print(tc.table(out["results"]))
    line = json.dumps(out)
    print(line)
    if a.json:
        Path(a.json).write_text(line + "\n")
    sys.stdout.flush()
    os._exit(0)  # the SDK can abort at interpreter exit (sdk-python #300)


if __name__ == "__main__":
    main()
