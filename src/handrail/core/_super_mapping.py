"""SuperComponent's mappings: checking them against a pipeline, their defaults, and the sockets they give.

An input mapping is ``{input_name: ["component.socket", ...]}`` (one input may feed several pipeline sockets);
an output mapping is ``{"component.socket": output_name}``. Left out, the input mapping names every free input
of the pipeline after its socket (sockets of the same name share one input) and the output mapping every output
no connection consumes (two components producing the same name is an error: give a mapping).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from typing import Any

from handrail.core._sockets import MISSING
from handrail.errors import InvalidMappingTypeError, InvalidMappingValueError

__all__ = [
    "DELEGATE",
    "default_input_mapping",
    "default_output_mapping",
    "input_types",
    "output_types",
    "split_path",
]


class _Delegate:
    """The default of an optional SuperComponent input: the pipeline's component applies its own default."""

    def __repr__(self) -> str:
        return "<the component's own default>"

    def __copy__(self) -> _Delegate:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _Delegate:
        return self


DELEGATE: Any = _Delegate()
"""Given to an optional input left out: the value is not passed on, so the inner component's default applies."""


def split_path(path: Any) -> tuple[str, str]:
    """``"component.socket"`` → ``("component", "socket")``.

    Raises:
        InvalidMappingValueError: When ``path`` is not such a string.
    """
    if not isinstance(path, str) or "." not in path or path.startswith(".") or path.endswith("."):
        raise InvalidMappingValueError(f"Invalid path format: {path!r}. Expected 'component_name.socket_name'.")
    name, socket = path.split(".", 1)
    return name, socket


def default_input_mapping(free_inputs: Mapping[str, Mapping[str, Any]]) -> dict[str, list[str]]:
    """Every free input of the pipeline, named after its socket; sockets of the same name share one input."""
    mapping: dict[str, list[str]] = {}
    for name, sockets in free_inputs.items():
        for socket in sockets:
            mapping.setdefault(socket, []).append(f"{name}.{socket}")
    return mapping


def default_output_mapping(free_outputs: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Every output no connection consumes, named after its socket.

    Raises:
        InvalidMappingValueError: When two components produce an output of the same name.
    """
    mapping: dict[str, str] = {}
    for name, sockets in free_outputs.items():
        for socket in sockets:
            if socket in mapping.values():
                raise InvalidMappingValueError(
                    f"Output name conflict: '{socket}' is produced by multiple components. Please provide an "
                    f"output_mapping to resolve this conflict."
                )
            mapping[f"{name}.{socket}"] = socket
    return mapping


def input_types(free_inputs: Mapping[str, Mapping[str, Any]], mapping: Any) -> dict[str, tuple[Any, Any]]:
    """Check an input mapping and return ``{input_name: (type, default)}`` for the SuperComponent's sockets.

    An input feeding several sockets takes their common type (``Optional`` and ``Any`` aside), and is mandatory
    when any of them is; an optional one defaults to :data:`DELEGATE`.

    Raises:
        InvalidMappingTypeError: When the mapping is not a dict of lists, or two sockets of one input have
            conflicting types.
        InvalidMappingValueError: For a malformed path, or a component or socket that is not a free input.
    """
    if not isinstance(mapping, dict):
        raise InvalidMappingTypeError(f"input_mapping must be a dictionary, got {type(mapping).__name__}.")
    resolved: dict[str, tuple[Any, Any]] = {}
    for input_name, paths in mapping.items():
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise InvalidMappingTypeError(f"Input paths for '{input_name}' must be a list of strings, got {paths!r}.")
        for path in paths:
            name, socket = split_path(path)
            info = _free_input(free_inputs, name, socket)
            default = MISSING if info["is_mandatory"] else DELEGATE
            if input_name not in resolved:
                resolved[input_name] = (info["type"], default)
                continue
            known, known_default = resolved[input_name]
            common = _common_type(known, info["type"])
            if common is None:
                raise InvalidMappingTypeError(
                    f"Type conflict for input '{socket}' from component '{name}' (mapped to '{input_name}'). "
                    f"Existing type: {known}, new type: {info['type']}."
                )
            resolved[input_name] = (common, MISSING if default is MISSING else known_default)
    return resolved


def output_types(all_outputs: Mapping[str, Mapping[str, Any]], mapping: Any) -> dict[str, Any]:
    """Check an output mapping and return ``{output_name: type}``.

    Raises:
        InvalidMappingTypeError: When the mapping is not a dict or an output name is not a string.
        InvalidMappingValueError: For a malformed path, an unknown component or socket, or an output name used
            twice.
    """
    if not isinstance(mapping, dict):
        raise InvalidMappingTypeError(f"output_mapping must be a dictionary, got {type(mapping).__name__}.")
    resolved: dict[str, Any] = {}
    for path, output_name in mapping.items():
        if not isinstance(output_name, str):
            raise InvalidMappingTypeError(
                f"Output names in output_mapping must be strings, got {output_name!r} for '{path}'."
            )
        name, socket = split_path(path)
        if name not in all_outputs:
            raise InvalidMappingValueError(
                f"Component '{name}' not found among pipeline outputs. Available components: {list(all_outputs)}"
            )
        if socket not in all_outputs[name]:
            raise InvalidMappingValueError(
                f"Output socket '{socket}' not found in component '{name}'. "
                f"Available outputs for '{name}': {list(all_outputs[name])}"
            )
        if output_name in resolved:
            raise InvalidMappingValueError(f"Duplicate output name '{output_name}' in output_mapping.")
        resolved[output_name] = all_outputs[name][socket]
    return resolved


def _free_input(free_inputs: Mapping[str, Mapping[str, Any]], name: str, socket: str) -> Mapping[str, Any]:
    if name not in free_inputs:
        raise InvalidMappingValueError(
            f"Component '{name}' not found in pipeline inputs (or all its inputs are connected). "
            f"Available components: {list(free_inputs)}"
        )
    if socket not in free_inputs[name]:
        raise InvalidMappingValueError(
            f"Input socket '{socket}' not found in component '{name}' (or it is connected). "
            f"Available inputs for '{name}': {list(free_inputs[name])}"
        )
    info: Mapping[str, Any] = free_inputs[name][socket]
    return info


def _common_type(first: Any, second: Any) -> Any:
    """The type both sockets accept (``Optional`` unwrapped, ``Any`` yielding to the other), or None."""
    first, second = _strip_optional(first), _strip_optional(second)
    if first is Any:
        return second
    if second is Any or first == second:
        return first
    return None


def _strip_optional(tp: Any) -> Any:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(members) == 1:
            return members[0]
    return tp
