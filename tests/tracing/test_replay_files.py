"""Reading recordings: a damaged or foreign file is refused with the file and line named; ReplayChatGenerator and
handrail.testing.replay turn a recording into a regression test."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from handrail.errors import RecordingError, ReplayDivergedError, ScriptExhaustedError
from handrail.testing import ReplayChatGenerator, read_recording, replay, user

from ._replay_agents import Person, approve_reject_edit, approving_agent, lines, three_calls, write_lines


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    path = tmp_path / "run.jsonl"
    approving_agent(three_calls(), approve_reject_edit()).run([user("Add them.")], recorder=path)
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the recording is empty"),
        ('{"kind": "header", "format": 1}\n{"kind": "run"\n', "line 2: not JSON"),
        ('{"kind": "run", "input": {"messages": []}}\n', "line 1: the first line of a recording is its header"),
        ('{"kind": "header", "format": 99}\n', "line 1: recording format 99 is not the one this handrail reads (1)"),
        ('{"kind": "header", "format": 1}\n[1, 2]\n', "line 2: a recording line is a JSON object, got list"),
        ('{"kind": "header", "format": 1}\n{"kind": "span"}\n', "line 2: unknown kind 'span'"),
        (
            '{"kind": "header", "format": 1}\n{"kind": "effect", "n": 1, "effect": {"type": "call_model"}, '
            '"result": []}\n',
            "line 2: an 'effect' line outside a run",
        ),
        (
            '{"kind": "header", "format": 1}\n{"kind": "run", "input": {"messages": []}}\n{"kind": "effect", "n": 1, '
            '"effect": {"type": "x"}}\n',
            "line 3: an effect line has no valid 'effect'",
        ),
        (
            '{"kind": "header", "format": 1}\n{"kind": "run", "input": {"messages": []}}\n{"kind": "effect", "n": 1, '
            '"effect": {"type": "call_model"}}\n',
            "line 3: an effect line has no 'result'",
        ),
        (
            '{"kind": "header", "format": 1}\n{"kind": "run", "input": {"messages": []}}\n{"kind": "effect", "n": 1, '
            '"effect": {"type": "run_tools"}, "result": null}\n',
            "line 3: a run_tools line has a null 'result' and no 'error'",
        ),
        ('{"kind": "header", "format": 1}\n{"kind": "run"}\n', "line 2: a run line has neither 'input'"),
        (
            '{"kind": "header", "format": 1}\n{"kind": "run", "input": {"messages": []}}\n{"kind": "end"}\n',
            "line 3: an end line has no 'outcome'",
        ),
        ('{"kind": "header", "format": 1}\n{"kind": "header", "format": 1}\n', "line 2: a second header"),
    ],
)
def test_a_damaged_recording_is_refused_naming_the_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    with pytest.raises(RecordingError) as caught:
        read_recording(path)
    assert str(caught.value).startswith(str(path))
    assert message in str(caught.value)


def test_a_missing_or_binary_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match="cannot read the recording"):
        read_recording(tmp_path / "nope.jsonl")
    binary = tmp_path / "model.bin"
    binary.write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(RecordingError, match="not a text file"):
        read_recording(binary)


def test_a_recorded_reply_that_cannot_be_read_back_is_a_recording_error(recorded: Path) -> None:
    data = lines(recorded)
    data[2]["result"] = [{"type": "message", "role": "nobody"}]
    write_lines(recorded, data)
    with pytest.raises(RecordingError, match="line 3"):
        replay(recorded, approving_agent([], Person([])))


def test_the_replay_chat_generator_returns_the_recorded_replies_in_order(recorded: Path) -> None:
    gen = ReplayChatGenerator(recorded)
    agent = approving_agent([], approve_reject_edit())
    agent.chat_generator = gen

    result = agent.run([user("Add them.")])
    assert result["last_message"].text == "Done."
    assert sorted(m.tool_call_result.origin.id for m in result["messages"] if m.tool_call_result) == ["c1", "c2", "c3"]
    gen.assert_complete()
    with pytest.raises(ScriptExhaustedError, match="has 2 model calls"):
        gen.run([user("again")])


def test_checking_inputs_reports_a_different_model_input_with_a_diff(recorded: Path) -> None:
    gen = ReplayChatGenerator(recorded, check_inputs=True)
    agent = approving_agent([], approve_reject_edit(), prompt="Another prompt.")
    agent.chat_generator = gen
    with pytest.raises(ReplayDivergedError) as caught:
        agent.run([user("Add them.")])
    divergence = caught.value.divergence
    assert divergence.kind == "model_input" and divergence.step == 1  # type: ignore[attr-defined]
    assert '+        "text": "Another prompt."' in divergence.diff.splitlines()  # type: ignore[attr-defined]


def test_the_replay_chat_generator_is_async_too_and_checks_inputs_there(recorded: Path) -> None:
    gen = ReplayChatGenerator(recorded, check_inputs=True)
    agent = approving_agent([], approve_reject_edit())
    agent.chat_generator = gen
    result = asyncio.run(agent.run_async([user("Add them.")]))
    assert result["last_message"].text == "Done."
    with pytest.raises(ReplayDivergedError):
        asyncio.run(ReplayChatGenerator(recorded, check_inputs=True).run_async([user("something else")]))
