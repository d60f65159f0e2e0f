#!/usr/bin/env python
"""Pydantic AI's Temporal integration on the workload of ``bench/bench_temporal.py``: the peer figures, same harness.

Runs in its own virtual environment (handrail is not imported)::

    python -m venv /tmp/bench-pai && /tmp/bench-pai/bin/pip install 'pydantic-ai-slim[temporal]' temporalio==1.35.0
    /tmp/bench-pai/bin/python bench/peers/temporal_pydantic_ai.py [--quick] [--address A --server-pid P] [--json F]

The agent is a plain ``Agent`` with the ``TemporalDurability()`` capability (``TemporalAgent`` is deprecated), its
model a ``FunctionModel`` (a fake that runs inside Pydantic AI's own model-request activity) that asks for one call of
a trivial ``ping`` tool per step until the N of the prompt (``steps=N``), then answers; the tool runs as an activity
(Pydantic AI's default for function tools). The workflow runs the agent once with no request limit (the default of
50 requests would stop a 50-step run). Client and worker use ``PydanticAIPlugin``; everything else is Temporal's and
Pydantic AI's defaults. Measured by ``bench/temporal_common.py``, as handrail is.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import sys
import uuid
from pathlib import Path
from typing import Any, ClassVar

from pydantic_ai import Agent, Tool
from pydantic_ai.durable_exec.temporal import PydanticAIPlugin, PydanticAIWorkflow, TemporalDurability
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage, UsageLimits
from temporalio import workflow

FRAMEWORK = "pydantic-ai"
WORKFLOW = "bench.PydanticAIRun"


async def fake(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """One ``ping`` call per step until the prompt's ``steps=N``, then text (stateless, like handrail's fake)."""
    done, steps = 0, 0
    for m in reversed(messages):
        if m.kind != "request":
            continue
        prompt = None
        for p in m.parts:
            if p.part_kind == "tool-return":
                done += 1
            elif p.part_kind == "user-prompt":
                prompt = str(p.content)
        if prompt is not None:
            steps = int(prompt.rsplit("=", 1)[1])
            break
    usage = RequestUsage(input_tokens=1, output_tokens=1)  # reported, so FunctionModel does not estimate tokens
    if done >= steps:
        return ModelResponse(parts=[TextPart("final answer")], usage=usage)
    return ModelResponse(parts=[ToolCallPart("ping", {"x": "a"}, tool_call_id=f"call_{done}_0")], usage=usage)


def ping(x: str) -> str:
    """Trivial tool: returns a short string."""
    return "pong"


agent = Agent(FunctionModel(fake, model_name="fake-bench"), name="bench", tools=[Tool(ping)],
              capabilities=[TemporalDurability()])  # fmt: skip


@workflow.defn(name=WORKFLOW)
class BenchWorkflow(PydanticAIWorkflow):
    __pydantic_ai_agents__: ClassVar[list[Any]] = [agent]

    @workflow.run
    async def run(self, steps: int) -> dict[str, Any]:
        result = await agent.run(f"steps={steps}", usage_limits=UsageLimits(request_limit=None))
        return {"answer": result.output, "tool_calls": result.usage.tool_calls}


# -- the worker process -------------------------------------------------------------------------------------------


async def _worker(address: str, task_queue: str) -> None:
    import temporal_pydantic_ai as this  # the workflow by its module name, so the sandbox can re-import it
    from temporalio.client import Client
    from temporalio.worker import Worker

    client = await Client.connect(address, plugins=[PydanticAIPlugin()])
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with Worker(client, task_queue=task_queue, workflows=[this.BenchWorkflow]):
        print("ready", flush=True)
        await stop.wait()


# -- the client ---------------------------------------------------------------------------------------------------


def _common() -> Any:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import temporal_common

    return temporal_common


async def measure(address: str, server_pid: int | None, quick: bool) -> dict[str, Any]:
    from temporalio.client import Client

    tc = _common()
    task_queue = f"tbench-pai-{uuid.uuid4().hex[:8]}"
    client = await Client.connect(address, plugins=[PydanticAIPlugin()])

    async def run_once(workflow_id: str, steps: int) -> None:
        result = await client.execute_workflow(WORKFLOW, steps, id=workflow_id, task_queue=task_queue)
        if result["answer"] != "final answer" or result["tool_calls"] != steps:
            raise RuntimeError(f"run {workflow_id} did not do the workload: {result}")

    cmd = [sys.executable, os.path.abspath(__file__), "worker", "--address", address, "--task-queue", task_queue]
    sizes = ({"reps": {10: 3, 50: 2}, "concurrent_runs": 50, "warmup": 2} if quick
             else {"reps": {10: 10, 50: 5}, "concurrent_runs": 100, "warmup": 3})  # fmt: skip
    with tc.Worker(cmd) as worker:
        label = "Pydantic AI, TemporalDurability (tool as activity)"
        res: dict[str, Any] = await tc.measure(client, run_once, tc.Cpu(worker.pid, server_pid), label=label, **sizes)
    res["framework"] = FRAMEWORK
    res["mode"] = "default"
    return res


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {p: version(p) for p in ("pydantic-ai-slim", "temporalio", "pydantic")}


async def _main(a: argparse.Namespace) -> dict[str, Any]:
    tc = _common()
    server = None
    address, server_pid = a.address, a.server_pid
    if address is None:
        server = tc.DevServer(tc.default_temporal_bin(), db_file=a.db_file).start()
        address, server_pid = server.address, server.process.pid
    try:
        results = [await measure(address, server_pid, a.quick)]
    finally:
        if server is not None:
            server.stop()
    return {"framework": FRAMEWORK, "versions": versions(), "python": platform.python_version(),
            "cpus": os.cpu_count(), "quick": a.quick, "server": "sqlite file" if a.db_file else "in-memory",
            "results": results}  # fmt: skip


def main() -> None:
    if sys.argv[1:2] == ["worker"]:
        p = argparse.ArgumentParser(prog="temporal_pydantic_ai.py worker")
        p.add_argument("--address", required=True)
        p.add_argument("--task-queue", required=True)
        w = p.parse_args(sys.argv[2:])
        asyncio.run(_worker(w.address, w.task_queue))
        sys.stdout.flush()
        os._exit(0)  # the SDK can abort at interpreter exit (sdk-python #300)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--address", help="a running dev server (else one is started here)")
    p.add_argument("--server-pid", type=int, help="its pid, for its CPU figures")
    p.add_argument("--db-file", help="start the dev server on this SQLite file instead of in memory")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--json", help="also write the JSON here")
    p.add_argument("--no-table", action="store_true", help="print the JSON line only")
    a = p.parse_args()
    out = asyncio.run(_main(a))
    if not a.no_table:
        print(_common().table(out["results"]))
    line = json.dumps(out)
    print(line)
    if a.json:
        Path(a.json).write_text(line + "\n")
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
