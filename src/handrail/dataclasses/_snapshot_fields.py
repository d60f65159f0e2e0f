"""Reading the fields of a snapshot dict, one checked reader per key (used by ``AgentSnapshot.from_dict``).

Every reader names its key in the :class:`~handrail.errors.SnapshotError` it raises.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, Literal, TypeVar, get_args

from handrail.core.typed_json import decode_value
from handrail.dataclasses._ledger import LedgerEntry, parse_datetime
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

_CONVERSION_ERRORS = (ConfigurationError, TypeError, KeyError, AttributeError)


def _fail(key: str, expected: str, value: Any) -> SnapshotError:
    return SnapshotError(f"Snapshot key {key!r}: expected {expected}, got {value!r:.120}")


def _dicts(value: Any, key: str, what: str, read: Callable[[dict[str, Any]], T], prefix: str = "") -> list[T]:
    """A list of ``what`` dicts, each read with ``read``; errors name the key and the index."""
    if not isinstance(value, list):
        raise _fail(key, f"a list of {what} dicts", value)
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise SnapshotError(f"Snapshot {key}[{i}]: expected a {what} dict, got {item!r:.120}")
        try:
            out.append(read(item))
        except _CONVERSION_ERRORS as exc:
            raise SnapshotError(f"Snapshot {key}[{i}]: {prefix}{exc}") from exc
    return out


def _messages(value: Any, key: str) -> list[ChatMessage]:
    return _dicts(value, key, "message", ChatMessage.from_dict, "cannot read the message: ")


def _state(value: Any, key: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(key, "a dict of state values", value)
    return {k: decode_value(v, f"{key}[{k!r}]") for k, v in value.items()}


def _counts(value: Any, key: str) -> dict[str, int]:
    if not isinstance(value, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value.values()
    ):
        raise _fail(key, "a dict of {name: int >= 0}", value)
    return dict(value)


def _break_point(value: Any, key: str) -> AgentBreakpoint:
    try:
        return AgentBreakpoint.from_dict(value)
    except _CONVERSION_ERRORS as exc:
        raise SnapshotError(f"Snapshot key {key!r}: {exc}") from exc


def _choice(choices: tuple[str, ...]) -> Callable[[Any, str], str]:
    def read(value: Any, key: str) -> str:
        if value not in choices:
            raise _fail(key, f"one of {list(choices)}", value)
        result: str = value
        return result

    return read


def _decisions(value: Any, key: str) -> list[ToolExecutionDecision]:
    return _dicts(value, key, "decision", ToolExecutionDecision.from_dict)


def _ledger(value: Any, key: str) -> dict[str, LedgerEntry]:
    if not isinstance(value, dict):
        raise _fail(key, "a dict of {tool_call_id: ledger entry}", value)
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


def _json_dict(optional: bool) -> Callable[[Any, str], Any]:
    def read(value: Any, key: str) -> Any:
        if value is None and optional:
            return None
        if not isinstance(value, dict):
            raise _fail(key, "a dict" + (" or null" if optional else ""), value)
        return value

    return read


def _optional_str(value: Any, key: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise _fail(key, "a string or null", value)
    return value


def _timestamp(value: Any, key: str) -> Any:
    try:
        return parse_datetime(value, key)
    except ConfigurationError as exc:
        raise SnapshotError(f"Snapshot key {key!r}: {exc}") from exc


_READERS: dict[str, Callable[[Any, str], Any]] = {
    "messages": _messages,
    "state": _state,
    "component_visits": _counts,
    "break_point": _break_point,
    "position": _choice(POSITIONS),
    "tool_visits": _counts,
    "tool_execution_decisions": _decisions,
    "ledger": _ledger,
    "fingerprint": _json_dict(optional=False),
    "metadata": _json_dict(optional=False),
    "status": _choice(SNAPSHOT_STATUSES),
    "continued_in": _optional_str,
    "outcome": _json_dict(optional=True),
    "timestamp": _timestamp,
}
_REQUIRED = ("messages", "state", "component_visits", "break_point", "position")


def _check_version(data: dict[str, Any]) -> int:
    if "schema_version" not in data:
        raise SnapshotError("Snapshot key 'schema_version' is missing: this is not a handrail snapshot.")
    version = data["schema_version"]
    if isinstance(version, bool) or not isinstance(version, int):
        raise _fail("schema_version", "an int", version)
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
    source = data if owned else copy.deepcopy(data)
    fields = {key: _READERS[key](value, key) for key, value in source.items() if key != "schema_version"}
    fields["schema_version"] = version
    return fields
