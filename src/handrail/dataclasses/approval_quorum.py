"""Quorum on an approval: the votes people give, and what the recorded policy asks of the arguments.

An :class:`~handrail.dataclasses.approval.Approval` needs ``quorum`` distinct principals to approve its current
arguments (1 unless a policy says more). Each decision is a :class:`Vote`, kept in ``Approval.votes`` in order:

* a **reject** decides at once (one reject is enough, whatever the quorum);
* an **approve** counts for its principal, once: the same principal approving again is a repeat, not a second
  vote;
* an **edit** replaces the arguments and counts as its editor's approval of the new ones; approvals of the old
  arguments no longer count (each vote names the digest of the arguments it approved);
* the approval is decided when the distinct principals approving the current arguments reach the quorum.

The policy's rules are recorded on the approval (``Approval.extra["policy"]``, :func:`policy_record`) when it is
created, so an edit is judged by the same rules on the new arguments (:func:`required_quorum`): a rule that
asks for more approvers on the edited arguments raises the quorum, one that would not ask at all lowers it to 1,
and a rule that cannot be evaluated on them refuses the edit.

Examples:
    >>> policy = policy_record(ask_when="amount > 100", quorum=2, quorum_when="amount > 1000")
    >>> [required_quorum(policy, {"amount": a}) for a in (50, 500, 5000)]
    [1, 1, 2]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, get_args

from handrail.dataclasses._approval_checks import Checker, iso

__all__ = [
    "DECISIONS",
    "MAX_QUORUM",
    "POLICY_KEY",
    "RULE_ERROR_KEY",
    "Decision",
    "Vote",
    "approvers_of",
    "policy_record",
    "required_quorum",
]

Decision = Literal["approve", "edit", "reject"]
DECISIONS: tuple[Decision, ...] = get_args(Decision)
"""What a person may decide, in this order."""
MAX_QUORUM = 20
"""The most approvers a call may need."""
POLICY_KEY = "policy"
"""``Approval.extra`` key of the recorded policy (:func:`policy_record`)."""
RULE_ERROR_KEY = "rule_error"
"""``Approval.extra`` key: why a rule of the policy could not judge the arguments when the approval was created
(it was asked, and needs the policy's highest quorum: fail closed)."""


@dataclass(frozen=True, slots=True)
class Vote:
    """One principal's decision on an approval (see the module docstring)."""

    principal: str
    """Who decided (the authenticated name)."""
    decision: Decision
    """``approve``, ``edit`` or ``reject``."""
    at: datetime
    """When (UTC)."""
    args_digest: str
    """The digest of the arguments this vote approved or rejected (an edit's: of the edited ones)."""
    feedback: str | None = None
    """The person's text."""
    idempotency_key: str | None = None
    """The request's ``Idempotency-Key``, if any (a retry with it is recognised)."""

    def to_dict(self) -> dict[str, Any]:
        """``{"principal", "decision", "at" (ISO 8601), "args_digest", "feedback", "idempotency_key"}``."""
        return {"principal": self.principal, "decision": self.decision, "at": iso(self.at),
                "args_digest": self.args_digest, "feedback": self.feedback,
                "idempotency_key": self.idempotency_key}  # fmt: skip

    @classmethod
    def checked(cls, value: object, checker: Checker, index: int) -> Vote:
        """A vote from a :meth:`to_dict` dict (reading) or a Vote (building), each field checked and named."""
        field = f"votes[{index}]"
        if isinstance(value, Vote):
            value = value.to_dict() | {"at": value.at}
        if not isinstance(value, dict):
            checker.fail(field, f"must be a vote object, got {type(value).__name__}", wrong_type=True)
        unknown = sorted(set(value) - {"principal", "decision", "at", "args_digest", "feedback", "idempotency_key"})
        if unknown:
            checker.fail(field, f"has unknown keys {unknown}")
        checker.text(f"{field}.principal", value.get("principal"), limit=200)
        checker.choice(f"{field}.decision", value.get("decision"), DECISIONS)
        at = checker.moment(f"{field}.at", value.get("at"))
        checker.digest(f"{field}.args_digest", value.get("args_digest"))
        checker.text(f"{field}.feedback", value.get("feedback"), optional=True, empty=True)
        checker.text(f"{field}.idempotency_key", value.get("idempotency_key"), optional=True, limit=500)
        assert at is not None
        return cls(value["principal"], value["decision"], at, value["args_digest"], value.get("feedback"),
                   value.get("idempotency_key"))  # fmt: skip


def approvers_of(votes: Iterable[Vote], args_digest: str) -> tuple[str, ...]:
    """The distinct principals whose approve or edit vote is for the arguments of ``args_digest``, in vote order."""
    found: dict[str, None] = {}
    for vote in votes:
        if vote.decision != "reject" and vote.args_digest == args_digest:
            found.setdefault(vote.principal, None)
    return tuple(found)


def policy_record(*, ask_when: str | None = None, quorum: int = 1, quorum_when: str | None = None) -> dict[str, Any]:
    """The policy as an approval records it: ``{"ask_when", "quorum", "quorum_when"}`` (JSON data)."""
    return {"ask_when": ask_when, "quorum": quorum, "quorum_when": quorum_when}


def required_quorum(policy: Mapping[str, Any], arguments: Mapping[str, Any]) -> int:
    """How many approvers the recorded ``policy`` asks for ``arguments``.

    1 when ``ask_when`` is false for them (the policy would not ask at all) or ``quorum_when`` is false; else the
    policy's ``quorum``.

    Raises:
        handrail.core._rules.RuleFailed: A rule cannot be evaluated on ``arguments``.
        ConfigurationError: The recorded policy is malformed (a rule that no longer compiles, a bad quorum).
    """
    from handrail.core._rules import compile_rule

    quorum = policy.get("quorum", 1)
    Checker("Approval", reading=False).integer("extra.policy.quorum", quorum, minimum=1)
    for key in ("ask_when", "quorum_when"):
        source = policy.get(key)
        if source is not None and not compile_rule(source, what=key).holds(arguments):
            return 1
    return min(int(quorum), MAX_QUORUM)
