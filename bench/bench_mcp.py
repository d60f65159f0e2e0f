#!/usr/bin/env python
"""What an MCP tool costs through handrail, next to the SDK's own client (the floor), per transport.

Usage:
    python bench/bench_mcp.py            # in-process, stdio and streamable HTTP; prints a markdown table
    python bench/bench_mcp.py --quick    # fewer repetitions (smoke test)

Rows, per transport (the test double of tests/mcp, a tool ``add``):
    connect + list : ``MCPToolset.warm_up()`` from cold (process start and handshake included), median of 5
    call, SDK      : ``mcp.Client.call_tool("add")`` on one open session, median (the floor)
    call, handrail : ``tool.invoke(a=, b=)`` of the toolset's tool (sync, through the private loop thread)
    call, async    : ``await tool.invoke_async(...)`` from another event loop
    agent step     : one ``Agent.run`` step (scripted model, one ``add`` call, its approval skipped), per step,
                     wall and process CPU, 20 steps
No peer in ../shared/peer-bench measures MCP, so the figures are handrail against the SDK it wraps.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DOUBLE = ROOT / "tests" / "mcp" / "server_double.py"


def _median(samples: list[float]) -> float:
    return statistics.median(samples)


def _times(fn: Callable[[], Any], n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _server(kind: str) -> tuple[Any, Callable[[], Any], Any]:
    """``(handrail server spec, SDK client target factory, process or None)``."""
    from mcp import StdioServerParameters
    from tests.mcp.server_double import build_server

    from handrail.tools import StdioServer, StreamableHttpServer

    if kind == "in-process":
        server = build_server()
        return server, lambda: server, None
    if kind == "stdio":
        spec = StdioServer(sys.executable, [str(DOUBLE), "stdio"])
        return spec, lambda: StdioServerParameters(command=sys.executable, args=[str(DOUBLE), "stdio"]), None
    port = _free_port()
    process = subprocess.Popen([sys.executable, str(DOUBLE), "http", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    for _ in range(400):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.025)
    url = f"http://127.0.0.1:{port}/mcp"
    return StreamableHttpServer(url), lambda: url, process


def _sdk_call(target: Any, n: int) -> list[float]:
    from mcp import Client

    async def main() -> list[float]:
        async with Client(target()) as client:
            await client.call_tool("add", {"a": 1, "b": 2})
            out = []
            for _ in range(n):
                start = time.perf_counter()
                await client.call_tool("add", {"a": 1, "b": 2})
                out.append(time.perf_counter() - start)
            return out

    return asyncio.run(main())


def _agent_step(spec: Any, steps: int) -> tuple[float, float]:
    from handrail.components.agents import Agent
    from handrail.human_in_the_loop import BlockingConfirmationStrategy, NeverAskPolicy
    from handrail.human_in_the_loop.user_interfaces import SimpleConsoleUI
    from handrail.testing import ScriptedChatGenerator, call, reply, user
    from handrail.tools import MCPToolset

    toolset = MCPToolset(spec, tool_names=["add"])
    allow = {"add": BlockingConfirmationStrategy(NeverAskPolicy(), SimpleConsoleUI())}
    replies = [reply(call("add", {"a": i, "b": 1})) for i in range(steps)] + [reply("done")]
    agent = Agent(chat_generator=ScriptedChatGenerator(replies), tools=[toolset], confirmation_strategies=allow,
                  max_agent_steps=steps + 2)  # fmt: skip
    agent.warm_up()
    cpu, start = time.process_time(), time.perf_counter()
    agent.run([user("go")])
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    agent.close()
    return wall / steps, cpu / steps


def measure(kind: str, n: int) -> dict[str, float]:
    from handrail.tools import MCPToolset

    spec, target, process = _server(kind)
    logging.disable(logging.INFO)  # the SDK's in-process server sets up INFO logging of every request
    try:

        def cold() -> None:
            toolset = MCPToolset(spec)
            toolset.warm_up()
            toolset.close()

        connect = _median(_times(cold, 5))
        toolset = MCPToolset(spec, tool_names=["add"])
        toolset.warm_up()
        (add,) = toolset
        add.invoke(a=1, b=2)
        sync_call = _median(_times(lambda: add.invoke(a=1, b=2), n))

        async def timed_async() -> list[float]:
            out = []
            for _ in range(n):
                start = time.perf_counter()
                await add.invoke_async(a=1, b=2)
                out.append(time.perf_counter() - start)
            return out

        async_call = _median(asyncio.run(timed_async()))
        toolset.close()
        sdk = _median(_sdk_call(target, n))
        step_wall, step_cpu = _agent_step(spec, 20)
    finally:
        if process is not None:
            process.kill()
            process.wait()
    return {"connect": connect, "sdk": sdk, "sync": sync_call, "async": async_call, "step_wall": step_wall,
            "step_cpu": step_cpu}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    n = 20 if args.quick else 200
    rows = {kind: measure(kind, n) for kind in ("in-process", "stdio", "streamable HTTP")}
    print("| | " + " | ".join(rows) + " |")
    print("|---|" + "---|" * len(rows))
    labels = {
        "connect": "connect + list (cold), median of 5",
        "sdk": "call, SDK client (floor)",
        "sync": "call, handrail `tool.invoke`",
        "async": "call, handrail `await tool.invoke_async`",
        "step_wall": "agent step with one MCP call, wall",
        "step_cpu": "agent step with one MCP call, CPU",
    }
    for key, label in labels.items():
        print(f"| {label} | " + " | ".join(f"{rows[k][key] * 1000:.2f} ms" for k in rows) + " |")


if __name__ == "__main__":
    main()
