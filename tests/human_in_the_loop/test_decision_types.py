"""Decision objects refuse fields of the wrong type when built, not later in the template renderer."""

from __future__ import annotations

import dataclasses
import re
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


UNREADABLE_DECIDERS = [
    ("\u200b", "is blank"), ("\ufeff", "is blank"), ("\u2800", "is blank"), ("\u3164", "is blank"),
    ("\u115f\u1160\uffa0", "is blank"), ("\u200e", "is blank"), ("\u202e", "is blank"), ("\u034f", "is blank"),
    ("\x00", "U+0000"), ("\x1b", "U+001B"), ("a\nb", "U+000A"), ("ann\u202e", "U+202E"), ("a\u2028b", "U+2028"),
    ("x" * 100_000, "has 100,000 characters (at most 200)"),
]  # fmt: skip


@pytest.mark.parametrize(("decided_by", "problem"), UNREADABLE_DECIDERS)
def test_a_decision_refuses_an_invisible_or_control_holding_decider(decided_by: str, problem: str) -> None:
    """A decider is shown to people: one with no visible character, a control or format character, or a text's
    length would record nobody readable (or rewrite their terminal)."""
    with pytest.raises(ConfigurationError, match=rf"^ToolExecutionDecision\.decided_by .*{re.escape(problem)}"):
        ToolExecutionDecision("send", True, "c1", decided_by=decided_by)


@pytest.mark.parametrize("decided_by", ["ann", "Zoë K.", "李明", "ops-bot@example.com", "x" * 200])
def test_a_readable_decider_is_kept(decided_by: str) -> None:
    assert ToolExecutionDecision("send", True, "c1", decided_by=decided_by).decided_by == decided_by


def test_a_snapshot_file_with_a_control_in_a_ledger_decider_is_refused_on_load(tmp_path: Path) -> None:
    """The ledger's decided_by follows the same rule, so a hand-edited record is refused when read."""
    from handrail.dataclasses.snapshot import LedgerEntry, load_snapshot, write_snapshot
    from handrail.errors import SnapshotError
    from handrail.testing.store_suites.snapshots import make_paused_snapshot

    snapshot = make_paused_snapshot()
    entry = LedgerEntry("c1", "transfer", "approved", {}, decided_by="ann")
    path = tmp_path / "s.json"
    write_snapshot(dataclasses.replace(snapshot, ledger={"c1": entry}), path)
    path.write_text(path.read_text(encoding="utf-8").replace('"ann"', '"\\u001b[2J"'), encoding="utf-8")
    with pytest.raises(SnapshotError, match=r"decided_by holds the control or invisible character U\+001B"):
        load_snapshot(path)


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
