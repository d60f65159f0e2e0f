"""The Tool: a function the model may call, described by a JSON Schema."""

from __future__ import annotations

import copy
import inspect
import typing
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NewType

from handrail.core._haystack_types import envelope_parameters
from handrail.core._tool_threads import to_tool_thread
from handrail.core.serialization import (
    active_allowlist,
    check_file_callable,
    check_pattern_from_file,
    deserialize_callable,
    haystack_to_handrail,
    import_object,
    init_parameters,
    qualified_name,
    reading,
    serialize_callable,
)
from handrail.dataclasses.state import State
from handrail.errors import (
    ConfigurationError,
    ConfigurationTypeError,
    SerializationError,
    ToolInvocationError,
)
from handrail.tools._names import check_tool_name
from handrail.tools.preview import Preview, as_preview

__all__ = ["Tool", "ToolCallId", "signature_roles"]

ToolCallId = NewType("ToolCallId", str)
"""Annotate a tool parameter with this type to receive the call's id (an idempotency key).

The parameter is kept out of the tool's JSON Schema; a retried call receives the same id.
"""


def _annotation_is(annotation: Any, target: Any) -> bool:
    if annotation is target:
        return True
    if typing.get_origin(annotation) is typing.Annotated:
        return _annotation_is(typing.get_args(annotation)[0], target)
    args = typing.get_args(annotation)
    if args and type(None) in args:  # Optional[X]
        return any(a is target for a in args)
    return False


@dataclass(frozen=True, slots=True)
class SignatureRoles:
    """What a tool function's signature declares beyond its JSON arguments."""

    parameters: frozenset[str]
    """Names of every parameter."""
    accepts_kwargs: bool
    """True when the function takes ``**kwargs``."""
    state_param: str | None
    """The parameter annotated ``State`` (receives the live State), if any."""
    call_id_param: str | None
    """The parameter annotated ``ToolCallId`` (receives the call id), if any."""
    streaming_param: bool
    """True when the function declares a ``streaming_callback`` parameter."""


def signature_roles(function: Callable[..., Any]) -> SignatureRoles:
    """Read which parameters of ``function`` are State, ToolCallId or ``**kwargs``.

    Args:
        function: A sync or async callable.

    Returns:
        The :class:`SignatureRoles` of its signature.
    """
    try:
        sig = inspect.signature(function)
    except (TypeError, ValueError):
        return SignatureRoles(frozenset(), True, None, None, False)
    try:
        hints = typing.get_type_hints(function, include_extras=True)
    except Exception:  # unresolvable forward references: fall back to raw annotations
        hints = {n: p.annotation for n, p in sig.parameters.items()}
    state_param = call_id_param = None
    for name in sig.parameters:
        hint = hints.get(name)
        if hint is None:
            continue
        if _annotation_is(hint, State):
            state_param = name
        elif _annotation_is(hint, ToolCallId):
            call_id_param = name
    return SignatureRoles(
        parameters=frozenset(sig.parameters),
        accepts_kwargs=any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()),
        state_param=state_param,
        call_id_param=call_id_param,
        streaming_param="streaming_callback" in sig.parameters,
    )


def _check_outputs_to_state(config: Any) -> None:
    if not isinstance(config, Mapping):
        raise ConfigurationTypeError(f"outputs_to_state must be a dict, got {type(config).__name__}.")
    for key, entry in config.items():
        if not isinstance(entry, Mapping):
            raise ConfigurationTypeError(f"outputs_to_state['{key}'] must be a dict, got {type(entry).__name__}.")
        unknown = set(entry) - {"source", "handler"}
        if unknown:
            raise ConfigurationError(f"outputs_to_state['{key}'] has unknown keys {sorted(unknown)}.")
        if "source" in entry and not isinstance(entry["source"], str):
            raise ConfigurationError(f"outputs_to_state['{key}']['source'] must be a str.")
        if entry.get("handler") is not None and not callable(entry["handler"]):
            raise ConfigurationError(f"outputs_to_state['{key}']['handler'] must be callable.")


def _check_outputs_to_string(config: Any) -> None:
    if not isinstance(config, Mapping):
        raise ConfigurationTypeError(f"outputs_to_string must be a dict, got {type(config).__name__}.")
    single_keys = {"source", "handler", "raw_result"}
    if not config or (set(config) <= single_keys and not any(isinstance(v, Mapping) for v in config.values())):
        if "source" in config and not isinstance(config["source"], str):
            raise ConfigurationError("outputs_to_string['source'] must be a str.")
        if config.get("handler") is not None and not callable(config["handler"]):
            raise ConfigurationError("outputs_to_string['handler'] must be callable.")
        if "raw_result" in config and not isinstance(config["raw_result"], bool):
            raise ConfigurationError("outputs_to_string['raw_result'] must be a bool.")
        return
    for key, entry in config.items():
        if not isinstance(entry, Mapping):
            raise ConfigurationTypeError(
                f"outputs_to_string['{key}'] must be a dict with 'source' (and optional 'handler'); "
                f"a single config may only use the keys {sorted(single_keys)}."
            )
        if not isinstance(entry.get("source"), str):
            raise ConfigurationError(f"outputs_to_string['{key}'] needs a str 'source'.")
        if set(entry) - {"source", "handler"}:
            raise ConfigurationError(f"outputs_to_string['{key}'] may only have 'source' and 'handler'.")
        if entry.get("handler") is not None and not callable(entry["handler"]):
            raise ConfigurationError(f"outputs_to_string['{key}']['handler'] must be callable.")


def _map_handlers(
    config: Mapping[str, Any] | None, convert: Callable[[Any], Any], field: str | None = None
) -> dict[str, Any] | None:
    """Apply ``convert`` to every ``handler`` of a (single or multi) output config (a non-mapping is returned as is).

    Args:
        config: The config.
        convert: :func:`serialize_callable` or :func:`deserialize_callable`.
        field: When reading, the config's field (``outputs_to_state``): an error names the handler's path in it
            (``outputs_to_state['a'].handler``).
    """
    if not isinstance(config, Mapping):  # None, or a value of the wrong type the Tool's own check names
        return config
    out: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, Mapping):  # a multi-config entry (its key may itself be named "handler")
            where = None if field is None else f"{field}[{key!r}].handler"
            out[key] = {k: (_convert(convert, v, where) if k == "handler" and v is not None else v)
                        for k, v in value.items()}  # fmt: skip
        elif key == "handler" and value is not None:
            out[key] = _convert(convert, value, None if field is None else f"{field}.handler")
        else:
            out[key] = value
    return out


def _convert(convert: Callable[[Any], Any], value: Any, where: str | None) -> Any:
    with reading(where):
        return convert(value)


@dataclass
class Tool:
    """A function the model may call.

    Args:
        name: The tool's name, which the model calls it by: any readable text, spaces and
            non-ASCII letters included (``"Addition tool"``); not blank, no control characters. A
            generator whose API needs ``[a-zA-Z0-9_-]{1,64}`` sends a mapped name and maps the
            model's calls back to this one.
        description: What the tool does, shown to the model.
        parameters: A JSON Schema (Draft 2020-12) of the arguments, checked at construction.
        function: The sync function to run (called with the arguments as keyword arguments).
        outputs_to_string: How the result becomes text: a single config
            ``{"source": key, "handler": fn, "raw_result": bool}`` or a multi config
            ``{name: {"source": key, "handler": fn}}``. With ``raw_result`` the result (after ``source`` and
            ``handler``) goes to the model as it is: a ``str``, or a list of ``TextContent`` / ``ImageContent``
            parts (a tool that returns images, as in Haystack 2.23); anything else is an error result.
        inputs_from_state: ``{state_key: parameter}``: values read from State into parameters the
            model did not fill. Every parameter must exist in the function's signature. A value the
            model sends for such a parameter wins, as in Haystack ("LLM args beat State"), so this is
            not a way to keep a value out of the model's reach: check it in the tool or in a
            ``before_tool`` hook.
        outputs_to_state: ``{state_key: {"source": result_key, "handler": fn}}``: values written to
            State from a dict result (no source = the whole result).
        async_function: A coroutine function used by async runs (sync runs use ``function``).
        preview: ``preview(arguments) -> Preview | str``: what a call would do, for the person deciding it (see
            :mod:`handrail.tools.preview`); a sync function that only computes. Not sent to the model.
        idempotent: True when running the same call twice has the effect of running it once (a read, a PUT,
            an API call keyed by the call's id). A durable driver may then run a call again whose outcome is
            unknown (its worker died while it ran); a tool taking a ``ToolCallId`` counts as idempotent too. Not
            sent to the model.

    Raises:
        ConfigurationError: For a blank name or one with control characters, an invalid JSON Schema,
            an ``inputs_from_state`` naming a parameter the function does not have, or a malformed
            output config.
        ConfigurationTypeError: When the name is not a str, no function is given, a function has the
            wrong kind, or ``preview`` is not a sync callable.

    Examples:
        >>> t = Tool(name="echo", description="Echo.", function=lambda text: text,
        ...          parameters={"type": "object", "properties": {"text": {"type": "string"}}})
        >>> t.invoke(text="hi")
        'hi'
    """

    name: str
    description: str
    parameters: dict[str, Any]
    function: Callable[..., Any] | None = None
    outputs_to_string: dict[str, Any] | None = None
    inputs_from_state: dict[str, str] | None = None
    outputs_to_state: dict[str, dict[str, Any]] | None = None
    async_function: Callable[..., Awaitable[Any]] | None = field(default=None, kw_only=True)
    preview: Callable[[dict[str, Any]], Preview | str] | None = field(default=None, kw_only=True)
    idempotent: bool = field(default=False, kw_only=True)
    _validator: Any = field(default=None, init=False, repr=False, compare=False)
    _roles: SignatureRoles = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_tool_name(self.name)
        if not isinstance(self.description, str):
            raise ConfigurationTypeError(f"Tool '{self.name}': description must be a str.")
        self._check_functions()
        self._check_schema()
        primary = self.function or self.async_function
        assert primary is not None
        self._roles = signature_roles(primary)
        if self.inputs_from_state is not None:
            self._check_inputs_from_state(self.inputs_from_state)
        if self.outputs_to_state is not None:
            _check_outputs_to_state(self.outputs_to_state)
        if self.outputs_to_string is not None:
            _check_outputs_to_string(self.outputs_to_string)

    def _check_functions(self) -> None:
        if self.function is None and self.async_function is None:
            raise ConfigurationTypeError(f"Tool '{self.name}' requires at least one of `function` or `async_function`.")
        if self.function is not None:
            if not callable(self.function):
                raise ConfigurationTypeError(f"Tool '{self.name}': function must be callable.")
            if inspect.iscoroutinefunction(self.function):
                raise ConfigurationTypeError(
                    f"Tool '{self.name}': `function` is a coroutine function; pass it as `async_function`."
                )
        if self.async_function is not None and not inspect.iscoroutinefunction(self.async_function):
            raise ConfigurationTypeError(f"Tool '{self.name}': `async_function` must be a coroutine function.")
        if type(self.idempotent) is not bool:
            raise ConfigurationTypeError(
                f"Tool '{self.name}': idempotent must be True or False, got {self.idempotent!r}."
            )
        if self.preview is not None and (not callable(self.preview) or inspect.iscoroutinefunction(self.preview)):
            raise ConfigurationTypeError(
                f"Tool '{self.name}': `preview` must be a sync function preview(arguments) -> Preview | str, got "
                f"{type(self.preview).__name__}."
            )

    def _check_schema(self) -> None:
        if not isinstance(self.parameters, Mapping):
            raise ConfigurationTypeError(f"Tool '{self.name}': parameters must be a JSON Schema dict.")
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError

        try:
            Draft202012Validator.check_schema(self.parameters)
        except SchemaError as exc:
            raise ConfigurationError(
                f"Tool '{self.name}': the provided parameters do not define a valid JSON Schema: {exc.message}"
            ) from exc
        if self.parameters.get("type") != "object":
            raise ConfigurationError(
                f"Tool '{self.name}': parameters must be a JSON Schema of type 'object' (the arguments are a JSON "
                f"object), got type {self.parameters.get('type')!r}."
            )
        from handrail.tools._validation import reference_problem

        problem = reference_problem(self.parameters)
        if problem is not None:
            raise ConfigurationError(f"Tool '{self.name}': {problem}.")

    def _check_inputs_from_state(self, mapping: Any) -> None:
        if not isinstance(mapping, Mapping):
            raise ConfigurationTypeError(f"Tool '{self.name}': inputs_from_state must be a dict {{state_key: param}}.")
        for state_key, param in mapping.items():
            if not isinstance(param, str):
                raise ConfigurationTypeError(
                    f"Tool '{self.name}': inputs_from_state['{state_key}'] must name a parameter (str)."
                )
            if not self._roles.accepts_kwargs and param not in self._roles.parameters:
                raise ConfigurationError(
                    f"Tool '{self.name}': inputs_from_state maps '{state_key}' to parameter '{param}', "
                    f"but the function has no such parameter. Parameters: {sorted(self._roles.parameters)}."
                )

    @property
    def tool_spec(self) -> dict[str, Any]:
        """``{"name", "description", "parameters"}``: what a chat generator sends to the model."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    @property
    def roles(self) -> SignatureRoles:
        """The State / ToolCallId / ``**kwargs`` roles of the function's parameters."""
        return self._roles

    def arguments_error(self, arguments: Mapping[str, Any]) -> str | None:
        """Validate arguments against :attr:`parameters` (the validator is compiled once).

        A parameter that ``inputs_from_state`` fills need not come from the model, as in Haystack: it is not
        required here even when a hand-written schema lists it in ``required``.

        Args:
            arguments: The parsed arguments.

        Returns:
            None when valid, else a one-line description of the first violation.
        """
        validator = self._validator
        if validator is None:
            from handrail.tools._validation import compile_validator

            schema = self.parameters
            filled = set((self.inputs_from_state or {}).values())
            if filled and isinstance(schema.get("required"), list) and filled & set(schema["required"]):
                schema = {**schema, "required": [name for name in schema["required"] if name not in filled]}
            validator = self._validator = compile_validator(schema)
        result: str | None = validator(arguments)
        return result

    def preview_of(self, arguments: Mapping[str, Any]) -> Preview | None:
        """Run the :attr:`preview` function on a copy of ``arguments`` (None when the tool has none).

        Returns:
            The :class:`~handrail.tools.preview.Preview` (a ``str`` the function returned is plain text).

        Raises:
            Exception: Whatever the preview function raises; ConfigurationTypeError when it returns something else
                than a Preview or a str.
        """
        if self.preview is None:
            return None
        return as_preview(self.preview(copy.deepcopy(dict(arguments))))

    def invoke(self, **kwargs: Any) -> Any:
        """Run the sync function with ``kwargs`` (not validated; the ToolInvoker validates).

        Returns:
            Whatever the function returns.

        Raises:
            ToolInvocationError: When the function raises (the original is the ``__cause__``) or
                the tool has only an async function.
        """
        if self.function is None:
            raise ToolInvocationError(
                f"Tool '{self.name}' has only an async_function; use invoke_async (Agent.run runs it on a loop "
                f"of its own).",
                self.name,
            )
        try:
            return self.function(**kwargs)
        except Exception as exc:
            raise _invocation_error(self.name, kwargs, exc) from exc

    async def invoke_async(self, **kwargs: Any) -> Any:
        """Await the async function, or run the sync one in a thread of the loop's tool pool.

        Raises:
            ToolInvocationError: When the function raises (the original is the ``__cause__``).
        """
        try:
            if self.async_function is not None:
                return await self.async_function(**kwargs)
            assert self.function is not None
            return await to_tool_thread(self.function, **kwargs)
        except Exception as exc:
            raise _invocation_error(self.name, kwargs, exc) from exc

    def warm_up(self) -> None:
        """Prepare the tool (idempotent); the base Tool has nothing to prepare."""

    def to_dict(self) -> dict[str, Any]:
        """Serialize to ``{"type", "init_parameters"}`` with functions and handlers as dotted paths.

        A ``preview`` function is written as its dotted path too, and only when the tool has one; ``idempotent``
        only when True.

        Raises:
            SerializationError: For lambdas and closures, which cannot be imported back.
        """
        data: dict[str, Any] = {
            "type": qualified_name(self),
            "init_parameters": {
                "name": self.name,
                "description": self.description,
                "parameters": copy.deepcopy(self.parameters),
                "function": serialize_callable(self.function) if self.function else None,
                "async_function": serialize_callable(self.async_function) if self.async_function else None,
                "outputs_to_string": _map_handlers(self.outputs_to_string, serialize_callable),
                "inputs_from_state": dict(self.inputs_from_state) if self.inputs_from_state else None,
                "outputs_to_state": _map_handlers(self.outputs_to_state, serialize_callable),
            },
        }
        if self.preview is not None:
            with reading("preview"):
                data["init_parameters"]["preview"] = serialize_callable(self.preview)
        if self.idempotent:
            data["init_parameters"]["idempotent"] = True
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Tool:
        """Rebuild a Tool from :meth:`to_dict` output (``data`` is not modified).

        A dotted path that names a Tool (a ``@tool``-decorated function) supplies that tool's
        function. Called on ``Tool`` with the dict of a subclass (its ``type``), the subclass's own
        ``from_dict`` rebuilds it. Haystack 2.x's form, ``{"type": "haystack.tools.tool.Tool", "data": {...}}``,
        is read too (its ``type`` through :func:`~handrail.core.serialization.haystack_to_handrail`).

        Raises:
            SerializationError: When ``init_parameters`` is missing, names a parameter Tool does not take or lacks
                a required one, or a path cannot be imported.
            ConfigurationError: As the constructor, for a value of the wrong type (naming the field).
        """
        declared = data.get("type") if isinstance(data, Mapping) else None
        if isinstance(declared, str):
            declared = haystack_to_handrail(declared)
        init = envelope_parameters(data)
        if isinstance(init, Mapping) and active_allowlist() is not None:  # only a file's patterns are held to it
            _check_schema_patterns(init.get("parameters"), "parameters")
        if cls is Tool and isinstance(declared, str) and declared != qualified_name(Tool):
            subclass = import_object(declared)  # a Tool subclass's dict, read through the base class
            if isinstance(subclass, type) and issubclass(subclass, Tool) and subclass is not Tool:
                rebuilt: Tool = subclass.from_dict({**data, "type": declared, "init_parameters": init})
                return rebuilt
        params = init
        if not isinstance(params, Mapping):
            raise SerializationError(f"Tool data has no 'init_parameters' (or Haystack's 'data'): {data!r:.300}")
        # Checked against the constructor (unknown or missing names); a copy: the Tool must not share ``data``'s values.
        kwargs = copy.deepcopy(init_parameters({"init_parameters": dict(params)}, cls))
        with reading("function"):
            kwargs["function"] = _resolve_function(kwargs.get("function"), asynchronous=False)
        with reading("async_function"):
            kwargs["async_function"] = _resolve_function(kwargs.get("async_function"), asynchronous=True)
        for name in ("outputs_to_string", "outputs_to_state"):
            kwargs[name] = _map_handlers(kwargs.get(name), deserialize_callable, name)
        kwargs["preview"] = read_preview(kwargs.get("preview"))
        return cls(**kwargs)


def read_preview(path: object) -> Any:
    """The preview function a tool dict names (None stays None; a non-str is left for the Tool's own check)."""
    if not isinstance(path, str):
        return path
    return deserialize_callable(path, where="preview")


def _invocation_error(name: str, kwargs: Mapping[str, Any], exc: Exception) -> ToolInvocationError:
    return ToolInvocationError(
        f"Failed to invoke tool '{name}' with parameters {dict(kwargs)}. Error: {type(exc).__name__}: {exc}",
        name,
    )


def _check_schema_patterns(schema: Any, where: str) -> None:
    """Hold every ``pattern`` of a JSON Schema read from a file to :func:`check_pattern_from_file`."""
    if isinstance(schema, Mapping):
        for key, value in schema.items():
            if key == "pattern" and isinstance(value, str):
                check_pattern_from_file(value, f"Tool {where}")
            elif key == "patternProperties" and isinstance(value, Mapping):
                for pattern in value:
                    check_pattern_from_file(str(pattern), f"Tool {where}.patternProperties")
            _check_schema_patterns(value, f"{where}.{key}")
    elif isinstance(schema, list):
        for i, item in enumerate(schema):
            _check_schema_patterns(item, f"{where}[{i}]")


def _resolve_function(path: str | None, *, asynchronous: bool) -> Any:
    if path is None:
        return None
    obj = import_object(path)
    if isinstance(obj, Tool):
        return obj.async_function if asynchronous else obj.function
    if not callable(obj):
        raise SerializationError(f"'{path}' does not name a function or a Tool.")
    check_file_callable(obj, path)  # a file may not make handrail's own functions (object_from_dict) a tool
    return obj
