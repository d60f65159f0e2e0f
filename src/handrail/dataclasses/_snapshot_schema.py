"""The snapshot format as one schema, checked field by field whenever a snapshot is read.

A snapshot file, a store record and the dict given to ``AgentSnapshot.from_dict`` all pass
:func:`check_snapshot_data` before anything is built from them, so a damaged or hand-edited snapshot is refused
on load with the path of the first wrong field, never half-read to fail later::

    messages[0].meta: expected an object, got a list
    messages[2].content[0].tool_call.id: expected a string or null, got an object
    ledger['c1'].decision.execute: expected a boolean, got a string ('yes')
    state.tool_call_counts['search']: expected an integer >= 0, got a string ('3')

The schema is written once below as nested checkers (:func:`obj`, :func:`list_of`, :func:`map_of`...); a checker
raises :class:`_Mismatch` and each container on the way out adds its segment of the path, so a valid snapshot
builds no path strings at all (a snapshot is read on every resume). Free JSON fields (``meta``, arguments,
``fingerprint``...) are checked for being JSON data only when the data did not come from ``json.loads``.
State values are typed JSON (:mod:`handrail.core._typed_json`): the reserved keys are checked after decoding
(:func:`check_reserved_state`).
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Mapping
from typing import Any

from handrail.core._typed_json import check_json
from handrail.dataclasses._ledger import LEDGER_STATUSES
from handrail.dataclasses._snapshot_quick import quick_message_ok
from handrail.errors import SerializationError, SnapshotError

__all__ = ["check_reserved_state", "check_snapshot_data", "snapshot_schema"]

Check = Callable[[Any], None]
"""A checker: returns for a valid value, raises :class:`_Mismatch` otherwise."""

_ROLES = ("user", "system", "assistant", "tool")


class _Mismatch(Exception):
    """A value that does not fit the schema; ``segments`` collects the path, innermost first."""

    def __init__(self, reason: str, expected: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.expected = expected
        """What was expected, when the value itself was of the wrong kind (``nullable`` adds "or null")."""
        self.segments: list[str] = []

    def path(self) -> str:
        return "".join(reversed(self.segments)).lstrip(".")


_KINDS: dict[type, str] = {
    dict: "an object", list: "a list", str: "a string", int: "an integer", float: "a number", bool: "a boolean",
    type(None): "null",
}  # fmt: skip


def _kind(value: Any) -> str:
    """How the value looks in JSON terms, with a short repr for scalars: ``a string ('3')``."""
    name = _KINDS.get(type(value))
    if name is None:
        return f"a Python {type(value).__name__}"
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return f"{name} ({value!r:.60})"
    return name


def _expected(what: str, value: Any) -> _Mismatch:
    return _Mismatch(f"expected {what}, got {_kind(value)}", what)


# -- checkers -------------------------------------------------------------------------------------------


def _anything(value: Any) -> None:
    """Any value (typed JSON, checked where it is decoded)."""


def _string(value: Any) -> None:
    if not isinstance(value, str):
        raise _expected("a string", value)


def _optional_string(value: Any) -> None:
    if value is not None and not isinstance(value, str):
        raise _expected("a string or null", value)


def _boolean(value: Any) -> None:
    if value is not True and value is not False:
        raise _expected("a boolean", value)


def _count(value: Any) -> None:
    if type(value) is not int or value < 0:
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return  # an int subclass from Python data
        raise _expected("an integer >= 0", value)


def _datetime(value: Any) -> None:
    if isinstance(value, str):
        try:
            dt.datetime.fromisoformat(value)
            return
        except ValueError:
            pass
    raise _expected("an ISO 8601 datetime string", value)


def one_of(*choices: str) -> Check:
    """One of the given strings."""
    allowed = frozenset(choices)

    def check(value: Any) -> None:
        if not isinstance(value, str) or value not in allowed:
            raise _expected(f"one of {list(choices)}", value)

    return check


def nullable(inner: Check) -> Check:
    """null, or what ``inner`` accepts."""

    def check(value: Any) -> None:
        if value is None:
            return
        try:
            inner(value)
        except _Mismatch as exc:
            if exc.expected is not None and not exc.segments:
                raise _expected(f"{exc.expected} or null", value) from None
            raise

    return check


def json_object(deep: bool) -> Check:
    """An object of free JSON data (checked to be JSON data when ``deep``)."""

    def check(value: Any) -> None:
        if not isinstance(value, dict):
            raise _expected("an object", value)
        if deep:
            _json(value)

    return check


def _json(value: Any) -> None:
    try:
        check_json(value, "")
    except SerializationError as exc:
        raise _Mismatch(str(exc).lstrip(": ").rstrip(".")) from None


def list_of(item: Check) -> Check:
    """A list whose items ``item`` accepts; the path gets ``[i]``."""

    def check(value: Any) -> None:
        if not isinstance(value, list):
            raise _expected("a list", value)
        i = 0
        try:
            for i, element in enumerate(value):  # noqa: B007 - ``i`` names the item that failed
                item(element)
        except _Mismatch as exc:
            exc.segments.append(f"[{i}]")
            raise

    return check


def map_of(item: Check) -> Check:
    """An object with string keys whose values ``item`` accepts; the path gets ``[key]``."""

    def check(value: Any) -> None:
        if not isinstance(value, dict):
            raise _expected("an object", value)
        key: Any = None
        try:
            for key, element in value.items():
                if not isinstance(key, str):
                    raise _Mismatch(f"keys must be strings, got {_kind(key)}")
                item(element)
        except _Mismatch as exc:
            if isinstance(key, str):
                exc.segments.append(f"[{key!r:.80}]")
            raise

    return check


def obj(required: Mapping[str, Check], optional: Mapping[str, Check] | None = None, *, closed: bool = True) -> Check:
    """An object with these keys (unknown keys refused when ``closed``); the path gets ``.key``."""
    fields = {**required, **(optional or {})}
    needed, allowed = frozenset(required), frozenset(fields)
    known = sorted(fields)

    def check(value: Any) -> None:
        if not isinstance(value, dict):
            raise _expected("an object", value)
        keys = value.keys()
        if not needed <= keys:
            raise _Mismatch(f"the key {next(k for k in required if k not in keys)!r} is missing")
        if closed and not keys <= allowed:
            raise _Mismatch(f"unknown key {min(map(str, keys - allowed))!r:.80}; expected some of {known}")
        key = ""
        try:
            for key, element in value.items():
                field = fields.get(key)
                if field is not None:
                    field(element)
        except _Mismatch as exc:
            exc.segments.append(f".{key}")
            raise

    return check


def either(when_str: Check, otherwise: Check) -> Check:
    """``when_str`` for a string, else ``otherwise`` (e.g. a message's content: text, or a list of parts)."""

    def check(value: Any) -> None:
        (when_str if isinstance(value, str) else otherwise)(value)

    return check


def tagged(parts: Mapping[str, Check]) -> Check:
    """An object holding exactly one of the keys of ``parts`` (a content part: text, tool call, or result)."""
    names = sorted(parts)

    def check(value: Any) -> None:
        if not isinstance(value, dict):
            raise _expected(f"an object with one of the keys {names}", value)
        if len(value) != 1:
            raise _Mismatch(f"expected exactly one of the keys {names}, got {sorted(map(str, value))}")
        ((key, element),) = value.items()
        field = parts.get(key)
        if field is None:
            raise _Mismatch(f"unknown content part {key!r:.80}; expected one of {names}")
        try:
            field(element)
        except _Mismatch as exc:
            exc.segments.append(f".{key}")
            raise

    return check


def _quick_first(message: Check) -> Check:
    """``message``, with :func:`~handrail.dataclasses._snapshot_quick.quick_message_ok` first (JSON text only).

    Most messages of a long history have one of a few shapes the quick check accepts at once; the full check
    (the same verdict, slower) takes the rest and names what is wrong.
    """

    def check(value: Any) -> None:
        if not quick_message_ok(value):
            message(value)

    return check


# -- the schema -----------------------------------------------------------------------------------------


@functools.cache
def snapshot_schema(deep: bool) -> dict[str, Check]:
    """The checker of every top-level key of a snapshot (``schema_version`` is checked apart).

    Args:
        deep: Check free JSON fields for being JSON data (for Python data; ``json.loads`` output always is).
    """
    from handrail.dataclasses._snapshot_fields import POSITIONS, SNAPSHOT_STATUSES  # (it imports this module)

    free = json_object(deep)
    tool_call = obj({"tool_name": _string, "arguments": either(_string, free)},
                    {"id": _optional_string, "extra": nullable(free)})  # fmt: skip
    detail = nullable(one_of("auto", "high", "low"))
    image_keys = {"mime_type": _optional_string, "detail": detail, "meta": nullable(free), "validation": _boolean}
    image = obj({"base64_image": _string}, image_keys)
    result_parts = list_of(tagged({"text": _string, "image": image}))  # Haystack 2.23's content parts
    result = obj({"result": either(_string, result_parts), "origin": tool_call, "error": _boolean})
    reasoning = obj({"reasoning_text": _string}, {"extra": nullable(free)})
    part = tagged({"text": _string, "tool_call": tool_call, "tool_call_result": result, "image": image,
                   "reasoning": reasoning})  # fmt: skip
    message = obj({"role": one_of(*_ROLES), "content": either(_string, list_of(part))},
                  {"meta": nullable(free), "name": _optional_string})  # fmt: skip
    if not deep:
        message = _quick_first(message)
    decision = obj({"tool_name": _string, "execute": _boolean},
                   {"tool_call_id": _optional_string, "feedback": _optional_string,
                    "final_tool_params": nullable(free), "decided_by": _optional_string})  # fmt: skip
    # A result handrail wrote is {"text", "error"[, "value"]}; LedgerEntry takes any dict, so only types are checked.
    recorded = obj({}, {"text": _optional_string, "error": _boolean, "value": _anything}, closed=False)
    entry = obj({"tool_call_id": _string, "tool_name": _string, "status": one_of(*LEDGER_STATUSES), "arguments": free},
                {"result": nullable(recorded), "decision": nullable(decision), "decided_by": _optional_string,
                 "decided_at": nullable(_datetime), "updated_at": _datetime})  # fmt: skip
    inner_break = obj(
        {"component_name": one_of(*POSITIONS)},
        {"visit_count": _count, "snapshot_file_path": _optional_string, "tool_name": _optional_string},
    )
    run = obj({}, {"chat_message_store_kwargs": nullable(free), "memory_store_kwargs": nullable(free),
                   "new_from": nullable(_count)}, closed=False)  # fmt: skip
    return {
        "messages": list_of(message),
        "state": map_of(_anything),  # typed JSON, decoded (and its reserved keys checked) by the reader
        "component_visits": map_of(_count),
        "break_point": obj({"agent_name": _string, "break_point": inner_break}),
        "position": one_of(*POSITIONS),
        "tool_visits": map_of(_count),
        "tool_execution_decisions": list_of(decision),
        "ledger": map_of(entry),
        "fingerprint": free,
        "metadata": obj({}, {"agent_file": nullable(_string), "run": nullable(run)}, closed=False),
        "status": one_of(*SNAPSHOT_STATUSES),
        "continued_in": _optional_string,
        "outcome": nullable(free),
        "timestamp": _datetime,
    }


def _stop_reason(value: Any) -> None:
    if value is not None and not isinstance(value, str | bool):
        raise _expected("a string, a boolean or null", value)


_RESERVED: dict[str, Check] = {
    "step_count": _count,
    "token_usage": map_of(_anything),
    "tool_call_counts": map_of(_count),
    "exit_reason": _optional_string,
    "stop_run": _stop_reason,
    "continue_run": _boolean,
}


def _raise(exc: _Mismatch, prefix: str) -> SnapshotError:
    return SnapshotError(f"Snapshot {prefix}{exc.path()}: {exc.reason}.")


def check_snapshot_data(data: dict[str, Any], *, deep: bool) -> None:
    """Check every key of a snapshot dict against the schema (unknown and missing keys are checked apart).

    Args:
        data: The snapshot dict (``schema_version`` and keys the schema does not know are skipped).
        deep: See :func:`snapshot_schema`.

    Raises:
        SnapshotError: ``Snapshot <path>: expected <what>, got <what it is>.``
    """
    schema = snapshot_schema(deep)
    for key, value in data.items():
        check = schema.get(key)
        if check is None:
            continue
        try:
            check(value)
        except _Mismatch as exc:
            exc.segments.append(key)
            raise _raise(exc, "") from None


def check_ledger_entries(data: Any) -> None:
    """Check one ledger change a store keeps beside its record: ``{tool_call_id: entry}`` as the ledger holds them.

    Raises:
        SnapshotError: ``Snapshot ledger['c1'].status: ...``, or for anything but an object of entries.
    """
    try:
        snapshot_schema(False)["ledger"](data)
    except _Mismatch as exc:
        exc.segments.append("ledger")
        raise _raise(exc, "") from None


def check_reserved_state(state: Mapping[str, Any]) -> None:
    """Check the decoded values of the reserved State keys present (step_count, tool_call_counts...).

    Raises:
        SnapshotError: ``Snapshot state.tool_call_counts['search']: expected an integer >= 0, got ...``
    """
    for key, check in _RESERVED.items():
        if key in state:
            try:
                check(state[key])
            except _Mismatch as exc:
                exc.segments.append(key)
                raise _raise(exc, "state.") from None
