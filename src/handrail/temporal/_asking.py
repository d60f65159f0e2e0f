"""The approvals of a workflow run: which calls wait, who may decide what, and how a decision is checked.

Pure bookkeeping (no I/O, no clock but the one given): the workflow keeps one :class:`Waiting` per held call and
checks each ``decide`` Update with :meth:`Waiting.refusal` in the Update's validator, so a decision that cannot
apply (an unknown call, a decision the tool's policy does not allow, an edit that fails the tool's schema or
renames the tool, the initiator approving where the policy forbids it) is refused before it enters the history.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.temporal._types import DecisionInput

__all__ = ["Waiting", "digest"]

_KINDS = ("approve", "reject", "edit")
MAX_FEEDBACK, MAX_DECIDED_BY = 10_000, 200
"""The longest feedback and decider name a decision may carry (as the approval service's API)."""


def _text_problem(d: DecisionInput) -> str | None:
    """What is wrong with a decision's strings: too long, or text that is not Unicode (a lone surrogate)."""
    if not isinstance(d.decided_by, str) or not d.decided_by.strip():
        return "decided_by must name who decided"
    if len(d.decided_by) > MAX_DECIDED_BY:
        return f"decided_by is at most {MAX_DECIDED_BY} characters, got {len(d.decided_by)}"
    if d.feedback is not None and (not isinstance(d.feedback, str) or len(d.feedback) > MAX_FEEDBACK):
        return f"feedback must be a text of at most {MAX_FEEDBACK} characters"
    if d.arguments is not None and not isinstance(d.arguments, dict):
        return "arguments must be an object"
    for name, value in (("decided_by", d.decided_by), ("feedback", d.feedback), ("arguments", d.arguments)):
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            return f"{name} holds text that is not Unicode (a lone surrogate)"
        except (TypeError, ValueError):
            return f"{name} is not JSON data"
    return None


def digest(decision: DecisionInput) -> str:
    """What makes two decisions the same (a duplicate is ignored): kind, arguments, feedback — not who sent it."""
    body = json.dumps([decision.decision, decision.arguments, decision.feedback], sort_keys=True, default=str)
    return hashlib.sha256(body.encode()).hexdigest()[:32]


@dataclass
class Waiting:
    """One call waiting for a decision."""

    call_id: str
    tool_name: str
    arguments: dict[str, Any]
    """The call's effective arguments (the model's plus State-injected ones), as the person sees them."""
    injected: dict[str, Any]
    allowed: tuple[str, ...]
    quorum: int
    initiator_may_approve: bool
    created_at: datetime
    expires_at: datetime | None
    on_expiry: str
    description: str
    validate: Any = field(default=None, repr=False)
    """``validate(params) -> problem | None``: the tool's schema check of edited arguments."""
    kind: str = "approval"
    """``approval``, or ``unknown_outcome``: the call's worker died while it ran; run it again?"""
    asked: int = 0
    """The question's number in the run (a call asked again after an unknown outcome gets a new one)."""
    proposal: int = 1
    """The version of the arguments people approve: an edit under a quorum makes a new proposal."""
    quorum_for: Any = field(default=None, repr=False)
    """``quorum_for(params) -> int``: the policy's quorum for other arguments (an edit is judged again)."""
    votes: dict[str, DecisionInput] = field(default_factory=dict)
    decision: ToolExecutionDecision | None = None
    final: DecisionInput | None = None

    def refusal(self, d: DecisionInput, initiator: str | None) -> str | None:
        """Why ``d`` cannot apply to this call (None: it can; a duplicate of what decided it can too)."""
        if self.final is not None:
            return None if digest(d) == digest(self.final) else (
                f"call {self.call_id!r} was already decided ({self.final.decision} by {self.final.decided_by}); "
                f"a different decision is refused")  # fmt: skip
        if d.decision not in _KINDS:
            return f"decision must be one of {list(_KINDS)}, got {d.decision!r:.40}"
        if d.decision not in self.allowed:
            return f"{d.decision!r} is not allowed for {self.tool_name!r} (allowed: {list(self.allowed)})"
        if d.tool_name is not None and d.tool_name != self.tool_name:
            return f"the decision names tool {d.tool_name!r:.80} but call {self.call_id!r} is to {self.tool_name!r}"
        problem = _text_problem(d)
        if problem is not None:
            return problem
        if d.proposal is not None and d.proposal != self.proposal and d.decision != "reject":
            return (f"the arguments changed since proposal {d.proposal} (an edit): they are now "
                    f"{json.dumps(self.arguments, default=str)[:300]}; decide on proposal {self.proposal}")  # fmt: skip
        if (
            d.decision != "reject"
            and initiator is not None
            and d.decided_by == initiator
            and not self.initiator_may_approve
        ):
            return f"{d.decided_by!r} started this run and may not approve its calls to {self.tool_name!r}"
        if d.decision == "edit":
            if not isinstance(d.arguments, dict):
                return "an edit needs the new arguments (an object)"
            problem = self.validate(d.arguments) if self.validate is not None else None
            if problem is not None:
                return f"the edited arguments are refused: {problem}"
        elif d.arguments is not None:
            return f"arguments go with an edit, not with {d.decision!r}"
        return None

    def apply(self, d: DecisionInput) -> str:
        """Count ``d`` (already checked); returns ``decided``, ``voted`` (quorum not reached) or ``duplicate``."""
        if self.final is not None or (d.decided_by in self.votes and digest(self.votes[d.decided_by]) == digest(d)):
            return "duplicate"
        if d.decision == "reject":
            return self._decide(d)
        if d.decision == "edit":  # an edit is a new proposal: judged again, the editor's approval counts, others again
            assert d.arguments is not None
            arguments = {**d.arguments, **self.injected}
            if self.quorum_for is not None:  # a bigger amount may need more approvers, a smaller one fewer
                self.quorum = max(1, int(self.quorum_for(arguments)))
            if self.quorum <= 1:
                return self._decide(d)
            self.votes = {d.decided_by: d}
            self.proposal += 1
            self.arguments = arguments
        elif self.quorum <= 1:
            return self._decide(d)
        else:
            self.votes[d.decided_by] = d
        if len(self.votes) >= self.quorum:
            edit = next((v for v in self.votes.values() if v.decision == "edit"), None)
            return self._decide(edit or d)
        return "voted"

    def _decide(self, d: DecisionInput) -> str:
        self.final = d
        self.votes[d.decided_by] = d
        who = ", ".join(sorted(self.votes)) if len(self.votes) > 1 else d.decided_by
        params = {**d.arguments, **self.injected} if d.decision == "edit" and d.arguments is not None else None
        self.decision = ToolExecutionDecision(self.tool_name, d.decision != "reject", self.call_id, d.feedback, params,
                                              decided_by=who[:200])  # fmt: skip
        return "decided"

    def expire(self) -> None:
        """Decide by the expiry action (reject unless the policy says approve)."""
        from handrail.dataclasses._approval_fields import EXPIRED_FEEDBACK

        approve = self.on_expiry == "approve" and self.kind == "approval"
        self.final = DecisionInput(self.call_id, "approve" if approve else "reject", "expiry",
                                   feedback=None if approve else EXPIRED_FEEDBACK)  # fmt: skip
        self.decision = ToolExecutionDecision(self.tool_name, approve, self.call_id,
                                              None if approve else EXPIRED_FEEDBACK, None,
                                              decided_by="expiry")  # fmt: skip

    def view(self) -> dict[str, Any]:
        """What the status query shows of this call."""
        return {
            "call_id": self.call_id, "asked": self.asked, "proposal": self.proposal, "tool_name": self.tool_name,
            "arguments": self.arguments,
            "kind": self.kind,
            "allowed_decisions": list(self.allowed), "quorum": self.quorum, "votes": sorted(self.votes),
            "created_at": self.created_at.isoformat(),
            "expires_at": self.expires_at.isoformat() if self.expires_at else None,
            "description": self.description, "decided": self.final is not None,
        }  # fmt: skip


def expires(created: datetime, after: timedelta | None) -> datetime | None:
    """When an approval created at ``created`` expires."""
    return None if after is None else created + after
