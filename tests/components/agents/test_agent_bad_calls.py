"""Call ids and arguments a model (or Python code) gets wrong: the run goes on, and a pause can always be written.

Issue 14, items 5 and 6. An id that is not a non-empty str is repaired like a missing one; arguments that are
not JSON data as the snapshot writer defines it (NaN, Infinity, a lone surrogate, nesting past
``handrail.core.json_data.MAX_DEPTH``) get an error tool result the model can read, also when a sibling call
pauses for approval, and the resume finishes the run.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.core.json_data import MAX_DEPTH
from handrail.dataclasses import ChatMessage, StreamingChunk, ToolCall, ToolCallDelta
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.snapshot import load_snapshot
from handrail.errors import ConfigurationTypeError, HandrailError, SerializationError
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function
from tests.cases._helpers import result_for, user
from tests.components._helpers import run_in_mode

RAN: list[Any] = []


def echo(v: Any = None) -> str:
    """Echo a value.

    Args:
        v: Anything.
    """
    RAN.append(v)
    return f"got {v!r}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


def _nested(levels: int) -> Any:
    """Arguments ``{"v": [[...]]}`` with ``levels`` containers in all, the arguments object counted."""
    value: Any = 1
    for _ in range(levels - 1):
        value = [value]
    return {"v": value}


def _streamed(calls: list[tuple[Any, str]]) -> list[StreamingChunk]:
    """A streamed reply of ``calls`` ``(id, argument text)`` to ``echo``, each call one index."""
    chunks = []
    for i, (cid, text) in enumerate(calls):
        chunks.append(
            StreamingChunk(index=i, start=True, tool_calls=[ToolCallDelta(index=i, tool_name="echo", id=cid)])
        )
        chunks.append(StreamingChunk(index=i, tool_calls=[ToolCallDelta(index=i, arguments=text)]))
    chunks.append(StreamingChunk(finish_reason="tool_calls"))
    return chunks


def _agent(first: Any, directory: Path | None) -> tuple[Agent, ScriptedChatGenerator]:
    gen = ScriptedChatGenerator([first, ChatMessage.from_assistant("done")])
    strategies = {"echo": BreakpointConfirmationStrategy(str(directory))} if directory is not None else None
    return Agent(chat_generator=gen, tools=[create_tool_from_function(echo)], confirmation_strategies=strategies), gen


def _finish(first: Any, mode: str, tmp_path: Path, pause: bool) -> tuple[dict[str, Any], ScriptedChatGenerator]:
    """Run to the end: without a pause, or pausing for the calls that pass, approving them all and resuming."""
    agent, gen = _agent(first, tmp_path if pause else None)
    if not pause:
        return run_in_mode(agent, mode, [user("go")]), gen
    with pytest.raises(HITLBreakpointException) as info:
        run_in_mode(agent, mode, [user("go")])
    snap = load_snapshot(info.value.snapshot_file_path)  # the pause was written and reads back
    decisions = [ToolExecutionDecision("echo", True, c.id) for c in snap.pending_tool_calls]
    resumer, resumed_gen = _agent(ChatMessage.from_assistant("done"), tmp_path)
    result = run_in_mode(resumer, mode, [], snapshot=dataclasses.replace(snap, tool_execution_decisions=decisions))
    return result, resumed_gen


MODES = pytest.mark.parametrize("mode", ["sync", "async", "stream"])
PAUSE = pytest.mark.parametrize("pause", [False, True], ids=["no-pause", "pause"])


# --------------------------------------------------------------------------- item 5: call ids


@pytest.mark.parametrize("bad", [["x"], {"x": 1}, 5, True, 1.5], ids=["list", "dict", "int", "bool", "float"])
def test_a_tool_call_built_in_python_refuses_an_id_that_is_not_a_str(bad: Any) -> None:
    with pytest.raises(ConfigurationTypeError, match=r"ToolCall id must be a str or None, got") as info:
        ToolCall(tool_name="echo", arguments={}, id=bad)
    assert isinstance(info.value, TypeError) and repr(bad) in str(info.value)
    # from a dict (a file's data) the wrong type is a SerializationError naming the field
    with pytest.raises(SerializationError, match="ToolCall 'id' must be a str or None"):
        ToolCall.from_dict({"tool_name": "echo", "arguments": {}, "id": bad})
    with pytest.raises(SerializationError, match=r"'content\[0\]\.tool_call\.id' must be a str or None"):
        ChatMessage.from_dict({"role": "assistant", "content": [{"tool_call": {"tool_name": "e", "arguments": {},
                                                                               "id": bad}}]})  # fmt: skip


def test_an_int_id_is_refused_with_the_str_to_pass_instead() -> None:
    with pytest.raises(ConfigurationTypeError, match=r"pass id='5'"):
        ToolCall(tool_name="echo", arguments={}, id=5)


def test_a_tool_name_that_is_not_a_str_is_refused() -> None:
    with pytest.raises(ConfigurationTypeError, match="ToolCall tool_name must be a str"):
        ToolCall(tool_name=["echo"], arguments={})  # type: ignore[arg-type]


@MODES
@PAUSE
@pytest.mark.parametrize(
    "bad",
    [["x"], {"x": 1}, 7, "", "c1\x1b[31m\n", " c2 ", "c" * 257],
    ids=["list", "dict", "int", "empty", "escape", "spaces", "long"],
)
def test_a_model_id_that_is_not_a_non_empty_str_is_repaired(mode: str, pause: bool, bad: Any, tmp_path: Path) -> None:
    if mode == "stream":  # what a streaming generator assembles from the model's fragments
        first: Any = _streamed([(bad, '{"v": 1}'), ("c2", '{"v": 2}')])
    else:  # a ToolCall changed after it was built (a hook, a custom generator) may hold anything
        call = ToolCall(tool_name="echo", arguments={"v": 1}, id="placeholder")
        call.id = bad
        first = ChatMessage.from_assistant(tool_calls=[call, ToolCall(tool_name="echo", arguments={"v": 2}, id="c2")])
    result, _ = _finish(first, mode, tmp_path, pause)
    expected = "7" if bad == 7 and mode == "stream" else "call_1"
    assistant = result["messages"][1]
    assert [c.id for c in assistant.tool_calls] == [expected, "c2"]  # the history holds the repaired id...
    assert result_for(result["messages"], expected).result == "got 1"  # ...and so does the result answering it
    assert result_for(result["messages"], "c2").result == "got 2"
    assert RAN == [1, 2] and result["last_message"].text == "done"


# --------------------------------------------------------------------------- item 6: arguments

TEXT_ARGUMENTS = {
    "nan": ('{"v": NaN}', "NaN is not a JSON number"),
    "infinity": ('{"v": Infinity}', "Infinity is not a JSON number"),
    "minus-infinity": ('{"v": [1, -Infinity]}', "-Infinity is not a JSON number"),
    "overflow": ('{"v": 1e999}', "at ['v']: inf is not allowed in JSON"),
    "surrogate-escape": ('{"v": "\\ud800"}', "at ['v']: the text holds a lone surrogate"),
    "surrogate-key": ('{"\\udc00": 1}', "the text holds a lone surrogate"),
    "surrogate-char": ('{"v": "\ud800"}', "at ['v']: the text holds a lone surrogate"),
    "too-deep": ('{"v": ' + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "}", f"nested more than {MAX_DEPTH} levels"),
    "very-deep": ("[" * 100_000, f"nested more than {MAX_DEPTH} levels"),
    "huge-int": ('{"v": ' + "9" * 5000 + "}", "Exceeds the limit"),
}


def _assert_refused(result: dict[str, Any], gen: ScriptedChatGenerator, reason: str) -> None:
    refused = result_for(result["messages"], "bad")
    assert refused.error is True and "Arguments for tool 'echo' are not valid JSON" in refused.result
    assert reason in refused.result
    seen_by_model = [m for m in gen.calls[-1]["messages"] if m.tool_call_result is not None]
    assert any(m.tool_call_result.origin.id == "bad" and reason in m.tool_call_result.result for m in seen_by_model)
    assert result_for(result["messages"], "good").result == "got 2"
    assert RAN == [2] and result["last_message"].text == "done"


@MODES
@PAUSE
@pytest.mark.parametrize(("text", "reason"), list(TEXT_ARGUMENTS.values()), ids=list(TEXT_ARGUMENTS))
def test_argument_text_that_is_not_json_data_gets_an_error_result(
    mode: str, pause: bool, text: str, reason: str, tmp_path: Path
) -> None:
    if mode == "stream":
        first: Any = _streamed([("bad", text), ("good", '{"v": 2}')])
    else:
        first = ChatMessage.from_assistant(
            tool_calls=[ToolCall("echo", text, id="bad"), ToolCall("echo", {"v": 2}, id="good")]
        )
    result, gen = _finish(first, mode, tmp_path, pause)
    _assert_refused(result, gen, reason)


DICT_ARGUMENTS = {
    "nan": ({"v": float("nan")}, "NaN is not a JSON number"),
    "infinity": ({"v": [float("inf")]}, "Infinity is not a JSON number"),
    "surrogate": ({"v": "a\ud800b"}, "at ['v']: the text holds a lone surrogate"),
    "surrogate-key": ({"\udfff": 1}, "the text holds a lone surrogate"),
    "too-deep": (_nested(MAX_DEPTH + 1), f"nested more than {MAX_DEPTH} levels"),
    "object": ({"v": object()}, "not valid JSON"),
    "huge-int": ({"v": [10**5000]}, "[<an integer of more than 4300 digits>]"),
}


@pytest.mark.parametrize("mode", ["sync", "async"])
@PAUSE
@pytest.mark.parametrize(("arguments", "reason"), list(DICT_ARGUMENTS.values()), ids=list(DICT_ARGUMENTS))
def test_dict_arguments_that_are_not_json_data_get_an_error_result(
    mode: str, pause: bool, arguments: Any, reason: str, tmp_path: Path
) -> None:
    first = ChatMessage.from_assistant(
        tool_calls=[ToolCall("echo", arguments, id="bad"), ToolCall("echo", {"v": 2}, id="good")]
    )
    result, gen = _finish(first, mode, tmp_path, pause)
    _assert_refused(result, gen, reason)
    shown = result["messages"][1].tool_calls[0].arguments
    assert isinstance(shown, str)  # the history shows what was sent, as text a snapshot can hold


@MODES
def test_arguments_nested_to_the_limit_run_after_a_pause(mode: str, tmp_path: Path) -> None:
    deepest = _nested(MAX_DEPTH)
    if mode == "stream":
        first: Any = _streamed([("c1", json.dumps(deepest))])
    else:
        first = ChatMessage.from_assistant(tool_calls=[ToolCall("echo", deepest, id="c1")])
    result, _ = _finish(first, mode, tmp_path, pause=True)
    assert [deepest["v"]] == RAN
    assert result["last_message"].text == "done"


def test_refused_arguments_raise_a_handrail_error_in_raise_mode() -> None:
    from handrail.components.tools import ToolInvoker
    from handrail.errors import ToolInvocationError

    invoker = ToolInvoker(tools=[create_tool_from_function(echo)], raise_on_failure=True)
    message = ChatMessage.from_assistant(tool_calls=[ToolCall("echo", '{"v": NaN}', id="bad")])
    with pytest.raises(ToolInvocationError, match="NaN is not a JSON number") as info:
        invoker.run([message])
    assert isinstance(info.value, HandrailError) and RAN == []


def surrogate(v: Any = None) -> str:
    """Return text UTF-8 cannot write.

    Args:
        v: Anything.
    """
    RAN.append("surrogate")
    return "x\ud800y"


@pytest.mark.parametrize("mode", ["sync", "async"])
@PAUSE
def test_a_result_with_a_lone_surrogate_is_written_with_an_escape(mode: str, pause: bool, tmp_path: Path) -> None:
    first = ChatMessage.from_assistant(
        tool_calls=[ToolCall("surrogate", {}, id="s1"), ToolCall("echo", {"v": 2}, id="e1")]
    )
    tools = [create_tool_from_function(surrogate), create_tool_from_function(echo)]
    strategies = {"echo": BreakpointConfirmationStrategy(str(tmp_path))} if pause else None
    agent = Agent(chat_generator=ScriptedChatGenerator([first, ChatMessage.from_assistant("done")]), tools=tools,
                  confirmation_strategies=strategies)  # fmt: skip
    if pause:
        with pytest.raises(HITLBreakpointException) as info:
            run_in_mode(agent, mode, [user("go")])
        snap = load_snapshot(info.value.snapshot_file_path)  # the ran call's result is in the ledger, escaped
        assert snap.ledger["s1"].result is not None and snap.ledger["s1"].result["text"] == "x\\ud800y"
        agent = Agent(chat_generator=ScriptedChatGenerator([ChatMessage.from_assistant("done")]), tools=tools,
                      confirmation_strategies=strategies)  # fmt: skip
        decision = ToolExecutionDecision("echo", True, "e1")
        result = run_in_mode(agent, mode, [], snapshot=dataclasses.replace(snap, tool_execution_decisions=[decision]))
    else:
        result = run_in_mode(agent, mode, [user("go")])
    assert result_for(result["messages"], "s1").result == "x\\ud800y"
    assert RAN == ["surrogate", 2]  # run once, not again at the resume
    assert result["last_message"].text == "done"


@MODES
@PAUSE
def test_reply_text_with_a_lone_surrogate_is_escaped_so_a_pause_can_be_written(
    mode: str, pause: bool, tmp_path: Path
) -> None:
    first = ChatMessage.from_assistant("let me see \ud83d", tool_calls=[ToolCall("echo", {"v": 1}, id="e1")])
    result, _ = _finish(first, mode, tmp_path, pause)
    assert result["messages"][1].text == "let me see \\ud83d"
    assert RAN == [1]
    assert result["last_message"].text == "done"


# --------------------------------------------------------------------------- results a snapshot cannot hold


class Unwritable:
    """A result whose to_dict() raises: the encoder meets an error that is not a SerializationError."""

    def to_dict(self) -> dict[str, Any]:
        raise RuntimeError("to_dict broke")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Unwritable:
        return cls()


def huge() -> int:
    """Return a number of more digits than Python writes as text."""
    RAN.append("huge")
    return 10**5000


def unwritable() -> Unwritable:
    """Return an object that cannot be encoded."""
    RAN.append("unwritable")
    return Unwritable()


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("tool", [huge, unwritable])
def test_a_result_value_the_snapshot_cannot_hold_is_dropped_and_the_call_recorded_done(
    mode: str, tool: Any, tmp_path: Path
) -> None:
    # The value could not be encoded, so the ledger's write raised after the tool ran: the run failed and the
    # finished call was left 'running' ("outcome unknown"); a resume ran it again and failed again.
    gen = ScriptedChatGenerator([
        ChatMessage.from_assistant(tool_calls=[ToolCall(tool.__name__, {}, id="c1")]),
        ChatMessage.from_assistant(tool_calls=[ToolCall("echo", {"v": 1}, id="c2")]),
        ChatMessage.from_assistant("done"),
    ])  # fmt: skip
    tools = [create_tool_from_function(tool), create_tool_from_function(echo)]
    agent = Agent(chat_generator=gen, tools=tools,
                  confirmation_strategies={"echo": BreakpointConfirmationStrategy(str(tmp_path))})  # fmt: skip
    with pytest.raises(HITLBreakpointException) as info:
        run_in_mode(agent, mode, [user("go")])
    snap = load_snapshot(info.value.snapshot_file_path)
    entry = snap.ledger["c1"]
    assert entry.status == "done" and entry.result is not None and "value" not in entry.result
    if tool is huge:
        text = result_for(snap.messages, "c1")
        assert text.error is True and "could not be turned into text" in text.result
    decision = ToolExecutionDecision("echo", True, "c2")
    result = run_in_mode(agent, mode, [], snapshot=dataclasses.replace(snap, tool_execution_decisions=[decision]))
    name = tool.__name__
    ran: list[Any] = RAN
    assert ran == [name, 1]  # c1 ran once, never again
    assert result["last_message"].text == "done"
