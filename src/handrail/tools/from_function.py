"""Build a :class:`~handrail.tools.tool.Tool` from a typed Python function.

:func:`create_tool_from_function` (and the :func:`tool` decorator) read the function's
name, docstring and type hints and generate the JSON Schema of its arguments with
pydantic, imported only when a tool is built so that ``import handrail`` stays cheap.
The docstring (Google, reST/Sphinx or NumPy style, or a mix) gives the tool's description (the
text before its first section) and the parameters' descriptions (its parameter sections).

Parameters kept out of the schema (the model never fills them):

- ``*args`` and ``**kwargs``;
- parameters named as values of ``inputs_from_state`` (filled from State);
- parameters annotated ``State`` or ``Optional[State]`` (they receive the live State);
- parameters annotated :data:`~handrail.tools.tool.ToolCallId` (they receive the call id);
- parameters typed as a ``Callable`` (such as a ``streaming_callback``).

Arguments arrive as JSON values. A parameter whose type JSON cannot hold as is (a pydantic
model, a dataclass, an Enum, a tuple, a ``datetime``..., or a list, dict or ``Optional`` of
one) gets its value converted to that type by pydantic before the function runs: such a tool
is a :class:`FunctionTool`, which also does this conversion when rebuilt from its dict. A tool
whose parameters are all plain JSON types (``str``, ``int``, ``float``, ``bool``, ``None``,
``Any``, ``Literal`` of those, and lists, ``str``-keyed dicts and unions of them) is a plain
:class:`~handrail.tools.tool.Tool` that calls the function itself with the arguments untouched.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import inspect
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, overload

from handrail.dataclasses.state import State
from handrail.errors import ConfigurationError, ConfigurationTypeError, SchemaGenerationError
from handrail.tools._conversion import (
    accept_enum_values,
    converting,
    converting_async,
    is_plain_json,
    type_label,
    unconverted,
)
from handrail.tools._docstrings import docstring_of, parse_docstring
from handrail.tools.preview import Preview
from handrail.tools.tool import Tool, ToolCallId

__all__ = ["FunctionTool", "create_tool_from_function", "tool"]

# Keys whose values map names to schemas (the names are data, never titles to strip).
_NAMED_SCHEMAS = frozenset({"properties", "$defs", "definitions", "patternProperties", "dependentSchemas"})
# Keys whose values are instance data, not schemas.
_DATA_KEYS = frozenset({"default", "enum", "const", "examples"})


def create_tool_from_function(
    function: Callable[..., Any],
    name: str | None = None,
    description: str | None = None,
    inputs_from_state: dict[str, str] | None = None,
    outputs_to_state: dict[str, dict[str, Any]] | None = None,
    *,
    outputs_to_string: dict[str, Any] | None = None,
    preview: Callable[[dict[str, Any]], Preview | str] | None = None,
    idempotent: bool = False,
) -> Tool:
    """Create a Tool from a function, with a JSON Schema generated from its type hints.

    ``Annotated[T, "text"]`` gives a property its description, ``Literal[...]`` becomes an
    ``enum``, a default becomes ``"default"`` (and the property is not ``required``), and
    ``T | None`` becomes ``anyOf``. Pydantic models and dataclasses are allowed (under
    ``$defs``). Every ``title`` pydantic writes is removed.

    The arguments of parameters typed as pydantic models, dataclasses or other types JSON cannot
    hold as is (also inside lists, dicts and ``Optional``) are converted to those types before the
    function is called, and such a tool is a :class:`FunctionTool`; see that class. Otherwise the
    Tool calls ``function`` itself, with the arguments as they came.

    The docstring is read in Google, reST/Sphinx or NumPy style (or a mix of them). The tool's
    description is its text before the first section: a Google header (``Args:``, ``Returns:``,
    ``Raises:``...), a reST field (``:param x:``, ``:type x:``, ``:returns:``, ``:raises E:``...)
    or a NumPy header underlined with dashes (``Parameters``, ``Returns``...), cleaned by
    ``inspect.cleandoc``; a docstring without sections is used whole. The entries of its parameter
    sections (``Args:``, ``:param x:``, NumPy ``Parameters``), with more-indented continuation lines
    joined by a space, become the properties' descriptions. An ``Annotated[T, "text"]`` description
    wins over the docstring's. A dataclass or pydantic model used as a type is described the same way
    under ``$defs``: its docstring's field entries describe its properties.

    Args:
        function: A sync function, or an ``async def`` function (it becomes the Tool's
            ``async_function``). Every parameter that goes into the schema needs a type hint.
        name: The tool's name; defaults to ``function.__name__``.
        description: What the tool does; defaults to the docstring's text before its first
            section (see above), or ``""`` when it has none. An explicit ``""`` is kept; the
            parameters' descriptions still come from the docstring.
        inputs_from_state: ``{state_key: parameter}``; those parameters are filled from State
            and kept out of the schema.
        outputs_to_state: ``{state_key: {"source": result_key, "handler": fn}}``; see :class:`Tool`.
        outputs_to_string: How the result becomes text; see :class:`Tool`.
        preview: ``preview(arguments) -> Preview | str``: what a call would do, shown to the person deciding it
            (see :mod:`handrail.tools.preview`); not part of the schema or of what the model is sent.
        idempotent: The call may safely run twice (see :class:`~handrail.tools.tool.Tool`).

    Returns:
        The Tool: a :class:`FunctionTool` when some argument needs converting, else a plain Tool.

    Raises:
        SchemaGenerationError: When a parameter has no type hint, the hints cannot be resolved,
            or pydantic cannot build a JSON Schema (or a validator) for a hint.
        ConfigurationError: When the name given is empty, no name is given and the callable has
            no ``__name__``, or the Tool's own checks fail (an unknown ``inputs_from_state``
            parameter, ...).
        ConfigurationTypeError: When ``function`` is not callable, ``name`` is not a str, or the
            Tool's own type checks fail.

    Examples:
        >>> def get_weather(city: str) -> str:
        ...     '''Get the weather for a city.
        ...
        ...     Args:
        ...         city: The city's name.
        ...     '''
        ...     return f"Sunny in {city}"
        >>> t = create_tool_from_function(get_weather)
        >>> t.name, t.description, t.parameters["required"]
        ('get_weather', 'Get the weather for a city.', ['city'])
        >>> t.parameters["properties"]["city"]["description"]
        "The city's name."
    """
    if not callable(function):
        raise ConfigurationTypeError(f"Cannot make a tool of {function!r}: it is not callable; pass a function.")
    if name is not None and not isinstance(name, str):
        raise ConfigurationTypeError(f"A tool's name must be a str, got {type(name).__name__}: {name!r}.")
    if name == "":
        raise ConfigurationError(f"Cannot make a tool of {function!r}: the name given is empty; pass a non-empty name.")
    tool_name = name if name is not None else getattr(function, "__name__", None)
    if not isinstance(tool_name, str) or not tool_name:
        raise ConfigurationError(f"Cannot name a tool for {function!r}: it has no __name__; pass name=...")
    doc_description, param_docs = parse_docstring(docstring_of(function))
    if description is None:
        description = doc_description
    # A malformed inputs_from_state is reported by Tool's own checks below.
    from_state = inputs_from_state.values() if isinstance(inputs_from_state, Mapping) else ()
    fields = _schema_fields(function, tool_name, {p for p in from_state if isinstance(p, str)})
    parameters = _schema_from_fields(getattr(function, "__name__", tool_name), fields, param_docs)
    is_async = inspect.iscoroutinefunction(function)
    tool_class = Tool if all(is_plain_json(hint) for hint, _ in fields.values()) else FunctionTool
    return tool_class(
        name=tool_name,
        description=description,
        parameters=parameters,
        function=None if is_async else function,
        async_function=function if is_async else None,
        inputs_from_state=inputs_from_state,
        outputs_to_state=outputs_to_state,
        outputs_to_string=outputs_to_string,
        preview=preview,
        idempotent=idempotent,
    )


@overload
def tool(function: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    inputs_from_state: dict[str, str] | None = None,
    outputs_to_state: dict[str, dict[str, Any]] | None = None,
    outputs_to_string: dict[str, Any] | None = None,
    preview: Callable[[dict[str, Any]], Preview | str] | None = None,
    idempotent: bool = False,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    inputs_from_state: dict[str, str] | None = None,
    outputs_to_state: dict[str, dict[str, Any]] | None = None,
    outputs_to_string: dict[str, Any] | None = None,
    preview: Callable[[dict[str, Any]], Preview | str] | None = None,
    idempotent: bool = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a function into a Tool; usable bare (``@tool``) or with keywords (``@tool(name=...)``).

    The decorated name is bound to the Tool; the original function stays available as
    ``.function`` (or ``.async_function``); for a :class:`FunctionTool` that is a wrapper that
    converts the arguments first, with the original as its ``__wrapped__``. A decorated
    module-level function serializes by its dotted path, which imports back to the Tool.

    Args:
        function: The function, when used bare.
        name: See :func:`create_tool_from_function`.
        description: See :func:`create_tool_from_function`.
        inputs_from_state: See :func:`create_tool_from_function`.
        outputs_to_state: See :func:`create_tool_from_function`.
        outputs_to_string: See :func:`create_tool_from_function`.
        preview: See :func:`create_tool_from_function`.
        idempotent: See :func:`create_tool_from_function`.

    Returns:
        The Tool when used bare, else a decorator that returns the Tool.

    Raises:
        SchemaGenerationError: See :func:`create_tool_from_function`.

    Examples:
        >>> @tool(name="add")
        ... def add_numbers(a: int, b: int = 1) -> int:
        ...     '''Add two numbers.'''
        ...     return a + b
        >>> add_numbers.name, add_numbers.invoke(a=2)
        ('add', 3)
    """

    def decorate(func: Callable[..., Any]) -> Tool:
        return create_tool_from_function(
            func,
            name=name,
            description=description,
            inputs_from_state=inputs_from_state,
            outputs_to_state=outputs_to_state,
            outputs_to_string=outputs_to_string,
            preview=preview,
            idempotent=idempotent,
        )

    if function is not None:
        return decorate(function)
    return decorate


class FunctionTool(Tool):
    """A Tool whose function receives some arguments converted to its parameters' Python types.

    :func:`create_tool_from_function` makes one when a parameter the model fills is typed as a
    pydantic model, a dataclass or another type JSON cannot hold as is (an Enum, a tuple, a
    ``datetime``...), also inside lists, dicts and ``Optional``. Each such argument goes through a
    pydantic ``TypeAdapter`` of its parameter's type (built once, here), so the function receives a
    ``Point`` rather than ``{"x": 1, "y": 2}``; other arguments are passed through untouched.

    It is a Tool in every other way. :attr:`function` (or :attr:`async_function`) becomes a wrapper
    that converts and then calls the function given, which stays its ``__wrapped__`` and is what
    :meth:`~Tool.to_dict` writes as the dotted path; :meth:`~Tool.from_dict` rebuilds a
    FunctionTool, which sets the conversion up again from that function.

    An argument that cannot be converted (say a pydantic validator of the model refuses it) makes
    the function raise ``ValueError`` without running, so an agent answers the call with an error
    tool result.

    Examples:
        >>> @dataclasses.dataclass
        ... class Size:
        ...     width: int
        ...     height: int
        >>> def area(size: Size) -> int:
        ...     return size.width * size.height
        >>> t = create_tool_from_function(area)
        >>> type(t).__name__, t.invoke(size={"width": 3, "height": 4})
        ('FunctionTool', 12)
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        from_state = set((self.inputs_from_state or {}).values())
        if self.function is not None:
            original = unconverted(self.function)
            self.function = converting(original, _argument_adapters(original, self.name, from_state))
        if self.async_function is not None:
            original_async = unconverted(self.async_function)
            adapters = _argument_adapters(original_async, self.name, from_state)
            self.async_function = converting_async(original_async, adapters)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(
            unconverted(getattr(self, f.name)) == unconverted(getattr(other, f.name))
            for f in dataclasses.fields(self)
            if f.compare
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value, like Tool


def _argument_adapters(
    function: Callable[..., Any], tool_name: str, from_state: set[str]
) -> dict[str, tuple[Any, str]]:
    """Build ``{parameter: (pydantic TypeAdapter, type label)}`` for the parameters of non-plain-JSON types.

    Raises:
        SchemaGenerationError: When the hints cannot be read, or pydantic cannot validate a type.
    """
    import pydantic

    adapters: dict[str, tuple[Any, str]] = {}
    for name, (hint, _) in _schema_fields(function, tool_name, from_state).items():
        if is_plain_json(hint):
            continue
        base, _text = _split_description(hint)
        try:
            adapters[name] = (pydantic.TypeAdapter(accept_enum_values(base)), type_label(base))
        except (pydantic.PydanticUserError, TypeError, ValueError) as exc:
            raise SchemaGenerationError(
                f"Tool '{tool_name}': cannot build a validator for parameter '{name}' ({hint!r}): {exc}"
            ) from exc
    return adapters


def _schema_fields(function: Callable[..., Any], tool_name: str, from_state: set[str]) -> dict[str, tuple[Any, Any]]:
    """Return ``{parameter: (type hint, default or Parameter.empty)}`` for the parameters the model fills.

    Left out: ``*args``/``**kwargs``, the ``from_state`` parameters, State, ToolCallId and Callable ones.
    """
    func_label = getattr(function, "__name__", tool_name)
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as exc:
        raise SchemaGenerationError(f"Function '{func_label}': cannot read its signature: {exc}") from exc
    try:
        hints = typing.get_type_hints(_annotated_callable(function), include_extras=True)
    except (NameError, TypeError, AttributeError, SyntaxError) as exc:  # an unresolvable annotation
        raise SchemaGenerationError(
            f"Function '{func_label}': cannot resolve its type hints: {type(exc).__name__}: {exc}"
        ) from exc

    fields: dict[str, tuple[Any, Any]] = {}
    for param_name, param in signature.parameters.items():
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        if param_name in from_state:
            continue
        if param_name not in hints:
            raise SchemaGenerationError(f"Function '{func_label}': parameter '{param_name}' does not have a type hint.")
        hint = hints[param_name]
        if _is_injected(hint) or _is_callable_type(hint):
            continue
        if param.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise SchemaGenerationError(
                f"Function '{func_label}': parameter '{param_name}' is positional-only; tools are called "
                f"with keyword arguments."
            )
        fields[param_name] = (hint, param.default)
    return fields


def _annotated_callable(function: Callable[..., Any]) -> Any:
    """Return the object whose annotations describe ``function``'s parameters.

    That is the function itself, a partial's underlying function, a class's ``__init__`` or a
    callable instance's ``__call__``.
    """
    while isinstance(function, functools.partial):
        function = function.func
    if inspect.isclass(function):
        return function.__init__
    if inspect.isroutine(function):
        return function
    return type(function).__call__


def _schema_from_fields(
    func_label: str, fields: Mapping[str, tuple[Any, Any]], param_docs: Mapping[str, str]
) -> dict[str, Any]:
    """Run pydantic over ``{param: (hint, default or Parameter.empty)}`` and clean the result.

    A parameter without an ``Annotated`` description takes its text from ``param_docs``.
    """
    import pydantic
    from pydantic import Field

    model_fields: dict[str, Any] = {}
    for index, (param_name, (hint, default)) in enumerate(fields.items()):
        base, text = _split_description(hint)
        if text is None:
            text = param_docs.get(param_name)
        given = {} if default is inspect.Parameter.empty else {"default": default}
        # Positional python names avoid clashes with BaseModel attributes and leading underscores;
        # the alias is the real parameter name and is what the schema shows.
        model_fields[f"p{index}"] = (base, Field(alias=param_name, description=text, **given))
    try:
        model = pydantic.create_model(f"{func_label}_arguments", **model_fields)
        schema = model.model_json_schema(by_alias=True, schema_generator=_schema_generator())
    except (pydantic.PydanticUserError, TypeError, ValueError) as exc:
        raise SchemaGenerationError(
            f"Function '{func_label}': cannot build a JSON Schema from its type hints: {exc}"
        ) from exc
    cleaned = _strip_titles(schema)
    _describe_defs(cleaned.get("$defs"), [hint for hint, _ in fields.values()])
    ordered: dict[str, Any] = {"type": "object", "properties": cleaned.pop("properties", {})}
    if "required" in cleaned:
        ordered["required"] = cleaned.pop("required")
    cleaned.pop("type", None)
    ordered.update(cleaned)
    return ordered


def _describe_defs(defs: Any, hints: list[Any]) -> None:
    """Describe the ``$defs`` of dataclasses and pydantic models from their class docstrings, in place.

    A definition's description becomes its docstring's text without the field sections, and a field
    without a description takes its text from the docstring (any of the three styles).
    """
    if not isinstance(defs, dict):
        return
    for cls in _described_classes(hints, set()):
        entry = defs.get(cls.__name__)
        doc = docstring_of(cls)
        if not isinstance(entry, dict) or not doc:
            continue
        summary, field_docs = parse_docstring(doc)
        if entry.get("description") == inspect.cleandoc(doc):  # pydantic copied the whole docstring
            if summary:
                entry["description"] = summary
            else:
                del entry["description"]
        for field_name, prop in entry.get("properties", {}).items():
            if isinstance(prop, dict) and "description" not in prop and field_name in field_docs:
                prop["description"] = field_docs[field_name]


def _described_classes(hints: list[Any], seen: set[type]) -> list[type]:
    """The dataclasses and pydantic models in ``hints``, their fields' types and type arguments."""
    import pydantic

    found: list[type] = []
    for hint in hints:
        args = typing.get_args(hint)
        if args:
            found += _described_classes(list(args), seen)
        if not isinstance(hint, type) or hint in seen:
            continue
        if dataclasses.is_dataclass(hint):
            seen.add(hint)
            found.append(hint)
            found += _described_classes(list(_field_hints(hint).values()), seen)
        elif issubclass(hint, pydantic.BaseModel):
            seen.add(hint)
            found.append(hint)
            found += _described_classes([f.annotation for f in hint.model_fields.values()], seen)
    return found


def _field_hints(cls: type) -> dict[str, Any]:
    """A dataclass's resolved field types (``{}`` when they cannot be resolved)."""
    try:
        return typing.get_type_hints(cls)
    except (NameError, TypeError, AttributeError, SyntaxError):
        return {}


@functools.lru_cache(maxsize=1)
def _schema_generator() -> type[Any]:
    """A pydantic schema generator that silently drops defaults that cannot be written as JSON."""
    from pydantic.json_schema import GenerateJsonSchema, JsonSchemaWarningKind

    class _QuietDefaults(GenerateJsonSchema):
        def emit_warning(self, kind: JsonSchemaWarningKind, detail: str) -> None:
            if kind != "non-serializable-default":
                super().emit_warning(kind, detail)

    return _QuietDefaults


def _split_description(hint: Any) -> tuple[Any, str | None]:
    """Split ``Annotated[T, "text", *meta]`` into ``(Annotated[T, *meta] or T, "text")``."""
    if typing.get_origin(hint) is not typing.Annotated:
        return hint, None
    base, *metadata = typing.get_args(hint)
    texts = [m for m in metadata if isinstance(m, str)]
    rest = [m for m in metadata if not isinstance(m, str)]
    stripped = typing.Annotated[(base, *rest)] if rest else base
    return stripped, (texts[0] if texts else None)


def _unwrap_optional(hint: Any) -> list[Any]:
    """Return the members of a union (``None`` left out), or ``[hint]``; ``Annotated`` is peeled."""
    if typing.get_origin(hint) is typing.Annotated:
        hint = typing.get_args(hint)[0]
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and args:
        return [a for a in args if a is not type(None)]
    return [hint]


def _is_injected(hint: Any) -> bool:
    """True for ``State``/``Optional[State]`` and ``ToolCallId`` (values handrail supplies)."""
    members = _unwrap_optional(hint)
    return len(members) == 1 and (members[0] is State or members[0] is ToolCallId)


def _is_callable_type(hint: Any) -> bool:
    """True for ``Callable``/``Callable[..., X]`` and their ``Optional`` forms."""
    callable_type = collections.abc.Callable
    return any(m is callable_type or typing.get_origin(m) is callable_type for m in _unwrap_optional(hint))


def _strip_titles(node: Any) -> Any:
    """Return a copy of a JSON Schema without ``title`` keywords (property names are kept)."""
    if isinstance(node, list):
        return [_strip_titles(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in _DATA_KEYS:
            out[key] = value
        elif key in _NAMED_SCHEMAS and isinstance(value, dict):
            out[key] = {name: _strip_titles(schema) for name, schema in value.items()}
        else:
            out[key] = _strip_titles(value)
    return out
