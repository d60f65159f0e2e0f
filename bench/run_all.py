#!/usr/bin/env python
"""handrail next to the peer frameworks: every workload, interleaved, in one pass, and one table.

Runs ``bench/bench_handrail.py`` (with this interpreter, or ``--handrail-python``) and each peer script of the
shared ``peer-bench`` folder (``bench_haystack.py`` and friends, each with its own virtual environment under
``$BENCH_DIR``, default /tmp/bench, made by ``peer-bench/setup_venvs.sh``) for every workload. Interleaved: in
each round, workload k runs for every framework back to back before workload k+1, so all see similar load on
the shared machine; every numeric leaf is then the median across rounds (as the peer ``run_all.py`` does). A
missing peer virtual environment is reported and skipped, not fatal.

Usage:
    python bench/run_all.py                 # 3 rounds, full repetitions
    python bench/run_all.py --quick         # fewer repetitions per workload (smoke test / fast figures)
    python bench/run_all.py --rounds 1 --only haystack
    make bench-peers                        # the first line

Writes ``bench/results/raw/<framework>.round<i>.json``, ``bench/results/<framework>.json`` (merged) and
``bench/results/table.md``, and prints the table: each workload's figure for handrail and every peer, the
ratio of handrail to Haystack 3.4.1 (how many times better handrail is: > 1 = handrail better) and issue 9's
target for handrail, met or not.
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
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_PEER_DIR = os.environ.get("PEER_BENCH", os.path.join(ROOT, "..", "shared", "peer-bench"))
PEERS = {"haystack": "hs", "langgraph": "lg", "openai_agents": "oa", "pydantic_ai": "pa"}
ORDER = ["handrail", *PEERS]
TITLES = {
    "handrail": "handrail",
    "haystack": "Haystack",
    "langgraph": "LangGraph",
    "openai_agents": "OpenAI Agents SDK",
    "pydantic_ai": "Pydantic AI",
}
WORKLOADS = ["w1_sync", "w1_async", "w1_scaling", "w1_hitl", "w2", "w3", "w4", "w5"]
TIMEOUT_S = 900


# ---- running ------------------------------------------------------------------------------------------------
def run_json(cmd: list[str]) -> dict[str, Any]:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {TIMEOUT_S} s"}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        return {"error": (p.stderr or p.stdout)[-1500:]}
    res: dict[str, Any] = json.loads(lines[-1])
    return res


def meta_cmd(py: str, folder: str, module: str) -> list[str]:
    """Versions and import time, read from the bench module itself (as the peer run_all.py does)."""
    code = (
        f"import sys; sys.argv=['x']; sys.path.insert(0, {folder!r}); import {module} as b, json, platform, os; "
        f"print(json.dumps({{'versions': b.versions(), 'python': platform.python_version(), "
        f"'cpus': os.cpu_count(), 'framework': b.FRAMEWORK, 'import': b.measure_import(b.IMPORT_STMT)}}))"
    )
    return [py, "-c", code]


def merge(vals: list[Any]) -> Any:
    """Element-wise median across rounds for numbers; first value for anything else."""
    vals = [v for v in vals if v is not None]
    if not vals:
        return None
    v0 = vals[0]
    if isinstance(v0, bool):
        return v0
    if isinstance(v0, int | float):
        nums = [v for v in vals if isinstance(v, int | float)]
        m = statistics.median(nums)
        return round(m) if all(isinstance(v, int) for v in nums) else round(m, 3)
    if isinstance(v0, dict):
        keys = list(v0)
        for v in vals[1:]:
            if isinstance(v, dict):
                keys += [k for k in v if k not in keys]
        return {k: merge([v.get(k) for v in vals if isinstance(v, dict)]) for k in keys}
    if isinstance(v0, list) and v0 and all(isinstance(x, int | float) for x in v0):
        return [merge([v[i] for v in vals if isinstance(v, list) and len(v) > i]) for i in range(len(v0))]
    return v0


def machine() -> dict[str, Any]:
    model = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), model)
    except OSError:
        pass
    return {"cpu": model, "cpus": os.cpu_count(), "kernel": platform.release(), "runner_python": sys.version.split()[0]}


def commands(a: argparse.Namespace) -> dict[str, tuple[str, str, str]]:
    """framework -> (python, folder of its script, module name), for the frameworks that can run."""
    out = {}
    for k in a.only or ORDER:
        if k == "handrail":
            out[k] = (a.handrail_python, HERE, "bench_handrail")
            continue
        py = os.path.join(a.bench_dir, PEERS[k], "bin", "python")
        script = os.path.join(a.peer_dir, f"bench_{k}.py")
        if not os.access(py, os.X_OK):
            print(f"run_all: {k}: no virtual environment at {py} (peer-bench/setup_venvs.sh); skipped", file=sys.stderr)
        elif not os.path.exists(script):
            print(f"run_all: {k}: no script {script}; skipped", file=sys.stderr)
        else:
            out[k] = (py, a.peer_dir, f"bench_{k}")
    return out


def one_round(r: int, cmds: dict[str, tuple[str, str, str]], quick: bool) -> dict[str, dict[str, Any]]:
    per: dict[str, dict[str, Any]] = {k: {"workloads": {}} for k in cmds}
    for k, (py, folder, module) in cmds.items():
        meta = run_json(meta_cmd(py, folder, module))
        per[k].update({x: meta.get(x) for x in ("versions", "python", "cpus", "framework")})
        per[k]["workloads"]["import"] = meta.get("import", meta)
    for w in WORKLOADS:
        for k, (py, folder, module) in cmds.items():
            t0 = time.time()
            cmd = [py, os.path.join(folder, f"{module}.py"), "--workload", w] + (["--quick"] if quick else [])
            res = run_json(cmd)
            per[k]["workloads"][w] = res
            print(
                f"round {r} {w:10s} {k:14s} {time.time() - t0:6.1f}s load={os.getloadavg()[0]:.2f}"
                + (" ERROR" if "error" in res else ""),
                file=sys.stderr,
                flush=True,
            )
    return per


# ---- the table ----------------------------------------------------------------------------------------------
def g(d: Any, *path: str) -> Any:
    for p in path:
        if not isinstance(d, dict) or p not in d:
            return None
        d = d[p]
    return d


W1_SYNC = {"langgraph": ("create_react_agent.invoke",)}
W1_ASYNC = {"langgraph": ("create_react_agent.ainvoke(async tool)",)}
W1_ASYNC_SYNC_TOOL = {"langgraph": ("create_react_agent.ainvoke(sync tool)",)}
W2_KEYS = {
    "handrail": {
        "sync": "sync_run_default",
        "sync8": "sync_run_limit8",
        "async": "async_run_async_tools_default",
        "async8": "async_run_async_tools_limit8",
        "async_sync": "async_run_sync_tools_limit8",
    },
    "haystack": {
        "sync": "sync_run_default_limit4",
        "sync8": "sync_run_limit8",
        "async": "async_run_async_tools_default_limit4",
        "async8": "async_run_async_tools_limit8",
        "async_sync": "async_run_sync_tools_limit8",
    },
    "langgraph": {
        "sync": "sync_invoke_default_pool",
        "sync8": "sync_invoke_max_concurrency8",
        "async": "ainvoke_async_tools",
        "async_sync": "ainvoke_sync_tools",
    },
    "openai_agents": {
        "sync": "run_sync_sync_tools",
        "async": "run_async_tools",
        "async_sync": "run_sync_tools_to_thread",
    },
    "pydantic_ai": {
        "sync": "run_sync_sync_tools",
        "async": "run_async_tools",
        "async_sync": "run_sync_tools_in_threads",
    },
}
W4_SNAPSHOT = {  # the serialized form of a paused run with 2,000 messages, in each framework's own terms
    "handrail": ("pause_2000_messages", "encode_snapshot"),
    "haystack": ("agent_state_2000_to_dict_json", "time"),  # the 3.x resume unit (the 53 ms)
    "langgraph": ("checkpoint_serde_dumps_typed_2000", "time"),
    "openai_agents": ("runstate_to_string_2000", "time"),
    "pydantic_ai": ("paused_run_all_messages_json_2000", "time"),
}
W4_BYTES = {
    "handrail": ("pause_2000_messages", "bytes"),
    "haystack": ("agent_state_2000_to_dict_json", "bytes"),
    "langgraph": ("checkpoint_serde_dumps_typed_2000", "bytes"),
    "openai_agents": ("runstate_to_string_2000", "bytes"),
    "pydantic_ai": ("paused_run_all_messages_json_2000", "bytes"),
}
W4_PAUSE = {
    "handrail": ("pause_2000_messages", "run_until_pause_incl_snapshot_write"),
    "haystack": ("pipeline_breakpoint_snapshot_2000", "pipeline_run_until_breakpoint_incl_snapshot_creation"),
    "openai_agents": ("run_until_approval_pause_2000",),
    "pydantic_ai": ("run_until_approval_pause_2000",),
}


def stat(w: dict[str, Any], k: str, path: tuple[str, ...], field: str = "median") -> float | None:
    v = g(w, *path, field)
    return float(v) if isinstance(v, int | float) else None


def w3_ratio(w: dict[str, Any], k: str) -> float | None:
    a, b = stat(w, k, ("w3", "sync")), stat(w, k, ("w3", "same_agent_empty_history_sync"))
    return a / b if a is not None and b else None


def scaling(w: dict[str, Any], k: str) -> str | None:
    vals = [stat(w, k, ("w1_scaling", f"steps_{n}", "per_step_us")) for n in (10, 50, 100, 200)]
    return None if None in vals else " / ".join(f"{v:.0f}" for v in vals if v is not None)


def flatness(w: dict[str, Any], k: str) -> float | None:
    """Per-step cost at 200 steps over the cost at 50 (1.0 = flat)."""
    a = stat(w, k, ("w1_scaling", "steps_200", "per_step_us"))
    b = stat(w, k, ("w1_scaling", "steps_50", "per_step_us"))
    return a / b if a is not None and b else None


def net_flatness(w: dict[str, Any], k: str) -> float | None:
    """handrail only: like :func:`flatness`, less the fake model's own time per step (measured in the same
    workload; the peer scripts do not report it). The fake model scans back to the last user message on every
    call, so its cost per step grows with the run in every framework.
    """
    if k != "handrail":
        return None
    a = stat(w, k, ("w1_scaling", "steps_200"), "per_step_net_of_fake_model_us")
    b = stat(w, k, ("w1_scaling", "steps_50"), "per_step_net_of_fake_model_us")
    return a / b if a is not None and b else None


def w4_later(w: dict[str, Any], k: str) -> float | None:
    """handrail only: encoding a later pause of the same run (2 new messages) over encoding the first one."""
    if k != "handrail":
        return None
    a = stat(w, k, ("w4", "pause_2000_messages", "later_pause_2_new_messages_encode"))
    b = stat(w, k, ("w4", "pause_2000_messages", "encode_snapshot"))
    return a / b if a is not None and b else None


def runs_per_s(key: str) -> Callable[[dict[str, Any], str], float | None]:
    def f(w: dict[str, Any], k: str) -> float | None:
        v = g(w, "w5", key, "runs_per_s_at_median")
        return float(v) if isinstance(v, int | float) else None

    return f


def path_fn(
    base: tuple[str, ...], sub: tuple[str, ...], field: str = "median", per_fw: dict[str, tuple[str, ...]] | None = None
) -> Callable[[dict[str, Any], str], float | None]:
    def f(w: dict[str, Any], k: str) -> float | None:
        mid = (per_fw or {}).get(k, ())
        return stat(w, k, (*base, *mid, *sub), field)

    return f


def keyed(workload: str, table: dict[str, tuple[str, ...]]) -> Callable[[dict[str, Any], str], float | None]:
    def f(w: dict[str, Any], k: str) -> float | None:
        p = table.get(k)
        if p is None:
            return None
        v = g(w, workload, *p)
        if isinstance(v, dict):
            v = v.get("median")
        return float(v) if isinstance(v, int | float) else None

    return f


def w2_fn(which: str) -> Callable[[dict[str, Any], str], float | None]:
    def f(w: dict[str, Any], k: str) -> float | None:
        key = W2_KEYS.get(k, {}).get(which)
        return stat(w, k, ("w2", key)) if key else None

    return f


def imp(w: dict[str, Any], k: str) -> float | None:
    v = g(w, "import", "net_ms")
    return float(v) if isinstance(v, int | float) else None


# A row: label, value function, unit, "lower"/"higher" is better (None: no ratio), target description and check
# (given handrail's and Haystack's values; None when it does not apply).
Check = Callable[[float, float | None], bool] | None
ROWS: list[tuple[str, Callable[[dict[str, Any], str], Any], str, str | None, str, Check]] = [
    ("import `Agent`, net of bare python", imp, "ms", "lower", "≤ 120 ms", lambda h, s: h <= 120),
    (
        "W1 sync API, sync tool: per step, CPU",
        path_fn(("w1_sync",), ("per_step_us",), "cpu_median", W1_SYNC),
        "µs",
        "lower",
        "≥ 10× less than Haystack",
        lambda h, s: s is not None and s / h >= 10,
    ),
    (
        "W1 async API, async tool: per step, CPU",
        path_fn(("w1_async",), ("per_step_us",), "cpu_median", W1_ASYNC),
        "µs",
        "lower",
        "≥ 8× less than Haystack",
        lambda h, s: s is not None and s / h >= 8,
    ),
    (
        "W1 async API, sync tool: per step, wall",
        lambda w, k: stat(w, k, ("w1_async", *W1_ASYNC_SYNC_TOOL.get(k, ("sync_tool_in_run_async",)), "per_step_us")),
        "µs",
        "lower",
        "",
        None,
    ),
    ("W1 per step at 10 / 50 / 100 / 200 steps (async, wall)", scaling, "µs", None, "", None),
    ("W1 scaling: per step at 200 ÷ at 50 steps, fake model included", flatness, "×", None, "", None),
    (
        "W1 scaling net of the fake model's own time (handrail only)",
        net_flatness,
        "×",
        None,
        "flat (≤ 1.2)",
        lambda h, s: h <= 1.2,
    ),
    (
        "W1 + approval of every call: per step, CPU",
        path_fn(("w1_hitl",), ("per_step_us",), "cpu_median"),
        "µs",
        "lower",
        "≤ 40 µs",
        lambda h, s: h <= 40,
    ),
    ("W2 8 × 50 ms tools, sync API, defaults", w2_fn("sync"), "ms", "lower", "≤ 55 ms", lambda h, s: h <= 55),
    ("W2 sync API, concurrency 8", w2_fn("sync8"), "ms", "lower", "", None),
    ("W2 async API, async tools, defaults", w2_fn("async"), "ms", "lower", "≤ 55 ms", lambda h, s: h <= 55),
    ("W2 async API, async tools, concurrency 8", w2_fn("async8"), "ms", "lower", "", None),
    ("W2 async API, sync (blocking) tools", w2_fn("async_sync"), "ms", "lower", "", None),
    ("W3 2,000-message history + 1 tool step, sync", path_fn(("w3", "sync"), ()), "ms", "lower", "", None),
    ("W3 same, async", path_fn(("w3", "async"), ()), "ms", "lower", "", None),
    (
        "W3 same agent, 1-message input, sync",
        path_fn(("w3", "same_agent_empty_history_sync"), ()),
        "ms",
        None,
        "",
        None,
    ),
    ("W3 history cost: 2,000 ÷ 1 message", w3_ratio, "×", "lower", "≤ ×1.05", lambda h, s: h <= 1.05),
    (
        "W4 snapshot of a 2,000-message paused run → JSON",
        keyed("w4", W4_SNAPSHOT),
        "ms",
        "lower",
        "≤ 3 ms",
        lambda h, s: h <= 3,
    ),
    ("W4 its bytes", keyed("w4", W4_BYTES), "B", "lower", "", None),
    ("W4 run until the pause, snapshot included", keyed("w4", W4_PAUSE), "ms", "lower", "", None),
    (
        "W4 a later pause, 2 new messages (encode)",
        lambda w, k: w4_later(w, k),
        "× of a first pause",
        None,
        "proportional to new messages (≤ 0.2)",
        lambda h, s: h <= 0.2,
    ),
    (
        "W5 200 concurrent runs × 3 steps, async 10 ms tools",
        runs_per_s("async_tools"),
        "runs/s",
        "higher",
        "≥ 3,000 runs/s",
        lambda h, s: h >= 3000,
    ),
    ("W5 same with blocking 10 ms tools", runs_per_s("sync_tools_in_threads"), "runs/s", "higher", "", None),
]


def fmt(v: Any, unit: str) -> str:
    if v is None:
        return "—"
    if isinstance(v, str):
        return f"{v} {unit}"
    if unit == "B":
        return f"{v:,.0f} B"
    if unit.startswith("×"):
        return f"×{v:.2f}" + unit[1:]
    digits = 0 if abs(v) >= 100 else 1 if abs(v) >= 10 else 2
    return f"{v:,.{digits}f} {unit}"


def cell(fn: Callable[[dict[str, Any], str], Any], res: dict[str, Any] | None, k: str, unit: str) -> tuple[Any, str]:
    if res is None:
        return None, "not run"
    try:
        v = fn(res.get("workloads", {}), k)
    except (TypeError, ValueError, ZeroDivisionError, KeyError):
        v = None
    return v, fmt(v, unit)


def table(results: dict[str, dict[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
    cols = [k for k in ORDER if k in results]
    head = ["workload", *(TITLES[k] for k in cols), "handrail vs Haystack", "target", "met"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    verdicts = []
    for label, fn, unit, better, target, ok in ROWS:
        vals = {k: cell(fn, results.get(k), k, unit) for k in cols}
        h, s = vals.get("handrail", (None, ""))[0], vals.get("haystack", (None, ""))[0]
        ratio = "—"
        if better and isinstance(h, float) and isinstance(s, float) and h and s:
            x = s / h if better == "lower" else h / s
            ratio = f"{x:.1f}× better" if x >= 1 else f"{1 / x:.1f}× worse"
        met = ""
        if ok is not None and isinstance(h, float):
            met = "yes" if ok(h, s if isinstance(s, float) else None) else "**no**"
            verdicts.append({"figure": label, "handrail": h, "haystack": s, "target": target, "met": met == "yes"})
        lines.append("| " + " | ".join([label, *(vals[k][1] for k in cols), ratio, target, met]) + " |")
    versions = ["| versions |"]
    for k in cols:
        v = results[k].get("versions") or {}
        versions.append(" " + ", ".join(f"{p} {x}" for p, x in v.items()) + " |")
    lines.append("".join(versions) + " | | |")
    return lines, verdicts


# ---- main ---------------------------------------------------------------------------------------------------
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="fewer repetitions per workload (the scripts' --quick)")
    ap.add_argument("--bench-dir", default=os.environ.get("BENCH_DIR", "/tmp/bench"))
    ap.add_argument("--peer-dir", default=DEFAULT_PEER_DIR, help="the shared peer-bench folder")
    ap.add_argument("--handrail-python", default=sys.executable)
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--only", nargs="*", choices=ORDER, help="a subset of the frameworks")
    ap.add_argument("--table-only", action="store_true", help="print the table of the results in --out")
    a = ap.parse_args()
    a.peer_dir = os.path.abspath(a.peer_dir)
    os.makedirs(os.path.join(a.out, "raw"), exist_ok=True)
    if a.table_only:
        results = {}
        for k in ORDER:
            p = os.path.join(a.out, f"{k}.json")
            if os.path.exists(p):
                with open(p) as f:
                    results[k] = json.loads(f.readline())
        print("\n".join(table(results)[0]))
        return 0

    cmds = commands(a)
    if "handrail" not in cmds and "haystack" not in cmds:
        print("run_all: neither handrail nor Haystack can run", file=sys.stderr)
    t0 = time.time()
    rounds: dict[str, list[dict[str, Any]]] = {k: [] for k in cmds}
    for r in range(1, a.rounds + 1):
        per = one_round(r, cmds, a.quick)
        for k in cmds:
            per[k].update(round=r, quick=a.quick)
            with open(os.path.join(a.out, "raw", f"{k}.round{r}.json"), "w") as f:
                f.write(json.dumps(per[k]) + "\n")
            rounds[k].append(per[k])
    results = {}
    for k in cmds:
        m = merge(rounds[k])
        m.update(rounds=a.rounds, merge="element-wise median across rounds")
        results[k] = m
        with open(os.path.join(a.out, f"{k}.json"), "w") as f:
            f.write(json.dumps(m) + "\n")
    wall = time.time() - t0
    lines, verdicts = table(results)
    info = {**machine(), "rounds": a.rounds, "quick": a.quick, "pass_wall_s": round(wall, 1)}
    info["date"] = time.strftime("%Y-%m-%d %H:%M")
    header = ", ".join(f"{k} {v}" for k, v in info.items())
    with open(os.path.join(a.out, "table.md"), "w") as f:
        f.write(header + "\n\n" + "\n".join(lines) + "\n")
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump({"machine": info, "targets": verdicts}, f, indent=1)
    print(header)
    print()
    print("\n".join(lines))
    missed = [v["figure"] for v in verdicts if not v["met"]]
    print(f"\ntargets met: {len(verdicts) - len(missed)}/{len(verdicts)}" + (f"; missed: {missed}" if missed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
