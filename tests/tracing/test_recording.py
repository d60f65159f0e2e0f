"""Recorder: what a recording holds (every effect and its result, the decisions with who and when), in call order,
without secrets, through the redaction hook; Agent.run(recorder=...) and run_async."""

from __future__ import annotations

import asyncio
import hashlib
import io
import threading
from pathlib import Path

import pytest

from handrail.components.agents import Agent
from handrail.core.secret import register_secret_value
from handrail.errors import ConfigurationError, ConfigurationTypeError
from handrail.hooks import RedactionHook
from handrail.testing import ScriptedChatGenerator, call, read_recording, reply, user
from handrail.tools import tool
from handrail.tracing.recording import Recorder

from ._replay_agents import PROMPT, add, approve_reject_edit, approving_agent, lines, three_calls


def test_a_recording_holds_every_effect_the_decisions_and_the_end(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    result = approving_agent(three_calls(), approve_reject_edit()).run([user("Add them.")], recorder=path)

    recorded = lines(path)
    header = recorded[0]
    assert header["kind"] == "header" and header["format"] == 1
    assert header["tools"] == ["add"]
    assert header["system_prompt_sha256"] == hashlib.sha256(PROMPT.encode()).hexdigest()
    assert recorded[1]["kind"] == "run" and recorded[1]["input"]["messages"][0]["content"] == [{"text": "Add them."}]
    effects = [line for line in recorded if line["kind"] == "effect"]
    assert [e["effect"]["type"] for e in effects] == ["call_model", "ask_approval", "run_tools", "call_model"]
    assert [e["n"] for e in effects] == [1, 2, 3, 4]
    decisions = effects[1]["result"]
    assert [(d["tool_call_id"], d["execute"], d["final_tool_params"]) for d in decisions] == [
        ("c1", True, None), ("c2", False, None), ("c3", True, {"a": 50, "b": 6})]  # fmt: skip
    assert all(d["decided_by"] for d in decisions) and effects[1]["time"]  # who decided, and when
    assert [c["call_id"] for c in effects[2]["effect"]["calls"]] == ["c1", "c3"]  # the rejected call never ran
    assert effects[2]["effect"]["calls"][1]["arguments"] == {"a": 50, "b": 6}
    assert [o["value"] for o in effects[2]["result"]] == [3, 56]
    assert effects[3]["result"][0]["content"] == [{"text": "Done."}]
    assert recorded[-1] == {**recorded[-1], "kind": "end", "outcome": "done", "exit_reason": "text"}
    assert result["exit_reason"] == "text"


def test_tool_calls_are_recorded_in_call_order_not_in_the_order_the_threads_ended(tmp_path: Path) -> None:
    second_done = threading.Event()
    order: list[str] = []

    @tool
    def slow(x: int) -> int:
        """Ends after fast has ended."""
        assert second_done.wait(10)
        order.append("slow")
        return x

    @tool
    def fast(x: int) -> int:
        """Ends at once."""
        order.append("fast")
        second_done.set()
        return -x

    path = tmp_path / "run.jsonl"
    agent = Agent(chat_generator=ScriptedChatGenerator([reply(call("slow", id="a", x=1), call("fast", id="b", x=2)),
                                                        reply("ok")]), tools=[slow, fast])  # fmt: skip
    agent.run([user("go")], recorder=Recorder(path))

    assert order == ["fast", "slow"]  # the threads ended the other way round
    tools_line = next(line for line in lines(path) if line.get("effect", {}).get("type") == "run_tools")
    assert [o["call_id"] for o in tools_line["result"]] == ["a", "b"]
    assert [o["value"] for o in tools_line["result"]] == [1, -2]
    assert len(tools_line["call_durations"]) == 2 and all(d is not None for d in tools_line["call_durations"])


def test_a_recording_holds_no_secret_value(tmp_path: Path) -> None:
    key = "sk-rec-" + "q7Zr0x9mB2" * 3
    register_secret_value(key)

    @tool
    def leak() -> str:
        """Returns a key by mistake."""
        return f"the key is {key}"

    path = tmp_path / "run.jsonl"
    gen = ScriptedChatGenerator([reply(call("leak", id="c1")), reply(f"I saw {key}")])
    Agent(chat_generator=gen, tools=[leak]).run([user(f"use {key}")], recorder=path)

    text = path.read_text()
    assert key not in text and key[7:27] not in text
    assert "***" in text


def test_the_redaction_hook_rewrites_every_string_of_the_recording(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    token = "ghp_" + "A1b2C3d4E5" * 4
    agent = Agent(chat_generator=ScriptedChatGenerator([reply("noted")]))
    agent.run([user(f"my token is {token}")], recorder=Recorder(path, redact=RedactionHook()))

    text = path.read_text()
    assert token not in text and "[REDACTED]" in text
    assert lines(path)[0]["redacted"] is True


def test_a_callable_redacts_too_and_a_wrong_one_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    Agent(chat_generator=ScriptedChatGenerator([reply("Oslo is cold")])).run(
        [user("Oslo?")], recorder=Recorder(path, redact=lambda text: text.replace("Oslo", "<city>"))
    )
    assert "Oslo" not in path.read_text() and "<city> is cold" in path.read_text()
    with pytest.raises(TypeError, match="redact must be"):
        Recorder(path, redact=42)


def test_an_open_file_and_run_async_record_too() -> None:
    stream = io.StringIO()
    agent = Agent(chat_generator=ScriptedChatGenerator([reply(call("add", id="c1", a=2, b=2)), reply("4")]),
                  tools=[add])  # fmt: skip
    result = asyncio.run(agent.run_async([user("2+2?")], recorder=Recorder(stream)))
    stream.seek(0)
    recording = read_recording(stream)
    assert result["last_message"].text == "4"
    assert [e["effect"]["type"] for e in recording.runs[0].effects] == ["call_model", "run_tools", "call_model"]
    assert recording.runs[0].end is not None and recording.runs[0].end["outcome"] == "done"


def test_a_failed_model_call_is_recorded_with_its_error(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    agent = Agent(chat_generator=ScriptedChatGenerator([RuntimeError("model down")]))
    with pytest.raises(RuntimeError):
        agent.run([user("hi")], recorder=path)
    recorded = lines(path)
    assert recorded[2]["error"] == "RuntimeError: model down"
    assert recorded[-1]["outcome"] == "failed" and "model down" in recorded[-1]["error"]


def test_a_recorder_of_the_wrong_type_is_refused_before_the_run() -> None:
    gen = ScriptedChatGenerator([reply("x")])
    with pytest.raises(ConfigurationTypeError, match="recorder must be a path or a"):
        Agent(chat_generator=gen).run([user("hi")], recorder=42)
    assert gen.calls == []


def test_a_path_that_cannot_be_written_is_refused_before_the_run(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="does not exist; create it first"):
        Recorder(tmp_path / "no" / "run.jsonl")
    with pytest.raises(ConfigurationError, match="is a directory"):
        Recorder(tmp_path)
    gen = ScriptedChatGenerator([reply("x")])
    with pytest.raises(ConfigurationError):
        Agent(chat_generator=gen).run([user("hi")], recorder=tmp_path / "no" / "run.jsonl")
    assert gen.calls == []
