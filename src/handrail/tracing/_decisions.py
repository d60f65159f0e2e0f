"""What a decision did to a tool call, in the words of ``handrail.approval.decision``: shared by spans and metrics."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.human_in_the_loop.templates import is_expiry_rejection

__all__ = ["DecisionKind", "decision_for", "decision_kind"]

DecisionKind = Literal["approved", "rejected", "edited", "expired", "auto"]
"""approved: run as proposed; rejected: not run; edited: run with other arguments; expired: nobody decided in time
(the approval service's expiry); auto: a policy let it run without asking anybody."""

POLICY = "policy"  # the decided_by of a decision a confirmation policy made (no person was asked)


def decision_kind(decision: ToolExecutionDecision, proposed: Mapping[str, Any] | None = None) -> DecisionKind:
    """What ``decision`` does to a call whose proposed arguments are ``proposed`` (None: not known).

    The rule the run applies (``_confirm._apply``): ``execute=False`` rejects (``expired`` when the approval service's
    expiry wrote it), ``final_tool_params`` None or equal to the proposed arguments confirms, other params edit (a
    key the model did not give is a State-injected value the person was shown, not an edit). A confirmation decided
    by ``"policy"`` is ``auto``.

    Examples:
        >>> decision_kind(ToolExecutionDecision("pay", True, "c1", final_tool_params={"amount": 5}), {"amount": 5})
        'approved'
        >>> decision_kind(ToolExecutionDecision("pay", True, "c1", final_tool_params={"amount": 1}), {"amount": 5})
        'edited'
        >>> decision_kind(ToolExecutionDecision("pay", True, "c1", final_tool_params={"amount": 5, "user": "ann"}),
        ...               {"amount": 5})
        'approved'
        >>> decision_kind(ToolExecutionDecision("pay", False, "c1", feedback="no"))
        'rejected'
    """
    if not decision.execute:
        return "expired" if is_expiry_rejection(decision) else "rejected"
    params = decision.final_tool_params
    if params is not None and proposed is not None and _changes(params, proposed):
        return "edited"
    if decision.decided_by == POLICY:
        return "auto"
    return "approved"


def _changes(params: Mapping[str, Any], proposed: Mapping[str, Any]) -> bool:
    """Whether ``params`` drop or change a proposed argument (keys only in ``params`` are injected values)."""
    return any(key not in params or params[key] != value for key, value in proposed.items())


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
