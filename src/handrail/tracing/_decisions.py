"""What a decision did to a tool call, in the words of ``handrail.approval.decision``: shared by spans and metrics.

The rule itself is :func:`handrail.components._observed_words.decision_kind`, which the run logs use too.
"""

from __future__ import annotations

from collections.abc import Iterable

from handrail.components._observed_words import POLICY, DecisionKind, decision_kind
from handrail.dataclasses.decisions import ToolExecutionDecision

__all__ = ["POLICY", "DecisionKind", "decision_for", "decision_kind"]


def decision_for(
    call_id: str, tool_name: str, decisions: Iterable[ToolExecutionDecision], calls_of_tool: int = 1
) -> ToolExecutionDecision | None:
    """The decision among ``decisions`` that answers call ``call_id`` of ``tool_name``, or None.

    Matched as a resumed run matches them (``ToolExecutionDecision.find``): by ``tool_call_id``, else a decision
    without one for the tool when the call is the only call of that tool in its step (``calls_of_tool``).
    """
    unnamed: ToolExecutionDecision | None = None
    for decision in decisions:
        if decision.tool_call_id == call_id:
            return decision
        if decision.tool_call_id is None and decision.tool_name == tool_name and unnamed is None:
            unnamed = decision
    return unnamed if calls_of_tool == 1 else None
