"""A tool returns content parts (text and images) with ``outputs_to_string={"raw_result": True}``, as in Haystack 2.23.

Its ``ToolCallResult.result`` is then that list: through the ToolInvoker, the Agent (sync, async, streaming), the
ledger of a durable run and its resume. Without ``raw_result`` a list of parts becomes JSON text, as any other
result does; with it, anything but a str or a list of TextContent / ImageContent is an error result.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.components.agents._ledger import Ledger
from handrail.components.tools import ToolInvoker
from handrail.components.tools._effects import Invocation
from handrail.components.tools._step import ToolStepOptions
from handrail.core import Secret
from handrail.dataclasses import ChatMessage, ImageContent, State, StreamingChunk, TextContent, ToolCall
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.snapshot import LedgerEntry
from handrail.errors import StringConversionError
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.stores import open_snapshot_store
from handrail.testing import ScriptedChatGenerator
from handrail.tools import Tool, create_tool_from_function
from tests.components._helpers import run_in_mode

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
PLACEHOLDER = "[image: image/png, 70 bytes, not shown to this model]"
RUNS: list[str] = []
"""The months ``chart`` was run for."""


def chart(month: str) -> list[TextContent | ImageContent]:
    """Draw the sales chart of a month.

    Args:
        month: The month.
    """
    RUNS.append(month)
    return [TextContent(f"Sales in {month}:"), ImageContent(PNG, "image/png", meta={"month": month})]


def chart_tool(**kwargs: Any) -> Tool:
    return create_tool_from_function(chart, outputs_to_string={"raw_result": True}, **kwargs)


def ask(tool: Tool, **kwargs: Any) -> Any:
    """The result of one call of ``tool`` through a ToolInvoker."""
    message = ChatMessage.from_assistant(tool_calls=[ToolCall(tool.name, {"month": "May"}, id="c1")])
    return ToolInvoker([tool], **kwargs).run([message])["tool_messages"][0].tool_call_result


def test_a_raw_result_of_parts_is_the_tool_call_result() -> None:
    result = ask(chart_tool())
    assert result.result == chart("May") and result.error is False
    assert result.text == "Sales in May:"
    assert ask(chart_tool(), convert_result_to_json_string=True).result == chart("May")  # raw: never JSON-encoded


def test_a_handler_may_build_the_parts_and_a_tuple_becomes_a_list() -> None:
    def to_parts(value: dict[str, str]) -> tuple[TextContent, ImageContent]:
        return TextContent(value["caption"]), ImageContent(value["png"], "image/png")

    def plot(month: str) -> dict[str, str]:
        """Plot.

        Args:
            month: The month.
        """
        return {"caption": f"{month} plot", "png": PNG}

    tool = create_tool_from_function(plot, outputs_to_string={"handler": to_parts, "raw_result": True})
    assert ask(tool).result == [TextContent("May plot"), ImageContent(PNG, "image/png")]


def test_without_raw_result_a_list_of_parts_becomes_json_text_as_before() -> None:
    result = ask(create_tool_from_function(chart))
    assert isinstance(result.result, str)
    assert json.loads(result.result)[0] == {"text": "Sales in May:"}


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ({"text": "a"}, "produced dict, not a str or a list of TextContent / ImageContent parts"),
        ([TextContent("a"), {"image": "x"}], r"produced a list whose item \[1\] is a dict"),
        (7, "produced int"),
    ],
)
def test_a_raw_result_of_another_kind_is_an_error_result_or_raises(value: Any, fragment: str) -> None:
    def odd(month: str) -> Any:
        """Odd.

        Args:
            month: The month.
        """
        return value

    tool = create_tool_from_function(odd, outputs_to_string={"raw_result": True})
    result = ask(tool, raise_on_failure=False)
    assert result.error is True and isinstance(result.result, str)
    assert "Tool 'odd' has raw_result=True but" in result.result and "(call 'c1')" in result.result
    with pytest.raises(StringConversionError, match=fragment):
        ask(tool)


def test_a_known_secret_in_a_text_part_is_masked() -> None:
    token = "sk-parts-" + secrets.token_urlsafe(16)
    Secret.from_token(token).resolve_value()

    def leak(month: str) -> list[TextContent]:
        """Leak.

        Args:
            month: The month.
        """
        return [TextContent(f"the key is {token}")]

    result = ask(create_tool_from_function(leak, outputs_to_string={"raw_result": True}))
    assert result.result == [TextContent("the key is ***")]


def _agent(**kwargs: Any) -> tuple[Agent, ScriptedChatGenerator]:
    model = ScriptedChatGenerator(
        [
            ChatMessage.from_assistant(tool_calls=[ToolCall("chart", {"month": "May"}, id="c1")]),
            ChatMessage.from_assistant("Sales rose."),
        ]
    )
    return Agent(chat_generator=model, tools=[chart_tool()], **kwargs), model


@pytest.mark.parametrize("mode", ["sync", "async", "stream"])
def test_the_agent_gives_the_model_the_parts(mode: str) -> None:
    agent, model = _agent()
    result = run_in_mode(agent, mode, [ChatMessage.from_user("May?")])
    assert result["last_message"].text == "Sales rose."
    assert result["messages"][-2].tool_call_result.result == chart("May")
    sent = model.calls[1]["messages"][-1].tool_call_result
    assert sent.result == chart("May")


def test_a_streamed_run_emits_the_result_of_parts() -> None:
    agent, _ = _agent()
    chunks: list[StreamingChunk] = []
    agent.run([ChatMessage.from_user("May?")], streaming_callback=chunks.append)
    (chunk,) = [c for c in chunks if c.tool_call_result is not None]
    assert chunk.tool_call_result is not None and chunk.tool_call_result.result == chart("May")
    assert chunk.meta["tool_result"] == chart("May")


def test_the_ledger_records_the_text_with_placeholders_and_replays_the_parts() -> None:
    tool = chart_tool()
    call = ToolCall("chart", {"month": "May"}, id="c1")
    inv = Invocation(call, tool, {"month": "May"}, {"month": "May"}, {}, "c1")
    ledger = Ledger()
    ledger.record_started(inv)
    ledger.record_finished(inv, (True, chart("May")))
    recorded = ledger.entries["c1"].result
    assert recorded is not None and recorded["text"] == f"Sales in May:\n{PLACEHOLDER}" and recorded["error"] is False
    # As a resumed run reads it: from the entry's JSON, under a snapshot's allowlist.
    entry = LedgerEntry.from_dict(json.loads(json.dumps(ledger.entries["c1"].to_dict())))
    again = Ledger({"c1": entry}, read_under=())
    kind, message = again.replay(inv, State(), ToolStepOptions())
    assert kind == "answered" and message is not None
    assert message.tool_call_result is not None and message.tool_call_result.result == chart("May")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_paused_and_resumed_run_gives_the_model_the_same_parts(mode: str, tmp_path: Path) -> None:
    def pay(amount: int) -> str:
        """Pay.

        Args:
            amount: How much.
        """
        return "paid"

    def agent(replies: list[ChatMessage]) -> Agent:
        url = str(tmp_path / "snaps")
        return Agent(
            chat_generator=ScriptedChatGenerator(replies),
            tools=[chart_tool(), create_tool_from_function(pay)],
            confirmation_strategies={"pay": BreakpointConfirmationStrategy(snapshot_store=url)},
        )

    calls = [ToolCall("chart", {"month": "May"}, id="c1"), ToolCall("pay", {"amount": 5}, id="p1")]
    RUNS.clear()
    with pytest.raises(HITLBreakpointException):
        run_in_mode(agent([ChatMessage.from_assistant(tool_calls=calls)]), mode, [ChatMessage.from_user("May?")])
    store = open_snapshot_store(str(tmp_path / "snaps"))
    sid = store.list_pending()[0].snapshot_id
    store.record_decision(sid, ToolExecutionDecision("pay", execute=True, tool_call_id="p1", decided_by="t"))
    entry = store.load(sid).ledger["c1"]
    assert entry.status == "done" and entry.result is not None and PLACEHOLDER in entry.result["text"]
    resumed = agent([ChatMessage.from_assistant("done")])
    result = run_in_mode(resumed, mode, [], snapshot=store.load(sid))
    assert RUNS == ["May"]  # the chart ran once: the resume replayed its recorded parts
    results = [m.tool_call_result for m in result["messages"] if m.tool_call_result is not None]
    assert [r.result for r in results if r.origin.id == "c1"] == [chart("May")]
    sent = resumed.chat_generator.calls[0]["messages"]  # type: ignore[attr-defined]
    assert any(m.tool_call_result is not None and m.tool_call_result.result == chart("May") for m in sent)
