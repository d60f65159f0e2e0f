"""Typed JSON: write Python values as JSON data and read them back with their types.

Plain JSON data (``str``, ``int``, ``bool``, ``None``, finite ``float``, lists, and dicts with
``str`` keys) is written as is. Every other supported value becomes a tagged dict
``{"$type": TAG, ...}``:

=============  ==========================================================================
TAG            shape
=============  ==========================================================================
``dict``       ``{"items": [[key, value], ...]}`` (non-``str`` keys, or a ``"$type"`` key)
``tuple``      ``{"items": [...]}`` (also ``set`` and ``frozenset``, items in a stable order)
``bytes``      ``{"base64": "..."}``
``float``      ``{"value": "nan" | "inf" | "-inf"}``
``datetime``   ``{"value": ISO 8601, "zone": IANA key (zoneinfo only), "fold": 1 (if set)}``
``date``       ``{"value": "YYYY-MM-DD"}``; ``time`` like ``datetime`` (fixed offsets only)
``timedelta``  ``{"days": int, "seconds": int, "microseconds": int}``
``decimal``    ``{"value": str}``; ``uuid`` ``{"value": str}``; ``path`` ``{"value", "kind"}``
``enum``       ``{"class": dotted path, "value": encoded member value}``
``dataclass``  ``{"class": dotted path, "fields": {init field: encoded value}}``
``object``     ``{"class": dotted path, "data": encoded obj.to_dict()}`` (classes with
               ``to_dict`` and a ``from_dict`` classmethod; checked before ``dataclass``)
=============  ==========================================================================

Reading resolves classes through :func:`handrail.core.serialization.import_object`, so the
allowlist set by :func:`handrail.core.serialization.restricted_imports` applies.

Examples:
    >>> import datetime
    >>> data = encode_value({"when": datetime.date(2024, 5, 1), "pair": (1, 2)})
    >>> data
    {'when': {'$type': 'date', 'value': '2024-05-01'}, 'pair': {'$type': 'tuple', 'items': [1, 2]}}
    >>> decode_value(data)
    {'when': datetime.date(2024, 5, 1), 'pair': (1, 2)}
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import decimal
import enum
import json
import math
import sys
import uuid
import zoneinfo
from collections.abc import Callable
from typing import Any

from handrail.core._typed_json_decode import PATH_KINDS, PLAIN_TYPES, TYPE_KEY, decode_value, type_name
from handrail.core.json_data import MAX_DEPTH, check_json, clip_path, int_problem, text_problem
from handrail.core.secret import TokenSecret, holds_secret_value
from handrail.errors import SerializationError

__all__ = ["MAX_DEPTH", "TYPE_KEY", "check_json", "decode_value", "encode_value"]

_SUPPORTED = (
    "JSON data, tuple, set, frozenset, bytes, datetime, date, time, timedelta, Decimal, UUID, pathlib paths, "
    "Enum members, dataclasses and objects with to_dict()/from_dict()"
)
_IMPORTABLE: dict[type, str] = {}


def _class_path(cls: type, where: str) -> str:
    """Return the dotted path of ``cls``, checking that importing that path gives ``cls`` back."""
    known = _IMPORTABLE.get(cls)
    if known is not None:
        return known
    path = f"{cls.__module__}.{cls.__qualname__}"
    obj: Any = sys.modules.get(cls.__module__)
    for part in cls.__qualname__.split("."):
        obj = getattr(obj, part, None)
    if obj is not cls:
        raise SerializationError(
            f"{where}: a {path} cannot be written to a snapshot: its class cannot be imported back by that name "
            f"(classes defined inside functions, or created dynamically, cannot). Define it at module level."
        )
    _IMPORTABLE[cls] = path
    return path


class _Encoder:
    """One encoding pass: tracks the path (for errors), the containers being visited (cycles) and depth."""

    def __init__(self, where: str) -> None:
        self.segments: list[str] = [where]
        self.active: set[int] = set()

    def path(self) -> str:
        return clip_path("".join(self.segments))

    def fail(self, value: object, reason: str) -> SerializationError:
        return SerializationError(f"{self.path()}: a {type_name(value)} cannot be written to a snapshot: {reason}")

    def child(self, segment: str, value: Any) -> Any:
        self.segments.append(segment)
        try:
            return self.encode(value)
        finally:
            self.segments.pop()

    def container(self, value: Any, build: Callable[[Any], Any]) -> Any:
        key = id(value)
        if key in self.active:
            raise SerializationError(f"{self.path()}: a reference cycle cannot be written to a snapshot.")
        if len(self.active) >= MAX_DEPTH:
            raise SerializationError(f"{self.path()}: values nested more than {MAX_DEPTH} levels deep are refused.")
        self.active.add(key)
        try:
            return build(value)
        finally:
            self.active.discard(key)

    def encode(self, value: Any) -> Any:
        cls = type(value)
        if cls in PLAIN_TYPES:
            if cls is str and holds_secret_value(value):  # e.g. a to_dict() that copied a Secret's value out
                raise self.fail(value, "it holds the value of a secret, which is never written.")
            if cls is str and text_problem(value) is not None:  # UTF-8 cannot write it: refused here, by name
                raise self.fail(value, f"{text_problem(value)}.")
            if cls is int and int_problem(value) is not None:  # json.dumps would raise a bare ValueError
                raise self.fail(value, f"{int_problem(value)}.")
            return value
        if cls is float:
            return value if math.isfinite(value) else {TYPE_KEY: "float", "value": str(value)}
        handler = _ENCODERS.get(cls)
        if handler is not None:
            return handler(self, value)
        return self.encode_instance(value)

    def encode_instance(self, value: Any) -> Any:
        cls = type(value)
        if isinstance(value, TokenSecret):
            raise self.fail(
                value,
                "a token secret is never written. Supply it again at resume, or use "
                "Secret.from_env_var('NAME') so only the variable name is written.",
            )
        if isinstance(value, enum.Enum):
            return {
                TYPE_KEY: "enum",
                "class": _class_path(cls, self.path()),
                "value": self.child(".value", value.value),
            }
        if callable(getattr(value, "to_dict", None)) and callable(getattr(cls, "from_dict", None)):
            path = _class_path(cls, self.path())
            return self.container(
                value, lambda v: {TYPE_KEY: "object", "class": path, "data": self.child(".to_dict()", v.to_dict())}
            )
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            path = _class_path(cls, self.path())
            return self.container(value, lambda v: {TYPE_KEY: "dataclass", "class": path, "fields": self.fields(v)})
        raise self.fail(
            value, f"it is not one of {_SUPPORTED}. Keep it out of the State, or give its class to_dict/from_dict."
        )

    def fields(self, value: Any) -> dict[str, Any]:
        return {f.name: self.child(f".{f.name}", getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}

    def items(self, value: Any) -> list[Any]:
        return [self.child(f"[{i}]", item) for i, item in enumerate(value)]


def _encode_dict(enc: _Encoder, value: dict[Any, Any]) -> Any:
    def build(d: dict[Any, Any]) -> Any:
        if TYPE_KEY not in d and all(type(k) is str for k in d):
            return {k: enc.child(f"[{k!r}]", v) for k, v in d.items()}
        pairs = [[enc.child(f".keys()[{i}]", k), enc.child(f"[{k!r}]", v)] for i, (k, v) in enumerate(d.items())]
        return {TYPE_KEY: "dict", "items": pairs}

    return enc.container(value, build)


def _stable_key(item: Any) -> str:
    return json.dumps(item, sort_keys=True, ensure_ascii=False)


def _encode_collection(tag: str) -> Callable[[_Encoder, Any], Any]:
    def encode(enc: _Encoder, value: Any) -> Any:
        def build(v: Any) -> Any:
            items = enc.items(v)
            return {TYPE_KEY: tag, "items": items if tag == "tuple" else sorted(items, key=_stable_key)}

        return enc.container(value, build)

    return encode


def _zone_fields(enc: _Encoder, value: dt.datetime | dt.time, allow_zoneinfo: bool) -> dict[str, Any]:
    tz = value.tzinfo
    extra: dict[str, Any] = {"fold": 1} if value.fold else {}
    if tz is None or type(tz) is dt.timezone:
        return {"value": value.isoformat(), **extra}
    if allow_zoneinfo and isinstance(tz, zoneinfo.ZoneInfo) and tz.key is not None:
        return {"value": value.replace(tzinfo=None).isoformat(), "zone": tz.key, **extra}
    kinds = "datetime.timezone or zoneinfo.ZoneInfo" if allow_zoneinfo else "datetime.timezone"
    raise enc.fail(value, f"its tzinfo is a {type_name(tz)}; only {kinds} time zones can be written.")


_ENCODERS: dict[type, Callable[[_Encoder, Any], Any]] = {
    list: lambda enc, v: enc.container(v, enc.items),
    dict: _encode_dict,
    tuple: _encode_collection("tuple"),
    set: _encode_collection("set"),
    frozenset: _encode_collection("frozenset"),
    bytes: lambda enc, v: {TYPE_KEY: "bytes", "base64": base64.b64encode(v).decode("ascii")},
    dt.datetime: lambda enc, v: {TYPE_KEY: "datetime", **_zone_fields(enc, v, True)},
    dt.date: lambda enc, v: {TYPE_KEY: "date", "value": v.isoformat()},
    dt.time: lambda enc, v: {TYPE_KEY: "time", **_zone_fields(enc, v, False)},
    dt.timedelta: lambda enc, v: {
        TYPE_KEY: "timedelta",
        "days": v.days,
        "seconds": v.seconds,
        "microseconds": v.microseconds,
    },
    decimal.Decimal: lambda enc, v: {TYPE_KEY: "decimal", "value": str(v)},
    uuid.UUID: lambda enc, v: {TYPE_KEY: "uuid", "value": str(v)},
    **{
        kind: (lambda enc, v: {TYPE_KEY: "path", "value": str(v), "kind": type(v).__name__})
        for kind in PATH_KINDS.values()
    },
}


def encode_value(value: Any, where: str = "value") -> Any:
    """Turn ``value`` into JSON-compatible data that :func:`decode_value` turns back into an equal value.

    Args:
        value: Any value made of the supported types (see the module docstring).
        where: How to name ``value`` in error messages, e.g. ``"state['notes']"``.

    Returns:
        JSON-compatible data: ``json.dumps(result, allow_nan=False)`` succeeds.

    Raises:
        SerializationError: When ``value`` holds something that cannot be written (a lock, a client, an object
            without to_dict/from_dict, a local class), a reference cycle, or containers nested more than
            :data:`MAX_DEPTH` deep; an int of more digits than ``sys.get_int_max_str_digits()``; a token Secret,
            or a string holding a known secret's value, wherever it is.
            The message names the place, e.g. ``state['cfg'].items[2]``, and the type.
    """
    return _Encoder(where).encode(value)
