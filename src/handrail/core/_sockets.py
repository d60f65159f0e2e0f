"""Sockets (the named, typed inputs and outputs of a component) and the socket type-compatibility rule."""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from typing import Any

__all__ = ["MISSING", "InputSocket", "OutputSocket", "types_compatible"]


class _Missing:
    """The type of :data:`MISSING`: the default of an input socket that has none (a mandatory input)."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __copy__(self) -> _Missing:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _Missing:
        return self


MISSING: Any = _Missing()
"""The default of a mandatory input socket (distinct from ``None``, which is a real default)."""


@dataclass(frozen=True)
class InputSocket:
    """One named input of a component.

    Attributes:
        name: The keyword the component's ``run`` receives the value under.
        type: The declared type (``Any`` when the parameter has no annotation).
        default: The value used when nothing arrives; :data:`MISSING` for a mandatory input.
    """

    name: str
    type: Any
    default: Any = MISSING

    @property
    def is_mandatory(self) -> bool:
        """True when the input has no default, so the component cannot run without it."""
        return self.default is MISSING


@dataclass(frozen=True)
class OutputSocket:
    """One named output of a component.

    Attributes:
        name: The key of the output in the dict ``run`` returns.
        type: The declared type of the value.
    """

    name: str
    type: Any


def types_compatible(sender: Any, receiver: Any) -> bool:
    """Tell whether a value of type ``sender`` may flow into a socket of type ``receiver``.

    Rules: ``Any`` on either side fits; ``typing`` aliases equal their builtin generics (``List[int]`` is
    ``list[int]``, ``Optional[X]`` is ``X | None``); a union receiver fits when some member fits; a union
    sender fits when every member fits; a class fits its base classes; generics fit when the origins do
    and every argument fits (a bare generic such as ``list`` counts as ``list[Any]``).

    Args:
        sender: The output socket's type.
        receiver: The input socket's type.

    Returns:
        True when the connection is type-safe.

    >>> from typing import List, Optional
    >>> types_compatible(List[int], list[int]), types_compatible(int, Optional[int])
    (True, True)
    >>> types_compatible(list[str], list[int])
    False
    """
    sender, receiver = _normalize(sender), _normalize(receiver)
    if sender is Any or receiver is Any or sender == receiver:
        return True
    s_origin, r_origin = typing.get_origin(sender), typing.get_origin(receiver)
    if _is_union(s_origin):
        return all(types_compatible(member, receiver) for member in typing.get_args(sender))
    if _is_union(r_origin):
        return any(types_compatible(sender, member) for member in typing.get_args(receiver))
    s_class, r_class = s_origin or sender, r_origin or receiver
    if not (isinstance(s_class, type) and isinstance(r_class, type) and issubclass(s_class, r_class)):
        return False
    s_args, r_args = typing.get_args(sender), typing.get_args(receiver)
    if not s_args or not r_args:
        return True
    if len(s_args) != len(r_args):
        return False
    return all(_args_compatible(s, r) for s, r in zip(s_args, r_args, strict=True))


def _args_compatible(sender: Any, receiver: Any) -> bool:
    if isinstance(sender, list) and isinstance(receiver, list):  # Callable[[A, B], R] parameter lists
        return len(sender) == len(receiver) and all(map(types_compatible, sender, receiver))
    return types_compatible(sender, receiver)


def _normalize(tp: Any) -> Any:
    return type(None) if tp is None else tp


def _is_union(origin: Any) -> bool:
    return origin is typing.Union or origin is types.UnionType
