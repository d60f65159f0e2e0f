"""The scalar type check of init parameters read from a dict (a pipeline or agent file).

A constructor given ``unsafe='false'`` would take the string as true; :func:`check_scalar_types`
refuses it, naming the field, before anything is built.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from handrail.errors import SerializationError

__all__ = ["check_scalar_types"]

_SCALARS: dict[Any, tuple[str, tuple[type, ...]]] = {
    bool: ("true or false", (bool,)),
    int: ("an integer", (int,)),
    float: ("a number", (int, float)),
    str: ("a string", (str,)),
}
_SCALAR_HINTS: dict[type, dict[str, tuple[Any, bool]]] = {}  # per class: parameter -> (scalar type, None allowed)


def _scalar_hints(cls: type[Any]) -> dict[str, tuple[Any, bool]]:
    cached = _SCALAR_HINTS.get(cls)
    if cached is not None:
        return cached
    try:
        hints = typing.get_type_hints(cls.__init__)
    except Exception:  # an annotation that cannot be evaluated: nothing is checked, the constructor will say
        hints = {}
    found: dict[str, tuple[Any, bool]] = {}
    for name, hint in hints.items():
        if hint in _SCALARS:
            found[name] = (hint, False)
            continue
        args = typing.get_args(hint)
        if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
            rest = [a for a in args if a is not type(None)]
            if len(args) == 2 and len(rest) == 1 and rest[0] in _SCALARS:
                found[name] = (rest[0], True)
    _SCALAR_HINTS[cls] = found
    return found


def _kind(value: Any) -> str:
    kinds = {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "a mapping",
    }
    described = kinds.get(type(value), f"a {type(value).__name__}")
    return f"{described} ({value!r:.60})" if isinstance(value, (bool, int, float, str)) else described


def check_scalar_types(cls: type[Any], params: dict[str, Any]) -> None:
    """Refuse a scalar init parameter whose value has the wrong type (``'false'`` for a bool), naming the field.

    Only parameters annotated exactly ``bool``, ``int``, ``float`` or ``str`` (or one of those ``| None``) are
    checked; ``bool`` is not taken for ``int`` or ``float``; an ``int`` is taken for ``float``. Parameters with any
    other annotation are left to the constructor. The annotations are read once per class.

    Args:
        cls: The class whose constructor's annotations are read.
        params: The init parameters as read (``data["init_parameters"]``).

    Raises:
        SerializationError: For the first parameter whose value has the wrong type; its ``path`` is
            ``("init_parameters", name)``.
    """
    for name, (expected, optional) in _scalar_hints(cls).items():
        if name not in params:
            continue
        value = params[name]
        if value is None and optional:
            continue
        label, accepted = _SCALARS[expected]
        if isinstance(value, accepted) and (expected is bool or not isinstance(value, bool)):
            continue
        raise SerializationError(
            f"{name!r}: expected {label}{' or null' if optional else ''}, got {_kind(value)}.",
            path=("init_parameters", name),
        )
