"""What one decision request may do, checked before anything is written (and how a retry is recognised).

:func:`~handrail.stores._approval_decide.decide_call` runs these on the approval as read: the decision must be
allowed and may not rename the tool (:func:`check_allowed`); the run's initiator may not approve where the policy
forbids it (:func:`check_initiator`); an edit's arguments must pass the stored schema (:func:`edited_arguments`)
and the recorded policy is judged again on them (:func:`requorum`); a principal's approval counts once
(:func:`check_not_voted`). :func:`replayed` tells a retry (the same principal, decision and content, or the same
``Idempotency-Key``) from a new request.
"""

from __future__ import annotations

from typing import Any

from handrail.dataclasses.approval import Approval, Decision, Vote, args_digest
from handrail.dataclasses.approval_quorum import POLICY_KEY, required_quorum
from handrail.errors import (
    ApprovalDecisionError,
    ConfigurationError,
    IdempotencyKeyReusedError,
    PermissionDeniedError,
)
from handrail.tools._validation import unknown_parameters

__all__ = [
    "INJECTED_KEY",
    "check_allowed",
    "check_initiator",
    "check_not_voted",
    "edit_problems",
    "edited_arguments",
    "injected_values",
    "not_unicode",
    "replayed",
    "requorum",
]

INJECTED_KEY = "injected"
"""``Approval.extra`` key: the names of the arguments that come from the agent's State (shown, never edited)."""


def injected_values(approval: Approval) -> dict[str, Any]:
    names = approval.extra.get(INJECTED_KEY) or []
    return {k: approval.arguments[k] for k in names if isinstance(k, str) and k in approval.arguments}


def edit_problems(approval: Approval, arguments: Any) -> tuple[dict[str, str], ...]:
    """What is wrong with ``arguments`` as an edit of ``approval``: ``{"pointer", "message"}`` items (none: valid).

    The agent's rule: State-injected values may not change; every other key must be declared by the tool
    (:func:`~handrail.tools._validation.unknown_parameters`) and the arguments must pass the stored JSON Schema.
    """
    if not isinstance(arguments, dict):
        return ({"pointer": "", "message": f"the edited arguments must be an object, got {type(arguments).__name__}"},)
    broken = not_unicode(arguments)
    if broken is not None:  # a lone surrogate (from JSON's \ud800): no record, digest or message can hold it
        return ({"pointer": broken, "message": "this text holds a lone surrogate (\\ud800-\\udfff), which is not "
                                               "Unicode text"},)  # fmt: skip
    injected = injected_values(approval)
    problems = [
        {"pointer": f"/{k}", "message": f"{k!r} comes from the agent's State and cannot be edited"}
        for k in sorted(injected) if k in arguments and arguments[k] != injected[k]
    ]  # fmt: skip
    edited = {k: v for k, v in arguments.items() if k not in injected}
    schema = approval.arguments_schema
    unknown = unknown_parameters(approval.tool_name, schema, edited)
    if unknown is not None:
        known = schema.get("properties") or {}
        problems += [{"pointer": f"/{k}", "message": unknown} for k in sorted(edited) if k not in known]
    problems += _schema_errors(schema, edited)
    return tuple(problems)


def _schema_errors(schema: dict[str, Any], arguments: dict[str, Any]) -> list[dict[str, str]]:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
        errors = sorted(Draft202012Validator(schema).iter_errors(arguments), key=lambda e: list(e.absolute_path))
    except SchemaError as exc:
        return [{"pointer": "", "message": f"the tool's recorded JSON Schema is invalid: {exc.message}"}]
    return [{"pointer": _pointer(list(e.absolute_path)), "message": str(e.message)} for e in errors]


def _pointer(parts: list[Any]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def not_unicode(value: Any, path: tuple[Any, ...] = ()) -> str | None:
    """The JSON pointer of the first key or string in ``value`` that is not valid Unicode (a lone surrogate), or None.

    The pointer's own text has such characters escaped (a backslash, ``u`` and four hex digits), so the error
    naming it can be printed.
    """
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return _printable_pointer(path)
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            found = not_unicode(key, (*path, key)) if isinstance(key, str) else None
            found = found if found is not None else not_unicode(item, (*path, key))
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = not_unicode(item, (*path, index))
            if found is not None:
                return found
    return None


def _printable_pointer(path: tuple[Any, ...]) -> str:
    return _pointer([str(p).encode("utf-8", "backslashreplace").decode("utf-8") for p in path])


def edited_arguments(approval: Approval, decision: Decision, arguments: Any) -> dict[str, Any] | None:
    """The arguments an edit records (the State's values put back), None for another decision; or refused."""
    if decision != "edit":
        return None  # a client's arguments count only for an edit: the stored ones are what runs
    problems = edit_problems(approval, arguments)
    if problems:
        listed = "; ".join(f"{p['pointer'] or '(arguments)'}: {p['message']}" for p in problems)
        raise ApprovalDecisionError(
            f"Approval {approval.id}: the edited arguments for {approval.tool_name!r} are refused: {listed}. "
            "Nothing was recorded.",
            approval_id=approval.id, errors=problems,
        )  # fmt: skip
    return {**arguments, **injected_values(approval)}


def _same_decision(
    approval: Approval, decision: Decision, principal: str, feedback: str | None, arguments: dict[str, Any] | None
) -> bool:
    """A record without votes (written before quorums): whether its decision is this very request's."""
    if approval.decision != decision or approval.decided_by != principal or approval.status == "expired":
        return False
    if (approval.feedback or None) != (feedback or None):
        return False
    return decision != "edit" or approval.arguments == arguments


def check_allowed(approval: Approval, decision: object, tool_name: str | None) -> None:
    if tool_name is not None and tool_name != approval.tool_name:
        raise ApprovalDecisionError(
            f"Approval {approval.id} is for {approval.tool_name!r}; an edit may not rename the tool ({tool_name!r}).",
            approval_id=approval.id, errors=({"pointer": "", "message": "the tool name cannot be changed"},),
        )  # fmt: skip
    if decision not in approval.allowed_decisions:
        raise ApprovalDecisionError(
            f"Approval {approval.id} allows {', '.join(approval.allowed_decisions)}; {decision!r} is not one of them.",
            approval_id=approval.id,
        )


def check_initiator(approval: Approval, decision: Decision, principal: str) -> None:
    """Refuse the run's initiator approving or editing where the policy forbids it (separation of duties).

    Raises:
        PermissionDeniedError: ``principal`` is the recorded initiator and ``initiator_may_approve`` is False.
    """
    problem = approval.initiator_refusal(decision, principal)
    if problem is not None:
        raise PermissionDeniedError(problem, principal=principal)


def check_not_voted(approval: Approval, decision: Decision, principal: str) -> None:
    """Refuse a second approval of the same arguments by one principal (a different one: a repeat is a replay).

    Raises:
        ApprovalDecisionError: ``principal`` approved the current arguments already.
    """
    if decision != "approve" or principal not in approval.approvers:
        return
    raise ApprovalDecisionError(
        f"Approval {approval.id}: {principal} approved these arguments already; a principal counts once toward "
        f"the quorum ({len(approval.approvers)} of {approval.quorum} so far: {', '.join(approval.approvers)}). "
        "Nothing was recorded.",
        approval_id=approval.id,
    )


def requorum(approval: Approval, edited: dict[str, Any] | None) -> int | None:
    """The quorum the recorded policy asks for an edit's arguments (None: not an edit, or no policy recorded).

    Raises:
        ApprovalDecisionError: A rule of the policy cannot be evaluated on the edited arguments (``errors`` points
            at the argument the rule reads, when it reads one): they could not be judged, so they cannot run.
    """
    policy = approval.extra.get(POLICY_KEY)
    if edited is None or not isinstance(policy, dict):
        return None
    from handrail.core._rules import RuleFailed

    try:
        return required_quorum(policy, edited)
    except (RuleFailed, ConfigurationError) as exc:
        names = sorted(getattr(getattr(exc, "rule", None), "variables", ()))
        pointer = f"/{names[0]}" if len(names) == 1 else ""
        raise ApprovalDecisionError(
            f"Approval {approval.id}: the edited arguments for {approval.tool_name!r} are refused: the policy cannot "
            f"judge them ({exc}). Nothing was recorded.",
            approval_id=approval.id, errors=({"pointer": pointer, "message": str(exc)},),
        ) from None  # fmt: skip


def _vote_of(approval: Approval, decision: Decision, principal: str, feedback: str | None,
             arguments: dict[str, Any] | None, key: str | None) -> Vote | None:  # fmt: skip
    """The vote this very request gave before, if any."""
    wanted = args_digest(approval.tool_name, arguments, approval.snapshot_id) if arguments is not None else None
    for vote in reversed(approval.votes):
        if (vote.principal, vote.decision, vote.feedback or None) != (principal, decision, feedback or None):
            continue
        if decision == "edit" and vote.args_digest != wanted:
            continue
        if decision != "edit" and vote.args_digest != approval.args_digest and (key is None or vote.idempotency_key
                                                                                != key):  # fmt: skip
            continue  # a vote for arguments since edited: this is a new request, unless its key says otherwise
        return vote
    return None


def replayed(approval: Approval, decision: Decision, principal: str, feedback: str | None,
             arguments: dict[str, Any] | None, idempotency_key: str | None) -> bool:  # fmt: skip
    """Whether this request was recorded already (a retry): its vote is on the record.

    For a record written before votes existed: its decision is this request's. The same ``idempotency_key``
    with another request of the same principal is refused; a key is scoped to its principal (another principal's
    request with the same key is a request of its own, judged as any other).

    Args:
        approval: The approval as it is now.
        decision: The request's decision.
        principal: Who sends it.
        feedback: Its text.
        arguments: An edit's arguments as they would be recorded (the State's values put back); None otherwise.
        idempotency_key: Its ``Idempotency-Key``.

    Raises:
        IdempotencyKeyReusedError: The principal's key is on the record with another decision or content.
    """
    if approval.status == "expired":
        return False
    if approval.votes:
        if _vote_of(approval, decision, principal, feedback, arguments, idempotency_key) is not None:
            return True
        used = idempotency_key is not None and any(
            (v.idempotency_key, v.principal) == (idempotency_key, principal) for v in approval.votes
        )
    else:
        if approval.terminal and _same_decision(approval, decision, principal, feedback, arguments):
            return True
        used = idempotency_key is not None and (approval.idempotency_key, approval.decided_by) == (
            idempotency_key, principal
        )  # fmt: skip
    if used:
        raise IdempotencyKeyReusedError(
            f"Approval {approval.id} was given a decision with this Idempotency-Key and another decision or content "
            f"(it is {approval.status}); a key names one request.",
            approval_id=approval.id,
        )
    return False
