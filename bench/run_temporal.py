#!/usr/bin/env python
"""handrail's Temporal driver next to Pydantic AI's Temporal integration: one dev server, interleaved rounds, medians.

Starts one dev server (in memory, or ``--db-file``), then, for each round, runs every configuration back to back
against it, each as its own process with its own worker process: handrail with model calls as local activities,
handrail with remote ones (``bench/bench_temporal.py``, with this interpreter or ``--handrail-python``) and Pydantic
AI (``bench/peers/temporal_pydantic_ai.py`` with ``--pai-python``, default /tmp/bench-pai/bin/python). The order
rotates from round to round, so no configuration always runs first on the noisy 2-core machine. Every figure is the
median across rounds. A missing Pydantic AI venv is reported and skipped.

Usage:
    python bench/run_temporal.py                 # 3 rounds: ~6 min on 2 cores
    python bench/run_temporal.py --quick --rounds 1
    python bench/run_temporal.py --db-file /tmp/temporal-bench.db   # the dev server on an SQLite file
    python bench/run_temporal.py --variants      # also handrail unsandboxed / without its codec (where CPU goes)

Writes ``bench/results/temporal/round<i>.<config>.json``, ``temporal.json`` (the medians) and ``table.md``, and
prints the table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import temporal_common as tc  # next to this script (sys.path[0])

HERE = Path(__file__).resolve().parent

CONFIGS = {
    "handrail-local": ["bench_temporal.py", "--modes", "local"],
    "handrail-remote": ["bench_temporal.py", "--modes", "remote"],
    "pydantic-ai": ["peers/temporal_pydantic_ai.py"],
    "handrail-local-unsandboxed": ["bench_temporal.py", "--modes", "local", "--variant", "unsandboxed"],
    "handrail-local-no-codec": ["bench_temporal.py", "--modes", "local", "--variant", "no-codec"],
}
DEFAULT = ["handrail-local", "handrail-remote", "pydantic-ai"]


def _median_tree(items: list[Any]) -> Any:
    """The median of every numeric leaf across ``items`` (dicts of the same shape); other leaves from the first."""
    first = items[0]
    if isinstance(first, dict):
        return {k: _median_tree([i[k] for i in items if isinstance(i, dict) and k in i]) for k in first}
    if isinstance(first, (int, float)) and not isinstance(first, bool):
        return round(statistics.median(items), 3)
    return first


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--db-file", help="run the dev server on this SQLite file (removed first) instead of in memory")
    p.add_argument("--handrail-python", default=sys.executable)
    p.add_argument("--pai-python", default="/tmp/bench-pai/bin/python")
    p.add_argument("--only", nargs="+", choices=list(CONFIGS), default=DEFAULT)
    p.add_argument("--variants", action="store_true", help="also handrail-local unsandboxed and without the codec")
    p.add_argument("--out", default=str(HERE / "results" / "temporal"))
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    configs = list(a.only) + ([c for c in CONFIGS if c not in a.only and c not in DEFAULT] if a.variants else [])
    if "pydantic-ai" in configs and not Path(a.pai_python).exists():
        print(f"skipping pydantic-ai: no {a.pai_python} (see the docstring of peers/temporal_pydantic_ai.py)")
        configs.remove("pydantic-ai")
    if a.db_file and Path(a.db_file).exists():
        Path(a.db_file).unlink()
    server = tc.DevServer(tc.default_temporal_bin(), db_file=a.db_file).start()
    assert server.process is not None
    per: dict[str, list[dict[str, Any]]] = {c: [] for c in configs}
    meta: dict[str, Any] = {}
    loads: list[float] = []
    started = time.time()
    try:
        for r in range(a.rounds):
            order = configs[r % len(configs) :] + configs[: r % len(configs)]
            for name in order:
                python = a.pai_python if name == "pydantic-ai" else a.handrail_python
                file = out / f"round{r + 1}.{name}.json"
                cmd = [python, str(HERE / CONFIGS[name][0]), *CONFIGS[name][1:], "--address", server.address,
                       "--server-pid", str(server.process.pid), "--no-table", "--json", str(file)]  # fmt: skip
                cmd += ["--quick"] if a.quick else []
                loads.append(os.getloadavg()[0])
                t0 = time.perf_counter()
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
                if done.returncode != 0 or not file.exists():
                    print(f"round {r + 1} {name}: ERROR: {(done.stderr or done.stdout)[-1500:]}")
                    continue
                data = json.loads(file.read_text())
                meta[name] = data["versions"]
                per[name].append(data["results"][0])
                print(f"round {r + 1} {name}: {time.perf_counter() - t0:.0f} s", flush=True)
    finally:
        server.stop()
    merged = [_median_tree(per[c]) | {"rounds": len(per[c])} for c in configs if per[c]]
    machine = {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()}
    summary = {"machine": machine, "server": "sqlite file" if a.db_file else "in-memory", "rounds": a.rounds,
               "quick": a.quick,
               "started": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(started)),
               "seconds": round(time.time() - started), "load_avg_1min": loads, "versions": meta,
               "results": merged}  # fmt: skip
    (out / "temporal.json").write_text(json.dumps(summary, indent=1) + "\n")
    text = tc.table(merged)
    (out / "table.md").write_text(text + "\n")
    print(text)
    print(f"load average (1 min) at each configuration's start: {[round(x, 1) for x in loads]}")


if __name__ == "__main__":
    main()
