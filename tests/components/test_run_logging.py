"""Structured run logs: the handrail.run loggers, their records and extra fields, quiet unless enabled."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from handrail import Agent
from handrail.components import drivers
from handrail.components._run_logging import FIELDS
from handrail.core._secret_values import register_secret_value
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function

SECRET = "sk-logtest-" + uuid.uuid4().hex
"""Registered as a secret for the whole process: random, so that it shares no run of characters with the keys of
other tests (a shared run would mask their values too)."""


def search(query: str) -> str:
    """Search the web."""
    return f"results for {query}"


def charge(amount: int) -> str:
    """Charge an amount."""
    if amount > 100:
        raise ValueError(f"amount {amount} too large for key {SECRET}")
    return f"charged {amount}"


class Approve:
    """Approves every call, as alice."""

    def run(self, *, tool_name: str, tool_call_id: str | None = None, **kwargs: Any) -> ToolExecutionDecision:
        return ToolExecutionDecision(tool_name, True, tool_call_id, decided_by="alice")


def _replies() -> list[ChatMessage]:
    first = ChatMessage.from_assistant(
        tool_calls=[ToolCall("search", {"query": "weather"}, id="call_1"),
                    ToolCall("charge", {"amount": 500}, id="call_2")],
        meta={"usage": {"prompt_tokens": 120, "completion_tokens": 20}, "finish_reason": "tool_calls"},
    )  # fmt: skip
    last = ChatMessage.from_assistant("done", meta={"usage": {"prompt_tokens": 150, "completion_tokens": 5},
                                                    "finish_reason": "stop"})  # fmt: skip
    return [first, last]


def _agent(**kwargs: Any) -> Agent:
    return Agent(
        chat_generator=ScriptedChatGenerator(_replies()),
        tools=[create_tool_from_function(search), create_tool_from_function(charge)],
        confirmation_strategies={"search": Approve()},
        **kwargs,
    )


def _run_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("handrail.run")]


def _by_event(records: list[logging.LogRecord], event: str) -> list[logging.LogRecord]:
    return [r for r in records if getattr(r, "event", None) == event]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_run_logs_its_start_model_calls_approvals_tools_and_end(mode: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="handrail.run")
    agent = _agent()
    messages = [ChatMessage.from_user("go")]
    result = agent.run(messages) if mode == "sync" else asyncio.run(agent.run_async(messages))
    records = _run_records(caplog)
    events = [r.event for r in records]
    assert events[0] == "run_started" and events[-1] == "run_ended"
    run_ids = {r.run_id for r in records}
    assert len(run_ids) == 1 and all(len(i) == 32 for i in run_ids)  # one id on every record
    for record in records:  # the fields every record has
        for name in ("event", "run_id", "durable_run_id", "step", "tool_call_id"):
            assert hasattr(record, name), (record.getMessage(), name)

    models = _by_event(records, "model_call")
    assert [m.name for m in models] == ["handrail.run.model"] * 2
    assert [(m.step, m.input_tokens, m.output_tokens, m.finish_reason) for m in models] == [
        (1, 120, 20, "tool_calls"), (2, 150, 5, "stop")]  # fmt: skip
    assert models[0].getMessage().startswith("step 1 chat scripted-model ")  # the name the spans give it
    assert models[0].getMessage().endswith(" in=120 out=20 finish=tool_calls")

    asked, decided = _by_event(records, "approval_asked"), _by_event(records, "approval_decided")
    assert [(r.name, r.tool_call_id, r.tool_name) for r in asked] == [("handrail.run.approval", "call_1", "search")]
    assert [(r.decision, r.decided_by, r.step) for r in decided] == [("approved", "alice", 1)]
    assert decided[0].getMessage().startswith("approval search call_1 approved by alice ")

    tools = {r.tool_call_id: r for r in _by_event(records, "tool_call")}
    ok, failed = tools["call_1"], tools["call_2"]
    assert (ok.name, ok.levelno, ok.ok, ok.tool_name, ok.step) == ("handrail.run.tool", logging.INFO, True,
                                                                   "search", 1)  # fmt: skip
    assert ok.getMessage().startswith("tool search call_1 ok ")
    assert (failed.levelno, failed.ok, failed.error_type) == (logging.WARNING, False, "ValueError")
    assert "tool charge call_2 error" in failed.getMessage()

    end = records[-1]
    summary = (end.outcome, end.exit_reason, end.steps, end.input_tokens, end.output_tokens)
    assert summary == ("done", "text", result["step_count"], 270, 25)
    assert end.getMessage().startswith(f"run {end.run_id} done exit=text steps=2 in=270 out=25 ")
    # arguments and results are never at INFO
    assert not any("weather" in r.getMessage() or "results for" in r.getMessage() for r in records)


def test_debug_shows_a_masked_preview_of_arguments_and_results(caplog: pytest.LogCaptureFixture) -> None:
    register_secret_value(SECRET)
    caplog.set_level(logging.DEBUG, logger="handrail.run")
    replies = [ChatMessage.from_assistant(tool_calls=[ToolCall("search", {"query": f"key {SECRET} " + "x" * 500},
                                                               id="s1")]),
               ChatMessage.from_assistant("ok")]  # fmt: skip
    Agent(chat_generator=ScriptedChatGenerator(replies), tools=[create_tool_from_function(search)]).run(
        [ChatMessage.from_user("go")]
    )
    records = _run_records(caplog)
    arguments = _by_event(records, "tool_arguments")
    results = _by_event(records, "tool_result")
    assert len(arguments) == len(results) == 1 and arguments[0].levelno == logging.DEBUG
    shown = arguments[0].getMessage()
    assert shown.startswith('tool search s1 arguments {"query": "key ') and shown.endswith("…")
    assert len(shown) < 300  # a preview, cut
    assert results[0].getMessage().startswith("tool search s1 result ")
    assert all(SECRET not in r.getMessage() for r in records)
    assert _by_event(records, "hooks") == [] and _by_event(records, "persist") == []  # none in this run


def test_a_failing_tool_and_a_failing_model_mask_secrets_in_their_records(caplog: pytest.LogCaptureFixture) -> None:
    register_secret_value(SECRET)
    caplog.set_level(logging.INFO, logger="handrail.run")
    _agent().run([ChatMessage.from_user("go")])

    def broken(messages: list[ChatMessage], tools: Any) -> ChatMessage:
        raise ConnectionError(f"refused for {SECRET}")

    from handrail.testing import FunctionChatGenerator

    with pytest.raises(ConnectionError):
        Agent(chat_generator=FunctionChatGenerator(broken)).run([ChatMessage.from_user("go")])
    records = _run_records(caplog)
    texts = [r.getMessage() for r in records]
    assert any("ValueError: amount 500 too large for key ***" in t for t in texts), texts
    model_failed = [r for r in _by_event(records, "model_call") if r.ok is False]
    assert len(model_failed) == 1 and model_failed[0].levelno == logging.WARNING
    assert "ConnectionError: refused for ***" in model_failed[0].getMessage()
    failed_end = _by_event(records, "run_ended")[-1]
    assert (failed_end.outcome, failed_end.levelno, failed_end.error_type) == (
        "failed",
        logging.WARNING,
        "ConnectionError",
    )
    assert all(SECRET not in t for t in texts)


def test_a_pause_logs_its_snapshot_and_the_calls_waiting(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="handrail.run")
    agent = Agent(
        chat_generator=ScriptedChatGenerator([ChatMessage.from_assistant(tool_calls=[ToolCall("charge", {"amount": 5},
                                                                                              id="c1")])]),
        tools=[create_tool_from_function(charge)],
        confirmation_strategies={"charge": BreakpointConfirmationStrategy(str(tmp_path))},
    )  # fmt: skip
    with pytest.raises(HITLBreakpointException) as paused:
        agent.run([ChatMessage.from_user("go")])
    snapshot = paused.value.snapshot
    assert snapshot is not None and snapshot.snapshot_id
    records = _run_records(caplog)
    (pause,) = _by_event(records, "pause")
    assert pause.snapshot_id == snapshot.snapshot_id
    assert pause.getMessage() == (f"paused at tool_invoker snapshot={snapshot.snapshot_id} waiting=c1 "
                                  f"durable_run_id={snapshot.run_id}")  # fmt: skip
    (waiting,) = _by_event(records, "approval_waiting")
    assert (waiting.name, waiting.tool_call_id, waiting.tool_name) == ("handrail.run.approval", "c1", "charge")
    end = records[-1]
    assert (end.outcome, end.snapshot_id) == ("paused", snapshot.snapshot_id)
    assert end.durable_run_id == snapshot.run_id  # known once the record is written
    assert f"snapshot={snapshot.snapshot_id}" in end.getMessage()


def test_a_resumed_run_logs_the_decisions_it_is_given_and_goes_on_with_the_step_numbers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import dataclasses

    def agent(replies: list[ChatMessage]) -> Agent:
        return Agent(chat_generator=ScriptedChatGenerator(replies), tools=[create_tool_from_function(charge)],
                     confirmation_strategies={"charge": BreakpointConfirmationStrategy(str(tmp_path))})  # fmt: skip

    pay = ChatMessage.from_assistant(tool_calls=[ToolCall("charge", {"amount": 5}, id="c1")])
    with pytest.raises(HITLBreakpointException) as paused:
        agent([pay]).run([ChatMessage.from_user("go")])
    snapshot = paused.value.snapshot
    assert snapshot is not None
    decision = ToolExecutionDecision("charge", True, "c1", final_tool_params={"amount": 4}, decided_by="bob")
    caplog.set_level(logging.INFO, logger="handrail.run")
    agent([ChatMessage.from_assistant("paid")]).run(
        [], snapshot=dataclasses.replace(snapshot, tool_execution_decisions=[decision])
    )
    records = _run_records(caplog)
    assert {r.run_id for r in records} == {snapshot.run_id}  # the durable id, from the start
    assert records[0].resumed_from == snapshot.snapshot_id
    (decided,) = _by_event(records, "approval_decided")
    # the word of the spans and metrics
    assert (decided.tool_call_id, decided.decision, decided.decided_by) == ("c1", "edited", "bob")
    assert decided.getMessage() == "approval charge c1 edited by bob (given to the resumed run)"
    (tool,) = _by_event(records, "tool_call")
    (model,) = _by_event(records, "model_call")
    assert (tool.step, model.step) == (1, 2)  # the paused step's call, then the next step's model call


def test_nothing_is_logged_and_no_observer_made_while_the_logger_is_not_enabled(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="handrail.run")  # a failing tool would be a WARNING record
    agent = _agent()
    with agent.start([ChatMessage.from_user("go")]) as run:
        assert list(run.context.observers) == []
    agent.run([ChatMessage.from_user("go")])
    assert _run_records(caplog) == []
    assert drivers._run_logging() is None
    caplog.set_level(logging.INFO, logger="handrail.run")
    assert drivers._run_logging() is not None


def test_import_handrail_and_an_agent_run_load_no_logging_module_by_default() -> None:
    code = (
        "import sys\nfrom handrail import Agent\nfrom handrail.testing import ScriptedChatGenerator\n"
        "from handrail.dataclasses import ChatMessage\n"
        "Agent(chat_generator=ScriptedChatGenerator([ChatMessage.from_assistant('x')])).run("
        "[ChatMessage.from_user('q')])\n"
        "print('handrail.components._run_logging' in sys.modules, 'opentelemetry' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["False", "False"]
    assert out.stderr.count("handrail.run") == 0


def test_the_records_make_json_lines_with_a_formatter_of_the_fields(caplog: pytest.LogCaptureFixture) -> None:
    class JsonLines(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            data = {"logger": record.name, "level": record.levelname, "message": record.getMessage()}
            data.update({f: getattr(record, f) for f in FIELDS if hasattr(record, f)})
            return json.dumps(data)

    caplog.set_level(logging.INFO, logger="handrail.run")
    _agent().run([ChatMessage.from_user("go")])
    lines = [json.loads(JsonLines().format(r)) for r in _run_records(caplog)]
    assert {line["event"] for line in lines} >= {"run_started", "model_call", "approval_asked", "approval_decided",
                                                 "tool_call", "run_ended"}  # fmt: skip
    assert all({"run_id", "step", "tool_call_id"} <= line.keys() for line in lines)
