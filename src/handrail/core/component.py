"""The component contract: ``@component``, input and output sockets, and socket type compatibility.

A component is a class whose ``run`` method takes named inputs and returns a dict of named outputs.
``@component`` reads the inputs from ``run``'s signature and the outputs from
``@component.output_types(...)``; a :class:`~handrail.core.pipeline.Pipeline` connects one component's
output socket to another's input socket when :func:`types_compatible` says their types fit.

>>> from typing import Any
>>> @component
... class Upper:
...     def __init__(self, suffix: str = "!") -> None:
...         self.suffix = suffix
...
...     @component.output_types(text=str)
...     def run(self, text: str, times: int = 1) -> dict[str, Any]:
...         return {"text": (text.upper() + self.suffix) * times}
>>> sorted(input_sockets(Upper()))
['text', 'times']
>>> input_sockets(Upper())["text"].is_mandatory
True
>>> Upper(suffix="?").to_dict()
{'type': 'handrail.core.component.Upper', 'init_parameters': {'suffix': '?'}}
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from handrail.core._sockets import MISSING, InputSocket, OutputSocket, types_compatible
from handrail.core.serialization import default_to_dict, init_parameters, object_from_dict, object_to_dict
from handrail.errors import ComponentError, SerializationError

__all__ = [
    "MISSING",
    "ComponentError",
    "InputSocket",
    "OutputSocket",
    "component",
    "input_sockets",
    "is_component",
    "output_sockets",
    "types_compatible",
]

_T = TypeVar("_T")
_F = TypeVar("_F", bound=Callable[..., Any])

_MARK = "__handrail_component__"
_INPUTS = "__handrail_input_sockets__"
_OUTPUTS = "__handrail_output_sockets__"
_DYNAMIC_INPUTS = "__handrail_dynamic_inputs__"
_DYNAMIC_OUTPUTS = "__handrail_dynamic_outputs__"
_OUTPUT_TYPES = "__handrail_output_types__"
_INIT_PARAMS = "__handrail_init_parameters__"
_ACCEPTS_KWARGS = "__handrail_run_accepts_kwargs__"


class _ComponentDecorator:
    """The ``component`` object: a class decorator plus the socket helpers hung on it."""

    def __call__(self, cls: type[_T]) -> type[_T]:
        """Turn ``cls`` into a component (see the module docstring).

        Args:
            cls: A class with a ``run`` method.

        Returns:
            The same class, marked, with its sockets recorded and default ``to_dict``/``from_dict`` added
            when it has none.

        Raises:
            ComponentError: When ``cls`` is not a class, has no callable ``run``, ``run`` takes a positional-only
                parameter, a type hint cannot be resolved, or ``run_async`` is not a coroutine function with
                ``run``'s parameters.
        """
        if not isinstance(cls, type):
            raise ComponentError(f"@component decorates classes, got {cls!r}.")
        run = getattr(cls, "run", None)
        if not callable(run):
            raise ComponentError(f"Component {cls.__name__} has no run() method.")
        inputs, accepts_kwargs = _signature_inputs(cls, run)
        _check_run_async(cls, run)
        declared = getattr(run, _OUTPUT_TYPES, None)
        outputs = {n: OutputSocket(n, t) for n, t in declared.items()} if declared is not None else {}
        setattr(cls, _INPUTS, inputs)
        setattr(cls, _OUTPUTS, outputs)
        setattr(cls, _ACCEPTS_KWARGS, accepts_kwargs)
        setattr(cls, _MARK, True)
        _wrap_init(cls)
        if not hasattr(cls, "to_dict"):
            cls.to_dict = _default_to_dict  # type: ignore[attr-defined]
        if not hasattr(cls, "from_dict"):
            cls.from_dict = classmethod(_default_from_dict)  # type: ignore[attr-defined]
        return cls

    @staticmethod
    def output_types(**types: Any) -> Callable[[_F], _F]:
        """Declare the output sockets of ``run`` (use as a decorator on ``run``).

        Args:
            **types: One keyword per output: its name and type, e.g. ``replies=list[ChatMessage]``.

        Returns:
            A decorator that records the types on the function and returns it unchanged.
        """

        def decorate(function: _F) -> _F:
            setattr(function, _OUTPUT_TYPES, dict(types))
            return function

        return decorate

    @staticmethod
    def set_input_types(instance: Any, **types: Any) -> None:
        """Give one instance its own input sockets (all mandatory), replacing the signature-derived ones.

        Names that are not parameters of ``run`` reach it through its ``**kwargs``.

        Args:
            instance: A component instance (usually ``self`` inside ``__init__``).
            **types: One keyword per input: its name and type.

        Raises:
            ComponentError: When ``instance`` is not a component, or a name is not a parameter of ``run``
                and ``run`` takes no ``**kwargs``.
        """
        _check_dynamic_names(instance, types)
        vars(instance)[_DYNAMIC_INPUTS] = {n: InputSocket(n, t) for n, t in types.items()}

    @staticmethod
    def set_input_type(instance: Any, name: str, type: Any, default: Any = MISSING) -> None:
        """Add (or replace) one input socket of one instance.

        The first call starts from the sockets the instance has now (the signature-derived ones unless
        :meth:`set_input_types` was called), so ``run``'s own parameters stay inputs.

        Args:
            instance: A component instance.
            name: The socket name.
            type: The socket type.
            default: The default; leave it out for a mandatory input.

        Raises:
            ComponentError: As :meth:`set_input_types`.
        """
        _check_dynamic_names(instance, {name: type})
        current = dict(input_sockets(instance))
        current[name] = InputSocket(name, type, default)
        vars(instance)[_DYNAMIC_INPUTS] = current

    @staticmethod
    def set_output_types(instance: Any, **types: Any) -> None:
        """Give one instance its own output sockets, replacing those declared on ``run``.

        Args:
            instance: A component instance.
            **types: One keyword per output: its name and type. None at all declares that the instance has
                no outputs (a SuperComponent of an empty pipeline); a component that declares no outputs in
                either way is refused when built.

        Raises:
            ComponentError: When ``instance`` is not a component.
        """
        _require_component(instance)
        vars(instance)[_DYNAMIC_OUTPUTS] = {n: OutputSocket(n, t) for n, t in types.items()}


component = _ComponentDecorator()
"""Class decorator making a component; also ``component.output_types``, ``set_input_types``,
``set_input_type`` and ``set_output_types``."""


def is_component(obj: Any) -> bool:
    """Tell whether ``obj`` is a component class or an instance of one.

    Args:
        obj: Anything.

    Returns:
        True for classes decorated with ``@component`` (and their subclasses) and their instances.
    """
    return getattr(obj, _MARK, False) is True


def input_sockets(obj: Any) -> dict[str, InputSocket]:
    """Return the input sockets of a component instance (or class), by name.

    Args:
        obj: A component instance or class.

    Returns:
        A new dict ``{name: InputSocket}``: the instance's dynamic sockets when set, else ``run``'s parameters.

    Raises:
        ComponentError: When ``obj`` is not a component.
    """
    _require_component(obj)
    dynamic = None if isinstance(obj, type) else vars(obj).get(_DYNAMIC_INPUTS)
    return dict(dynamic if dynamic is not None else getattr(obj, _INPUTS))


def output_sockets(obj: Any) -> dict[str, OutputSocket]:
    """Return the output sockets of a component instance (or class), by name.

    Args:
        obj: A component instance or class.

    Returns:
        A new dict ``{name: OutputSocket}``: the instance's dynamic sockets when set, else ``run``'s declared ones.

    Raises:
        ComponentError: When ``obj`` is not a component.
    """
    _require_component(obj)
    dynamic = None if isinstance(obj, type) else vars(obj).get(_DYNAMIC_OUTPUTS)
    return dict(dynamic if dynamic is not None else getattr(obj, _OUTPUTS))


def _require_component(obj: Any) -> None:
    if not is_component(obj):
        raise ComponentError(
            f"{type(obj).__name__ if not isinstance(obj, type) else obj.__name__} is not a component: "
            f"decorate its class with @component."
        )


def _check_dynamic_names(instance: Any, types: Mapping[str, Any]) -> None:
    _require_component(instance)
    if isinstance(instance, type):
        raise ComponentError(f"Dynamic sockets are set on an instance, not on the class {instance.__name__}.")
    if getattr(instance, _ACCEPTS_KWARGS):
        return
    params = inspect.signature(type(instance).run).parameters
    unknown = sorted(set(types) - set(params))
    if unknown:
        raise ComponentError(
            f"Cannot add input sockets {unknown} to {type(instance).__name__}: its run() has no such parameters "
            f"and takes no **kwargs."
        )


def _signature_inputs(cls: type, run: Callable[..., Any]) -> tuple[dict[str, InputSocket], bool]:
    try:
        hints = typing.get_type_hints(run)
    except Exception as exc:  # NameError for unresolvable forward references, TypeError for bad annotations
        raise ComponentError(
            f"Cannot resolve the type hints of {cls.__name__}.run: {exc}. Import the types it names at runtime."
        ) from exc
    inputs: dict[str, InputSocket] = {}
    accepts_kwargs = False
    for index, param in enumerate(inspect.signature(run).parameters.values()):
        if index == 0 and param.name in ("self", "cls"):
            continue
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            accepts_kwargs = True
            continue
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            continue
        if param.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise ComponentError(
                f"{cls.__name__}.run takes '{param.name}' positionally only; inputs are passed by keyword."
            )
        default = MISSING if param.default is inspect.Parameter.empty else param.default
        inputs[param.name] = InputSocket(param.name, hints.get(param.name, Any), default)
    return inputs, accepts_kwargs


def _check_run_async(cls: type, run: Callable[..., Any]) -> None:
    run_async = getattr(cls, "run_async", None)
    if run_async is None:
        return
    if not inspect.iscoroutinefunction(run_async):
        raise ComponentError(f"{cls.__name__}.run_async must be an 'async def' coroutine function.")
    if list(inspect.signature(run_async).parameters) != list(inspect.signature(run).parameters):
        raise ComponentError(
            f"{cls.__name__}.run_async must take the same parameters as run: "
            f"{list(inspect.signature(run).parameters)}, got {list(inspect.signature(run_async).parameters)}."
        )


def _wrap_init(cls: type) -> None:
    original: Callable[..., None] = cls.__init__  # type: ignore[misc]

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        outermost = getattr(type(self), "__init__", None) is __init__ and _INIT_PARAMS not in vars(self)
        if outermost:  # mark first: a decorated base class's __init__ called through super() records nothing
            vars(self)[_INIT_PARAMS] = {}
        original(self, *args, **kwargs)
        if not outermost:
            return
        if getattr(type(self), "to_dict", None) is _default_to_dict:  # only the default to_dict reads them
            vars(self)[_INIT_PARAMS] = _bound_init_parameters(original, self, args, kwargs)
        else:
            del vars(self)[_INIT_PARAMS]
        if not output_sockets(self) and vars(self).get(_DYNAMIC_OUTPUTS) is None:  # none declared: forgotten
            raise ComponentError(
                f"Component {type(self).__name__} has no output sockets: decorate run with "
                f"@component.output_types(...) or call component.set_output_types(self, ...) in __init__."
            )

    cls.__init__ = __init__  # type: ignore[misc]


def _bound_init_parameters(init: Callable[..., Any], instance: Any, args: Any, kwargs: Any) -> dict[str, Any]:
    try:
        bound = inspect.signature(init).bind(instance, *args, **kwargs)
    except TypeError:  # pragma: no cover - the call above already succeeded with these arguments
        return dict(kwargs)
    bound.apply_defaults()
    params: dict[str, Any] = {}
    for index, (name, value) in enumerate(bound.arguments.items()):
        kind = bound.signature.parameters[name].kind
        if index == 0 or kind is inspect.Parameter.VAR_POSITIONAL:
            continue
        if kind is inspect.Parameter.VAR_KEYWORD:
            params.update(value)
        else:
            params[name] = value
    return params


def _default_to_dict(self: Any) -> dict[str, Any]:
    """Serialize this component to ``{"type", "init_parameters"}`` from the arguments ``__init__`` received.

    Returns:
        The envelope; nested objects with a ``to_dict`` are written as their own envelopes.

    Raises:
        SerializationError: When an init argument is neither JSON-compatible nor has a ``to_dict``, or the class
            is defined inside a function (it could not be imported back).
    """
    recorded = vars(self).get(_INIT_PARAMS, {})
    name = type(self).__name__
    return default_to_dict(self, **{k: _plain(v, f"{name}.{k}") for k, v in recorded.items()})


def _plain(value: Any, where: str) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _plain(v, f"{where}.{k}") for k, v in value.items()}
    if callable(getattr(value, "to_dict", None)) and not isinstance(value, type):
        return object_to_dict(value)
    raise SerializationError(
        f"Cannot serialize {where}: a {type(value).__name__} is not JSON-compatible and has no to_dict(). "
        f"Give the component its own to_dict/from_dict."
    )


def _default_from_dict(cls: type[_T], data: dict[str, Any]) -> _T:
    """Rebuild a component from the envelope its default ``to_dict`` wrote (``data`` is not modified).

    Args:
        cls: The component class (bound by ``classmethod``).
        data: ``{"type": ..., "init_parameters": {...}}``.

    Returns:
        ``cls(**init_parameters)``, nested ``{type, init_parameters}`` dicts rebuilt as objects first.

    Raises:
        SerializationError: When the envelope is malformed or a nested type cannot be imported.
    """
    params = init_parameters(data, cls)
    return cls(**{k: _rebuild(v) for k, v in params.items()})


def _rebuild(value: Any) -> Any:
    if isinstance(value, list):
        return [_rebuild(v) for v in value]
    if isinstance(value, dict):
        if set(value) == {"type", "init_parameters"} and isinstance(value["type"], str):
            return object_from_dict(value)
        return {k: _rebuild(v) for k, v in value.items()}
    return value
