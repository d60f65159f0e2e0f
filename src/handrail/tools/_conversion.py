"""Converting a tool's JSON arguments to its function's Python parameter types (for FunctionTool).

A parameter is *plain* when a JSON value that fits its schema already is the Python value the
function expects; every other parameter's argument goes through a pydantic ``TypeAdapter``
before the function runs. The converting wrappers made here remember the function they wrap.
"""

from __future__ import annotations

import collections.abc
import enum
import functools
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["accept_enum_values", "converting", "converting_async", "is_plain_json", "type_label", "unconverted"]

_ORIGINAL = "_handrail_unconverted"
"""Attribute of a converting wrapper holding the function it wraps."""


def unconverted(function: Any) -> Any:
    """Return the function a converting wrapper wraps, or ``function`` itself."""
    return getattr(function, _ORIGINAL, function)


def converting(function: Callable[..., Any], adapters: Mapping[str, tuple[Any, str]]) -> Callable[..., Any]:
    """Wrap ``function`` so its keyword arguments named in ``adapters`` are converted first."""
    if not adapters:
        return function

    def call(*args: Any, **kwargs: Any) -> Any:
        return function(*args, **_convert(adapters, kwargs))

    return _mark(call, function)


def converting_async(function: Callable[..., Any], adapters: Mapping[str, tuple[Any, str]]) -> Callable[..., Any]:
    """The ``async def`` twin of :func:`converting` (so the wrapper is a coroutine function too)."""
    if not adapters:
        return function

    async def call(*args: Any, **kwargs: Any) -> Any:
        return await function(*args, **_convert(adapters, kwargs))

    return _mark(call, function)


def _mark(wrapper: Callable[..., Any], function: Callable[..., Any]) -> Callable[..., Any]:
    """Give ``wrapper`` the name, docstring and signature of ``function``, and remember ``function``."""
    functools.update_wrapper(wrapper, function, updated=())
    setattr(wrapper, _ORIGINAL, function)
    return wrapper


def _convert(adapters: Mapping[str, tuple[Any, str]], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Convert the values in ``kwargs`` that have an adapter (in place; ``kwargs`` is the call's own dict).

    Raises:
        ValueError: Naming the argument and what pydantic found wrong with it.
    """
    import pydantic

    problem = None
    for name, (adapter, label) in adapters.items():
        if name not in kwargs:
            continue
        try:
            kwargs[name] = adapter.validate_python(kwargs[name])
        except pydantic.ValidationError as exc:
            details = "; ".join(
                f"{'.'.join(str(part) for part in error['loc']) or 'value'}: {error['msg']}" for error in exc.errors()
            )
            problem = f"argument '{name}' could not be converted to {label}: {details}"
            break
    if problem is not None:  # raised outside the except block: the message says it all, no chained traceback
        raise ValueError(problem)
    return kwargs


def type_label(hint: Any) -> str:
    """A short name of a type: ``Point``, ``list[Point]``, ``Point | None``, ``Optional[Point]``."""
    return hint.__name__ if isinstance(hint, type) else re.sub(r"\b(?:\w+\.)+(\w+)", r"\1", str(hint))


def accept_enum_values(hint: Any) -> Any:
    """Return ``hint`` with each ``Literal`` of Enum members also accepting the members' values.

    The JSON Schema of ``Literal[Mode.FAST]`` advertises ``"fast"`` (the value), which is what
    the model sends, but pydantic's Literal accepts only the member itself. Each such Literal
    becomes ``Annotated[Literal[...], BeforeValidator]`` mapping a value to its member, inside
    lists, dicts, unions and ``Annotated`` too; the function receives the members.
    """
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        if not any(isinstance(arg, enum.Enum) for arg in args):
            return hint
        import pydantic

        return typing.Annotated[hint, pydantic.BeforeValidator(functools.partial(_literal_member, args))]
    if origin is typing.Annotated:
        inner = accept_enum_values(args[0])
        return hint if inner is args[0] else typing.Annotated[(inner, *hint.__metadata__)]
    if not args:
        return hint
    new_args = tuple(accept_enum_values(arg) if not isinstance(arg, list) else arg for arg in args)
    if all(new is old for new, old in zip(new_args, args, strict=True)):
        return hint
    if origin in (typing.Union, types.UnionType):
        return typing.Union[new_args]  # noqa: UP007 - rebuilt from a tuple of members
    if isinstance(hint, types.GenericAlias):
        return types.GenericAlias(origin, new_args)
    copy_with = getattr(hint, "copy_with", None)  # typing's own aliases (List[...], a user Generic[...])
    return hint if copy_with is None else copy_with(new_args)


def _literal_member(members: tuple[Any, ...], value: Any) -> Any:
    """The Enum member among ``members`` whose value is ``value`` (same JSON kind), else ``value``."""
    if isinstance(value, enum.Enum):
        return value
    for member in members:
        if (
            isinstance(member, enum.Enum)
            and member.value == value
            and isinstance(member.value, bool) == isinstance(value, bool)
        ):
            return member
    return value


_PLAIN_SCALARS = frozenset({str, int, float, bool, type(None)})
_PLAIN_SEQUENCES = frozenset({list, collections.abc.Sequence, collections.abc.Collection, collections.abc.Iterable})
_PLAIN_MAPPINGS = frozenset({dict, collections.abc.Mapping})


def is_plain_json(hint: Any) -> bool:
    """True when a JSON value that fits ``hint``'s schema already is the Python value the function expects.

    Plain are ``str``, ``int``, ``float``, ``bool``, ``None``, ``Any``, ``object``, ``Literal`` of
    those, and lists (or ``Sequence``), ``str``-keyed dicts (or ``Mapping``), unions and
    ``Annotated`` forms (with descriptions or constraints as metadata) of plain types. Anything else
    (models, dataclasses, TypedDicts, Enums, tuples, sets, datetimes, other dict keys, validators
    in ``Annotated``) is converted.
    """
    if hint is Any or hint is object or hint in _PLAIN_SCALARS:
        return True
    if isinstance(hint, typing.NewType):
        return is_plain_json(hint.__supertype__)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        return is_plain_json(args[0]) and all(_is_plain_metadata(m) for m in args[1:])
    if origin is typing.Literal:
        return all(type(value) in _PLAIN_SCALARS for value in args)
    if origin in (typing.Union, types.UnionType):
        return all(is_plain_json(arg) for arg in args)
    if hint in _PLAIN_SEQUENCES or origin in _PLAIN_SEQUENCES:
        return all(is_plain_json(arg) for arg in args)
    if hint in _PLAIN_MAPPINGS or origin in _PLAIN_MAPPINGS:
        return not args or ((args[0] is str or args[0] is Any) and is_plain_json(args[1]))
    return False


def _is_plain_metadata(metadata: Any) -> bool:
    """True for ``Annotated`` metadata that only describes or constrains (checked by the JSON Schema)."""
    import annotated_types
    from pydantic.fields import FieldInfo

    return isinstance(metadata, str | annotated_types.BaseMetadata | FieldInfo)
