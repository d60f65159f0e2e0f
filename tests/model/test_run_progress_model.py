"""The real small model's progress chunks, and ``handrail run`` showing them on a terminal (marked ``model``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pexpect
import pytest

from handrail.components.generators.chat import LlamaCppChatGenerator
from handrail.dataclasses import ChatMessage, StreamingChunk
from tests.model._agent_tools import TOOLS

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parents[2]
QUESTION = ("Search for Maplebrook's population and land area, then call the calculator to divide the population by "
            "the area.")  # fmt: skip


def test_a_reply_is_announced_before_it_is_streamed(small_generator: LlamaCppChatGenerator) -> None:
    chunks: list[StreamingChunk] = []
    prompt = [ChatMessage.from_user("Use the calculator to compute 17 * 23.")]
    reply = small_generator.run(prompt, tools=TOOLS, streaming_callback=chunks.append)["replies"][0]
    progress = [c.meta["progress"] for c in chunks if "progress" in c.meta]
    assert progress[0]["phase"] == "reading" and progress[0]["prompt_tokens"] > 0
    writing = [p for p in progress if p["phase"] == "writing"]
    assert writing, progress
    if reply.tool_calls:
        assert writing[-1]["writing"] == "tool_call"
        assert writing[-1]["tool"] == reply.tool_calls[0].tool_name
        first_call = next(i for i, c in enumerate(chunks) if c.tool_calls)
        assert all(i < first_call for i, c in enumerate(chunks) if "progress" in c.meta)
    else:
        assert writing[-1]["writing"] == "final_answer"


def test_handrail_run_shows_the_models_progress_on_a_terminal(small_generator: LlamaCppChatGenerator) -> None:
    del small_generator  # only makes the test skip where the small model is not installed
    args = ["-m", "handrail.cli", "run", "--model", "small", "--approve", "all",
            str(ROOT / "examples" / "assistant.yaml"), QUESTION]  # fmt: skip
    child = pexpect.spawn(sys.executable, args, encoding="utf-8", timeout=600, dimensions=(50, 200))
    child.expect("step 1 · reading the prompt")
    child.expect("step 1 · (thinking|choosing a tool|writing the answer)")
    child.expect("exit: ")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus in (0, 3)  # answered, or ran out of steps: either way the progress was shown
