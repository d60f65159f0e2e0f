"""The embedded generator's progress chunks: what the model is doing while it writes a reply (fake runtime)."""

from __future__ import annotations

from typing import Any

from handrail.components.generators.chat._progress import ReplyWatcher
from handrail.dataclasses import StreamingChunk
from tests.components.generators import test_llama_cpp as _base
from tests.components.generators.test_llama_cpp import (
    CALC,
    USER,
    FakeServer,
    _answer_script,
    _answered,
    _call_script,
    _generator,
)

runtime = _base.runtime  # the fake runtime's fixtures
gguf = _base.gguf


def _progress(chunks: list[StreamingChunk]) -> list[dict[str, Any]]:
    return [c.meta["progress"] for c in chunks if "progress" in c.meta]


def test_a_tool_call_is_announced_while_it_is_written(runtime: type[FakeServer], gguf: str) -> None:
    runtime.scripts = [_call_script("calculator", {"expression": "17 * 23"})]
    chunks: list[StreamingChunk] = []
    _generator(gguf).run(USER, tools=[CALC], streaming_callback=chunks.append)
    progress = _progress(chunks)
    assert progress[0] == {"phase": "reading", "prompt_tokens": 100, "cached_tokens": 40, "tokens": 0,
                           "writing": None, "tool": None}  # fmt: skip
    writing = [p for p in progress if p["phase"] == "writing"]
    assert writing[0]["tokens"] == 1 and writing[0]["writing"] is None  # the first token: the model is thinking
    named = [p for p in writing if p["tool"] is not None]
    assert named and {p["tool"] for p in named} == {"calculator"}
    assert all(p["writing"] == "tool_call" for p in named)
    assert [p["tokens"] for p in writing] == sorted(p["tokens"] for p in writing)
    assert all(c.content == "" and not c.tool_calls and c.finish_reason is None
               for c in chunks if "progress" in c.meta)  # fmt: skip
    assert runtime.instances[0].requests[0]["return_progress"] is True
    assert next(i for i, c in enumerate(chunks) if c.tool_calls) > max(
        i for i, c in enumerate(chunks) if "progress" in c.meta
    )  # every progress chunk comes before the call itself


def test_a_final_answer_is_announced_once_then_its_text_streams(runtime: type[FakeServer], gguf: str) -> None:
    runtime.scripts = [_answer_script("17 * 23 is 391, computed by the calculator.")]
    chunks: list[StreamingChunk] = []
    _generator(gguf).run(USER, tools=[CALC], streaming_callback=chunks.append)
    answers = [p for p in _progress(chunks) if p["writing"] == "final_answer"]
    assert len(answers) == 1
    first_text = next(i for i, c in enumerate(chunks) if c.content)
    assert all(i < first_text for i, c in enumerate(chunks) if "progress" in c.meta)
    assert "".join(c.content for c in chunks) == "17 * 23 is 391, computed by the calculator."


def test_a_repeated_call_is_followed_by_a_second_reading(runtime: type[FakeServer], gguf: str) -> None:
    runtime.scripts = [_call_script("calculator", {"expression": "17 * 23"}), _answer_script("391")]
    chunks: list[StreamingChunk] = []
    _generator(gguf).run(_answered({"expression": "17 * 23"}), tools=[CALC], streaming_callback=chunks.append)
    phases = [p["phase"] for p in _progress(chunks)]
    assert phases.count("reading") == 2  # the retry, final answers only, reads the prompt again
    assert _progress(chunks)[-1]["writing"] == "final_answer"


def test_without_a_callback_no_progress_is_asked_for(runtime: type[FakeServer], gguf: str) -> None:
    runtime.scripts = [_call_script("calculator", {"expression": "1 + 1"})]
    _generator(gguf).run(USER, tools=[CALC])
    assert "return_progress" not in runtime.instances[0].requests[0]


def test_the_watcher_reads_escaped_tool_names_and_answers() -> None:
    watcher = ReplyWatcher()
    assert [watcher.feed(f) for f in [' {"name"', ': "we\\u00ef', 'rd", "arg']] == [True, False, True]
    assert (watcher.writing, watcher.tool, watcher.tokens) == ("tool_call", "weïrd", 3)
    answer = ReplyWatcher()
    assert [answer.feed(f) for f in ['{"final', '_answer": "It is']] == [True, False]
    assert answer.writing == "final_answer" and answer.tool is None
