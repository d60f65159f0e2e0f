"""The measuring half of the tracing benchmark, shared by handrail's script and the peer scripts.

Imports only the standard library at module level (``opentelemetry-sdk`` inside :func:`in_memory_tracing`), so each
framework's virtual environment can use it: ``bench/bench_tracing.py`` for handrail,
``bench/peers/tracing_haystack.py`` and ``bench/peers/tracing_pydantic_ai.py`` for the peers. A framework script
gives it the W1 workload of its own bench script (``bench_handrail.py``, or the peer-bench folder's
``bench_<framework>.py``: same fake model, same 50 steps of one trivial tool call, same timing loop) in several
configurations (tracing off, on, on with content, ...); each configuration is a :class:`Config`: a function that
times N runs and returns their process CPU seconds, a function that counts the spans of one run, and a context
manager that switches the configuration's tracing on around both (global switches must be off again after it).

Every round measures every configuration once (a few warm-up runs, then ``--runs`` timed ones), back to back in one
process, the order rotated from round to round; many short rounds, so that the load other work puts on the machine
changes little within one. A configuration's figure is the median over rounds of its per-round median CPU time per
step, and its spread the lowest and highest of those per-round figures. "Added" is the median over rounds of the
configuration's figure minus the ``off`` configuration's of the same API and round (paired, so a round measured
while the machine was busier counts against both), and the ratio the median of the per-round quotients.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

STEPS = 50
"""Steps per W1 run (as in every bench script; ``--steps`` changes it, to see how a cost grows with the run)."""


@dataclass
class Config:
    """One configuration of one API: ``measure(n)`` times n runs (CPU seconds each), ``spans()`` runs one, traced."""

    api: str
    name: str
    measure: Callable[[int], list[float]]
    spans: Callable[[], list[Any]]
    active: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext
    per_round_us: list[float] = field(default_factory=list)


@dataclass
class InMemoryTracing:
    """A private ``TracerProvider`` whose spans go, one by one, to an ``InMemorySpanExporter``."""

    provider: Any
    exporter: Any

    def finished(self, scope: str | None = None) -> list[Any]:
        spans = self.exporter.get_finished_spans()
        return [s for s in spans if scope is None or s.instrumentation_scope.name == scope]


def in_memory_tracing() -> InMemoryTracing:
    """``TracerProvider()`` with ``SimpleSpanProcessor(InMemorySpanExporter())``: no threads, no global state."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return InMemoryTracing(provider, exporter)


@contextlib.contextmanager
def cleared(tracing: InMemoryTracing) -> Iterator[None]:
    """Empty the exporter before and after (outside the timed runs), so memory does not grow across rounds."""
    tracing.exporter.clear()
    try:
        yield
    finally:
        tracing.exporter.clear()


def peer_bench_dir() -> str:
    """``$PEER_BENCH``, else ``../shared/peer-bench`` beside the repository (its main checkout, for a worktree)."""
    if "PEER_BENCH" in os.environ:
        return os.environ["PEER_BENCH"]
    here = os.path.dirname(os.path.abspath(__file__))
    git = subprocess.run(["git", "-C", here, "rev-parse", "--path-format=absolute", "--git-common-dir"],
                         capture_output=True, text=True)  # fmt: skip
    root = os.path.dirname(git.stdout.strip()) if git.returncode == 0 else os.path.dirname(here)
    return os.path.join(os.path.dirname(root), "shared", "peer-bench")


def arguments(description: str, extra: Callable[[argparse.ArgumentParser], None] | None = None) -> argparse.Namespace:
    global STEPS
    ap = argparse.ArgumentParser(description=description)
    if extra is not None:
        extra(ap)
    ap.add_argument("--rounds", type=int, default=15, help="rounds of every configuration (default 15)")
    ap.add_argument("--runs", type=int, default=6, help="timed runs of 50 steps per configuration and round (6)")
    ap.add_argument("--api", choices=["sync", "async"], action="append", help="default: both")
    ap.add_argument("--steps", type=int, default=STEPS, help="steps per run (default 50, W1's)")
    ap.add_argument("--quick", action="store_true", help="2 rounds of 5 runs (a smoke test)")
    ap.add_argument("--json", help="also write the JSON line to this file")
    a = ap.parse_args()
    STEPS = a.steps
    if a.quick:
        a.rounds, a.runs = 2, 5
    a.api = a.api or ["sync", "async"]
    return a


def measure(configs: list[Config], rounds: int, runs: int) -> None:
    """Every configuration once per round, back to back, in an order rotated by one each round."""
    for r in range(rounds):
        k = r % len(configs)
        for config in configs[k:] + configs[:k]:
            with config.active():
                cpu = config.measure(runs)
            config.per_round_us.append(statistics.median(cpu) / STEPS * 1e6)
            figure = config.per_round_us[-1]
            print(f"round {r + 1} {config.api:5} {config.name:12} {figure:9.1f} us/step", file=sys.stderr)


def count_spans(config: Config) -> tuple[float, dict[str, float], float | None]:
    """Spans per step of one run, per span name, and the SDK's own CPU µs per step for spans like those."""
    with config.active():
        spans = config.spans()
    by_name = {name: n / STEPS for name, n in sorted(Counter(s.name for s in spans).items())}
    return len(spans) / STEPS, by_name, sdk_floor_us_per_step(spans) if spans else None


def sdk_floor_us_per_step(spans: list[Any], repeat: int = 15) -> float:
    """CPU µs per step of the OpenTelemetry SDK alone making the spans of one run again (the floor of any tracer).

    The same names, kinds and attributes, each started and ended as a child of one parent span, into a fresh
    private provider with its own in-memory exporter: no framework code. The median of ``repeat`` passes.
    """
    from opentelemetry import trace

    fresh = in_memory_tracing()
    tracer = fresh.provider.get_tracer("floor")
    made = [(s.name, s.kind, dict(s.attributes or {})) for s in spans]
    cpu = []
    for _ in range(repeat):
        fresh.exporter.clear()
        c0 = time.process_time()
        with tracer.start_as_current_span("parent") as parent:
            context = trace.set_span_in_context(parent)
            for name, kind, attributes in made:
                tracer.start_span(name, context=context, kind=kind, attributes=attributes).end()
        cpu.append(time.process_time() - c0)
    return round(statistics.median(cpu) / STEPS * 1e6, 2)


def summary(configs: list[Config]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for config in configs:
        spans, by_name, floor = count_spans(config)
        vals = config.per_round_us
        out.setdefault(config.api, {})[config.name] = {
            "cpu_us_per_step": round(statistics.median(vals), 2),
            "min": round(min(vals), 2),
            "max": round(max(vals), 2),
            "rounds": [round(v, 2) for v in vals],
            "spans_per_step": round(spans, 2),
            "spans_by_name_per_step": by_name,
            "sdk_floor_us_per_step": floor,
        }
    for figures in out.values():
        off = figures.get("off")
        if off is None:
            continue
        for f in figures.values():
            pairs = list(zip(f["rounds"], off["rounds"], strict=True))
            f["added_us_per_step"] = round(statistics.median(v - o for v, o in pairs), 2)
            f["ratio"] = round(statistics.median(v / o for v, o in pairs), 3)
            spans = f["spans_per_step"]
            f["added_us_per_span"] = round(f["added_us_per_step"] / spans, 2) if spans else None
    return out


def report(framework: str, versions: dict[str, str], configs: list[Config], a: argparse.Namespace) -> None:
    """Measure, then print a table on stderr and one JSON line on stdout (also to ``--json``)."""
    load0, t0 = os.getloadavg()[0], time.perf_counter()
    measure(configs, a.rounds, a.runs)
    result = {
        "framework": framework,
        "versions": versions,
        "python": platform.python_version(),
        "rounds": a.rounds,
        "runs": a.runs,
        "steps": STEPS,
        "figures": summary(configs),
        "loadavg1_start_end": [round(load0, 2), round(os.getloadavg()[0], 2)],
        "wall_s": round(time.perf_counter() - t0, 1),
    }
    for api, figures in result["figures"].items():
        for name, f in figures.items():
            print(
                f"{framework:11} {api:5} {name:14} {f['cpu_us_per_step']:9.1f} us/step "
                f"({f['min']:.1f}-{f['max']:.1f})  added {f.get('added_us_per_step', 0):8.1f}  "
                f"x{f.get('ratio', 1):.2f}  spans/step {f['spans_per_step']:.2f}  floor {f['sdk_floor_us_per_step']}",
                file=sys.stderr,
            )
    line = json.dumps(result)
    if a.json:
        with open(a.json, "w") as fh:
            fh.write(line + "\n")
    print(line)


def version_of(*packages: str) -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for p in packages:
        try:
            out[p] = version(p)
        except PackageNotFoundError:
            out[p] = "not installed"
    return out


# ---- the table: python bench/tracing_common.py handrail.json haystack.json pydantic-ai.json -----------------------
NAMES = {"handrail": "handrail", "haystack": "Haystack", "pydantic-ai": "Pydantic AI"}


def table(results: list[dict[str, Any]]) -> str:
    """The Markdown table of the scripts' ``--json`` lines: a row per framework and configuration, sync / async."""
    rows = [
        "| framework, configuration | CPU µs per step | spread over rounds | added µs per step | spans per step "
        "| added µs per span | SDK floor µs per step | ratio to off |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def both(figures: list[dict[str, Any]], key: str, fmt: str = ",.1f") -> str:
        values = [f.get(key) for f in figures]
        return " / ".join("—" if v is None else format(v, fmt) for v in values)

    for result in results:
        by_api = result["figures"]
        for name in by_api.get("sync", by_api.get("async", {})):
            figures = [by_api[api][name] for api in ("sync", "async") if api in by_api]
            spread = " / ".join(f"{f['min']:,.0f}–{f['max']:,.0f}" for f in figures)
            added = "—" if name == "off" else both(figures, "added_us_per_step")
            ratio = " / ".join(f"×{f['ratio']:.2f}" for f in figures)
            label = f"{NAMES.get(result['framework'], result['framework'])}, {name}"
            rows.append(
                f"| {label} | **{both(figures, 'cpu_us_per_step')}** | {spread} | {added} "
                f"| {both(figures[:1], 'spans_per_step', '.2f')} | {both(figures, 'added_us_per_span')} "
                f"| {both(figures, 'sdk_floor_us_per_step')} | {ratio} |"
            )
    return "\n".join(rows)


if __name__ == "__main__":
    loaded = []
    for path in sys.argv[1:]:
        with open(path) as fh:
            loaded.append(json.loads(fh.readline()))
    print(table(loaded))
