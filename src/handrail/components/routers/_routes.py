"""Route records of ConditionalRouter: validation of the route dicts, and the runtime type checks.

A route dict has the keys ``condition`` (a template), ``output`` (a template or a list of templates),
``output_name`` (a name, or a list of names as long as ``output``) and ``output_type`` (a type, or a
list of types as long as ``output``). Typing aliases are normalized to builtin generics here:
``List[X]`` becomes ``list[X]``, ``Optional[X]`` becomes ``X | None``.
"""

from __future__ import annotations

import collections.abc
import functools
import operator
import types
import typing
from dataclasses import dataclass
from typing import Any

from handrail.errors import ComponentError, ConfigurationTypeError

__all__ = ["ROUTE_KEYS", "Route", "normalize_type", "parse_routes", "value_matches"]

ROUTE_KEYS = ("condition", "output", "output_name", "output_type")
"""The keys every route dict must have (and the only ones it may have)."""

_UNION_ORIGINS = (typing.Union, types.UnionType)


@dataclass(frozen=True, kw_only=True)
class Route:
    """One validated route."""

    index: int
    """Position in the router's ``routes`` (0-based)."""
    condition: str
    """The condition template."""
    outputs: tuple[str, ...]
    """The output templates, one per output name."""
    names: tuple[str, ...]
    """The output socket names, as many as ``outputs``."""
    types: tuple[Any, ...]
    """The output types (normalized), as many as ``outputs``."""

    @property
    def label(self) -> str:
        """``route 0 ('there_are_tool_calls')``: how error messages name this route."""
        return f"route {self.index} ({', '.join(repr(n) for n in self.names)})"


def normalize_type(target: Any) -> Any:
    """Rewrite typing aliases as builtin generics, recursively (``List[int]`` → ``list[int]``).

    Args:
        target: A type, a parameterized generic, a union, ``Any`` or ``None``.

    Returns:
        An equal type written with builtin generics and ``|`` unions; anything it cannot rebuild unchanged.
    """
    if target is None:
        return type(None)
    origin = typing.get_origin(target)
    args = typing.get_args(target)
    if origin is None or not args:
        return origin if origin is not None and isinstance(origin, type) else target
    if origin is typing.Annotated:
        return normalize_type(args[0])
    if origin is typing.Literal:
        return target
    rebuilt = tuple(normalize_type(a) if not isinstance(a, list) else [normalize_type(x) for x in a] for a in args)
    if origin in _UNION_ORIGINS:
        return functools.reduce(operator.or_, rebuilt)
    try:
        return origin[rebuilt if len(rebuilt) > 1 else rebuilt[0]]
    except TypeError:
        return target


def _is_type_like(target: Any) -> bool:
    return target is Any or target is None or isinstance(target, type) or typing.get_origin(target) is not None


def _check_keys(route: Any, index: int) -> None:
    if not isinstance(route, dict):
        raise ConfigurationTypeError(f"ConditionalRouter route {index} must be a dict, got {type(route).__name__}.")
    missing = [key for key in ROUTE_KEYS if key not in route]
    unknown = sorted(str(key) for key in route if key not in ROUTE_KEYS)
    if missing or unknown:
        problems = ([f"missing {missing}"] if missing else []) + ([f"unknown {unknown}"] if unknown else [])
        raise ComponentError(
            f"ConditionalRouter route {index} has {' and '.join(problems)} keys; "
            f"a route needs exactly {list(ROUTE_KEYS)}."
        )


def _as_tuple(route: dict[str, Any], key: str, index: int, many: bool, count: int) -> tuple[Any, ...]:
    value = route[key]
    if not many:
        if isinstance(value, list | tuple):
            raise ComponentError(
                f"ConditionalRouter route {index}: '{key}' is a list but 'output' is a single template; "
                f"give one {key}, or make 'output' a list too."
            )
        return (value,)
    if not isinstance(value, list | tuple) or len(value) != count:
        raise ComponentError(
            f"ConditionalRouter route {index}: 'output' is a list of {count} templates, so '{key}' must be a list "
            f"of {count} too, got {value!r}."
        )
    return tuple(value)


def _parse_route(route: Any, index: int) -> Route:
    _check_keys(route, index)
    condition = route["condition"]
    if not isinstance(condition, str) or not condition.strip():
        raise ComponentError(f"ConditionalRouter route {index}: 'condition' must be a non-empty template string.")
    many = isinstance(route["output"], list | tuple)
    outputs = _as_tuple(route, "output", index, many, len(route["output"]) if many else 1)
    if not outputs or not all(isinstance(o, str) for o in outputs):
        raise ComponentError(
            f"ConditionalRouter route {index}: 'output' must be a template string or a non-empty list of them."
        )
    names = _as_tuple(route, "output_name", index, many, len(outputs))
    if not all(isinstance(n, str) and n.isidentifier() for n in names):
        raise ComponentError(
            f"ConditionalRouter route {index}: every output_name must be a Python identifier, got {list(names)}."
        )
    if len(set(names)) != len(names):
        raise ComponentError(f"ConditionalRouter route {index}: output names repeat: {list(names)}.")
    raw_types = _as_tuple(route, "output_type", index, many, len(outputs))
    for name, target in zip(names, raw_types, strict=True):
        if not _is_type_like(target):
            raise ComponentError(
                f"ConditionalRouter route {index}: output_type of '{name}' must be a type "
                f"(str, list[int], List[ChatMessage], ...), got {target!r}."
            )
    return Route(
        index=index,
        condition=condition,
        outputs=outputs,
        names=names,
        types=tuple(normalize_type(t) for t in raw_types),
    )


def parse_routes(routes: Any) -> list[Route]:
    """Validate route dicts and turn them into Route records.

    Args:
        routes: A non-empty list of route dicts.

    Returns:
        One Route per dict, in order.

    Raises:
        ConfigurationTypeError: When ``routes`` is not a list or a route is not a dict.
        ComponentError: When a route misses a key, has an unknown one, mismatched output lists, a
            name that is not an identifier, a type that is not a type, or when two routes give one
            output name different types; the message names the route.
    """
    if not isinstance(routes, list | tuple):
        raise ConfigurationTypeError(f"ConditionalRouter needs a list of route dicts, got {type(routes).__name__}.")
    if not routes:
        raise ComponentError("ConditionalRouter needs at least one route.")
    parsed = [_parse_route(route, i) for i, route in enumerate(routes)]
    seen: dict[str, tuple[Any, int]] = {}
    for route in parsed:
        for name, target in zip(route.names, route.types, strict=True):
            earlier = seen.setdefault(name, (target, route.index))
            if earlier[0] != target:
                raise ComponentError(
                    f"ConditionalRouter {route.label}: output '{name}' has type {target!r}, but route {earlier[1]} "
                    f"gives it type {earlier[0]!r}; one output name has one type."
                )
    return parsed


def value_matches(value: Any, expected: Any) -> bool:
    """Tell whether a value fits a (normalized) type, checking generic arguments recursively.

    Args:
        value: The rendered output.
        expected: A type from :func:`normalize_type`.

    Returns:
        True when the value fits; unknown kinds of types (TypeVars, forward references) always fit.
    """
    if expected is Any:
        return True
    origin = typing.get_origin(expected)
    if origin is None:
        return isinstance(value, expected) if isinstance(expected, type) else True
    args = typing.get_args(expected)
    if origin in _UNION_ORIGINS:
        return any(value_matches(value, member) for member in args)
    if origin is typing.Literal:
        return value in args
    if not isinstance(origin, type) or not isinstance(value, origin):
        return not isinstance(origin, type)
    return _items_match(value, origin, args)


def _items_match(value: Any, origin: type, args: tuple[Any, ...]) -> bool:
    if issubclass(origin, collections.abc.Mapping) and len(args) == 2:
        return all(value_matches(k, args[0]) and value_matches(v, args[1]) for k, v in value.items())
    if issubclass(origin, tuple):
        if len(args) == 2 and args[1] is Ellipsis:
            return all(value_matches(item, args[0]) for item in value)
        return len(value) == len(args) and all(value_matches(v, a) for v, a in zip(value, args, strict=True))
    if issubclass(origin, collections.abc.Collection) and len(args) == 1:
        return all(value_matches(item, args[0]) for item in value)
    return True
