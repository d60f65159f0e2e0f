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

Writes ``bench/results/raw/<framework>.round<i>.json`` (removing the old ones of the frameworks it runs),
``bench/results/<framework>.json`` (merged), ``table.md``, ``summary.json`` and ``pass.json`` (the frameworks
and rounds of this pass: ``--table-only`` shows only those), and prints the table: each workload's figure for
handrail and every peer, the ratio of handrail to Haystack 3.4.1 (how many times better handrail is: > 1 =
handrail better) and issue 9's target for handrail, met or not. Exit status 1 when a handrail workload failed,
2 on a usage or setup error found before anything runs.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any, NoReturn

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
PASS_FILE = "pass.json"  # the record of the last pass: its id, frameworks, rounds


def fail(msg: str) -> NoReturn:
    """A usage or setup error, found before anything is run or written: message and exit status 2."""
    print(f"run_all: error: {msg}", file=sys.stderr)
    raise SystemExit(2)


# ---- running ------------------------------------------------------------------------------------------------
def last_json(stdout: str) -> dict[str, Any] | None:
    """The last line of stdout that is a JSON object, if any."""
    lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
    try:
        res = json.loads(lines[-1]) if lines else None
    except ValueError:
        return None
    return res if isinstance(res, dict) else None


def run_json(cmd: list[str]) -> dict[str, Any]:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {TIMEOUT_S} s"}
    except OSError as exc:
        return {"error": f"cannot run {cmd[0]}: {exc}"}
    res = last_json(p.stdout)
    if res is not None and (p.returncode == 0 or "error" in res):
        return res
    return {"error": (p.stderr or p.stdout)[-1500:] or f"exit status {p.returncode} and no output"}


def reason(res: dict[str, Any], width: int = 160) -> str:
    """A failed result's error, shortened: its last non-empty line (a traceback's exception), cut to width."""
    lines = [ln.strip() for ln in str(res.get("error", "")).splitlines() if ln.strip()]
    text = lines[-1] if lines else "no error message"
    return text if len(text) <= width else text[: width - 1] + "…"


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
            if shutil.which(a.handrail_python) is None:
                fail(f"--handrail-python {a.handrail_python}: no such executable")
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


def log(r: int, w: str, k: str, t0: float, res: dict[str, Any]) -> None:
    print(
        f"round {r} {w:10s} {k:14s} {time.time() - t0:6.1f}s load={os.getloadavg()[0]:.2f}"
        + (f" ERROR: {reason(res)}" if "error" in res else ""),
        file=sys.stderr,
        flush=True,
    )


def one_round(r: int, cmds: dict[str, tuple[str, str, str]], quick: bool) -> dict[str, dict[str, Any]]:
    per: dict[str, dict[str, Any]] = {k: {"workloads": {}} for k in cmds}
    for k, (py, folder, module) in cmds.items():
        t0 = time.time()
        meta = run_json(meta_cmd(py, folder, module))
        per[k].update({x: meta.get(x) for x in ("versions", "python", "cpus", "framework")})
        per[k]["workloads"]["import"] = meta.get("import", meta)
        log(r, "import", k, t0, per[k]["workloads"]["import"])
    for w in WORKLOADS:
        for k, (py, folder, module) in cmds.items():
            t0 = time.time()
            cmd = [py, os.path.join(folder, f"{module}.py"), "--workload", w] + (["--quick"] if quick else [])
            res = run_json(cmd)
            per[k]["workloads"][w] = res
            log(r, w, k, t0, res)
    return per


def failures(rounds: list[dict[str, Any]]) -> list[str]:
    """One line per workload that failed in any round: how often, and the first round's reason."""
    out = []
    for w in ["import", *WORKLOADS]:
        bad = [res for per in rounds if "error" in (res := g(per, "workloads", w) or {"error": "no result"})]
        if bad:
            out.append(f"{w}: failed in {len(bad)} of {len(rounds)} round(s): {reason(bad[0])}")
    return out


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


def w3_floor(w: dict[str, Any], k: str) -> float | None:
    """The W3 ratio of a run whose only history cost is one copy of the list (made and freed)."""
    copy, one = stat(w, k, ("w3", "history_copy_and_free")), stat(w, k, ("w3", "same_agent_empty_history_sync"))
    return (one + copy / 1000) / one if copy is not None and one else None


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
    ("W3 of that: the input checks, 2,000 messages", path_fn(("w3", "history_input_checks"), ()), "µs", None, "", None),
    ("W3 floor: 1-message run plus one copy of the history, ÷ 1-message run", w3_floor, "×", None, "", None),
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
        if ok is not None and isinstance(h, float) and "Haystack" in target and not isinstance(s, float):
            met = "n/a (no Haystack figure in this pass)"
        elif ok is not None and isinstance(h, float):
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
def positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {n}")
    return n


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--rounds", type=positive_int, default=3, help="rounds (at least 1; default 3)")
    ap.add_argument("--quick", action="store_true", help="fewer repetitions per workload (the scripts' --quick)")
    ap.add_argument("--bench-dir", default=os.environ.get("BENCH_DIR", "/tmp/bench"))
    ap.add_argument("--peer-dir", default=DEFAULT_PEER_DIR, help="the shared peer-bench folder")
    ap.add_argument("--handrail-python", default=sys.executable)
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--only", nargs="*", choices=ORDER, help="a subset of the frameworks")
    ap.add_argument(
        "--table-only", action="store_true", help="print the table of the last pass's results in --out (runs nothing)"
    )
    a = ap.parse_args()
    a.peer_dir = os.path.abspath(a.peer_dir)
    return a


def read_json(path: str) -> dict[str, Any] | None:
    try:
        with open(path) as f:
            res = json.load(f)
    except (OSError, ValueError):
        return None
    return res if isinstance(res, dict) else None


def last_pass(out: str) -> tuple[str, dict[str, dict[str, Any]]]:
    """The results of the last pass recorded in out (a note saying which, and framework -> merged results)."""
    if not os.path.isdir(out):
        fail(f"--out {out}: " + ("not a directory" if os.path.exists(out) else "no such directory"))
    present = {k: r for k in ORDER if (r := read_json(os.path.join(out, f"{k}.json"))) is not None}
    record = read_json(os.path.join(out, PASS_FILE))
    if record is None:
        if not present:
            fail(f"no results in {out} (no <framework>.json); run a pass first")
        return (
            f"no record of the last pass ({PASS_FILE}) in {out}: showing every <framework>.json there, "
            "which may come from different passes",
            present,
        )
    shown = {k: r for k, r in present.items() if k in record.get("frameworks", []) and r.get("pass") == record["pass"]}
    if not shown:
        fail(f"the results of the last pass ({record['pass']}) are missing in {out}")
    old = [k for k in present if k not in shown]
    note = (
        f"the last pass in {out} ({record.get('date')}, {record.get('rounds')} round(s)"
        + (", quick" if record.get("quick") else "")
        + f"): {', '.join(shown)}"
        + (f"; not shown, from older passes: {', '.join(old)}" if old else "")
    )
    return note, shown


def table_only(out: str) -> int:
    note, results = last_pass(out)
    print(note)
    print()
    print("\n".join(table(results)[0]))
    return 0


def start_pass(a: argparse.Namespace, cmds: dict[str, tuple[str, str, str]]) -> None:
    """Checks that something can run and where the results go, then removes the frameworks' old round files."""
    if not cmds:
        fail("nothing to run: " + ", ".join(a.only or ORDER) + " cannot run here (see above); nothing written")
    if os.path.exists(a.out) and not os.path.isdir(a.out):
        fail(f"--out {a.out}: not a directory")
    raw = os.path.join(a.out, "raw")
    os.makedirs(raw, exist_ok=True)
    for k in cmds:
        for path in glob.glob(os.path.join(raw, f"{k}.round*.json")):
            os.remove(path)


def run_rounds(a: argparse.Namespace, cmds: dict[str, tuple[str, str, str]]) -> dict[str, list[dict[str, Any]]]:
    rounds: dict[str, list[dict[str, Any]]] = {k: [] for k in cmds}
    for r in range(1, a.rounds + 1):
        per = one_round(r, cmds, a.quick)
        for k in cmds:
            per[k].update(round=r, quick=a.quick)
            with open(os.path.join(a.out, "raw", f"{k}.round{r}.json"), "w") as f:
                f.write(json.dumps(per[k]) + "\n")
            rounds[k].append(per[k])
    return rounds


def write_json(path: str, data: dict[str, Any], indent: int | None = None) -> None:
    with open(path, "w") as f:
        f.write(json.dumps(data, indent=indent) + "\n")


def report_failures(failed: dict[str, list[str]]) -> int:
    """Prints each framework's failed workloads with their reasons; exit status 1 if handrail's failed."""
    for k, lines in failed.items():
        print(f"\n{TITLES[k]}: {len(lines)} workload(s) failed:", file=sys.stderr)
        for line in lines:
            print(f"  {line}", file=sys.stderr)
    if "handrail" not in failed:
        return 0
    print(
        f"run_all: handrail: {len(failed['handrail'])} workload(s) failed (see above); exit status 1", file=sys.stderr
    )
    return 1


def write_pass(out: str, results: dict[str, dict[str, Any]], info: dict[str, Any], record: dict[str, Any]) -> str:
    """Writes the merged results, table.md, summary.json and the pass record; returns the table's text."""
    for k, m in results.items():
        write_json(os.path.join(out, f"{k}.json"), m)
    lines, verdicts = table(results)
    header = ", ".join(f"{k} {v}" for k, v in info.items())
    text = header + "\n\n" + "\n".join(lines) + "\n"
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(text)
    write_json(os.path.join(out, "summary.json"), {"machine": info, "pass": record, "targets": verdicts}, 1)
    write_json(os.path.join(out, PASS_FILE), record, 1)
    missed = [v["figure"] for v in verdicts if not v["met"]]
    return (
        text
        + f"\ntargets met: {len(verdicts) - len(missed)}/{len(verdicts)}"
        + (f"; missed: {missed}" if missed else "")
    )


def main() -> int:
    a = parse_args()
    if a.table_only:
        return table_only(a.out)
    cmds = commands(a)
    start_pass(a, cmds)
    if "handrail" not in cmds and "haystack" not in cmds:
        print("run_all: neither handrail nor Haystack can run", file=sys.stderr)
    t0 = time.time()
    pass_id = time.strftime("%Y-%m-%dT%H:%M:%S") + f"-{os.getpid()}"
    rounds = run_rounds(a, cmds)
    results = {}
    for k in cmds:
        results[k] = merge(rounds[k])
        results[k].update(rounds=a.rounds, merge="element-wise median across rounds", **{"pass": pass_id})
    info = {**machine(), "rounds": a.rounds, "quick": a.quick, "pass_wall_s": round(time.time() - t0, 1)}
    info["date"] = time.strftime("%Y-%m-%d %H:%M")
    failed = {k: lines for k, per in rounds.items() if (lines := failures(per))}
    record = {"pass": pass_id, "frameworks": list(cmds), "rounds": a.rounds, "quick": a.quick, "date": info["date"]}
    record["failed"] = failed
    print(write_pass(a.out, results, info, record), flush=True)
    return report_failures(failed)


if __name__ == "__main__":
    sys.exit(main())
