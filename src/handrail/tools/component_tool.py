"""ComponentTool: a component (anything decorated with ``@component``) offered to the model as a tool.

The tool's JSON Schema is generated from the component's input sockets with pydantic (imported when a
ComponentTool is built, never when this module is imported). Calling the tool calls the component's
``run`` (``run_async`` in async runs when it has one) with the model's arguments and returns the dict
``run`` returned, which the ToolInvoker turns into text (or ``outputs_to_string`` does).
"""

from __future__ import annotations

import copy
import inspect
import re
import typing
from collections.abc import Callable, Mapping
from typing import Any

from handrail.core.component import MISSING, InputSocket, input_sockets, is_component
from handrail.core.pipeline import pipeline_of
from handrail.core.serialization import (
    deserialize_callable,
    init_parameters,
    object_from_dict,
    object_to_dict,
    qualified_name,
    serialize_callable,
)
from handrail.errors import ComponentError, ConfigurationError
from handrail.tools._conversion import is_plain_json
from handrail.tools._docstrings import docstring_of, parse_docstring
from handrail.tools._message_schema import message_schema
from handrail.tools.from_function import (
    _is_callable_type,
    _is_injected,
    _schema_from_fields,
    _unwrap_optional,
)
from handrail.tools.preview import Preview
from handrail.tools.tool import Tool, _map_handlers, read_preview
from handrail.tools.toolset import Toolset

__all__ = ["ComponentTool"]

_Converter = Callable[[Any], Any]


class ComponentTool(Tool):
    """A Tool that runs a component: the model's arguments become the component's inputs.

    Every input socket the model can fill goes into the JSON Schema: sockets named as values of
    ``inputs_from_state``, sockets typed ``State`` or ``ToolCallId`` (handrail supplies them) and
    ``Callable`` sockets (a ``streaming_callback``) are left out; a socket with a default is optional.
    Arguments for sockets whose type JSON cannot hold are converted before ``run`` is called: through the
    type's ``from_dict`` when it has one (``ChatMessage``; also in a list), else through pydantic. A value that
    is neither such an object nor a dict (a ``str`` given as ``messages``) fails the call, naming the argument.

    Args:
        component: A component instance.
        name: The tool's name; defaults to the component's class name in snake_case
            (``WeatherLookup`` → ``weather_lookup``).
        description: What the tool does; defaults to the class docstring's text before its first section,
            else ``"Runs the <Class> component."``.
        parameters: A JSON Schema to use instead of the generated one.
        outputs_to_string: How the result dict becomes text; see :class:`~handrail.tools.tool.Tool`.
        inputs_from_state: ``{state_key: socket}``: inputs read from State (kept out of the schema).
        outputs_to_state: ``{state_key: {"source": output_name, "handler": fn}}``; see
            :class:`~handrail.tools.tool.Tool`.
        preview: ``preview(arguments) -> Preview | str``, shown to the person deciding a call; see
            :class:`~handrail.tools.tool.Tool`.

    Raises:
        ConfigurationTypeError: When ``component`` is not a component instance.
        ConfigurationError: When ``inputs_from_state`` names a socket the component does not have, or
            the Tool's own checks fail (a bad name, an invalid schema).
        SchemaGenerationError: When pydantic cannot build a JSON Schema for a socket's type.

    Examples:
        >>> from typing import Any
        >>> from handrail.core.component import component
        >>> @component
        ... class Adder:
        ...     '''Add two numbers.'''
        ...
        ...     @component.output_types(total=int)
        ...     def run(self, a: int, b: int = 1) -> dict[str, Any]:
        ...         return {"total": a + b}
        >>> t = ComponentTool(Adder())
        >>> t.name, t.description, t.parameters["required"]
        ('adder', 'Add two numbers.', ['a'])
        >>> t.invoke(a=2, b=3)
        {'total': 5}
    """

    def __init__(
        self,
        component: Any,
        name: str | None = None,
        description: str | None = None,
        parameters: dict[str, Any] | None = None,
        *,
        outputs_to_string: dict[str, Any] | None = None,
        inputs_from_state: dict[str, str] | None = None,
        outputs_to_state: dict[str, dict[str, Any]] | None = None,
        preview: Callable[[dict[str, Any]], Preview | str] | None = None,
    ) -> None:
        _check_component(component)
        cls = type(component)
        tool_name = name if name is not None else _snake_case(cls.__name__)
        sockets = input_sockets(component)
        from_state = _state_fed_sockets(tool_name, sockets, inputs_from_state)
        fields = {
            n: s
            for n, s in sockets.items()
            if n not in from_state
            and not _is_injected(s.type)
            and not _is_callable_type(s.type)
            and not _holds_tools(s.type)
        }
        if parameters is None:
            run_description, param_docs = parse_docstring(docstring_of(cls.run))
            parameters = _socket_schema(cls.__name__, fields, param_docs)
            if run_description:  # the schema's top-level description, as Haystack's carries
                parameters["description"] = run_description
            self._unresolved_parameters: dict[str, Any] | None = None
        else:
            self._unresolved_parameters = copy.deepcopy(parameters)
        if description is None:
            description = parse_docstring(docstring_of(cls))[0] or f"Runs the {cls.__name__} component."
        self.component = component
        self._warmed = False
        converters = {n: c for n, s in fields.items() if (c := _converter(s.type)) is not None}
        super().__init__(
            name=tool_name,
            description=description,
            parameters=parameters,
            function=_sync_caller(component, converters, sockets),
            async_function=_async_caller(component, converters, sockets),
            outputs_to_string=outputs_to_string,
            inputs_from_state=inputs_from_state,
            outputs_to_state=outputs_to_state,
            preview=preview,
        )

    def warm_up(self) -> None:
        """Warm the component up (once), when it has a ``warm_up`` method."""
        if self._warmed:
            return
        warm = getattr(self.component, "warm_up", None)
        if callable(warm):
            warm()
        self._warmed = True

    def to_dict(self) -> dict[str, Any]:
        """Serialize to ``{"type", "init_parameters"}`` with the component nested as its own envelope.

        ``parameters`` is written only when it was given (a generated schema is generated again on load).

        Raises:
            SerializationError: When the component or a handler cannot be serialized.
        """
        data: dict[str, Any] = {
            "type": qualified_name(self),
            "init_parameters": {
                "component": object_to_dict(self.component),
                "name": self.name,
                "description": self.description,
                "parameters": copy.deepcopy(self._unresolved_parameters),
                "outputs_to_string": _map_handlers(self.outputs_to_string, serialize_callable),
                "inputs_from_state": dict(self.inputs_from_state) if self.inputs_from_state else None,
                "outputs_to_state": _map_handlers(self.outputs_to_state, serialize_callable),
            },
        }
        if self.preview is not None:
            data["init_parameters"]["preview"] = serialize_callable(self.preview)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ComponentTool:
        """Rebuild a ComponentTool from :meth:`to_dict` output (``data`` is not modified).

        Raises:
            SerializationError: When ``init_parameters`` is malformed or a path cannot be imported.
        """
        params = copy.deepcopy(init_parameters(data, cls))
        params["component"] = object_from_dict(params["component"])
        for field in ("outputs_to_string", "outputs_to_state"):
            params[field] = _map_handlers(params.get(field), deserialize_callable, field)
        if "preview" in params:
            params["preview"] = read_preview(params["preview"])
        return cls(**params)


def _check_component(component: Any) -> None:
    """Refuse what is not a component instance, and an instance a Pipeline holds (as Haystack does).

    Raises:
        ComponentError: A ``ValueError``, naming the object or the pipeline's name for the component.
    """
    if not is_component(component) or isinstance(component, type):
        raise ComponentError(
            f"ComponentTool needs a component instance (a class decorated with @component): {component!r:.100} "
            f"is not a component."
        )
    owner = pipeline_of(component)
    if owner is not None:
        held_as = next(n for n, c in owner.walk() if c is component)
        raise ComponentError(
            f"This {type(component).__name__} has been added to a pipeline (as '{held_as}') and can't be used to "
            f"create a ComponentTool: create the ComponentTool from an instance that is in no pipeline."
        )


def _holds_tools(tp: Any) -> bool:
    """True when ``tp`` names Tool or Toolset anywhere (a generator's ``tools`` input): a model cannot send those."""
    if isinstance(tp, type) and issubclass(tp, Tool | Toolset):
        return True
    return any(_holds_tools(arg) for arg in typing.get_args(tp) if not isinstance(arg, list | str))


def _snake_case(name: str) -> str:
    """``WeatherLookup`` → ``weather_lookup``, ``LLMRouter`` → ``llm_router``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def _state_fed_sockets(tool_name: str, sockets: Mapping[str, InputSocket], inputs_from_state: Any) -> set[str]:
    if not isinstance(inputs_from_state, Mapping):
        return set()  # None, or a malformed value the Tool's own checks report
    named = {p for p in inputs_from_state.values() if isinstance(p, str)}
    unknown = sorted(named - set(sockets))
    if unknown:
        raise ConfigurationError(
            f"Tool '{tool_name}': inputs_from_state names {unknown}, which are not inputs of the component "
            f"(its inputs: {sorted(sockets)})."
        )
    return named


def _from_dict_class(tp: Any) -> Any:
    """The class when ``tp`` is a class with a ``from_dict`` (``ChatMessage``), else None."""
    return tp if isinstance(tp, type) and callable(getattr(tp, "from_dict", None)) else None


def _element_class(tp: Any) -> Any:
    """The element class of ``list[C]`` / ``list[C] | None`` when C has a ``from_dict``, else None."""
    members = _unwrap_optional(tp)
    if len(members) != 1 or typing.get_origin(members[0]) is not list:
        return None
    args = typing.get_args(members[0])
    return _from_dict_class(args[0]) if len(args) == 1 else None


def _single_class(tp: Any) -> Any:
    members = _unwrap_optional(tp)
    return _from_dict_class(members[0]) if len(members) == 1 else None


def _schema_type(tp: Any) -> Any:
    """The type the schema is generated from: objects with ``from_dict`` are written as JSON objects.

    A ``ChatMessage`` (alone or in a list) is described field by field, as its ``from_dict`` reads it.
    """
    optional = type(None) in typing.get_args(tp)
    single, element = _single_class(tp), _element_class(tp)
    if single is None and element is None:
        return tp
    item = _object_type(single if single is not None else element)
    shaped = item if single is not None else list[item]  # type: ignore[valid-type]
    return shaped | None if optional else shaped


def _object_type(cls: type) -> Any:
    """``dict[str, Any]``, carrying the message schema when ``cls`` is ChatMessage."""
    from handrail.dataclasses.chat_message import ChatMessage

    if not issubclass(cls, ChatMessage):
        return dict[str, Any]
    import pydantic

    return typing.Annotated[dict[str, Any], pydantic.WithJsonSchema(message_schema())]


def _socket_schema(label: str, fields: Mapping[str, InputSocket], param_docs: Mapping[str, str]) -> dict[str, Any]:
    specs = {
        n: (_schema_type(s.type), inspect.Parameter.empty if s.default is MISSING else s.default)
        for n, s in fields.items()
    }
    return _schema_from_fields(label, specs, param_docs)


def _converter(tp: Any) -> _Converter | None:
    """How a JSON argument becomes a value of the socket type ``tp`` (None: pass it through)."""
    if is_plain_json(tp):
        return None
    single = _single_class(tp)
    if single is not None:
        return lambda v: _object_from(single, v)
    element = _element_class(tp)
    if element is not None:
        return lambda v: _list_from(element, v)
    import pydantic

    try:  # dataclasses, models and TypedDicts carry their own config: pydantic refuses one given here
        adapter = pydantic.TypeAdapter(tp)
    except (pydantic.PydanticUserError, TypeError):
        try:
            adapter = pydantic.TypeAdapter(tp, config=pydantic.ConfigDict(arbitrary_types_allowed=True))
        except (pydantic.PydanticUserError, TypeError):  # a type pydantic cannot validate: pass values through
            return None
    return adapter.validate_python


def _expected(cls: type, *, many: bool) -> str:
    """What a ``cls`` argument (or a list of them, when ``many``) must be, for an error message."""
    from handrail.dataclasses.chat_message import ChatMessage

    if issubclass(cls, ChatMessage):
        one = 'a ChatMessage or a dict like {"role": "user", "content": "..."}'
        return f"a list of messages, each {one}" if many else f"a message: {one}"
    one = f"a {cls.__name__} or a dict of its fields"
    return f"a list of {cls.__name__}, each {one}" if many else one


def _got(value: Any) -> str:
    """``the str 'hi'``: the type and a short repr of a refused value."""
    return f"the {type(value).__name__} {value!r:.60}"


def _object_from(cls: type, value: Any) -> Any:
    """``value`` as a ``cls``: read through ``cls.from_dict`` when it is a mapping, kept when it is one already.

    Raises:
        TypeError: When ``value`` is neither, naming what was expected.
    """
    if isinstance(value, cls):
        return value
    if isinstance(value, Mapping):
        return cls.from_dict(value)  # type: ignore[attr-defined]
    raise TypeError(f"expected {_expected(cls, many=False)}, got {_got(value)}")


def _list_from(cls: type, value: Any) -> list[Any]:
    """``value`` as a list of ``cls``, each item read as :func:`_object_from` reads one.

    A string is refused, not iterated: ``"hi"`` would become the messages ``"h"`` and ``"i"``.

    Raises:
        TypeError: When ``value`` is not a list, or an item is neither a ``cls`` nor a mapping.
    """
    if not isinstance(value, list):
        hint = ' (wrap a text as [{"role": "user", "content": ...}])' if isinstance(value, str) else ""
        raise TypeError(f"expected {_expected(cls, many=True)}, got {_got(value)}{hint}")
    items = []
    for index, item in enumerate(value):
        if not isinstance(item, cls | Mapping):
            raise TypeError(f"expected {_expected(cls, many=True)}, got {_got(item)} at index {index}")
        items.append(_object_from(cls, item))
    return items


def _convert(converters: Mapping[str, _Converter], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Convert the arguments that have a converter.

    Raises:
        ValueError: Naming the argument that could not be converted (the ToolInvoker reports it).
    """
    for name, convert in converters.items():
        if name in kwargs and kwargs[name] is not None:
            try:
                kwargs[name] = convert(kwargs[name])
            except (ValueError, TypeError, KeyError) as exc:  # pydantic's ValidationError is a ValueError
                raise ValueError(f"argument '{name}' could not be converted: {exc}") from exc
    return kwargs


def _describe(function: Callable[..., Any], component: Any, sockets: Mapping[str, InputSocket]) -> None:
    """Give the caller the sockets as its signature, so Tool reads State/ToolCallId/streaming roles from it."""
    params = [
        inspect.Parameter(
            n,
            inspect.Parameter.KEYWORD_ONLY,
            default=inspect.Parameter.empty if s.default is MISSING else s.default,
            annotation=s.type,
        )
        for n, s in sockets.items()
    ]
    function.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    function.__annotations__ = {n: s.type for n, s in sockets.items()}
    function.__name__ = function.__qualname__ = f"{type(component).__name__}.run"


def _sync_caller(
    component: Any, converters: Mapping[str, _Converter], sockets: Mapping[str, InputSocket]
) -> Callable[..., Any]:
    def call(**kwargs: Any) -> Any:
        return component.run(**_convert(converters, kwargs))

    _describe(call, component, sockets)
    return call


def _async_caller(
    component: Any, converters: Mapping[str, _Converter], sockets: Mapping[str, InputSocket]
) -> Callable[..., Any] | None:
    if not inspect.iscoroutinefunction(getattr(component, "run_async", None)):
        return None

    async def call(**kwargs: Any) -> Any:
        return await component.run_async(**_convert(converters, kwargs))

    _describe(call, component, sockets)
    return call
