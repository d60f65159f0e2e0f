"""Decision objects refuse fields of the wrong type when built, not later in the template renderer."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from handrail.dataclasses.decisions import ConfirmationUIResult, ToolExecutionDecision
from handrail.errors import ConfigurationError, ConfigurationTypeError
from handrail.human_in_the_loop import AlwaysAskPolicy, BlockingConfirmationStrategy, SimpleConsoleUI


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("tool_name", None, "ToolExecutionDecision.tool_name must be a str, got NoneType (None)."),
        ("tool_name", 5, "ToolExecutionDecision.tool_name must be a str, got int (5)."),
        ("tool_call_id", 5, "ToolExecutionDecision.tool_call_id must be a str or None, got int (5)."),
        ("feedback", 42, "ToolExecutionDecision.feedback must be a str or None, got int (42)."),
        ("decided_by", 3, "ToolExecutionDecision.decided_by must be a str or None, got int (3)."),
        ("feedback", b"x", "ToolExecutionDecision.feedback must be a str or None, got bytes (b'x')."),
    ],
)
def test_a_decision_refuses_fields_of_the_wrong_type(field: str, value: Any, message: str) -> None:
    fields: dict[str, Any] = {"tool_name": "send", "execute": False, "tool_call_id": "c1", field: value}
    with pytest.raises(ConfigurationTypeError) as caught:
        ToolExecutionDecision(**fields)
    assert str(caught.value) == message
    with pytest.raises(ConfigurationTypeError):
        ToolExecutionDecision.from_dict(fields)


def test_a_decision_accepts_none_where_the_field_is_optional() -> None:
    decision = ToolExecutionDecision("send", True)
    assert (decision.tool_call_id, decision.feedback, decision.decided_by) == (None, None, None)
    assert ToolExecutionDecision.from_dict(decision.to_dict()) == decision


def test_a_bad_feedback_never_reaches_the_template_renderer() -> None:
    strategy = BlockingConfirmationStrategy(confirmation_policy=AlwaysAskPolicy(), confirmation_ui=SimpleConsoleUI())
    with pytest.raises(ConfigurationTypeError, match="feedback must be a str or None, got int"):
        decision = ToolExecutionDecision("send", False, "c1", feedback=42)  # type: ignore[arg-type]
        strategy.render_reject(decision.tool_name, decision.feedback)


def test_a_ui_result_refuses_feedback_that_is_not_text() -> None:
    with pytest.raises(ConfigurationTypeError) as caught:
        ConfirmationUIResult("reject", feedback=123)  # type: ignore[arg-type]
    assert str(caught.value) == "ConfirmationUIResult.feedback must be a str or None, got int (123)."
    assert ConfirmationUIResult("reject").feedback is None


@pytest.mark.parametrize("decided_by", ["", "   ", "\n"])
def test_a_decision_refuses_an_empty_or_blank_decider(decided_by: str) -> None:
    """The CLI's --by rule: a decider is named, or left None (the default then applies)."""
    with pytest.raises(ConfigurationError, match=r"^ToolExecutionDecision\.decided_by is (empty|blank)"):
        ToolExecutionDecision("send", True, "c1", decided_by=decided_by)
    with pytest.raises(ConfigurationError, match="decided_by is"):
        ToolExecutionDecision.from_dict({"tool_name": "send", "execute": True, "decided_by": decided_by})


def test_a_snapshot_file_with_a_blank_decider_is_refused_on_load(tmp_path: Path) -> None:
    """A hand-edited record cannot carry a blank decider into Agent.run: the load names the field."""
    from handrail.dataclasses.snapshot import load_snapshot, write_snapshot
    from handrail.errors import SnapshotError
    from handrail.testing.store_suites.snapshots import make_paused_snapshot

    snapshot = make_paused_snapshot()
    decided = ToolExecutionDecision("transfer", True, "c1", decided_by="ann")
    path = tmp_path / "s.json"
    write_snapshot(dataclasses.replace(snapshot, tool_execution_decisions=[decided]), path)
    path.write_text(path.read_text(encoding="utf-8").replace('"ann"', '"   "'), encoding="utf-8")
    with pytest.raises(SnapshotError, match=r"tool_execution_decisions.*decided_by is blank"):
        load_snapshot(path)


def test_a_ui_with_a_blank_label_is_recorded_by_its_class_name() -> None:
    class Quiet(SimpleConsoleUI):
        label = "   "

    strategy = BlockingConfirmationStrategy(confirmation_policy=AlwaysAskPolicy(), confirmation_ui=Quiet())
    from handrail.human_in_the_loop.strategies import _label

    assert _label(strategy.confirmation_ui) == "Quiet"
