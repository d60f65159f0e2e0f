"""How the service store writes its records: tokens, events and runs as JSON, each read back checked.

Every store kind keeps the same JSON shapes (the SQL stores in ``data`` columns beside the columns their
queries use, a directory store in files), so the rules of reading them live here once: a record that cannot be
read is refused with a :class:`~handrail.errors.CorruptRecordError` naming the store and the record, never
half-read.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from handrail.dataclasses._approval_checks import Checker, iso
from handrail.dataclasses.approval import Approval
from handrail.dataclasses.service import EVENT_KINDS, ROLES, RUN_STATUSES, EventKind, RunRecord, ServiceEvent, TokenInfo
from handrail.errors import ConfigurationError, ConfigurationTypeError, CorruptRecordError

__all__ = [
    "RUN_CHANGES",
    "TERMINAL_RUN",
    "TOKEN_ID",
    "approval_event",
    "changed_run",
    "check_new_run",
    "event_from_dict",
    "event_to_dict",
    "run_from_dict",
    "run_to_dict",
    "token_from_dict",
    "token_hash",
    "token_to_dict",
]

TOKEN_ID = re.compile(r"tk_[0-9a-f]{16}")
"""A token id: ``tk_`` and 16 lowercase hex digits."""
RUN_CHANGES = ("status", "snapshot_id", "result", "error")
"""The fields of a run record ``update_run`` may change."""
TERMINAL_RUN = ("finished", "failed")
"""Run statuses that take no more changes."""

_APPROVAL_EVENTS: dict[str, EventKind] = {
    "created": "approval.created",
    "decided": "approval.decided",
    "voted": "approval.voted",
    "expired": "approval.expired",
    "cancelled": "approval.cancelled",
}


def token_hash(text: str) -> str:
    """``sha256:<64 hex>`` of a token's text: the only form of it a store keeps."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def token_to_dict(token: TokenInfo, secret_hash: str) -> dict[str, Any]:
    """A token's stored form: its record and the hash of its text."""
    return {
        "token_id": token.token_id, "name": token.name, "role": token.role, "tools": list(token.tools),
        "created_at": iso(token.created_at), "revoked_at": iso(token.revoked_at), "hash": secret_hash,
    }  # fmt: skip


def token_from_dict(where: str, data: object) -> tuple[TokenInfo, str]:
    """``(the token, the hash of its text)`` of a stored form (CorruptRecordError: it cannot be read)."""
    check = Checker("token", reading=True)
    try:
        if not isinstance(data, Mapping):
            raise ConfigurationError(f"a token is a JSON object, got {type(data).__name__}")
        token_id = data.get("token_id")
        if not isinstance(token_id, str) or not TOKEN_ID.fullmatch(token_id):
            raise ConfigurationError(f"token_id {token_id!r:.40} is not tk_ and 16 hex digits")
        check.choice("role", data.get("role"), ROLES)
        check.digest("hash", data.get("hash"))
        tools = check.strings("tools", data.get("tools"), limit=1000, each=200)
        created = check.moment("created_at", data.get("created_at"))
        revoked = check.moment("revoked_at", data.get("revoked_at"), optional=True)
        assert created is not None
        token = TokenInfo(token_id, data["name"], data["role"], tools, created, revoked)
        token.principal()  # the name and patterns follow the Principal rules
    except (ValueError, TypeError) as exc:  # SerializationError and ConfigurationError are ValueErrors
        raise CorruptRecordError(f"{where}: a token cannot be read: {exc}") from exc
    return token, str(data["hash"])


def event_to_dict(event: ServiceEvent) -> dict[str, Any]:
    """An event's stored form."""
    return {"id": event.id, "kind": event.kind, "at": iso(event.at), "data": event.data}


def event_from_dict(where: str, data: object) -> ServiceEvent:
    """The event of a stored form (CorruptRecordError: it cannot be read)."""
    check = Checker("event", reading=True)
    try:
        if not isinstance(data, Mapping):
            raise ConfigurationError(f"an event is a JSON object, got {type(data).__name__}")
        check.integer("id", data.get("id"), minimum=1)
        check.choice("kind", data.get("kind"), EVENT_KINDS)
        at = check.moment("at", data.get("at"))
        payload = check.json_data("data", data.get("data"))
    except (ValueError, TypeError) as exc:
        raise CorruptRecordError(f"{where}: an event cannot be read: {exc}") from exc
    assert at is not None
    return ServiceEvent(data["id"], data["kind"], at, payload)


def approval_event(kind: str, approval: Approval) -> tuple[EventKind, dict[str, Any]]:
    """The event kind and data of an audit entry ``kind`` (created, decided, expired, cancelled) of ``approval``."""
    data: dict[str, Any] = {
        "approval_id": approval.id, "run_id": approval.run_id, "tool_name": approval.tool_name,
        "agent_name": approval.agent_name, "status": approval.status, "version": approval.version,
    }  # fmt: skip
    if approval.decided_by is not None:
        data["decided_by"] = approval.decided_by
    if approval.decision is not None:
        data["decision"] = approval.decision
    if approval.backend != "local":  # a Temporal run's: no resumer looks at it
        data["backend"] = approval.backend
    return _APPROVAL_EVENTS[kind], data


def run_to_dict(run: RunRecord) -> dict[str, Any]:
    """A run record's stored form."""
    return {
        "run_id": run.run_id, "agent_name": run.agent_name, "status": run.status,
        "created_at": iso(run.created_at), "updated_at": iso(run.updated_at), "version": run.version,
        "initiator": run.initiator, "input": run.input, "snapshot_id": run.snapshot_id, "result": run.result,
        "error": run.error,
    }  # fmt: skip


def _run_fields(check: Checker, data: Mapping[str, Any]) -> RunRecord:
    from handrail.stores._snapshot_common import check_snapshot_id

    check_snapshot_id(data.get("run_id"))
    check.text("agent_name", data.get("agent_name"), limit=200)
    check.choice("status", data.get("status"), RUN_STATUSES)
    created = check.moment("created_at", data.get("created_at"))
    updated = check.moment("updated_at", data.get("updated_at"))
    check.integer("version", data.get("version"), minimum=1)
    check.text("initiator", data.get("initiator"), optional=True, limit=200)
    inputs = check.json_data("input", data.get("input"))
    check.text("snapshot_id", data.get("snapshot_id"), optional=True, limit=200)
    result = None if data.get("result") is None else check.json_data("result", data.get("result"))
    check.text("error", data.get("error"), optional=True, empty=True, limit=10_000)
    assert created is not None and updated is not None
    return RunRecord(
        data["run_id"], data["agent_name"], data["status"], created, updated, version=data["version"],
        initiator=data.get("initiator"), input=inputs, snapshot_id=data.get("snapshot_id"), result=result,
        error=data.get("error"),
    )  # fmt: skip


def run_from_dict(where: str, data: object) -> RunRecord:
    """The run record of a stored form (CorruptRecordError: it cannot be read)."""
    try:
        if not isinstance(data, Mapping):
            raise ConfigurationError(f"a run record is a JSON object, got {type(data).__name__}")
        return _run_fields(Checker("run", reading=True), data)
    except (ValueError, TypeError) as exc:
        raise CorruptRecordError(f"{where}: a run record cannot be read: {exc}") from exc


def check_new_run(record: object) -> RunRecord:
    """A new run record, checked as a stored one would be (ConfigurationError / TypeError naming the field)."""
    if not isinstance(record, RunRecord):
        raise ConfigurationTypeError(f"create_run takes a RunRecord, got {type(record).__name__}.")
    return _run_fields(Checker("RunRecord", reading=False), run_to_dict(record) | _raw_times(record))


def _raw_times(record: RunRecord) -> dict[str, Any]:
    return {"created_at": record.created_at, "updated_at": record.updated_at}


def changed_run(current: RunRecord, at: datetime, changes: Mapping[str, Any]) -> RunRecord:
    """``current`` with ``changes`` applied, ``version + 1`` and ``updated_at`` = ``at``, every field checked.

    Raises:
        ConfigurationError / ConfigurationTypeError: A field ``update_run`` does not change, or a bad value.
    """
    unknown = sorted(set(changes) - set(RUN_CHANGES))
    if unknown:
        raise ConfigurationError(
            f"update_run changes {', '.join(RUN_CHANGES)} only; got {', '.join(map(repr, unknown))}."
        )
    updated = replace(current, **dict(changes), version=current.version + 1, updated_at=at)
    return check_new_run(updated)
