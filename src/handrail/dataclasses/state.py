"""The Agent's State: typed values shared between the loop, tools and hooks.

A state schema is ``{key: {"type": python_type, "handler": callable}}``; the handler is
optional (lists merge through :func:`merge_lists`, other types are replaced through
:func:`replace_values`). ``messages`` and the reserved keys (:data:`RESERVED_KEYS`) are
always present.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import decimal
import enum
import fractions
import pathlib
import typing
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from handrail.core.serialization import (
    deserialize_callable,
    deserialize_type,
    file_safe,
    serialize_callable,
    serialize_type,
)
from handrail.dataclasses.chat_message import ChatMessage
from handrail.errors import ConfigurationTypeError, StateError

__all__ = ["RESERVED_KEYS", "State", "merge_lists", "replace_values", "validate_state_schema"]

Handler = Callable[[Any, Any], Any]

RESERVED_KEYS: tuple[str, ...] = (
    "step_count",
    "token_usage",
    "tool_call_counts",
    "exit_reason",
    "stop_run",
    "continue_run",
)
"""Keys the Agent keeps in every State; a user schema may not define them."""


@file_safe
def merge_lists(current: Any, new: Any) -> list[Any]:
    """Concatenate two values as lists (``None`` counts as ``[]``, a scalar as ``[x]``).

    Args:
        current: The value in State now.
        new: The value being set.

    Returns:
        A new list: ``current`` items followed by ``new`` items.
    """
    left = [] if current is None else current if isinstance(current, list) else [current]
    right = [] if new is None else new if isinstance(new, list) else [new]
    return [*left, *right]


@file_safe
def replace_values(current: Any, new: Any) -> Any:
    """Return ``new`` (the default handler for every non-list type)."""
    return new


def _is_list_type(tp: Any) -> bool:
    return tp is list or typing.get_origin(tp) is list


_ATOMS: frozenset[type] = frozenset(
    {str, int, float, bool, bytes, complex, type(None), range, decimal.Decimal, fractions.Fraction, uuid.UUID,
     datetime.date, datetime.datetime, datetime.time, datetime.timedelta, datetime.timezone,
     pathlib.PurePosixPath, pathlib.PureWindowsPath, pathlib.PosixPath, pathlib.WindowsPath}
)  # fmt: skip
"""Types whose values cannot change: :meth:`State.get` returns them as they are."""


def _is_immutable(value: Any, depth: int = 0) -> bool:
    """True for a value no caller can change.

    That is an atom, an enum member, or a tuple, frozenset or frozen dataclass made only of such values
    (nested at most 8 deep; deeper counts as mutable).
    """
    kind = type(value)
    if kind in _ATOMS or isinstance(value, enum.Enum):
        return True
    if depth >= 8:
        return False
    if kind is tuple or kind is frozenset:
        return all(_is_immutable(item, depth + 1) for item in value)
    params = getattr(kind, "__dataclass_params__", None)
    if params is not None and params.frozen:
        return all(_is_immutable(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value))
    return False


def _detached(value: Any) -> Any:
    """Return ``value`` when nothing can change it, else a copy.

    One-level lists and dicts of atoms are copied with ``list.copy`` / ``dict.copy`` (4-7x cheaper than
    :func:`copy.deepcopy`), anything else with ``copy.deepcopy``.
    """
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is list:
        if all(type(item) in _ATOMS for item in value):
            return value.copy()
    elif kind is dict:
        if all(type(item) in _ATOMS for item in value.values()):
            return value.copy()  # keys are hashable, so (almost always) immutable
    elif _is_immutable(value):
        return value
    return copy.deepcopy(value)


def _default_messages_entry() -> dict[str, Any]:
    return {"type": list[ChatMessage], "handler": merge_lists}


def _reserved_defaults() -> dict[str, Any]:
    return {
        "step_count": 0,
        "token_usage": {},
        "tool_call_counts": {},
        "exit_reason": None,
        "stop_run": None,
        "continue_run": False,
    }


def validate_state_schema(schema: Mapping[str, Any]) -> None:
    """Check a user state schema.

    Args:
        schema: ``{key: {"type": python_type, "handler": callable | None}}``.

    Raises:
        StateError: When a key is reserved, an entry has no ``type``, the type is not a type,
            the handler is not callable, or ``messages`` is not a list type.
    """
    if not isinstance(schema, Mapping):
        raise StateError(f"state_schema must be a dict of {{key: {{'type': ...}}}}, got {type(schema).__name__}.")
    reserved = sorted(k for k in schema if k in RESERVED_KEYS)
    if reserved:
        raise StateError(
            f"state_schema keys {reserved} are reserved for the Agent's own bookkeeping and cannot be "
            f"redefined. Reserved keys: {list(RESERVED_KEYS)}."
        )
    for key, entry in schema.items():
        if not isinstance(key, str):
            raise StateError(f"StateSchema: keys must be str, got {key!r} ({type(key).__name__}).")
        if not isinstance(entry, Mapping) or "type" not in entry:
            raise StateError(f"StateSchema: key '{key}' is missing a 'type' entry.")
        unknown = sorted(str(k) for k in entry if k not in ("type", "handler"))
        if unknown:  # a typo such as 'handelr' would silently fall back to the default handler
            raise StateError(f"StateSchema: key '{key}' has unknown entries {unknown}; an entry holds 'type' and "
                             f"optionally 'handler'.")  # fmt: skip
        tp = entry["type"]
        if not (isinstance(tp, type) or typing.get_origin(tp) is not None or tp is Any):
            raise StateError(f"StateSchema: 'type' for key '{key}' must be a Python type, got {tp!r}.")
        handler = entry.get("handler")
        if handler is not None and not callable(handler):
            raise StateError(f"StateSchema: 'handler' for key '{key}' must be callable or None, got {handler!r}.")
        if key == "messages" and not _is_list_type(tp):
            raise StateError("StateSchema: 'messages' must have a list type such as list[ChatMessage].")


class State:
    """Values of one run, typed by a schema.

    Args:
        schema: The user schema ``{key: {"type": ..., "handler": ...}}`` (validated; copied).
        data: Initial values for schema keys (optional).

    Raises:
        StateError: For an invalid schema or a data key outside it.

    Examples:
        >>> s = State({"notes": {"type": list[str]}})
        >>> s.set("notes", "a"); s.set("notes", ["b"]); s.get("notes")
        ['a', 'b']
    """

    __slots__ = ("_data", "_handlers", "schema")

    def __init__(self, schema: Mapping[str, Any] | None = None, data: Mapping[str, Any] | None = None) -> None:
        user_schema = dict(schema or {})
        validate_state_schema(user_schema)
        full: dict[str, dict[str, Any]] = {k: dict(v) for k, v in user_schema.items()}
        full.setdefault("messages", _default_messages_entry())
        self.schema: dict[str, dict[str, Any]] = full
        """The full schema: the user's keys plus ``messages`` (reserved keys are kept apart)."""
        self._handlers: dict[str, Handler] = {
            k: v.get("handler") or (merge_lists if _is_list_type(v["type"]) else replace_values)
            for k, v in full.items()
        }
        for key in RESERVED_KEYS:
            self._handlers[key] = replace_values
        self._data: dict[str, Any] = _reserved_defaults()
        self._data["messages"] = []
        for key, value in (data or {}).items():
            self.set(key, value)

    @property
    def data(self) -> dict[str, Any]:
        """The live dict of every value (reserved keys included): no copy, unlike :meth:`get`."""
        return self._data

    def has(self, key: str) -> bool:
        """Return True when ``key`` holds a value."""
        return key in self._data

    def get(self, key: str, default: Any = None) -> Any:
        """Return a copy of the value of ``key`` (or of ``default``), which the caller may change freely.

        Immutable values (``str``, numbers, ``None``, enum members, dates, tuples and frozen dataclasses
        of these) are returned as they are; a list or dict of such values is copied one level, anything
        else with :func:`copy.deepcopy`. Read :attr:`data` for the live object (a shared resource, or a
        large value read often).

        Raises:
            ConfigurationTypeError: When the value cannot be deep-copied (a lock, a connection; Haystack
                raises deepcopy's TypeError): read it through ``state.data[key]`` instead.
        """
        value = self._data.get(key, default)
        try:
            return _detached(value)
        except Exception as exc:  # deepcopy of a lock, a socket, a generator...
            raise ConfigurationTypeError(
                f"State.get('{key}'): the value ({type(value).__name__}) cannot be copied ({exc}); read the "
                f"live value through state.data['{key}'] instead."
            ) from exc

    def set(self, key: str, value: Any, handler_override: Handler | None = None) -> None:
        """Store ``handler(current, value)`` under ``key``.

        Args:
            key: A schema key, ``messages`` or a reserved key.
            value: The new value.
            handler_override: A handler used instead of the schema's for this call.

        Raises:
            StateError: When ``key`` is not in the schema.
        """
        handler = self._handlers.get(key)
        if handler is None:
            raise StateError(f"State: key '{key}' not found in schema. Schema keys: {sorted(self.schema)}.")
        self._data[key] = (handler_override or handler)(self._data.get(key), value)

    def user_values(self) -> dict[str, Any]:
        """Return the values of the user's schema keys that hold a value (``messages`` excluded)."""
        return {k: self._data[k] for k in self.schema if k != "messages" and k in self._data}

    def to_dict(self) -> dict[str, Any]:
        """Serialize the schema (types as strings, handlers as dotted paths) and the user values.

        Returns:
            ``{"schema": {key: {"type": str, "handler": str | None}}, "data": {key: value}}``; values
            must be JSON-compatible (messages are written through ``ChatMessage.to_dict``). The
            ``messages`` entry is written only when the user's schema redefined it.

        Raises:
            SerializationError: When a type or handler cannot be written (a lambda, a closure).
        """
        schema = {
            k: {
                "type": serialize_type(v["type"]),
                "handler": serialize_callable(v["handler"]) if v.get("handler") else None,
            }
            for k, v in self.schema.items()
            if k != "messages" or v != _default_messages_entry()
        }
        data = dict(self.user_values())
        data["messages"] = [m.to_dict() for m in self._data["messages"]]
        return {"schema": schema, "data": data}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> State:
        """Rebuild a State written by :meth:`to_dict` (``data`` is not modified).

        A payload without a ``messages`` schema entry (the default, and every payload written
        before user-defined ``messages`` entries were kept) gets the default one.

        Raises:
            SerializationError: When a type or handler path cannot be imported back.
        """
        schema = {
            k: {
                "type": deserialize_type(v["type"], where=f"schema[{k!r}].type"),
                "handler": deserialize_callable(v["handler"], where=f"schema[{k!r}].handler")
                if v.get("handler")
                else None,
            }
            for k, v in data.get("schema", {}).items()
        }
        values = dict(data.get("data", {}))
        messages = [ChatMessage.from_dict(m) for m in values.pop("messages", [])]
        state = cls(schema, values)
        state._data["messages"] = messages
        return state

    def __repr__(self) -> str:
        return f"State(keys={sorted(self._data)})"
