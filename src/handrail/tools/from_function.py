"""Build a :class:`~handrail.tools.tool.Tool` from a typed Python function.

:func:`create_tool_from_function` (and the :func:`tool` decorator) read the function's
name, docstring and type hints and generate the JSON Schema of its arguments with
pydantic, imported only when a tool is built so that ``import handrail`` stays cheap.
A Google-style docstring gives the tool's description (the text before its first section)
and the parameters' descriptions (its ``Args:`` section).

Parameters kept out of the schema (the model never fills them):

- ``*args`` and ``**kwargs``;
- parameters named as values of ``inputs_from_state`` (filled from State);
- parameters annotated ``State`` or ``Optional[State]`` (they receive the live State);
- parameters annotated :data:`~handrail.tools.tool.ToolCallId` (they receive the call id);
- parameters typed as a ``Callable`` (such as a ``streaming_callback``).
"""

from __future__ import annotations

import collections.abc
import functools
import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, overload

from handrail.dataclasses.state import State
from handrail.errors import ConfigurationError, SchemaGenerationError
from handrail.tools.tool import Tool, ToolCallId

__all__ = ["create_tool_from_function", "tool"]

# Keys whose values map names to schemas (the names are data, never titles to strip).
_NAMED_SCHEMAS = frozenset({"properties", "$defs", "definitions", "patternProperties", "dependentSchemas"})
# Keys whose values are instance data, not schemas.
_DATA_KEYS = frozenset({"default", "enum", "const", "examples"})
# Google-style docstring section headers (each alone on a line, followed by a colon).
_PARAM_SECTIONS = frozenset({"Args", "Arguments", "Parameters"})
_SECTIONS = _PARAM_SECTIONS | frozenset({"Returns", "Yields", "Raises", "Example", "Examples", "Note", "Notes"})
# ``name: text`` or ``name (type): text`` opening an entry of an ``Args:`` section.
_PARAM_ENTRY = re.compile(r"(?P<name>\*{0,2}\w+)\s*(?:\((?P<type>.*?)\))?\s*:\s*(?P<text>.*)")


def create_tool_from_function(
    function: Callable[..., Any],
    name: str | None = None,
    description: str | None = None,
    inputs_from_state: dict[str, str] | None = None,
    outputs_to_state: dict[str, dict[str, Any]] | None = None,
    outputs_to_string: dict[str, Any] | None = None,
) -> Tool:
    """Create a Tool from a function, with a JSON Schema generated from its type hints.

    ``Annotated[T, "text"]`` gives a property its description, ``Literal[...]`` becomes an
    ``enum``, a default becomes ``"default"`` (and the property is not ``required``), and
    ``T | None`` becomes ``anyOf``. Pydantic models and dataclasses are allowed (under
    ``$defs``). Every ``title`` pydantic writes is removed.

    The docstring is read as Google style. The tool's description is its text before the first
    section header (``Args:``, ``Arguments:``, ``Parameters:``, ``Returns:``, ``Yields:``,
    ``Raises:``, ``Example(s):`` or ``Note(s):``, alone on a line at any indentation), cleaned by
    ``inspect.cleandoc``; a docstring without such a header is used whole. The entries of its
    ``Args:`` (or ``Arguments:``/``Parameters:``) section, ``name: text`` or
    ``name (type): text`` with more-indented continuation lines joined by a space, become the
    properties' descriptions. An ``Annotated[T, "text"]`` description wins over the docstring's.

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

    Returns:
        The Tool.

    Raises:
        SchemaGenerationError: When a parameter has no type hint, the hints cannot be resolved,
            or pydantic cannot build a JSON Schema for a hint.
        ConfigurationError: When no name is given and the callable has no ``__name__``, or the
            Tool's own checks fail (an unknown ``inputs_from_state`` parameter, ...).
        ConfigurationTypeError: When the Tool's own type checks fail.

    Example:
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
    tool_name = name if name is not None else getattr(function, "__name__", None)
    if not isinstance(tool_name, str) or not tool_name:
        raise ConfigurationError(f"Cannot name a tool for {function!r}: it has no __name__; pass name=...")
    doc_description, param_docs = _parse_docstring(_docstring(function))
    if description is None:
        description = doc_description
    # A malformed inputs_from_state is reported by Tool's own checks below.
    from_state = inputs_from_state.values() if isinstance(inputs_from_state, Mapping) else ()
    parameters = _parameters_schema(function, tool_name, {p for p in from_state if isinstance(p, str)}, param_docs)
    is_async = inspect.iscoroutinefunction(function)
    return Tool(
        name=tool_name,
        description=description,
        parameters=parameters,
        function=None if is_async else function,
        async_function=function if is_async else None,
        inputs_from_state=inputs_from_state,
        outputs_to_state=outputs_to_state,
        outputs_to_string=outputs_to_string,
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
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a function into a Tool; usable bare (``@tool``) or with keywords (``@tool(name=...)``).

    The decorated name is bound to the Tool; the original function stays available as
    ``.function`` (or ``.async_function``). A decorated module-level function serializes by its
    dotted path, which imports back to the Tool.

    Args:
        function: The function, when used bare.
        name: See :func:`create_tool_from_function`.
        description: See :func:`create_tool_from_function`.
        inputs_from_state: See :func:`create_tool_from_function`.
        outputs_to_state: See :func:`create_tool_from_function`.
        outputs_to_string: See :func:`create_tool_from_function`.

    Returns:
        The Tool when used bare, else a decorator that returns the Tool.

    Raises:
        SchemaGenerationError: See :func:`create_tool_from_function`.

    Example:
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
        )

    if function is not None:
        return decorate(function)
    return decorate


def _docstring(function: Callable[..., Any]) -> str:
    """Return ``function``'s docstring (a partial's is its underlying function's), or ``""``."""
    while isinstance(function, functools.partial):
        function = function.func
    doc = getattr(function, "__doc__", None)
    return doc if isinstance(doc, str) else ""


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into ``(description, {parameter: description})``.

    The description is the cleaned text before the first section header; the parameters'
    descriptions come from the ``Args:``/``Arguments:``/``Parameters:`` sections.
    """
    lines = inspect.cleandoc(doc).splitlines()
    headers = [i for i, line in enumerate(lines) if line.strip().endswith(":") and line.strip()[:-1] in _SECTIONS]
    if not headers:
        return "\n".join(lines).rstrip(), {}
    description = "\n".join(lines[: headers[0]]).rstrip()
    param_docs: dict[str, str] = {}
    for index, start in enumerate(headers):
        if lines[start].strip()[:-1] in _PARAM_SECTIONS:
            end = headers[index + 1] if index + 1 < len(headers) else len(lines)
            # cleandoc dedents the first line on its own: a header there has no indent to compare.
            header_indent = -1 if start == 0 else _indent(lines[start])
            param_docs.update(_parse_args_section(header_indent, lines[start + 1 : end]))
    return description, param_docs


def _parse_args_section(header_indent: int, body: list[str]) -> dict[str, str]:
    """Parse the entries of an ``Args:`` section (``body`` ends at the next header)."""
    entry_indent: int | None = None
    entries: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in body:
        if not line.strip():
            continue
        indent = _indent(line)
        if indent <= header_indent:  # text back at the header's level ends the section
            break
        if entry_indent is None:
            entry_indent = indent
        if indent > entry_indent:
            if current is not None:
                current.append(line.strip())
            continue
        match = _PARAM_ENTRY.fullmatch(line.strip())
        current = None
        if match is not None:
            current = entries[match["name"].lstrip("*")] = [match["text"]]
    return {name: text for name, parts in entries.items() if (text := " ".join(p for p in parts if p))}


def _indent(line: str) -> int:
    """The number of leading whitespace characters of ``line``."""
    return len(line) - len(line.lstrip())


def _parameters_schema(
    function: Callable[..., Any], tool_name: str, from_state: set[str], param_docs: Mapping[str, str]
) -> dict[str, Any]:
    """Build the arguments' JSON Schema (``{"type": "object", "properties", "required"?, "$defs"?}``).

    ``param_docs`` gives parameters their descriptions where ``Annotated`` gives none.
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
    return _schema_from_fields(func_label, fields, param_docs)


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
    ordered: dict[str, Any] = {"type": "object", "properties": cleaned.pop("properties", {})}
    if "required" in cleaned:
        ordered["required"] = cleaned.pop("required")
    cleaned.pop("type", None)
    ordered.update(cleaned)
    return ordered


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
