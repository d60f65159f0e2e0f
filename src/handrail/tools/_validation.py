"""Argument validation against a tool's JSON Schema, compiled once per tool.

The ``jsonschema`` library (Draft 2020-12) is the authority. For the flat schemas most tools
have — ``{"type": "object", "properties": {name: {"type": <primitive>}}, "required": [...]}``
with only annotation keywords besides — a precompiled check answers "valid" without entering
the library; anything it cannot prove valid goes to ``jsonschema``, which also words the error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["ArgumentValidator", "compile_validator", "reference_problem", "unknown_parameters"]

ArgumentValidator = Callable[[Mapping[str, Any]], str | None]
"""Returns None for valid arguments, else a one-line description of the first violation."""

_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "$comment", "deprecated"})
_OBJECT_KEYS = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties"}


def _is_string(v: Any) -> bool:
    return type(v) is str


def _is_integer(v: Any) -> bool:
    return (type(v) is int) or (type(v) is float and v.is_integer())


def _is_number(v: Any) -> bool:
    return type(v) is int or type(v) is float


def _is_boolean(v: Any) -> bool:
    return type(v) is bool


_PRIMITIVE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": _is_string,
    "integer": _is_integer,
    "number": _is_number,
    "boolean": _is_boolean,
}


def _property_checks(properties: Mapping[str, Any]) -> dict[str, Callable[[Any], bool]] | None:
    checks: dict[str, Callable[[Any], bool]] = {}
    for name, prop in properties.items():
        if not isinstance(prop, Mapping) or set(prop) - _ANNOTATIONS - {"type"}:
            return None
        check = _PRIMITIVE_CHECKS.get(prop.get("type"))  # type: ignore[arg-type]
        if check is None:
            return None
        checks[name] = check
    return checks


def _fast_path(schema: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], bool] | None:
    """A check that returns True only for arguments the schema accepts, or None when the schema is not flat."""
    if schema.get("type") != "object" or set(schema) - _OBJECT_KEYS:
        return None
    extra = schema.get("additionalProperties", True)
    if extra not in (True, False):
        return None
    checks = _property_checks(schema.get("properties") or {})
    if checks is None:
        return None
    required = tuple(schema.get("required") or ())
    closed = extra is False

    def valid(arguments: Mapping[str, Any]) -> bool:
        for key in required:
            if key not in arguments:
                return False
        for key, value in arguments.items():
            check = checks.get(key)
            if check is None:
                if closed:
                    return False
            elif not check(value):
                return False
        return True

    return valid


def _pointer_target(root: Any, ref: str) -> bool:
    """True when the local reference ``ref`` (``#``, ``#/a/b`` or ``#anchor``) resolves inside ``root``."""
    fragment = ref[1:]
    if fragment and not fragment.startswith("/"):
        return fragment in _anchors(root)
    node = root
    for raw in fragment.split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False
    return True


def _anchors(node: Any) -> set[str]:
    found: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            if isinstance(item.get("$anchor"), str):
                found.add(item["$anchor"])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def reference_problem(schema: Mapping[str, Any]) -> str | None:
    """Find a ``$ref`` that cannot be resolved inside the schema itself.

    Tools run offline, so only local references (``#...``) are allowed, and each must point at
    something in the schema.

    Returns:
        None when every reference resolves, else a description of the first one that does not.
    """
    stack: list[Any] = [schema]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            ref = item.get("$ref")
            if ref is not None:
                if not isinstance(ref, str) or not ref.startswith("#"):
                    return f"$ref {ref!r} is not a local reference ('#/...'); remote schemas are not fetched"
                if not _pointer_target(schema, ref):
                    return f"$ref {ref!r} points at nothing in the schema"
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def compile_validator(schema: Mapping[str, Any]) -> ArgumentValidator:
    """Compile a validator for ``schema`` (a JSON Schema already checked with ``check_schema``).

    Args:
        schema: The tool's parameters schema.

    Returns:
        A function ``arguments -> None | "message (at 'path')"``.
    """
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    library = Draft202012Validator(schema)
    fast = _fast_path(schema)

    def validate(arguments: Mapping[str, Any]) -> str | None:
        if fast is not None and fast(arguments):
            return None
        try:
            if library.is_valid(arguments):
                return None
            error = best_match(library.iter_errors(arguments))
        except Exception as exc:  # the library could not evaluate the schema against these arguments
            return f"the tool's JSON Schema could not be evaluated: {type(exc).__name__}: {exc}"
        where = "/".join(str(p) for p in error.absolute_path)
        return f"{error.message} (at '{where}')" if where else str(error.message)

    return validate


def unknown_parameters(tool_name: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> str | None:
    """The edit rule beyond the JSON Schema: a person's edit may not add keys the tool does not declare.

    A model's call is checked against the schema alone, but an edit is a person's change of a call: a key that is
    not one of the schema's ``properties`` (when ``additionalProperties`` is absent or false) is refused, so a typo
    cannot be approved and then fail when the call runs. The console, the strategies and a decision recorded in a
    snapshot store all apply this rule.

    Returns:
        None when every key is declared (or the schema allows others), else a one-line description naming them.
    """
    known = schema.get("properties")
    if not isinstance(known, Mapping) or schema.get("additionalProperties") not in (None, False):
        return None
    unknown = sorted(k for k in arguments if k not in known)
    if not unknown:
        return None
    return f"{unknown} are not parameters of '{tool_name}' (its parameters: {sorted(known)})"
