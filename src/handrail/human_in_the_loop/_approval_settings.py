"""What a pausing strategy tells the approval record of a held call: its settings, and its team policy.

:func:`approval_settings` reads a strategy's ``description``, ``expires_after``, ``allowed_decisions``,
``on_expiry``, ``quorum``, ``quorum_when`` and ``initiator_may_approve`` (each from the strategy, else from its
``confirmation_policy``), checked by :func:`check_approval_settings`: an invalid value raises, it never loosens
the gate. :func:`team_policy` is what the record keeps of the policy's rules, so an edit can be judged by them
again (:mod:`handrail.dataclasses.approval_quorum`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from handrail.dataclasses.approval import DECISIONS, Decision, ExpiryAction
from handrail.dataclasses.approval_quorum import MAX_QUORUM, policy_record, required_quorum
from handrail.errors import ConfigurationError, ConfigurationTypeError

__all__ = [
    "MAX_EXPIRES_AFTER",
    "ApprovalSettings",
    "TeamVerdict",
    "approval_settings",
    "argument_rules",
    "check_approval_settings",
    "pause_needed",
    "team_policy",
]

MAX_EXPIRES_AFTER = timedelta(days=366)
"""The longest ``expires_after``: a year (leap or not). Longer is refused when the strategy is built (far longer
would not even fit a ``datetime`` from now); an approval that should wait for ever takes None."""
_NAMES = ("description", "expires_after", "allowed_decisions", "on_expiry", "quorum", "quorum_when",
          "initiator_may_approve")  # fmt: skip


@dataclass(frozen=True, slots=True)
class ApprovalSettings:
    """What the approval record of a held call says besides the call: read by :func:`approval_settings`."""

    description: str = ""
    """The policy's text for the person (markdown); empty when it has none."""
    expires_after: timedelta | None = None
    """How long the approval stays open (from its creation); None: it never expires."""
    allowed_decisions: tuple[Decision, ...] = DECISIONS
    """What the person may decide (a non-empty subset of approve / edit / reject)."""
    on_expiry: ExpiryAction = "reject"
    """What an expiry decides: ``reject`` (fail closed, the default) or ``approve`` (only when set explicitly)."""
    quorum: int = 1
    """How many distinct people must approve (1 to 20); one reject always decides."""
    quorum_when: str | None = None
    """A rule over the arguments: the quorum applies only where it holds (elsewhere one approver is enough)."""
    initiator_may_approve: bool = True
    """False: the run's initiator may not approve (or edit) its calls; somebody else must."""


def _check_decisions(allowed_decisions: object, owner: str) -> tuple[Decision, ...]:
    if allowed_decisions is None:
        return DECISIONS
    if (
        isinstance(allowed_decisions, str)
        or not isinstance(allowed_decisions, tuple | list | frozenset | set)
        or not allowed_decisions
        or any(d not in DECISIONS for d in allowed_decisions)
    ):
        raise ConfigurationError(
            f"{owner}: allowed_decisions must be a non-empty collection of {', '.join(DECISIONS)}, "
            f"got {allowed_decisions!r:.80} (an invalid setting never opens the gate: it is refused)."
        )
    return tuple(d for d in DECISIONS if d in allowed_decisions)


def _check_expiry(expires_after: object, on_expiry: object, chosen: tuple[Decision, ...], owner: str) -> ExpiryAction:
    if expires_after is not None and (not isinstance(expires_after, timedelta) or expires_after <= timedelta(0)):
        raise ConfigurationError(f"{owner}: expires_after must be a positive timedelta or None, got {expires_after!r}.")
    if expires_after is not None and expires_after > MAX_EXPIRES_AFTER:
        raise ConfigurationError(
            f"{owner}: expires_after is at most 366 days, got {expires_after!r:.80} (for an approval that should "
            "stay open longer, use None: it never expires)."
        )
    if on_expiry not in (None, "reject", "approve"):
        raise ConfigurationError(
            f"{owner}: on_expiry must be 'reject' or 'approve', got {on_expiry!r:.80} (an invalid setting never "
            "opens the gate: it is refused)."
        )
    action: ExpiryAction = "approve" if on_expiry == "approve" else "reject"
    if action == "approve" and "approve" not in chosen:
        raise ConfigurationError(
            f"{owner}: on_expiry='approve' needs 'approve' among allowed_decisions ({', '.join(chosen)}): an expiry "
            "may not decide what a person could not."
        )
    return action


def _check_team(quorum: object, quorum_when: object, initiator_may_approve: object, owner: str) -> tuple[int, bool]:
    from handrail.core._rules import compile_rule

    quorum = 1 if quorum is None else quorum
    if type(quorum) is not int or not 1 <= quorum <= MAX_QUORUM:
        raise ConfigurationError(
            f"{owner}: quorum must be an int from 1 to {MAX_QUORUM} (how many distinct people must approve), got "
            f"{quorum!r:.80}."
        )
    if quorum_when is not None:
        if quorum == 1:
            raise ConfigurationError(f"{owner}: quorum_when applies a quorum above 1; set quorum (e.g. quorum=2).")
        try:
            compile_rule(quorum_when, what="quorum_when")
        except (ConfigurationError, ConfigurationTypeError) as exc:
            raise type(exc)(f"{owner}: {exc}") from None
    may = True if initiator_may_approve is None else initiator_may_approve
    if type(may) is not bool:
        raise ConfigurationTypeError(f"{owner}: initiator_may_approve must be True or False, got {may!r:.80}.")
    return quorum, may


def check_approval_settings(
    description: object,
    expires_after: object,
    allowed_decisions: object,
    owner: str,
    on_expiry: object = None,
    *,
    quorum: object = None,
    quorum_when: object = None,
    initiator_may_approve: object = None,
) -> ApprovalSettings:
    """The settings, checked (ConfigurationError / ConfigurationTypeError naming ``owner`` and the field).

    ``on_expiry`` None is ``reject``; ``approve`` is refused unless ``approve`` is an allowed decision (an expiry
    may not decide what a person could not), and where more than one approver is needed (nor what two must).
    ``quorum_when`` is a rule (:mod:`handrail.core._rules`), refused unless it compiles.
    """
    if description is not None and not isinstance(description, str):
        raise ConfigurationTypeError(f"{owner}: description must be a str or None, got {type(description).__name__}.")
    chosen = _check_decisions(allowed_decisions, owner)
    action = _check_expiry(expires_after, on_expiry, chosen, owner)
    needed, may = _check_team(quorum, quorum_when, initiator_may_approve, owner)
    if action == "approve" and needed > 1:
        raise ConfigurationError(
            f"{owner}: on_expiry='approve' with quorum={needed}: an expiry may not decide what {needed} people must "
            "(use on_expiry='reject')."
        )
    if needed > 1 and "approve" not in chosen and "edit" not in chosen:
        raise ConfigurationError(f"{owner}: quorum={needed} needs approve or edit among allowed_decisions.")
    rule = quorum_when if isinstance(quorum_when, str) else None  # checked by _check_team
    return ApprovalSettings(description or "", expires_after, chosen, action, needed,  # type: ignore[arg-type]
                            rule, may)  # fmt: skip


def approval_settings(strategy: object) -> ApprovalSettings:
    """A pausing strategy's approval settings (see the module docstring).

    Each attribute is optional (a strategy without one gets the default); when the strategy has none, those of
    its ``confirmation_policy`` are used, if it has one. An invalid value raises, never loosens the gate.
    """
    sources = [strategy, getattr(strategy, "confirmation_policy", None)]
    values: dict[str, Any] = {}
    for name in _NAMES:
        for source in sources:
            value = getattr(source, name, None) if source is not None else None
            if value is not None:
                values[name] = value
                break
    return check_approval_settings(
        values.get("description"), values.get("expires_after"), values.get("allowed_decisions"),
        type(strategy).__name__, values.get("on_expiry"), quorum=values.get("quorum"),
        quorum_when=values.get("quorum_when"), initiator_may_approve=values.get("initiator_may_approve"),
    )  # fmt: skip


def argument_rules(strategy: object) -> dict[str, str]:
    """The rules over arguments a strategy evaluates: ``{"ask_when": ..., "quorum_when": ...}`` (those it has).

    ``ask_when`` is the rule of its ``confirmation_policy`` (an
    :class:`~handrail.human_in_the_loop.policies.AskWhenPolicy`), ``quorum_when`` the strategy's own.
    """
    from handrail.human_in_the_loop.policies import AskWhenPolicy

    rules: dict[str, str] = {}
    policy = getattr(strategy, "confirmation_policy", None)
    if isinstance(policy, AskWhenPolicy):
        rules["ask_when"] = policy.rule
    quorum_when = getattr(strategy, "quorum_when", None)
    if isinstance(quorum_when, str):
        rules["quorum_when"] = quorum_when
    return rules


def pause_needed(strategy: Any, tool_name: str, tool_description: str, tool_params: dict[str, Any]) -> bool:
    """Whether a pausing strategy holds this call: its ``confirmation_policy`` says to ask (no policy: always).

    An :class:`~handrail.human_in_the_loop.policies.AskWhenPolicy` whose rule cannot be evaluated on the arguments
    says to ask (and warns): a rule that cannot judge a call never lets it run unasked.
    """
    policy = getattr(strategy, "confirmation_policy", None)
    if policy is None:
        return True
    return bool(policy.should_ask(tool_name, tool_description, tool_params))


@dataclass(frozen=True, slots=True)
class TeamVerdict:
    """What the team policy makes of one held call's arguments (:func:`team_policy`)."""

    policy: dict[str, Any] | None
    """The policy as the approval records it (``extra["policy"]``); None when it has no rule and no quorum."""
    quorum: int
    """How many approvers the call needs."""
    error: str | None = None
    """Why a rule could not judge the arguments (then the quorum is the policy's highest: fail closed)."""


def team_policy(strategy: object, arguments: Mapping[str, Any]) -> TeamVerdict:
    """The recorded policy of ``strategy`` and the quorum it asks for ``arguments`` (the effective ones)."""
    from handrail.core._rules import RuleFailed

    settings = approval_settings(strategy)
    rules = argument_rules(strategy)
    if not rules and settings.quorum == 1:
        return TeamVerdict(None, 1)
    record = policy_record(ask_when=rules.get("ask_when"), quorum=settings.quorum, quorum_when=settings.quorum_when)
    try:
        needed = required_quorum(record, arguments)
    except RuleFailed as exc:
        return TeamVerdict(record, settings.quorum, str(exc))
    return TeamVerdict(record, needed)
