#!/usr/bin/env python
"""Performance figures for handrail's Agent with a deterministic in-process fake chat model.

Same workloads, same output shape and same timing harness as the peer benchmarks
(``bench_haystack.py`` and friends in the project's shared ``peer-bench`` folder), so the figures
can be compared as ratios measured in one pass on one machine.

Usage:
    python bench/bench_handrail.py                     # every workload, each in a fresh subprocess: ONE line
    python bench/bench_handrail.py --workload w1_sync  # one workload in-process; prints its JSON line
    python bench/bench_handrail.py --workload import   # the import time alone (the driver's "import" entry)
    python bench/bench_handrail.py --quick             # fewer repetitions (smoke test)
    python bench/bench_handrail.py --out results.json  # also write the line to a file

Workloads (same definitions as the peer scripts):
    import   : wall time of `python -c "from handrail import Agent"` in a subprocess, median of 5
               (minus bare interpreter)
    w1_*     : 50 agent steps, each = fake model asks for 1 tool call (trivial sync/async tool), then text;
               w1_scaling: 10/50/100/200 steps (async); w1_hitl: every call confirmed
    w2       : one step with 8 tool calls, each tool sleeps 50 ms (sync and async, default and limit 8)
    w3       : input history of 2,000 prior messages + 1 tool step (and the same agent with no history)
    w4       : serialization (Agent.to_dict with 20 tools; a paused run's snapshot, 2,000 messages)
    w5       : 200 concurrent run_async, each 3 tool steps, tools sleep 10 ms (async and blocking tools)
Timing: time.perf_counter around each run, after warm-up; median and p95 (nearest rank) in ms or us, plus the
median process CPU time of the same repetitions (less sensitive to other load on the shared machine).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any

FRAMEWORK = "handrail"
IMPORT_STMT = "from handrail import Agent"
QUICK = False

# The framework is imported here but failures are kept, not raised: the script stays importable (the peer
# run_all.py imports bench modules to read versions()) and each workload reports the import error as JSON.
# Any exception counts (a SyntaxError in a half-edited module makes handrail just as unimportable).
_IMPORT_ERROR: str | None = None
try:
    from handrail.components.agents import Agent
    from handrail.dataclasses import ChatMessage, ChatRole, ToolCall
    from handrail.tools import create_tool_from_function
except Exception as _exc:  # pragma: no cover - depends on how far the package is built
    _IMPORT_ERROR = f"{type(_exc).__name__}: {_exc}"


# ----------------------------------------------------------------------------------------------------------
# harness (re-implemented exactly as in the peer bench_*.py scripts, so the numbers mean the same thing)
# ----------------------------------------------------------------------------------------------------------
def _pct(sorted_vals: list[float], p: float) -> float | None:
    if not sorted_vals:
        return None
    k = max(0, min(len(sorted_vals) - 1, round(p / 100.0 * len(sorted_vals) + 0.5) - 1))
    return sorted_vals[k]


def stats(samples_s: list[float], unit: str = "ms") -> dict[str, Any]:
    mult = {"ms": 1e3, "us": 1e6, "s": 1.0}[unit]
    vals = sorted(x * mult for x in samples_s)
    p95 = _pct(vals, 95)
    return {
        "unit": unit,
        "n": len(vals),
        "median": round(statistics.median(vals), 3),
        "p95": round(p95, 3) if p95 is not None else None,
        "min": round(vals[0], 3),
        "mean": round(statistics.fmean(vals), 3),
    }


def reps(n: int) -> int:
    return max(3, n // 5) if QUICK else n


# module constants, as in the peer scripts' fake model (None when handrail is not importable)
_TOOL = ChatRole.TOOL if _IMPORT_ERROR is None else None
_USER = ChatRole.USER if _IMPORT_ERROR is None else None


class Samples(list[float]):
    """Wall-clock seconds per repetition; `.cpu` holds process CPU seconds (all threads) per repetition."""

    cpu: list[float]


def bench_sync(fn: Callable[[], Any], warmup: int, n: int) -> Samples:
    for _ in range(warmup):
        fn()
    out, cpu = Samples(), []
    for _ in range(reps(n)):
        c0 = time.process_time()
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    out.cpu = cpu
    return out


def bench_async(coro_fn: Callable[[], Awaitable[Any]], warmup: int, n: int) -> Samples:
    async def main() -> Samples:
        for _ in range(warmup):
            await coro_fn()
        out, cpu = Samples(), []
        for _ in range(reps(n)):
            c0 = time.process_time()
            t0 = time.perf_counter()
            await coro_fn()
            out.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        out.cpu = cpu
        return out

    return asyncio.run(main())


def timed(samples: Samples, unit: str = "ms", per: int = 1) -> dict[str, Any]:
    """Wall stats plus CPU-time stats (CPU time is less sensitive to other load on the machine)."""
    d = stats([x / per for x in samples], unit)
    c = stats([x / per for x in samples.cpu], unit)
    d["cpu_median"] = c["median"]
    d["cpu_p95"] = c["p95"]
    return d


def rss_now_kb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def peak_rss_kb() -> int:
    """Peak RSS of this process (VmHWM), KiB; falls back to ru_maxrss."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def traced_peak_kb(fn: Callable[[], Any]) -> float:
    """Peak Python allocation (tracemalloc) during one call of fn(), in KiB (separate, untimed pass)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return round((peak - base) / 1024, 1)


def make_history(n: int = 2000) -> list[tuple[str, str]]:
    """Deterministic alternating user/assistant texts of ~200 chars each."""
    base = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore "
    out = []
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        txt = (f"[{role} {i:05d}] " + base * 3)[:200]
        out.append((role, txt))
    return out


def measure_import(stmt: str, runs: int = 5) -> dict[str, Any]:
    def t(code: str) -> float:
        ts = []
        for _ in range(runs):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
            ts.append(time.perf_counter() - t0)
        return statistics.median(ts)

    bare = t("pass")
    try:
        full = t(stmt)
    except subprocess.CalledProcessError as exc:  # the package is not built that far yet
        return {"stmt": stmt, "error": exc.stderr.decode(errors="replace")[-1500:]}
    return {
        "stmt": stmt,
        "median_ms": round(full * 1e3, 1),
        "bare_python_ms": round(bare * 1e3, 1),
        "net_ms": round((full - bare) * 1e3, 1),
        "runs": runs,
    }


def driver(workloads: list[str], versions: dict[str, str]) -> dict[str, Any]:
    results: dict[str, Any] = {
        "framework": FRAMEWORK,
        "versions": versions,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "quick": QUICK,
        "workloads": {},
    }
    results["workloads"]["import"] = measure_import(IMPORT_STMT)
    for w in workloads:
        cmd = [sys.executable, os.path.abspath(__file__), "--workload", w] + (["--quick"] if QUICK else [])
        p = subprocess.run(cmd, capture_output=True, text=True)
        line = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
        if p.returncode != 0 or not line:
            results["workloads"][w] = {"error": (p.stderr or p.stdout)[-1500:]}
        else:
            results["workloads"][w] = json.loads(line[-1])
    return results


# ----------------------------------------------------------------------------------------------------------
# framework-specific part
# ----------------------------------------------------------------------------------------------------------
class FakeChatGenerator:
    """Deterministic fake model, the same as the peer scripts' one.

    Scans back to the last user message, counting tool results, to decide the step: while fewer than `steps`
    tool rounds are done it requests `calls` tool calls (round-robin over `tool_names`), then replies with
    text. Stateless, so one instance can serve concurrent runs.
    """

    def __init__(self, steps: int = 50, calls: int = 1, tool_names: list[str] | None = None) -> None:
        self.steps = steps
        self.calls = calls
        self.tool_names = tool_names or ["ping"]

    def _reply(self, messages: list[ChatMessage]) -> dict[str, list[ChatMessage]]:
        n = 0
        for m in reversed(messages):
            r = m.role
            if r is _TOOL:
                n += 1
            elif r is _USER:
                break
        done = n // self.calls
        if done >= self.steps:
            return {"replies": [ChatMessage.from_assistant("final answer", meta={"finish_reason": "stop"})]}
        names = self.tool_names
        calls = [
            ToolCall(tool_name=names[i % len(names)], arguments={"x": "a"}, id=f"call_{done}_{i}")
            for i in range(self.calls)
        ]
        return {"replies": [ChatMessage.from_assistant(tool_calls=calls, meta={"finish_reason": "tool_calls"})]}

    def run(
        self,
        messages: list[ChatMessage],
        tools: Any = None,
        streaming_callback: Any = None,
        generation_kwargs: dict[str, Any] | None = None,
    ) -> dict[str, list[ChatMessage]]:
        return self._reply(messages)

    async def run_async(
        self,
        messages: list[ChatMessage],
        tools: Any = None,
        streaming_callback: Any = None,
        generation_kwargs: dict[str, Any] | None = None,
    ) -> dict[str, list[ChatMessage]]:
        return self._reply(messages)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": f"{type(self).__module__}.{type(self).__qualname__}",
            "init_parameters": {"steps": self.steps, "calls": self.calls, "tool_names": self.tool_names},
        }


def ping(x: str) -> str:
    """Trivial tool: returns a short string."""
    return "pong"


async def aping(x: str) -> str:
    """Trivial async tool: returns a short string."""
    return "pong"


def sleep50(x: str) -> str:
    """Blocking I/O tool: sleeps 50 ms."""
    time.sleep(0.05)
    return "slept"


async def asleep50(x: str) -> str:
    """Async I/O tool: sleeps 50 ms."""
    await asyncio.sleep(0.05)
    return "slept"


def sleep10(x: str) -> str:
    """Blocking I/O tool: sleeps 10 ms."""
    time.sleep(0.01)
    return "slept"


async def asleep10(x: str) -> str:
    """Async I/O tool: sleeps 10 ms."""
    await asyncio.sleep(0.01)
    return "slept"


def mk_tool(fn: Callable[..., Any], name: str = "ping") -> Any:
    return create_tool_from_function(fn, name=name)


def mk_agent(tool_fn: Callable[..., Any], steps: int, calls: int = 1, **kw: Any) -> Any:
    agent = Agent(
        chat_generator=FakeChatGenerator(steps=steps, calls=calls),
        tools=[mk_tool(tool_fn)],
        max_agent_steps=1000,
        **kw,
    )
    agent.warm_up()
    return agent


def user_msgs() -> list[ChatMessage]:
    return [ChatMessage.from_user("please work")]


def check(res: dict[str, Any], steps: int, calls: int) -> None:
    if res["exit_reason"] != "text":
        raise AssertionError(f"exit_reason {res.get('exit_reason')!r}, expected 'text'")
    n_tool = sum(1 for m in res["messages"] if m.role is ChatRole.TOOL)
    if n_tool != steps * calls:
        raise AssertionError(f"{n_tool} tool messages, expected {steps} steps x {calls} calls")


# ---- W1 -------------------------------------------------------------------------------------------------
def w1_sync() -> dict[str, Any]:
    steps = 50
    agent = mk_agent(ping, steps)
    check(agent.run(messages=user_msgs()), steps, 1)
    s = bench_sync(lambda: agent.run(messages=user_msgs()), 3, 30)
    return {
        "api": "Agent.run (sync tool)",
        "steps": steps,
        "per_run": timed(s, "ms"),
        "per_step_us": timed(s, "us", per=steps),
    }


def w1_async() -> dict[str, Any]:
    steps = 50
    agent = mk_agent(aping, steps)
    check(asyncio.run(agent.run_async(messages=user_msgs())), steps, 1)
    s = bench_async(lambda: agent.run_async(messages=user_msgs()), 3, 30)
    out: dict[str, Any] = {
        "api": "Agent.run_async (async tool)",
        "steps": steps,
        "per_run": timed(s, "ms"),
        "per_step_us": timed(s, "us", per=steps),
    }
    agent2 = mk_agent(ping, steps)
    s2 = bench_async(lambda: agent2.run_async(messages=user_msgs()), 3, 30)
    out["sync_tool_in_run_async"] = {"per_run": timed(s2, "ms"), "per_step_us": timed(s2, "us", per=steps)}
    return out


def w1_scaling() -> dict[str, Any]:
    """Per-step cost as the run grows (async API, async trivial tool): flat = O(1) per step, growing = O(n)."""
    out: dict[str, Any] = {"api": "async run, async tool"}
    for steps, n in ((10, 15), (50, 10), (100, 5), (200, 3)):
        agent = mk_agent(aping, steps)
        check(asyncio.run(agent.run_async(messages=user_msgs())), steps, 1)
        s = bench_async(lambda agent=agent: agent.run_async(messages=user_msgs()), 1, n)
        model_us = _fake_model_us_per_step(agent, steps)
        per_step = timed(s, "us", per=steps)
        out[f"steps_{steps}"] = {
            "per_run_ms": timed(s, "ms")["median"],
            "per_step_us": per_step,
            "fake_model_us_per_step": model_us,
            "per_step_net_of_fake_model_us": per_step["median"] - model_us,
        }
    return out


def _fake_model_us_per_step(agent: Any, steps: int) -> float:
    """The fake model's own time per step (µs, median of 5 runs), measured in separate, instrumented runs.

    The fake model scans the history back to the last user message on every call, as the peers' does, so its
    cost per step grows with the run in every framework; subtracting it leaves the framework's own per-step cost.
    """
    generator = agent.chat_generator
    spent: list[float] = []
    reply = generator._reply

    def timed_reply(messages: list[ChatMessage]) -> dict[str, list[ChatMessage]]:
        t0 = time.perf_counter()
        try:
            return reply(messages)
        finally:
            spent.append(time.perf_counter() - t0)

    generator._reply = timed_reply
    per_run = []
    try:
        for _ in range(5):
            spent.clear()
            asyncio.run(agent.run_async(messages=user_msgs()))
            per_run.append(sum(spent))
    finally:
        del generator._reply
    return statistics.median(per_run) / steps * 1e6


class AutoConfirmUI:
    """A confirmation UI that confirms at once (no human latency), like the peer script's."""

    def get_user_confirmation(
        self, tool_name: str, tool_description: str, tool_params: dict[str, Any], injected_params: Any = None
    ) -> Any:
        from handrail.human_in_the_loop import ConfirmationUIResult

        return ConfirmationUIResult(action="confirm")


def w1_hitl() -> dict[str, Any]:
    """W1 with every call confirmed: an always-ask blocking strategy on "*" and an auto-confirming UI."""
    from handrail.human_in_the_loop import AlwaysAskPolicy, BlockingConfirmationStrategy

    steps = 50
    strategy = BlockingConfirmationStrategy(confirmation_policy=AlwaysAskPolicy(), confirmation_ui=AutoConfirmUI())
    agent = mk_agent(ping, steps, confirmation_strategies={"*": strategy})
    check(agent.run(messages=user_msgs()), steps, 1)
    s = bench_sync(lambda: agent.run(messages=user_msgs()), 3, 30)
    return {
        "api": "Agent.run + BlockingConfirmationStrategy(AlwaysAskPolicy, auto-confirm UI)",
        "steps": steps,
        "per_run": timed(s, "ms"),
        "per_step_us": timed(s, "us", per=steps),
    }


def w2() -> dict[str, Any]:
    """One step with 8 calls of a 50 ms sleeping tool, sync and async, at the defaults and with limit 8.

    handrail's default ``tool_concurrency_limit`` is 8 (Haystack's is 4), so the default and the explicit
    limit-8 rows are the same configuration, measured separately, as the peer script does.
    """
    out: dict[str, Any] = {}
    for label, fn, limit, mode in [
        ("sync_run_default", sleep50, None, "sync"),
        ("sync_run_limit8", sleep50, 8, "sync"),
        ("async_run_async_tools_default", asleep50, None, "async"),
        ("async_run_async_tools_limit8", asleep50, 8, "async"),
        ("async_run_sync_tools_limit8", sleep50, 8, "async"),
    ]:
        kw = {} if limit is None else {"tool_concurrency_limit": limit}
        agent = mk_agent(fn, 1, calls=8, **kw)
        if mode == "sync":
            check(agent.run(messages=user_msgs()), 1, 8)
            s = bench_sync(lambda agent=agent: agent.run(messages=user_msgs()), 2, 15)
        else:
            check(asyncio.run(agent.run_async(messages=user_msgs())), 1, 8)
            s = bench_async(lambda agent=agent: agent.run_async(messages=user_msgs()), 2, 15)
        out[label] = timed(s, "ms")
    out["default_tool_concurrency_limit"] = Agent(chat_generator=FakeChatGenerator(steps=1)).tool_concurrency_limit
    out["note"] = "ideal ~50 ms if all 8 run in parallel, ~400 ms if serial; handrail default tool_concurrency_limit=8"
    return out


def w3() -> dict[str, Any]:
    """2,000-message input history (make_history) + 1 tool step; wall, RSS and tracemalloc peak."""
    hist = [ChatMessage.from_user(t) if r == "user" else ChatMessage.from_assistant(t) for r, t in make_history()]
    hist.append(ChatMessage.from_user("now call the tool"))
    agent = mk_agent(ping, 1)
    check(agent.run(messages=hist), 1, 1)
    rss_base = rss_now_kb()
    s = bench_sync(lambda: agent.run(messages=hist), 3, 30)
    a_agent = mk_agent(aping, 1)
    sa = bench_async(lambda: a_agent.run_async(messages=hist), 3, 30)
    s0 = bench_sync(lambda: agent.run(messages=user_msgs()), 3, 30)
    peak = peak_rss_kb()
    tm = traced_peak_kb(lambda: agent.run(messages=hist))
    return {
        "history_messages": len(hist),
        "sync": timed(s, "ms"),
        "async": timed(sa, "ms"),
        "same_agent_empty_history_sync": timed(s0, "ms"),
        **_w3_parts(hist),
        "rss_after_history_built_kb": rss_base,
        "peak_rss_kb": peak,
        "peak_minus_base_kb": peak - rss_base,
        "tracemalloc_peak_one_run_kb": tm,
    }


def _w3_parts(hist: list[ChatMessage]) -> dict[str, Any]:
    """What a run spends on the history itself, measured on its own (µs per 2,000 messages).

    ``history_copy_and_free``: one new list of the history, made and freed — the least any run that returns the
    history as a new list pays. ``history_input_checks``: the Agent's checks of its input (every message is a
    ChatMessage; no system message after the first position), on a fresh copy as a run makes it.
    """
    from handrail.components.agents import _config

    def checks() -> None:
        _config.with_system_prompt(_config.check_messages(hist), None, None)

    return {
        "history_copy_and_free": timed(bench_sync(lambda: list(hist), 20, 300), "us"),
        "history_input_checks": timed(bench_sync(checks, 20, 300), "us"),
    }


def _mk20() -> list[Any]:
    """20 tools of three parameters each, importable by dotted path (as in the peer scripts)."""
    tools = []
    for i in range(20):

        def f(query: str, limit: int = 10, verbose: bool = False) -> str:
            return "ok"

        f.__name__ = f.__qualname__ = f"tool_{i}"
        f.__doc__ = f"Tool number {i}: looks things up given a query, returns a short string."
        globals()[f.__name__] = f  # importable by dotted path, for Agent.from_dict
        tools.append(create_tool_from_function(f))
    return tools


def _per_round(fn: Callable[[], Callable[[], Any]], warmup: int, n: int) -> Samples:
    """Like bench_sync, but ``fn()`` prepares each repetition (untimed) and returns the timed call."""
    for _ in range(warmup):
        fn()()
    out, cpu = Samples(), []
    for _ in range(reps(n)):
        call = fn()
        c0 = time.process_time()
        t0 = time.perf_counter()
        call()
        out.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    out.cpu = cpu
    return out


def w4() -> dict[str, Any]:
    """Agent.to_dict/from_dict with 20 tools; a real approval pause with a 2,000-message history: the whole
    pause, the snapshot encoding, the durable write (fsync) and the bytes, separately; a later write of the
    same run after 2 more messages (per-message JSON cached); loading the file; a durable run's per-step cost.
    """
    import dataclasses
    import shutil
    import tempfile

    from handrail.core._files import atomic_write
    from handrail.dataclasses.breakpoints import HITLBreakpointException, ToolBreakpoint
    from handrail.dataclasses.snapshot import MessageCache, decode_snapshot, encode_snapshot
    from handrail.human_in_the_loop import BreakpointConfirmationStrategy

    out: dict[str, Any] = {"api": "Agent.to_dict/from_dict; Agent.run pausing in BreakpointConfirmationStrategy"}
    agent20 = Agent(chat_generator=FakeChatGenerator(steps=1), tools=_mk20(), system_prompt="You are helpful.")
    js = json.dumps(agent20.to_dict())
    out["agent_to_dict_20_tools"] = {
        "to_dict": timed(bench_sync(agent20.to_dict, 5, 200), "ms"),
        "to_dict_plus_json_dumps": timed(bench_sync(lambda: json.dumps(agent20.to_dict()), 5, 200), "ms"),
        "bytes": len(js.encode()),
    }
    out["agent_from_dict_20_tools"] = timed(bench_sync(lambda: Agent.from_dict(json.loads(js)), 3, 50), "ms")

    hist = [ChatMessage.from_user(t) if r == "user" else ChatMessage.from_assistant(t) for r, t in make_history()]
    plain = json.dumps([m.to_dict() for m in hist])
    out["messages_2000_to_dict_json"] = {
        "time": timed(bench_sync(lambda: json.dumps([m.to_dict() for m in hist]), 3, 30), "ms"),
        "bytes": len(plain.encode()),
    }

    folder = tempfile.mkdtemp(prefix="handrail-w4-")
    try:
        # (a) a real pause: the fake model asks for ping(x), whose strategy pauses the run; the snapshot
        # (2,000 history messages + the question + the reply with the call) is encoded and written (fsync).
        strategy = BreakpointConfirmationStrategy(os.path.join(folder, "pauses"))
        agent = mk_agent(ping, 1, confirmation_strategies={"ping": strategy})
        question = hist + user_msgs()

        def pause() -> HITLBreakpointException:
            try:
                agent.run(messages=question)
            except HITLBreakpointException as exc:
                os.unlink(str(exc.snapshot_file_path))
                return exc
            raise AssertionError("the run did not pause")

        snap = pause().snapshot
        assert snap is not None and len(snap.messages) == len(hist) + 2
        data = encode_snapshot(snap)
        if decode_snapshot(data, source="w4") != snap:
            raise AssertionError("the snapshot does not round-trip")
        target = os.path.join(folder, "snapshot.json")
        warm = MessageCache()
        encode_snapshot(snap, warm)

        def later() -> Callable[[], Any]:
            # the same run, one step later: the model's reply with a call and its result are new
            call = ToolCall(tool_name="ping", arguments={"x": "a"}, id=f"call_1_{len(warm)}")
            result = ChatMessage.from_tool("pong", snap.messages[-1].tool_calls[0])
            reply = ChatMessage.from_assistant(tool_calls=[call])
            grown = dataclasses.replace(snap, messages=[*snap.messages, result, reply])
            return lambda: encode_snapshot(grown, warm)

        out["pause_2000_messages"] = {
            "messages": len(snap.messages),
            "bytes": len(data),
            "run_until_pause_incl_snapshot_write": timed(bench_sync(pause, 3, 30), "ms"),
            "encode_snapshot": timed(bench_sync(lambda: encode_snapshot(snap), 3, 30), "ms"),
            "durable_write_fsync": timed(bench_sync(lambda: atomic_write(target, data), 3, 30), "ms"),
            "encode_snapshot_cached_nothing_new": timed(bench_sync(lambda: encode_snapshot(snap, warm), 3, 30), "ms"),
            "later_pause_2_new_messages_encode": timed(_per_round(later, 3, 30), "ms"),
            "load_decode_snapshot": timed(bench_sync(lambda: decode_snapshot(data, source="w4"), 3, 30), "ms"),
            "target": "encode_snapshot <= 3 ms (Haystack 3.4.1: 53 ms State JSON, 294 ms at a breakpoint)",
        }

        # (b) a durable run (a snapshot directory is given) writes the ledger before and after each call,
        # reusing the run's message cache; compared with the same run without a directory.
        steps = 10
        never = ToolBreakpoint(tool_name="ping", visit_count=10**6, snapshot_file_path=os.path.join(folder, "runs"))
        runner = mk_agent(ping, steps)
        check(runner.run(messages=question, break_point=never), steps, 1)
        durable = bench_sync(lambda: runner.run(messages=question, break_point=never), 2, 20)
        plain_run = bench_sync(lambda: runner.run(messages=question), 2, 20)
        out["durable_run_2000_history"] = {
            "steps": steps,
            "writes_per_step": 2,
            "durable_per_step": timed(durable, "ms", per=steps),
            "plain_per_step": timed(plain_run, "ms", per=steps),
        }
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return out


def _w5(tool_fn: Callable[..., Any], limit: int | None = None) -> dict[str, Any]:
    runs, steps = 200, 3
    kw = {} if limit is None else {"tool_concurrency_limit": limit}
    agent = mk_agent(tool_fn, steps, **kw)

    async def batch() -> None:
        res = await asyncio.gather(*[agent.run_async(messages=user_msgs()) for _ in range(runs)])
        if len(res) != runs or not all(r["exit_reason"] == "text" for r in res):
            raise AssertionError("a W5 run did not end with a text reply")

    s = bench_async(batch, 1, 7)
    med = statistics.median(s)
    return {"runs": runs, "steps_per_run": steps, "wall": timed(s, "ms"), "runs_per_s_at_median": round(runs / med, 1)}


def w5() -> dict[str, Any]:
    """200 concurrent run_async (asyncio.gather), 3 steps each, 10 ms sleeping tools, async and sync."""
    return {
        "async_tools": _w5(asleep10),
        "sync_tools_in_threads": _w5(sleep10),
        "note": "ideal wall ~30 ms (3 sequential 10 ms sleeps) + framework CPU; sync tools go through a thread pool",
    }


def _w6_resume(base: str, kind: str, n: int, mode: str) -> Callable[[], Any]:
    """Pause a run whose one step has n ping calls into a fresh store (untimed); return the timed resume."""
    import dataclasses
    import tempfile

    from handrail.dataclasses.breakpoints import HITLBreakpointException
    from handrail.dataclasses.decisions import ToolExecutionDecision
    from handrail.human_in_the_loop import BreakpointConfirmationStrategy
    from handrail.stores import open_snapshot_store
    from handrail.testing import ScriptedChatGenerator

    folder = tempfile.mkdtemp(dir=base)
    store = open_snapshot_store(folder if kind == "directory" else f"sqlite:///{folder}/snapshots.db")
    calls = [ToolCall(tool_name="ping", arguments={"x": str(i)}, id=f"c{i}") for i in range(n)]
    strategy = {"ping": BreakpointConfirmationStrategy(snapshot_store=store)}

    def agent(reply: ChatMessage) -> Any:
        generator = ScriptedChatGenerator([reply])
        return Agent(chat_generator=generator, tools=[mk_tool(ping)], confirmation_strategies=strategy)

    try:
        agent(ChatMessage.from_assistant(tool_calls=calls)).run(messages=user_msgs())
        raise AssertionError("the run did not pause")
    except HITLBreakpointException as exc:
        paused = exc.snapshot
    assert paused is not None
    decisions = [ToolExecutionDecision("ping", True, f"c{i}") for i in range(n)]
    snapshot = dataclasses.replace(store.load(str(paused.snapshot_id)), tool_execution_decisions=decisions)
    resumer = agent(ChatMessage.from_assistant("final answer"))

    def check(res: dict[str, Any]) -> None:
        if res["last_message"].text != "final answer" or res["tool_call_counts"].get("ping") != n:
            raise AssertionError(f"W6 resume of {n} calls did not end as expected")

    if mode == "async":
        return lambda: check(asyncio.run(resumer.run_async(messages=[], snapshot=snapshot)))
    return lambda: check(resumer.run(messages=[], snapshot=snapshot))


def w6() -> dict[str, Any]:
    """Resume of one step with 25 / 200 / 1,000 approved trivial calls (sync tool), directory and SQLite stores,
    sync and async API: the ledger is written before each call starts and after it ends (group commit)."""
    import shutil
    import tempfile

    base = tempfile.mkdtemp(prefix="handrail-w6-")
    out: dict[str, Any] = {"api": "Agent.run / run_async(snapshot=...) of a paused step, every call approved"}
    try:
        for kind in ("directory", "sqlite"):
            for mode in ("sync", "async"):
                for n in (25, 200, 1000):
                    rounds = 5 if n == 1000 else 10

                    def prepare(kind: str = kind, n: int = n, mode: str = mode) -> Callable[[], Any]:
                        return _w6_resume(base, kind, n, mode)

                    out[f"{kind}_{mode}_{n}"] = timed(_per_round(prepare, 1, rounds), "ms")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    out["target"] = "1,000 calls <= 2 s (directory and SQLite)"
    return out


WORKLOADS: dict[str, Callable[[], dict[str, Any]]] = {
    "w1_sync": w1_sync,
    "w1_async": w1_async,
    "w1_scaling": w1_scaling,
    "w1_hitl": w1_hitl,
    "w2": w2,
    "w3": w3,
    "w4": w4,
    "w5": w5,
    "w6": w6,
}


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for p in ["handrail", "pydantic"]:
        try:
            out[p] = version(p)
        except PackageNotFoundError:
            out[p] = "not installed"
    return out


def import_failed(name: str, error: str) -> int:
    """Print the error line a workload gives when handrail cannot be imported; returns the exit status (1)."""
    print(json.dumps({"error": f"handrail is not importable: {error}"}))
    print(f"bench_handrail: {name}: handrail is not importable: {error}", file=sys.stderr)
    return 1


def run_import() -> int:
    """The "import" workload: the driver's "import" entry, as one JSON line."""
    res = measure_import(IMPORT_STMT)
    if "error" in res:
        lines = str(res["error"]).strip().splitlines() or ["the import failed"]
        return import_failed("import", lines[-1])
    print(json.dumps(res))
    return 0


def run_one(name: str) -> int:
    """Run one workload in this process and print its JSON line; returns the exit status."""
    if _IMPORT_ERROR is not None:
        return import_failed(name, _IMPORT_ERROR)
    if name == "import":
        return run_import()
    rss0 = rss_now_kb()
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    try:
        res = WORKLOADS[name]()
    except ImportError as exc:  # a part of handrail that a workload imports on first use
        return import_failed(name, f"{type(exc).__name__}: {exc}")
    res["_process"] = {
        "rss_at_start_kb": rss0,
        "peak_rss_kb": peak_rss_kb(),
        "workload_wall_s": round(time.perf_counter() - t0, 2),
        "loadavg1_start_end": [round(load0, 2), round(os.getloadavg()[0], 2)],
    }
    print(json.dumps(res))
    return 0


def main() -> int:
    global QUICK
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--workload", choices=["import", *WORKLOADS])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out")
    a = ap.parse_args()
    QUICK = a.quick
    if a.workload:
        return run_one(a.workload)
    if _IMPORT_ERROR is not None:
        res = {"error": f"handrail is not importable: {_IMPORT_ERROR}"}
        print(f"bench_handrail: handrail is not importable: {_IMPORT_ERROR}", file=sys.stderr)
    else:
        res = driver(list(WORKLOADS), versions())
    line = json.dumps(res)
    if a.out:
        with open(a.out, "w") as f:
            f.write(line + "\n")
    print(line)
    return 1 if "error" in res else 0


if __name__ == "__main__":
    sys.exit(main())
