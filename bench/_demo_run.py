"""One ``handrail run`` of an agent file in this process, with llama.cpp's timings of every model call.

``bench_model.py --demo-runs`` starts this in a fresh interpreter per run::

    python bench/_demo_run.py AGENT_FILE QUESTION OUT_JSON

It runs the CLI (``--approve all``) and writes to ``OUT_JSON``: ``{"seconds"`` (from this script's first line
to the end of the run), ``"load_s"``, ``"exit_code"``, ``"output"`` (what the CLI printed, its last 400
characters), ``"steps": [...]}``, one step per
model call with ``cache_n`` (prompt tokens reused), ``prompt_n`` / ``prompt_s`` (evaluated), ``decode_n`` /
``decode_s`` (generated), ``prepare_s`` (restoring or saving the prompt cache) and ``prompt_cache`` (what
that did: ``restored``, ``saved``, ``seen``, ``skipped``, or null when the cache is off).
"""

from __future__ import annotations

import time

STARTED = time.perf_counter()

import contextlib  # noqa: E402 - the clock starts before the imports
import io  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from typing import Any  # noqa: E402

import handrail.components.generators.chat.llama_cpp as llama_cpp  # noqa: E402
from handrail.components.generators.chat import _llama_runtime  # noqa: E402

STEPS: list[dict[str, Any]] = []
LOADS: list[float] = []


class _Recorder:
    """Stands in for the loaded server during one call and keeps the runtime's timings."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.step: dict[str, Any] = {"prepare_s": 0.0, "prompt_cache": None}

    def prepare(self, body: dict[str, Any], stop: Any, peek: Any = None) -> None:
        prepare = getattr(self.server, "prepare", None)
        if callable(prepare):
            started = time.perf_counter()
            prepare(body, stop, peek)
            self.step["prepare_s"] = round(time.perf_counter() - started, 3)
            self.step["prompt_cache"] = getattr(self.server, "last_event", None)

    def handle_chat_completions(self, body: dict[str, Any], callback: Any) -> None:
        timings: dict[str, Any] = {}

        def keep(chunk: Any) -> bool:
            if isinstance(chunk, dict) and chunk.get("timings"):
                timings.update(chunk["timings"])
            return bool(callback(chunk))

        self.server.handle_chat_completions(body, keep)
        self.step.update(
            cache_n=timings.get("cache_n"),
            prompt_n=timings.get("prompt_n"),
            prompt_s=round(timings.get("prompt_ms", 0.0) / 1000, 3),
            decode_n=timings.get("predicted_n"),
            decode_s=round(timings.get("predicted_ms", 0.0) / 1000, 3),
        )


def _recorded(server: Any, body: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
    recorder = _Recorder(server)
    done = _llama_runtime.stream_completion(recorder, body, *args, **kwargs)
    STEPS.append(recorder.step)
    return done


_original_load = llama_cpp.LlamaCppChatGenerator._load


def _load(self: llama_cpp.LlamaCppChatGenerator) -> Any:
    loaded = self._server is not None
    server = _original_load(self)
    if not loaded and self.load_seconds is not None:
        LOADS.append(round(self.load_seconds, 3))
    return server


def main(argv: list[str]) -> int:
    agent_file, question, out = argv
    llama_cpp.stream_completion = _recorded  # type: ignore[assignment]
    llama_cpp.LlamaCppChatGenerator._load = _load  # type: ignore[method-assign]
    from handrail.cli import main as cli

    code, printed = 0, io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
        try:
            cli(["run", agent_file, "--approve", "all", question])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    seconds = round(time.perf_counter() - STARTED, 3)
    output = printed.getvalue()[-400:]
    result = {"seconds": seconds, "load_s": LOADS[0] if LOADS else None, "exit_code": code, "output": output}
    result["steps"] = STEPS
    with open(out, "w") as stream:
        json.dump(result, stream)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
