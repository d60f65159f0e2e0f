"""OpenAI-compatible servers that send odd call ids or arguments handrail cannot write (issue 14, items 5–6).

An id that is not a non-empty string (a number, a list, an object, null, "") never drops the reply: the
Agent gives the call a unique id, the same in the assistant message and its result. Arguments holding NaN
(as text or as a JSON object) get an error tool result the model reads, also when a sibling call pauses for
approval; the pause is written and the resume sends the server a consistent history.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.snapshot import load_snapshot
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.tools import create_tool_from_function
from tests.components._helpers import run_in_mode
from tests.components.generators._openai_server import ChunkedBody, RecordedServer, Responder

SUMS: list[tuple[int, int]] = []


def add(a: int, b: int = 0) -> int:
    """Add two numbers."""
    SUMS.append((a, b))
    return a + b


@pytest.fixture(autouse=True)
def _clear() -> None:
    SUMS.clear()


def _body(data: bytes, content_type: str) -> Responder:
    return lambda request: httpx.Response(200, headers={"content-type": content_type}, stream=ChunkedBody(data))


def _calls_reply(calls: list[dict[str, Any]], mode: str) -> Responder:
    """The server's tool-call reply, as one completion or (mode "stream") as stream events, one per call."""
    if mode != "stream":
        message = {"role": "assistant", "content": None, "tool_calls": calls}
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
        body = {"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": [choice]}
        return _body(json.dumps(body).encode(), "application/json")
    events = []
    for i, wire in enumerate(calls):
        delta = {"tool_calls": [{**wire, "index": i}]}
        events.append({"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
                       "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})  # fmt: skip
    events.append({"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
                   "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})  # fmt: skip
    data = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
    return _body(data, "text/event-stream")


def _answer(text: str, mode: str = "sync") -> Responder:
    if mode == "stream":
        event = {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
                 "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]}  # fmt: skip
        return _body(b"data: " + json.dumps(event).encode() + b"\n\ndata: [DONE]\n\n", "text/event-stream")
    choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
    body = {"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": [choice]}
    return _body(json.dumps(body).encode(), "application/json")


def _wire_call(call_id: Any, arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "add", "arguments": arguments}}


def _agent(server: RecordedServer, directory: Path) -> Agent:
    strategy = BreakpointConfirmationStrategy(str(directory))
    return Agent(chat_generator=server.generator(max_retries=0), tools=[create_tool_from_function(add)],
                 confirmation_strategies={"add": strategy})  # fmt: skip


def _pause_and_resume(calls: list[dict[str, Any]], mode: str, tmp_path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Pause at the server's calls, approve every pending one, resume; return the result and the resume's request."""
    with pytest.raises(HITLBreakpointException) as info:
        run_in_mode(_agent(RecordedServer(_calls_reply(calls, mode)), tmp_path), mode, [ChatMessage.from_user("add")])
    snap = load_snapshot(info.value.snapshot_file_path)
    decisions = [ToolExecutionDecision("add", True, c.id) for c in snap.pending_tool_calls]
    server = RecordedServer(_answer("Done.", mode))
    result = run_in_mode(_agent(server, tmp_path), mode, [],
                         snapshot=dataclasses.replace(snap, tool_execution_decisions=decisions))  # fmt: skip
    return result, server.bodies[0]


MODES = pytest.mark.parametrize("mode", ["sync", "async", "stream"])


@MODES
@pytest.mark.parametrize(
    ("wire_id", "expected"),
    [(7, "7"), (["x"], "call_1"), ({"x": 1}, "call_1"), (None, "call_1"), ("", "call_1"), (True, "call_1")],
    ids=["int", "list", "object", "null", "empty", "bool"],
)
def test_an_odd_call_id_is_repaired_and_the_paused_run_resumes(
    mode: str, wire_id: Any, expected: str, tmp_path: Path
) -> None:
    result, sent = _pause_and_resume([_wire_call(wire_id, '{"a": 1, "b": 2}')], mode, tmp_path)

    assert SUMS == [(1, 2)] and result["last_message"].text == "Done."
    assistant, tool = result["messages"][1], result["messages"][2]
    assert [c.id for c in assistant.tool_calls] == [expected]
    assert tool.tool_call_result is not None and tool.tool_call_result.origin.id == expected
    wire_assistant, wire_tool = sent["messages"][1], sent["messages"][2]  # what the server is sent back
    assert wire_assistant["tool_calls"][0]["id"] == expected and wire_tool["tool_call_id"] == expected


@MODES
@pytest.mark.parametrize(
    "arguments", ['{"a": NaN, "b": 1}', '{"a": Infinity}', '{"a": "\\ud800"}'], ids=["nan", "infinity", "surrogate"]
)
def test_argument_text_that_is_not_json_data_gets_an_error_result_beside_a_pause(
    mode: str, arguments: str, tmp_path: Path
) -> None:
    calls = [_wire_call("bad", arguments), _wire_call("good", '{"a": 1, "b": 2}')]
    result, sent = _pause_and_resume(calls, mode, tmp_path)

    assert SUMS == [(1, 2)] and result["last_message"].text == "Done."
    answers = {m["tool_call_id"]: m["content"] for m in sent["messages"] if m["role"] == "tool"}
    assert answers["good"] == "3"
    assert "Arguments for tool 'add' are not valid JSON" in answers["bad"]
    assert ("lone surrogate" if "ud800" in arguments else "is not a JSON number") in answers["bad"]


def test_arguments_sent_as_a_json_object_holding_nan_get_an_error_result(tmp_path: Path) -> None:
    body = json.dumps({"a": float("nan")})  # what a server writing NaN sends: {"a": NaN}, not text
    raw = '{"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": [{"index": 0, ' \
          '"message": {"role": "assistant", "content": null, "tool_calls": [' \
          '{"id": "bad", "type": "function", "function": {"name": "add", "arguments": ' + body + '}}, ' \
          '{"id": "good", "type": "function", "function": {"name": "add", "arguments": "{\\"a\\": 2}"}}]}, ' \
          '"finish_reason": "tool_calls"}]}'  # fmt: skip
    with pytest.raises(HITLBreakpointException) as info:
        _agent(RecordedServer(_body(raw.encode(), "application/json")), tmp_path).run([ChatMessage.from_user("add")])
    snap = load_snapshot(info.value.snapshot_file_path)
    assert {k: e.status for k, e in snap.ledger.items()} == {"good": "pending"}  # "bad" is answered, not held
    assert snap.messages[-1].tool_calls[0].arguments == '{"a": NaN}'  # as sent, in text a snapshot can hold
    server = RecordedServer(_answer("Done."))
    decision = ToolExecutionDecision("add", True, "good")
    result = _agent(server, tmp_path).run([], snapshot=dataclasses.replace(snap, tool_execution_decisions=[decision]))

    assert SUMS == [(2, 0)] and result["last_message"].text == "Done."
    answers = {m["tool_call_id"]: m["content"] for m in server.bodies[0]["messages"] if m["role"] == "tool"}
    assert "NaN is not a JSON number" in answers["bad"]


UNREADABLE_IDS = {
    "escape-and-newline": "c1\x1b[31m\n",
    "del": "c1\x7f",
    "c1-control": "c1\x9b2J",
    "bidi": "c1\u202e",
    "spaces-around": " c1 ",
    "only-spaces": "   ",
    "too-long": "c" * 257,
    "variation-selector": "c1\ufe0f",
    "hangul-filler": "\u3164",
    "grapheme-joiner": "c1\u034f",
    "braille-blank": "\u2800",
    "combining-accent": "c\u0301",
}


@MODES
@pytest.mark.parametrize("wire_id", list(UNREADABLE_IDS.values()), ids=list(UNREADABLE_IDS))
def test_a_call_id_a_person_cannot_read_and_type_back_is_repaired(mode: str, wire_id: str, tmp_path: Path) -> None:
    result, sent = _pause_and_resume([_wire_call(wire_id, '{"a": 1, "b": 2}')], mode, tmp_path)

    assert SUMS == [(1, 2)] and result["last_message"].text == "Done."
    assert [c.id for c in result["messages"][1].tool_calls] == ["call_1"]
    assert sent["messages"][2]["tool_call_id"] == "call_1"


@MODES
def test_two_ids_that_would_print_alike_are_told_apart(mode: str, tmp_path: Path) -> None:
    # One id holds a real ESC and newline, the other the backslash text they would be shown as: shown alike,
    # approving the shown id would run the other call. The unreadable one is repaired; each shown id is exact.
    calls = [_wire_call("c1\x1b[31m\n", '{"a": 1}'), _wire_call("c1\\x1b[31m\\n", '{"a": 2}')]
    with pytest.raises(HITLBreakpointException) as info:
        run_in_mode(_agent(RecordedServer(_calls_reply(calls, mode)), tmp_path), mode, [ChatMessage.from_user("add")])
    snap = load_snapshot(info.value.snapshot_file_path)
    assert [(c.id, c.arguments) for c in snap.pending_tool_calls] == [
        ("call_1", {"a": 1}),
        ("c1\\x1b[31m\\n", {"a": 2}),
    ]
    decisions = [ToolExecutionDecision("add", True, "c1\\x1b[31m\\n"), ToolExecutionDecision("add", False, "call_1")]
    result = run_in_mode(_agent(RecordedServer(_answer("Done.", mode)), tmp_path), mode, [],
                         snapshot=dataclasses.replace(snap, tool_execution_decisions=decisions))  # fmt: skip
    assert SUMS == [(2, 0)] and result["last_message"].text == "Done."


@MODES
def test_an_id_that_looks_like_another_is_repaired_so_each_shown_id_is_typeable(mode: str, tmp_path: Path) -> None:
    # "c1" and "c1" + VARIATION SELECTOR-16 print alike; --call c1 could only ever pick the first.
    calls = [_wire_call("c1", '{"a": 1}'), _wire_call("c1\ufe0f", '{"a": 2}')]
    with pytest.raises(HITLBreakpointException) as info:
        run_in_mode(_agent(RecordedServer(_calls_reply(calls, mode)), tmp_path), mode, [ChatMessage.from_user("add")])
    snap = load_snapshot(info.value.snapshot_file_path)
    assert [(c.id, c.arguments) for c in snap.pending_tool_calls] == [("c1", {"a": 1}), ("call_2", {"a": 2})]
