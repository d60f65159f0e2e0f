"""Checking and serializing a ``{hook point: [hook, ...]}`` mapping.

The Agent calls :func:`validate_hooks` when it is built, so that every misplaced or malformed
hook is reported before anything runs, and :func:`serialize_hooks` /
:func:`deserialize_hooks` from its ``to_dict`` / ``from_dict``.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from handrail.core.serialization import import_object, object_from_dict, object_to_dict
from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError
from handrail.hooks.types import HOOK_POINTS, Hook, HookPoint

__all__ = ["deserialize_hooks", "serialize_hooks", "validate_hooks"]

_VALID = ", ".join(repr(p) for p in HOOK_POINTS)


def _check_point(point: Any) -> HookPoint:
    if point not in HOOK_POINTS:
        raise ConfigurationError(f"Invalid hook point {point!r}. Valid hook points: {_VALID}.")
    result: HookPoint = point
    return result


def _describe(obj: Any) -> str:
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    return f"'{name}'" if isinstance(name, str) else type(obj).__name__


def _check_hook(obj: Any, point: HookPoint, where: str) -> None:
    if isinstance(obj, type):
        raise ConfigurationTypeError(
            f"{where} is the class {_describe(obj)}, not a hook object; pass an instance ({obj.__name__}(...))."
        )
    if not callable(getattr(obj, "run", None)):
        if callable(obj):
            raise ConfigurationTypeError(
                f"{where} is the function {_describe(obj)}; a plain function is not a hook. Wrap it with @hook "
                f"(from handrail.hooks import hook), which requires exactly one parameter annotated State."
            )
        raise ConfigurationTypeError(
            f"{where}: {type(obj).__name__} has no callable run(state) method; a hook needs one."
        )
    _check_run_forms(obj, where)
    allowed = getattr(obj, "allowed_hook_points", None)
    if allowed is None:
        return
    if isinstance(allowed, str) or not isinstance(allowed, Iterable):
        raise ConfigurationTypeError(
            f"{where}: {type(obj).__name__}.allowed_hook_points must be a tuple of hook point names, got {allowed!r}."
        )
    allowed = tuple(allowed)
    if point not in allowed:
        names = ", ".join(repr(p) for p in allowed) or "none"
        raise ConfigurationError(
            f"{where}: {type(obj).__name__} cannot run at {point!r}; its allowed hook points are: {names}."
        )


def _check_run_forms(obj: Any, where: str) -> None:
    """Refuse a ``run`` the Agent would call without awaiting, and a ``run_async`` it could not await."""
    name = type(obj).__name__
    if inspect.iscoroutinefunction(obj.run):
        raise ConfigurationTypeError(
            f"{where}: {name}.run is a coroutine function (async def), so it would never run: the Agent calls "
            f"run(state) without awaiting it. Put the async work in async def run_async(self, state) (used by "
            f"Agent.run_async) and keep a sync run(self, state) (used by Agent.run), or decorate an async "
            f"function with @hook (from handrail.hooks import hook)."
        )
    run_async = getattr(obj, "run_async", None)
    if run_async is not None and not inspect.iscoroutinefunction(run_async):
        raise ConfigurationTypeError(
            f"{where}: {name}.run_async is not a coroutine function ({run_async!r:.80}); Agent.run_async awaits it, "
            f"so define it as async def run_async(self, state), or remove it (async runs then call run)."
        )


def validate_hooks(hooks: Mapping[str, Sequence[Any]] | None) -> dict[HookPoint, list[Hook]]:
    """Check a hooks mapping and return it normalized.

    Args:
        hooks: ``{point: [hook, ...]}`` with points from :data:`~handrail.hooks.types.HOOK_POINTS`;
            ``None`` means no hooks. Lists (or tuples) keep their order.

    Returns:
        A new dict with all six points as keys, in the order a run reaches them, each mapped to a
        new list of its hooks (``[]`` where none were given). The hook objects are not copied.

    Raises:
        ConfigurationError: For an unknown point (the message lists the valid ones), or a hook
            placed at a point outside its ``allowed_hook_points`` (the message names them).
        ConfigurationTypeError: When ``hooks`` is not a mapping, a value is not a list, or an item
            is a plain function (wrap it with ``@hook``), a class, an object without a callable
            ``run``, one whose ``run`` is a coroutine function (it would never be awaited), or one
            whose ``run_async`` is not a coroutine function.

    Examples:
        >>> from handrail.hooks import TokenBudgetHook
        >>> budget = TokenBudgetHook(max_total_tokens=10_000)
        >>> validate_hooks({"before_llm": [budget]})["before_llm"] == [budget]
        True
        >>> validate_hooks({"after_tool": [budget]})
        Traceback (most recent call last):
        ...
        handrail.errors.ConfigurationError: hooks['after_tool'][0]: TokenBudgetHook cannot run at 'after_tool'; \
its allowed hook points are: 'before_llm'.
    """
    normalized: dict[HookPoint, list[Hook]] = {p: [] for p in HOOK_POINTS}
    if hooks is None:
        return normalized
    if not isinstance(hooks, Mapping):
        raise ConfigurationTypeError(
            f"hooks must be a dict of {{hook point: [hook, ...]}}, got {type(hooks).__name__}."
        )
    for raw_point, items in hooks.items():
        point = _check_point(raw_point)
        if not isinstance(items, list | tuple):
            raise ConfigurationTypeError(
                f"hooks[{point!r}] must be a list of hooks, got {type(items).__name__}; "
                f"write {{{point!r}: [hook]}} even for one hook."
            )
        for i, item in enumerate(items):
            _check_hook(item, point, f"hooks[{point!r}][{i}]")
        normalized[point].extend(items)
    return normalized


def serialize_hooks(hooks: Mapping[str, Sequence[Any]] | None) -> dict[str, list[dict[str, Any]]] | None:
    """Serialize a hooks mapping, each hook through its own ``to_dict``.

    An object that sits at several points is written once per point (it comes back as one
    object per point).

    Args:
        hooks: ``{point: [hook, ...]}`` (validated first) or None.

    Returns:
        ``{point: [envelope, ...]}`` for the points that hold hooks, in run order; None when
        there are no hooks at all.

    Raises:
        ConfigurationError: See :func:`validate_hooks`.
        ConfigurationTypeError: See :func:`validate_hooks`.
        SerializationError: When a hook has no ``to_dict`` or its ``to_dict`` fails (e.g. a
            function hook made of a lambda).
    """
    normalized = validate_hooks(hooks)
    data: dict[str, list[dict[str, Any]]] = {
        point: [object_to_dict(h) for h in items] for point, items in normalized.items() if items
    }
    return data or None


def _load_hook(entry: Any, where: str, allowed_modules: Iterable[str] | None) -> Any:
    if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
        raise SerializationError(f"{where}: expected {{'type': ..., 'init_parameters': ...}}, got {entry!r:.200}.")
    if allowed_modules is None:
        return object_from_dict(entry)
    cls = import_object(entry["type"], allowed_modules=allowed_modules)
    from_dict = getattr(cls, "from_dict", None)
    if callable(from_dict) and _accepts_allowed_modules(from_dict):
        return from_dict(copy.deepcopy(entry), allowed_modules=allowed_modules)
    return object_from_dict(entry, allowed_modules=allowed_modules)


def _accepts_allowed_modules(function: Any) -> bool:
    try:
        return "allowed_modules" in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


def deserialize_hooks(
    data: Mapping[str, Any] | None, *, allowed_modules: Iterable[str] | None = None
) -> dict[HookPoint, list[Hook]] | None:
    """Rebuild a hooks mapping written by :func:`serialize_hooks` (``data`` is not modified).

    Args:
        data: ``{point: [envelope, ...]}`` or None.
        allowed_modules: ``None`` trusts every dotted path (Python callers); otherwise hook classes
            (and the functions of function hooks) are imported only from ``handrail`` or these
            module prefixes.

    Returns:
        The normalized mapping of :func:`validate_hooks`, or None when ``data`` is None.

    Raises:
        SerializationError: For a malformed entry or a path that cannot (or may not) be imported.
        ConfigurationError: For an unknown point or a hook placed where it is not allowed.
        ConfigurationTypeError: When ``data`` or one of its values has the wrong shape.
    """
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise ConfigurationTypeError(f"Serialized hooks must be a dict, got {type(data).__name__}.")
    hooks: dict[str, list[Any]] = {}
    for point, entries in data.items():
        _check_point(point)
        if not isinstance(entries, list):
            raise ConfigurationTypeError(f"Serialized hooks[{point!r}] must be a list, got {type(entries).__name__}.")
        hooks[point] = [_load_hook(e, f"hooks[{point!r}][{i}]", allowed_modules) for i, e in enumerate(entries)]
    return validate_hooks(hooks)
