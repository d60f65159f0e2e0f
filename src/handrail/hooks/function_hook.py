"""Function hooks: the :func:`hook` decorator and :class:`FunctionHook`.

A plain function is not a hook (the Agent refuses it, so that a typo such as passing the
wrong function is caught early); ``@hook`` turns a function taking exactly one ``State``
parameter into a :class:`FunctionHook`. Sync and async functions both work.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, ClassVar, Self

from handrail.core.serialization import (
    check_file_callable,
    import_object,
    init_parameters,
    qualified_name,
    serialize_callable,
)
from handrail.dataclasses.state import State
from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError
from handrail.hooks.types import HOOK_POINTS, HookPoint

__all__ = ["FunctionHook", "hook"]

SyncHookFunction = Callable[[State], Any]
"""A function called with the run's State; its return value is ignored."""
AsyncHookFunction = Callable[[State], Awaitable[Any]]
"""A coroutine function called with the run's State; its return value is ignored."""

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _label(function: Any) -> str:
    module = getattr(function, "__module__", None)
    name = getattr(function, "__qualname__", None) or getattr(function, "__name__", None) or repr(function)
    return f"{module}.{name}" if module else str(name)


def _is_state(hint: Any) -> bool:
    if isinstance(hint, str):  # an annotation that could not be resolved: judge it by its name
        return hint.strip("'\"").rsplit(".", 1)[-1] == "State"
    return isinstance(hint, type) and issubclass(hint, State)


def _check_signature(function: Callable[..., Any]) -> None:
    """Raise unless ``function`` takes exactly one positional parameter annotated ``State``."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as exc:
        raise ConfigurationTypeError(f"Hook function '{_label(function)}' has no readable signature: {exc}") from exc
    params = list(signature.parameters.values())
    try:
        hints = typing.get_type_hints(function)
    except (NameError, TypeError, AttributeError, SyntaxError):  # unresolvable forward references
        hints = {p.name: p.annotation for p in params}
    if len(params) != 1 or params[0].kind not in _POSITIONAL or not _is_state(hints.get(params[0].name)):
        shown = ", ".join(_show(p, hints.get(p.name, p.annotation)) for p in params)
        raise ConfigurationError(
            f"Hook function '{_label(function)}' must take exactly one parameter, annotated State "
            f"(def {getattr(function, '__name__', 'my_hook')}(state: State) -> None); it takes ({shown})."
        )


def _show(param: inspect.Parameter, hint: Any) -> str:
    prefix = ""
    if param.kind is inspect.Parameter.VAR_POSITIONAL:
        prefix = "*"
    elif param.kind is inspect.Parameter.VAR_KEYWORD:
        prefix = "**"
    if hint is inspect.Parameter.empty:
        return prefix + param.name
    if isinstance(hint, str):
        name = hint
    elif isinstance(hint, type) and not typing.get_args(hint):
        name = hint.__name__
    else:
        name = repr(hint).replace("typing.", "")
    return f"{prefix}{param.name}: {name}"


class FunctionHook:
    """A hook made of a sync function, an async function, or both (build it with :func:`hook`).

    Args:
        function: Called by :meth:`run` (and by :meth:`run_async` when there is no async function).
        async_function: A coroutine function called by :meth:`run_async`.

    Raises:
        ConfigurationError: When neither function is given, or one does not take exactly one
            parameter annotated ``State`` (the message names the function).
        ConfigurationTypeError: When ``function`` is async, ``async_function`` is not, or either is
            not callable.

    Examples:
        >>> def stop_early(state: State) -> None:
        ...     state.data["stop_run"] = "early"
        >>> h = FunctionHook(function=stop_early)
        >>> state = State()
        >>> h.run(state)
        >>> state.data["stop_run"]
        'early'
    """

    allowed_hook_points: ClassVar[tuple[HookPoint, ...]] = HOOK_POINTS
    """A function hook may sit at every point."""

    def __init__(
        self, function: SyncHookFunction | None = None, async_function: AsyncHookFunction | None = None
    ) -> None:
        if function is None and async_function is None:
            raise ConfigurationError("FunctionHook needs a function, an async_function, or both.")
        if function is not None:
            if not callable(function):
                raise ConfigurationTypeError(f"FunctionHook: function must be callable, got {function!r}.")
            if inspect.iscoroutinefunction(function):
                raise ConfigurationTypeError(
                    f"FunctionHook: '{_label(function)}' is an async function; pass it as async_function "
                    f"(or decorate it with @hook)."
                )
            _check_signature(function)
        if async_function is not None:
            if not inspect.iscoroutinefunction(async_function):
                raise ConfigurationTypeError(
                    f"FunctionHook: async_function '{_label(async_function)}' must be an async function "
                    f"(async def); pass a sync one as function."
                )
            _check_signature(async_function)
        self.function = function
        """The sync function, or None."""
        self.async_function = async_function
        """The async function, or None."""

    @property
    def name(self) -> str:
        """The dotted name of the wrapped function (the sync one when both are given)."""
        return _label(self.function if self.function is not None else self.async_function)

    def run(self, state: State) -> None:
        """Call the sync function with ``state``.

        Args:
            state: The run's live State.

        Raises:
            ConfigurationError: When the hook has only an async function (run the Agent with
                ``run_async``, or give the hook a sync function too).
        """
        if self.function is None:
            raise ConfigurationError(
                f"Hook '{self.name}' is async only and cannot run in a sync run; use Agent.run_async, "
                f"or give FunctionHook a sync function as well."
            )
        self.function(state)

    async def run_async(self, state: State) -> None:
        """Await the async function with ``state``, or call the sync one directly when there is none.

        The sync fallback runs on the event loop's thread: keep such hooks quick.

        Args:
            state: The run's live State.
        """
        if self.async_function is not None:
            await self.async_function(state)
        else:
            assert self.function is not None  # __init__ guarantees one of the two
            self.function(state)

    def to_dict(self) -> dict[str, Any]:
        """Serialize as ``{"type": ..., "init_parameters": {"function": path | None, "async_function": path | None}}``.

        Raises:
            SerializationError: When a function is a lambda, a closure or otherwise not importable by name.
        """
        return {
            "type": qualified_name(self),
            "init_parameters": {
                "function": serialize_callable(self.function) if self.function is not None else None,
                "async_function": (
                    serialize_callable(self.async_function) if self.async_function is not None else None
                ),
            },
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, allowed_modules: Iterable[str] | None = None) -> Self:
        """Rebuild from :meth:`to_dict` output (``data`` is not modified).

        A dotted path that names a function decorated with ``@hook`` resolves to the FunctionHook
        now bound to that name; its wrapped function is used.

        Args:
            data: The envelope.
            allowed_modules: ``None`` trusts every path; otherwise only paths under ``handrail`` or
                these module prefixes are imported.

        Returns:
            The rebuilt hook.

        Raises:
            SerializationError: When the envelope is malformed or a path cannot be imported.
        """
        params = init_parameters(data, cls)
        function = _load(params.get("function"), "function", allowed_modules)
        async_function = _load(params.get("async_function"), "async_function", allowed_modules)
        return cls(function=function, async_function=async_function)

    def __repr__(self) -> str:
        parts = []
        if self.function is not None:
            parts.append(f"function={_label(self.function)}")
        if self.async_function is not None:
            parts.append(f"async_function={_label(self.async_function)}")
        return f"FunctionHook({', '.join(parts)})"


def _load(path: Any, slot: str, allowed_modules: Iterable[str] | None) -> Any:
    if path is None:
        return None
    if not isinstance(path, str):
        raise SerializationError(f"FunctionHook: '{slot}' must be a dotted path or None, got {path!r}.")
    obj: Any = import_object(path, allowed_modules=allowed_modules)
    if isinstance(obj, FunctionHook):  # the name of a function decorated with @hook
        obj = getattr(obj, slot)
        if obj is None:
            kind = "a sync function" if slot == "function" else "an async function"
            raise SerializationError(f"FunctionHook: '{path}' names a hook without {kind}.")
    if not callable(obj):
        raise SerializationError(f"FunctionHook: '{path}' does not name a function.")
    check_file_callable(obj, path, allowed_modules)
    return obj


def hook(function: SyncHookFunction | AsyncHookFunction) -> FunctionHook:
    """Turn a function taking exactly one ``State`` parameter into a hook.

    Async functions (``async def``) become the hook's ``async_function``: such a hook runs only in
    async runs. Define the function at module level if the Agent is to be serialized.

    Args:
        function: ``def f(state: State) -> None`` or ``async def f(state: State) -> None``.

    Returns:
        A :class:`FunctionHook` wrapping it.

    Raises:
        ConfigurationError: When the function does not take exactly one parameter annotated
            ``State`` (the message names the function).
        ConfigurationTypeError: When ``function`` is not callable.

    Examples:
        >>> from handrail.dataclasses import ChatMessage
        >>> @hook
        ... def stop_on_goodbye(state: State) -> None:
        ...     last = state.data["messages"][-1]
        ...     if "goodbye" in (last.text or "").lower():
        ...         state.data["stop_run"] = "user_said_goodbye"
        >>> state = State()
        >>> state.data["messages"] = [ChatMessage.from_user("Thanks, goodbye!")]
        >>> stop_on_goodbye.run(state)
        >>> state.data["stop_run"]
        'user_said_goodbye'
    """
    if isinstance(function, FunctionHook) or not callable(function):
        raise ConfigurationTypeError(f"@hook decorates a function taking one State parameter, got {function!r}.")
    if inspect.iscoroutinefunction(function):
        return FunctionHook(async_function=function)
    return FunctionHook(function=typing.cast(SyncHookFunction, function))
