"""W1 per step in CPU instructions (valgrind), a measure that does not depend on the machine's speed or load.

Usage: python bench/instructions.py [--tree DIR ...] [--mode sync|async]

For each tree (a checkout of handrail; the current one by default) it counts the instructions of the W1 workload
(50-step runs of one trivial tool, the fake model of bench_handrail.py) under ``valgrind --tool=cachegrind``
twice, with 2 and 12 timed runs, and prints the difference per step: process start and imports cancel out
(``PYTHONHASHSEED=0``: with random string hashes the count varies by about 2 %).
Needs valgrind (Debian package ``valgrind``); about 40 s per tree and mode on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

RUNS = (2, 12)
STEPS = 50

_CHILD = """
import asyncio, sys
sys.path.insert(0, {bench!r})
import bench_handrail as b
mode, n = {mode!r}, {n}
if mode == "sync":
    agent = b.mk_agent(b.ping, {steps})
    for _ in range(3 + n):
        agent.run(messages=b.user_msgs())
else:
    agent = b.mk_agent(b.aping, {steps})
    async def main():
        for _ in range(3 + n):
            await agent.run_async(messages=b.user_msgs())
    asyncio.run(main())
"""


def count(tree: str, mode: str, n: int) -> int:
    """Instructions of one process running ``3 + n`` W1 runs from ``tree``."""
    code = _CHILD.format(bench=os.path.join(tree, "bench"), mode=mode, n=n, steps=STEPS)
    env = {**os.environ, "PYTHONPATH": os.path.join(tree, "src"), "PYTHONHASHSEED": "0"}  # str hashes vary the count
    with tempfile.TemporaryDirectory() as cwd:
        out = subprocess.run(
            ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
             sys.executable, "-c", code],
            cwd=cwd, env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
    found = re.search(r"I\s+refs:\s+([\d,]+)", out.stderr)
    if found is None:
        raise SystemExit(f"valgrind printed no instruction count:\n{out.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def per_step(tree: str, mode: str) -> float:
    """Instructions per W1 step: the difference of the two counts, per step."""
    low, high = (count(tree, mode, n) for n in RUNS)
    return (high - low) / (RUNS[1] - RUNS[0]) / STEPS


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", help="a handrail checkout (repeatable; default: this one)")
    ap.add_argument("--mode", choices=["sync", "async"], action="append")
    args = ap.parse_args()
    trees = args.tree or [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
    first: dict[str, float] = {}
    for mode in args.mode or ["sync", "async"]:
        for tree in trees:
            value = per_step(tree, mode)
            base = first.setdefault(mode, value)
            print(f"{mode:5} {tree}: {value:,.0f} instructions per step ({value / base - 1:+.1%} against the first)")


if __name__ == "__main__":
    main()
