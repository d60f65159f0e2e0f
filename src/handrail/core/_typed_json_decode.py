"""Reading typed JSON back into Python values (the other half of :mod:`handrail.core._typed_json`)."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import datetime as dt
import decimal
import enum
import pathlib
import uuid
import zoneinfo
from collections.abc import Callable
from typing import Any

from handrail.core.json_data import MAX_DEPTH
from handrail.core.serialization import import_object
from handrail.errors import SerializationError, SnapshotError

__all__ = ["MAX_DEPTH", "PATH_KINDS", "PLAIN_TYPES", "TYPE_KEY", "decode_value", "type_name"]

TYPE_KEY = "$type"
"""The key that marks a tagged dict."""

PLAIN_TYPES = (str, int, bool, type(None))
"""Exact types written as they are (finite floats too)."""

PATH_KINDS: dict[str, type[pathlib.PurePath]] = {
    c.__name__: c for c in (pathlib.PurePosixPath, pathlib.PureWindowsPath, pathlib.PosixPath, pathlib.WindowsPath)
}
"""The pathlib classes a ``path`` value may name."""


def type_name(value: object) -> str:
    """Return ``"<module>.<qualname>"`` of ``value``'s class (just the name for builtins)."""
    cls = type(value)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


class _Decoder:
    """One decoding pass: tracks the path (for errors) and the depth."""

    def __init__(self, where: str) -> None:
        self.segments: list[str] = [where]

    def fail(self, reason: str) -> SnapshotError:
        return SnapshotError(f"{''.join(self.segments)}: {reason}")

    def child(self, segment: str, data: Any) -> Any:
        if len(self.segments) > 2 * MAX_DEPTH:  # a tagged value may take two path segments per level
            raise self.fail(f"values nested more than {MAX_DEPTH} levels deep are refused.")
        self.segments.append(segment)
        try:
            return self.decode(data)
        finally:
            self.segments.pop()

    def decode(self, data: Any) -> Any:
        cls = type(data)
        if cls in PLAIN_TYPES or cls is float:
            return data
        if cls is list:
            return [self.child(f"[{i}]", item) for i, item in enumerate(data)]
        if cls is not dict:
            raise self.fail(f"expected JSON data, found a {type_name(data)}.")
        if TYPE_KEY not in data:
            return {k: self.child(f"[{k!r}]", v) for k, v in data.items()}
        tag = data[TYPE_KEY]
        reader = _DECODERS.get(tag) if isinstance(tag, str) else None
        if reader is None:
            raise self.fail(f"unknown {TYPE_KEY} tag {tag!r}; known tags: {sorted(_DECODERS)}.")
        try:
            return reader(self, data)
        except SnapshotError:
            raise
        except (TypeError, ValueError, KeyError, ArithmeticError, SerializationError) as exc:
            raise self.fail(f"cannot rebuild the {tag} value: {type(exc).__name__}: {exc}") from exc

    def field(self, data: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
        value = data.get(key)
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
            tag = data[TYPE_KEY]
            raise self.fail(f"a {tag!r} value needs {key!r} of type {_kind_name(kind)}, got {value!r:.80}.")
        return value

    def items(self, data: dict[str, Any]) -> list[Any]:
        return [self.child(f"[{i}]", item) for i, item in enumerate(self.field(data, "items", list))]

    def resolve(self, data: dict[str, Any], check: Callable[[Any], bool], kind: str) -> Any:
        path = self.field(data, "class", str)
        try:
            cls = import_object(path)
        except SerializationError as exc:
            raise self.fail(str(exc)) from exc
        if not isinstance(cls, type) or not check(cls):
            raise self.fail(f"'{path}' is not {kind}.")
        return cls


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)


def _decode_dict(dec: _Decoder, data: dict[str, Any]) -> dict[Any, Any]:
    result: dict[Any, Any] = {}
    for i, pair in enumerate(dec.field(data, "items", list)):
        if not isinstance(pair, list) or len(pair) != 2:
            raise dec.fail(f"dict item {i} must be a [key, value] pair, got {pair!r:.80}.")
        key = dec.child(f".keys()[{i}]", pair[0])
        result[key] = dec.child(f"[{key!r}]", pair[1])
    return result


def _decode_float(dec: _Decoder, data: dict[str, Any]) -> float:
    text = dec.field(data, "value", str)
    if text not in ("nan", "inf", "-inf"):
        raise dec.fail(f"a 'float' value must be 'nan', 'inf' or '-inf', got {text!r}.")
    return float(text)


def _decode_bytes(dec: _Decoder, data: dict[str, Any]) -> bytes:
    try:
        return base64.b64decode(dec.field(data, "base64", str), validate=True)
    except binascii.Error as exc:
        raise dec.fail(f"invalid base64: {exc}") from exc


def _with_zone(dec: _Decoder, data: dict[str, Any], value: dt.datetime) -> dt.datetime:
    zone = data.get("zone")
    if zone is not None:
        value = value.replace(tzinfo=zoneinfo.ZoneInfo(dec.field(data, "zone", str)))
    return value.replace(fold=1) if data.get("fold") == 1 else value


def _decode_time(dec: _Decoder, data: dict[str, Any]) -> dt.time:
    value = dt.time.fromisoformat(dec.field(data, "value", str))
    return value.replace(fold=1) if data.get("fold") == 1 else value


def _decode_path(dec: _Decoder, data: dict[str, Any]) -> pathlib.PurePath:
    kind = PATH_KINDS.get(dec.field(data, "kind", str))
    if kind is None:
        raise dec.fail(f"unknown path kind {data['kind']!r}; known: {sorted(PATH_KINDS)}.")
    return kind(dec.field(data, "value", str))


def _decode_enum(dec: _Decoder, data: dict[str, Any]) -> enum.Enum:
    cls = dec.resolve(data, lambda c: issubclass(c, enum.Enum), "an Enum class")
    if "value" not in data:
        raise dec.fail("an 'enum' value needs a 'value' key.")
    member: enum.Enum = cls(dec.child(".value", data["value"]))
    return member


def _decode_dataclass(dec: _Decoder, data: dict[str, Any]) -> Any:
    cls = dec.resolve(data, dataclasses.is_dataclass, "a dataclass")
    fields = {k: dec.child(f".{k}", v) for k, v in dec.field(data, "fields", dict).items()}
    return cls(**fields)


def _decode_object(dec: _Decoder, data: dict[str, Any]) -> Any:
    cls = dec.resolve(data, lambda c: callable(getattr(c, "from_dict", None)), "a class with from_dict()")
    if "data" not in data:
        raise dec.fail("an 'object' value needs a 'data' key.")
    return cls.from_dict(dec.child(".to_dict()", data["data"]))


_DECODERS: dict[str, Callable[[_Decoder, dict[str, Any]], Any]] = {
    "dict": _decode_dict,
    "tuple": lambda dec, d: tuple(dec.items(d)),
    "set": lambda dec, d: set(dec.items(d)),
    "frozenset": lambda dec, d: frozenset(dec.items(d)),
    "bytes": _decode_bytes,
    "float": _decode_float,
    "datetime": lambda dec, d: _with_zone(dec, d, dt.datetime.fromisoformat(dec.field(d, "value", str))),
    "date": lambda dec, d: dt.date.fromisoformat(dec.field(d, "value", str)),
    "time": _decode_time,
    "timedelta": lambda dec, d: dt.timedelta(
        days=dec.field(d, "days", int),
        seconds=dec.field(d, "seconds", int),
        microseconds=dec.field(d, "microseconds", int),
    ),
    "decimal": lambda dec, d: decimal.Decimal(dec.field(d, "value", str)),
    "uuid": lambda dec, d: uuid.UUID(dec.field(d, "value", str)),
    "path": _decode_path,
    "enum": _decode_enum,
    "dataclass": _decode_dataclass,
    "object": _decode_object,
}


def decode_value(data: Any, where: str = "value") -> Any:
    """Rebuild the value that :func:`encode_value` wrote.

    Classes named in the data are imported with :func:`handrail.core.serialization.import_object`; inside
    :func:`handrail.core.serialization.restricted_imports` only allowlisted modules are imported. ``data`` is
    not modified.

    Args:
        data: JSON data as :func:`encode_value` returns it (or as ``json.loads`` reads it back).
        where: How to name ``data`` in error messages, e.g. ``"state['notes']"``.

    Returns:
        The value, with its types: a tuple stays a tuple, an Enum member, a dataclass instance, etc.

    Raises:
        SnapshotError: For an unknown tag, a tagged dict of the wrong shape, a class that is not allowed,
            cannot be imported or is of the wrong kind, or a value its class refuses. The message names the place.
    """
    return _Decoder(where).decode(data)
