"""The floor of W5 with blocking tools on this machine: the thread hand-offs alone, with no agent around them.

Usage: python bench/w5_floor.py

200 coroutines each await three blocking 10 ms calls in a row (W5's tool calls, without the runs), through
handrail's tool pool and through a ThreadPoolExecutor of 256 threads (``run_in_executor``), and the same with
asyncio.sleep. Prints the median wall and process CPU of 5 rounds on one event loop (as W5 runs). A framework
that cost nothing would reach ``200 / wall`` runs/s: this is the most W5 with blocking tools can show here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor

from handrail.core._tool_threads import to_tool_thread

RUNS, CALLS, ROUNDS = 200, 3, 5
_EXECUTOR = ThreadPoolExecutor(256)


def _sleep10() -> str:
    time.sleep(0.01)
    return "ok"


async def _pool() -> str:
    return await to_tool_thread(_sleep10)


async def _executor() -> str:
    return await asyncio.get_running_loop().run_in_executor(_EXECUTOR, _sleep10)


async def _async() -> str:
    await asyncio.sleep(0.01)
    return "ok"


async def _rounds(call: Callable[[], Awaitable[str]]) -> list[tuple[float, float]]:
    """One warm-up round (threads started, code warm), then the timed rounds, all on one event loop."""

    async def one() -> None:
        for _ in range(CALLS):
            await call()

    out = []
    for _ in range(ROUNDS + 1):
        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.gather(*(one() for _ in range(RUNS)))
        out.append((time.perf_counter() - wall, time.process_time() - cpu))
    return sorted(out[1:])


def main() -> None:
    kinds = [("handrail tool pool", _pool), ("ThreadPoolExecutor(256)", _executor), ("asyncio.sleep", _async)]
    for name, call in kinds:
        rounds = asyncio.run(_rounds(call))
        wall, cpu = rounds[len(rounds) // 2]
        print(f"{name:24} wall {wall * 1000:6.1f} ms  cpu {cpu * 1000:6.1f} ms  -> at most {RUNS / wall:,.0f} runs/s")


if __name__ == "__main__":
    main()
