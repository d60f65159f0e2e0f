"""Reading the fields of a snapshot dict into ``AgentSnapshot`` arguments (used by ``AgentSnapshot.from_dict``).

The dict is first checked against the snapshot schema (:mod:`handrail.dataclasses._snapshot_schema`), every
field's type with its path; the readers then build the objects. Every error is a
:class:`~handrail.errors.SnapshotError` naming the field.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, Literal, TypeVar, get_args

from handrail.core._typed_json import decode_value
from handrail.dataclasses._ledger import LedgerEntry, parse_datetime
from handrail.dataclasses._snapshot_schema import check_reserved_state, check_snapshot_data
from handrail.dataclasses.breakpoints import AgentBreakpoint
from handrail.dataclasses.chat_message import ChatMessage
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.errors import ConfigurationError, SnapshotError

T = TypeVar("T")

__all__ = [
    "POSITIONS",
    "SNAPSHOT_SCHEMA_VERSION",
    "SNAPSHOT_STATUSES",
    "Position",
    "SnapshotStatus",
    "read_snapshot_fields",
]

SNAPSHOT_SCHEMA_VERSION = 1
"""The snapshot format this handrail writes (and the newest it reads)."""
_KNOWN_VERSIONS = frozenset({1})

Position = Literal["chat_generator", "tool_invoker"]
POSITIONS: tuple[str, ...] = get_args(Position)
SnapshotStatus = Literal["paused", "running", "done", "resumed"]
SNAPSHOT_STATUSES: tuple[str, ...] = get_args(SnapshotStatus)

# After the schema check these are not expected; a reader that still hits one refuses the snapshot all the same.
_CONVERSION_ERRORS = (ConfigurationError, TypeError, ValueError, KeyError, AttributeError)


def _fail(key: str, expected: str, value: Any) -> SnapshotError:
    return SnapshotError(f"Snapshot {key}: expected {expected}, got {value!r:.120}.")


def _each(value: list[Any], key: str, read: Callable[[dict[str, Any]], T]) -> list[T]:
    """``read`` of each item of a checked list; an error names the key and the index."""
    out = []
    for i, item in enumerate(value):
        try:
            out.append(read(item))
        except _CONVERSION_ERRORS as exc:
            raise SnapshotError(f"Snapshot {key}[{i}]: {exc}") from exc
    return out


def _messages(value: Any, key: str) -> list[ChatMessage]:
    return _each(value, key, ChatMessage.from_dict)


def _state(value: Any, key: str) -> dict[str, Any]:
    state = {k: decode_value(v, f"{key}[{k!r}]") for k, v in value.items()}
    check_reserved_state(state)
    return state


def _counts(value: Any, key: str) -> dict[str, int]:
    return dict(value)


def _break_point(value: Any, key: str) -> AgentBreakpoint:
    try:
        return AgentBreakpoint.from_dict(value)
    except _CONVERSION_ERRORS as exc:
        raise SnapshotError(f"Snapshot {key}: {exc}") from exc


def _as_is(value: Any, key: str) -> Any:
    return value


def _decisions(value: Any, key: str) -> list[ToolExecutionDecision]:
    return _each(value, key, ToolExecutionDecision.from_dict)


def _ledger(value: Any, key: str) -> dict[str, LedgerEntry]:
    ledger = {}
    for call_id, item in value.items():
        try:
            entry = LedgerEntry.from_dict(item)
        except _CONVERSION_ERRORS as exc:
            raise SnapshotError(f"Snapshot {key}[{call_id!r}]: {exc}") from exc
        if entry.tool_call_id != call_id:
            raise SnapshotError(f"Snapshot {key}[{call_id!r}]: the entry is for the call {entry.tool_call_id!r}.")
        ledger[call_id] = entry
    return ledger


def _timestamp(value: Any, key: str) -> Any:
    try:
        return parse_datetime(value, key)
    except ConfigurationError as exc:
        raise SnapshotError(f"Snapshot {key}: {exc}") from exc


_READERS: dict[str, Callable[[Any, str], Any]] = {
    "messages": _messages,
    "state": _state,
    "component_visits": _counts,
    "break_point": _break_point,
    "position": _as_is,
    "tool_visits": _counts,
    "tool_execution_decisions": _decisions,
    "ledger": _ledger,
    "fingerprint": _as_is,
    "metadata": _as_is,
    "status": _as_is,
    "continued_in": _as_is,
    "outcome": _as_is,
    "timestamp": _timestamp,
}
_REQUIRED = ("messages", "state", "component_visits", "break_point", "position")


def _check_version(data: dict[str, Any]) -> int:
    if "schema_version" not in data:
        raise SnapshotError("Snapshot key 'schema_version' is missing: this is not a handrail snapshot.")
    version = data["schema_version"]
    if isinstance(version, bool) or not isinstance(version, int):
        raise _fail("schema_version", "an integer", version)
    if version > SNAPSHOT_SCHEMA_VERSION:
        raise SnapshotError(
            f"Snapshot schema version {version} was written by a newer handrail; this one reads versions up to "
            f"{SNAPSHOT_SCHEMA_VERSION}. Upgrade handrail to load it."
        )
    if version not in _KNOWN_VERSIONS:
        raise SnapshotError(
            f"Snapshot schema version {version} is unknown; this handrail reads versions {sorted(_KNOWN_VERSIONS)}."
        )
    return version


def read_snapshot_fields(data: Any, *, owned: bool = False) -> dict[str, Any]:
    """Check a snapshot dict and return ``AgentSnapshot`` keyword arguments.

    Args:
        data: The dict :meth:`AgentSnapshot.to_dict` wrote (or ``json.loads`` read back).
        owned: True when nothing else holds ``data`` (fresh from ``json.loads``): it is used without a copy.
            Otherwise it is deep-copied first, so it is neither modified nor shared.

    Raises:
        SnapshotError: Naming the key for a missing, unknown or invalid key, or an unknown schema version.
    """
    if not isinstance(data, dict):
        raise SnapshotError(f"A snapshot must be a JSON object (dict), got {type(data).__name__}.")
    version = _check_version(data)
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        raise SnapshotError(f"Snapshot keys {missing} are missing.")
    unknown = sorted(set(data) - {*_READERS, "schema_version"})
    if unknown:
        raise SnapshotError(f"Snapshot keys {unknown} are unknown to schema version {version}.")
    check_snapshot_data(data, deep=not owned)
    source = data if owned else copy.deepcopy(data)
    fields = {key: _READERS[key](value, key) for key, value in source.items() if key != "schema_version"}
    fields["schema_version"] = version
    return fields
