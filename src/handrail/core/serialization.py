"""Serialization helpers shared by every configurable object.

Configurable objects serialize to the envelope ``{"type": "<module>.<Class>",
"init_parameters": {...}}`` (the shape Haystack uses), functions to their dotted
import path, and Python types to strings such as ``"list[str]"``.

``from_dict`` functions called from Python trust the dotted paths they are given,
as Haystack does; untrusted input (YAML files, the CLI, snapshot files) goes
through an allowlist of module prefixes passed as ``allowed_modules``. No function
here mutates the dict it is given.
"""

from __future__ import annotations

import builtins
import contextlib
import contextvars
import copy
import importlib
import inspect
import re
import types
import typing
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from handrail.core._haystack_types import is_haystack_path, translate_haystack_path
from handrail.core._init_types import check_scalar_types
from handrail.errors import SerializationError

__all__ = [
    "active_allowlist",
    "check_file_callable",
    "check_pattern_from_file",
    "check_scalar_types",
    "default_from_dict",
    "file_safe",
    "haystack_to_handrail",
    "init_parameters",
    "default_to_dict",
    "deserialize_callable",
    "deserialize_type",
    "import_object",
    "object_from_dict",
    "object_to_dict",
    "qualified_name",
    "reading",
    "restricted_imports",
    "serialize_callable",
    "serialize_type",
]

_BUILTIN_TYPES = {t.__name__: t for t in (str, int, float, bool, bytes, dict, list, tuple, set, frozenset)}
_BUILTIN_TYPES["None"] = type(None)  # type: ignore[assignment]
_BUILTIN_TYPES["NoneType"] = type(None)  # type: ignore[assignment]


def qualified_name(obj: object) -> str:
    """Return the dotted import path of a class, or of an instance's class.

    Args:
        obj: A class or an instance.

    Returns:
        ``"<module>.<qualname>"``, e.g. ``"handrail.tools.tool.Tool"``.
    """
    cls = obj if isinstance(obj, type) else type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def default_to_dict(obj: object, **init_parameters: Any) -> dict[str, Any]:
    """Build the ``{type, init_parameters}`` envelope for ``obj``.

    Args:
        obj: The object being serialized; only its class path is read.
        **init_parameters: The constructor arguments, already JSON-compatible.

    Returns:
        ``{"type": qualified_name(obj), "init_parameters": init_parameters}``.

    Raises:
        SerializationError: When the class is defined inside a function (its path cannot be imported back).
    """
    name = qualified_name(obj)
    if "<locals>" in name:
        raise SerializationError(
            f"Cannot serialize a {type(obj).__name__}: its class '{name}' is defined inside a function, so it "
            f"cannot be imported back; define it at module level."
        )
    return {"type": name, "init_parameters": init_parameters}


def init_parameters(data: Any, cls: type[Any]) -> dict[str, Any]:
    """Return a copy of ``data["init_parameters"]``, checked against ``cls``'s constructor.

    Args:
        data: The serialized object.
        cls: The class being rebuilt.

    Raises:
        SerializationError: When ``data`` is not a dict with an ``init_parameters`` dict, names a
            parameter the constructor does not have, lacks a required one, or gives a parameter annotated
            ``bool``, ``int``, ``float`` or ``str`` a value of another type (:func:`check_scalar_types`).
    """
    if not isinstance(data, dict) or not isinstance(data.get("init_parameters"), dict):
        raise SerializationError(
            f"Cannot rebuild {cls.__name__}: expected {{'type': ..., 'init_parameters': {{...}}}}, got {data!r:.200}"
        )
    params = dict(data["init_parameters"])
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):  # no signature to check against (a class written in C): the constructor will say
        return params
    accepted = signature.parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values()):
        unknown = sorted(set(params) - set(accepted))
        if unknown:
            raise SerializationError(f"Cannot rebuild {cls.__name__}: unknown init parameters {unknown}.")
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    missing = sorted(
        n for n, p in accepted.items() if p.default is inspect.Parameter.empty and p.kind in named and n not in params
    )
    if missing:
        raise SerializationError(f"Cannot rebuild {cls.__name__}: missing init parameters {missing}.")
    check_scalar_types(cls, params)
    return params


def default_from_dict(cls: type[Any], data: dict[str, Any]) -> Any:
    """Rebuild an instance of ``cls`` from its envelope (``data`` is not modified).

    Args:
        cls: The class to instantiate.
        data: ``{"type": ..., "init_parameters": {...}}``.

    Returns:
        ``cls(**data["init_parameters"])``.

    Raises:
        SerializationError: When ``data`` has no ``init_parameters`` mapping, names a parameter the constructor
            does not take, lacks a required one or gives a scalar one a value of the wrong type, or its ``type``
            names another class.
    """
    params = data.get("init_parameters") if isinstance(data, dict) else None
    if not isinstance(params, dict):
        raise SerializationError(f"Missing 'init_parameters' in serialization data for {cls.__name__}: {data!r:.200}")
    declared = data.get("type")
    if declared is not None and (
        not isinstance(declared, str)
        or (declared != qualified_name(cls) and declared.rsplit(".", 1)[-1] != cls.__name__)
    ):
        raise SerializationError(f"Serialized type {declared!r:.100} does not match class '{qualified_name(cls)}'.")
    return cls(**copy.deepcopy(init_parameters(data, cls)))


_SCOPED_ALLOWLIST: contextvars.ContextVar[tuple[str, ...] | None] = contextvars.ContextVar(
    "handrail_allowed_modules", default=None
)


@contextlib.contextmanager
def restricted_imports(allowed_modules: Iterable[str]) -> Iterator[None]:
    """Restrict every dotted-path import in this context to handrail and ``allowed_modules``.

    Used while building objects from untrusted data (YAML agent files, snapshot files): nested
    ``from_dict`` calls that would otherwise trust the paths they meet are held to the same
    allowlist, so a file cannot reach an arbitrary class through a handrail helper.

    Args:
        allowed_modules: Module prefixes trusted besides ``handrail``.
    """
    token = _SCOPED_ALLOWLIST.set(tuple(allowed_modules))
    try:
        yield
    finally:
        _SCOPED_ALLOWLIST.reset(token)


def active_allowlist() -> tuple[str, ...] | None:
    """The module prefixes of the enclosing :func:`restricted_imports` (besides handrail), or None outside one.

    An object built from a file can keep this and apply it again when it later resolves names (a router
    rendering its templates), so the file's data cannot reach past the allowlist after loading.
    """
    return _SCOPED_ALLOWLIST.get()


_FILE_SAFE = "__handrail_file_safe__"
_F = typing.TypeVar("_F", bound=Callable[..., Any])


_NESTED_REPEAT = re.compile(r"\((?:[^()\\]|\\.)*[+*}](?:[^()\\]|\\.)*\)\s*[+*{]")
"""A group holding a repetition, itself repeated (``(a+)+``, ``(\\w+\\s?)*``): backtracking can take hours."""


def pattern_may_hang(pattern: str) -> bool:
    """Whether a regular expression nests a repetition inside a repeated group (``(a+)+``), which can take hours.

    Examples:
        >>> pattern_may_hang("(a+)+$"), pattern_may_hang("^[a-z]+$")
        (True, False)
    """
    return bool(_NESTED_REPEAT.search(pattern))


def check_pattern_from_file(pattern: str, where: str) -> None:
    """Refuse, in a file's data (under an allowlist), a regular expression with a repeated repetition.

    Python's ``re`` backtracks: ``(a+)+$`` against ``"a" * 40 + "!"`` runs for hours. A pattern written in
    Python code is the caller's own; one read from a file (a redaction pattern, a JSON Schema ``pattern``)
    is held to this check.

    Args:
        pattern: The regular expression.
        where: How to name it in the error.

    Raises:
        SerializationError: The pattern nests a repetition inside a repeated group, while an allowlist is in force.
    """
    if _SCOPED_ALLOWLIST.get() is not None and _NESTED_REPEAT.search(pattern):
        raise SerializationError(
            f"{where}: the pattern {pattern!r} repeats a group that itself repeats (such as '(a+)+'), which can "
            f"take hours to match; a file may not carry it. Rewrite it without the nested repetition."
        )


def file_safe(function: _F) -> _F:
    """Mark one of handrail's own functions as one a file may name as a callable (a State merge handler).

    Under an allowlist, :func:`deserialize_callable` refuses handrail's other functions: some resolve names
    or write files, and a file naming them (say, as a router filter) could reach past the allowlist.

    Returns:
        ``function`` itself.
    """
    setattr(function, _FILE_SAFE, True)
    return function


def _check_allowed(path: str, allowed_modules: Iterable[str] | None, shown: str | None = None) -> None:
    scoped = _SCOPED_ALLOWLIST.get()
    if scoped is not None:
        _check_allowed_in(path, scoped, shown)
    if allowed_modules is None:
        return
    _check_allowed_in(path, allowed_modules, shown)


def _check_allowed_in(path: str, allowed_modules: Iterable[str], shown: str | None = None) -> None:
    named = (allowed_modules,) if isinstance(allowed_modules, str) else tuple(allowed_modules)
    prefixes = ("handrail", *named)
    if not any(path == p or path.startswith(p + ".") for p in prefixes):
        where = f"'{shown}': it is defined in '{path}', which is" if shown else f"'{path}': its module is"
        raise SerializationError(
            f"Refusing to import {where} not in the allowlist {list(prefixes)}. "
            f"Name the module explicitly (allowed_modules=(...) or the CLI's --allow-module) to trust it."
        )


def import_object(path: str, *, allowed_modules: Iterable[str] | None = None) -> Any:
    """Import an object (class, function, module attribute) by dotted path.

    Args:
        path: ``"package.module.Name"``; nested attributes (``"mod.Class.method"``) are followed.
        allowed_modules: ``None`` trusts every path (Python callers); otherwise only paths under
            ``handrail`` or one of these module prefixes are imported (a single string counts as one
            prefix).

    Returns:
        The imported object.

    Raises:
        SerializationError: When the path is not allowed or cannot be imported.
    """
    if not isinstance(path, str) or "." not in path:
        raise SerializationError(f"Cannot import {path!r}: expected a dotted path such as 'package.module.name'.")
    if "__main__" in path.split(".")[1:]:  # importing pkg.__main__ runs that program (handrail.cli.__main__ exits)
        raise SerializationError(f"Refusing to import '{path}': a '__main__' module runs a program when imported.")
    _check_allowed(path, allowed_modules)
    restricted = allowed_modules is not None or _SCOPED_ALLOWLIST.get() is not None
    parts = path.split(".")
    missing: str | None = None  # what the longest importable module lacks, for the error message
    for cut in range(len(parts) - 1, 0, -1):
        module_name = ".".join(parts[:cut])
        try:
            obj: Any = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and not module_name.startswith(exc.name):
                raise SerializationError(  # the module exists but one of its own imports is missing
                    f"Cannot import '{path}': importing module '{module_name}' failed: {exc}"
                ) from exc
            continue
        except (Exception, SystemExit) as exc:  # a module that calls sys.exit() too (Ctrl-C passes)
            raise SerializationError(
                f"Cannot import '{path}': importing module '{module_name}' failed: {type(exc).__name__}: {exc}"
            ) from exc
        try:
            obj = _follow(obj, module_name, parts[cut:], path, restricted, missing)
        except AttributeError as exc:
            missing = missing or str(exc)
            continue
        owner = getattr(obj, "__module__", None)
        if restricted and isinstance(owner, str) and not isinstance(obj, types.ModuleType):
            _check_allowed(owner, allowed_modules, shown=path)  # a name re-exported from elsewhere must be allowed too
        return obj
    if missing is not None:
        raise SerializationError(f"Cannot import '{path}': {missing}.")
    raise SerializationError(
        f"Cannot import '{path}': no module or attribute of that name could be found "
        f"(is its module importable from here, e.g. on PYTHONPATH?)."
    )


def _follow(obj: Any, module_name: str, names: list[str], path: str, restricted: bool, missing: str | None) -> Any:
    """Follow ``names`` from the module ``obj``; AttributeError says which one is missing, and where."""
    holder = module_name
    for attr in names:
        try:
            obj = getattr(obj, attr)
        except AttributeError:
            raise AttributeError(f"'{holder}' has no attribute {attr!r}") from None
        if restricted and isinstance(obj, types.ModuleType):
            if missing is not None:  # the module was imported by its own path: the name is what is wrong
                raise SerializationError(f"Cannot import '{path}': {missing}.")
            raise SerializationError(
                f"Refusing to import '{path}': it reaches module '{obj.__name__}' through an attribute of "
                f"'{module_name}'; name the module itself (its own path must be in the allowlist)."
            )
        holder = f"{holder}.{attr}"
    return obj


def serialize_callable(function: Callable[..., Any]) -> str:
    """Return the dotted path of a module-level function (or a class's static/class method).

    Args:
        function: The callable to name.

    Returns:
        ``"<module>.<qualname>"``.

    Raises:
        SerializationError: For lambdas, closures and other functions that cannot be
            imported back by name (their ``__qualname__`` contains ``<lambda>`` or ``<locals>``).
    """
    if inspect.ismethod(function) and not isinstance(function.__self__, type):
        raise SerializationError(
            f"Cannot serialize the bound method '{function.__qualname__}': the instance it belongs to cannot be "
            f"written as a dotted path. Use a module-level function (or a class/static method)."
        )
    target = inspect.unwrap(function) if not inspect.ismethod(function) else function
    qualname = getattr(target, "__qualname__", None)
    module = getattr(target, "__module__", None)
    if not qualname or not module:
        raise SerializationError(f"Cannot serialize {function!r}: it has no importable module and name.")
    if "<lambda>" in qualname or "<locals>" in qualname:
        raise SerializationError(
            f"Cannot serialize '{qualname}' from module '{module}': lambdas and functions defined inside "
            f"other functions cannot be imported back by name. Define it at module level."
        )
    return f"{module}.{qualname}"


@contextlib.contextmanager
def reading(where: str | None) -> Iterator[None]:
    """Prefix every :class:`SerializationError` raised inside with the field being read (``custom_filters['f']``).

    Every ``from_dict`` that imports a path or reads a type names the field it reads this way (through the
    ``where`` of :func:`deserialize_callable` and :func:`deserialize_type`, or around its own reading), so a
    pipeline's error names the component and the field, not only the value.

    Args:
        where: The field, as the message writes it; None adds nothing.

    Raises:
        SerializationError: ``<where>: <the error>``, chained to it, with ``where`` as its ``field``. An error
            that already names a field inside this one extends it: ``tools[0]`` around ``function`` gives
            ``tools[0].function``.
    """
    if where is None:
        yield
        return
    try:
        yield
    except SerializationError as exc:
        if exc.field is None:
            field, detail, path = where, str(exc), exc.path
        else:  # a field inside this one: one path, tools[0].function (the inner path is relative to it)
            field = where + ("" if exc.field.startswith("[") else ".") + exc.field
            detail, path = str(exc).removeprefix(f"{exc.field}: "), ()
        raise SerializationError(f"{field}: {detail}", path=path, field=field) from exc


def deserialize_callable(
    path: str, *, allowed_modules: Iterable[str] | None = None, where: str | None = None
) -> Callable[..., Any]:
    """Import a callable by the dotted path that :func:`serialize_callable` wrote.

    Args:
        path: The dotted path.
        allowed_modules: See :func:`import_object`.
        where: The field the path was read from (``custom_filters['f']``), named in the error.

    Returns:
        The callable.

    Raises:
        SerializationError: When the path cannot be imported or does not name a callable, or, under an
            allowlist (a file's data), names one of handrail's own functions not marked :func:`file_safe`.
    """
    with reading(where):
        obj = import_object(path, allowed_modules=allowed_modules)
        if not callable(obj):
            raise SerializationError(f"'{path}' does not name a callable.")
        check_file_callable(obj, path, allowed_modules)
    return typing.cast(Callable[..., Any], obj)


def check_file_callable(obj: Any, path: str, allowed_modules: Iterable[str] | None = None) -> None:
    """Refuse, under an allowlist (a file's data), one of handrail's own functions that is not :func:`file_safe`.

    Every place that turns a dotted path from a file into something that will be *called* (a filter, a handler,
    a callback, a tool's function, a hook's function) runs this check: some of handrail's functions import by
    name or build any class (``object_from_dict``), which would reach past the allowlist when called later.

    Args:
        obj: The callable the path named.
        path: The dotted path, for the message.
        allowed_modules: As given to :func:`import_object` (None: only an enclosing :func:`restricted_imports`
            makes the check apply).

    Raises:
        SerializationError: The path names such a function while an allowlist is in force.
    """
    restricted = allowed_modules is not None or _SCOPED_ALLOWLIST.get() is not None
    own = str(getattr(obj, "__module__", "") or "")
    if restricted and (own == "handrail" or own.startswith("handrail.")) and not getattr(obj, _FILE_SAFE, False):
        raise SerializationError(
            f"Refusing '{path}' as a callable named in a file: handrail's own functions are not callables a file "
            f"may name (some import by name or build any class); name a function of a module you allow."
        )


def serialize_type(target: Any) -> str:
    """Write a Python type as a string: ``str``, ``list[int]``, ``dict[str, handrail.x.Y]``, ``int | None``.

    Args:
        target: A class, a parameterized generic (``tuple[int, ...]`` included), a union, ``Any`` or ``None``.

    Returns:
        The string form read back by :func:`deserialize_type`.

    Raises:
        SerializationError: For types that cannot be named (local classes).
    """
    if target is None or target is type(None):
        return "None"
    if target is Any:
        return "typing.Any"
    if target is Ellipsis:
        return "..."
    origin = typing.get_origin(target)
    if origin in (types.UnionType, typing.Union):
        return " | ".join(serialize_type(a) for a in typing.get_args(target))
    if origin is not None:
        args = ", ".join(serialize_type(a) for a in typing.get_args(target))
        return f"{serialize_type(origin)}[{args}]"
    if isinstance(target, type):
        if target.__module__ == "builtins":
            return target.__name__
        if "<locals>" in target.__qualname__:
            raise SerializationError(f"Cannot serialize the local class '{target.__qualname__}'.")
        return f"{target.__module__}.{target.__qualname__}"
    raise SerializationError(f"Cannot serialize type {target!r}.")


def _split_top(text: str, sep: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            start = i + len(sep)
    parts.append(text[start:])
    return [p.strip() for p in parts]


def deserialize_type(text: str, *, allowed_modules: Iterable[str] | None = None, where: str | None = None) -> Any:
    """Read back a type written by :func:`serialize_type`.

    Args:
        text: The type string, e.g. ``"list[handrail.dataclasses.ChatMessage]"``.
        allowed_modules: See :func:`import_object` (builtins and ``typing`` are always allowed).
        where: The field the type was read from (``routes[0].output_type``), named in the error.

    Returns:
        The Python type.

    Raises:
        SerializationError: When the string is malformed (or not a string) or names something that cannot be imported.
    """
    with reading(where):
        return _read_type(text, allowed_modules)


def _read_type(text: str, allowed_modules: Iterable[str] | None) -> Any:
    if not isinstance(text, str):
        raise SerializationError(f"A type must be written as a string such as 'list[str]', got {text!r:.80}.")
    text = text.strip()
    union = _split_top(text, "|")
    if len(union) > 1:
        members = [deserialize_type(p, allowed_modules=allowed_modules) for p in union]
        result: Any = members[0]
        for m in members[1:]:
            result = result | m
        return result
    if text.endswith("]") and "[" in text:
        head, inner = text.split("[", 1)
        origin = deserialize_type(head, allowed_modules=allowed_modules)
        args = tuple(deserialize_type(a, allowed_modules=allowed_modules) for a in _split_top(inner[:-1], ","))
        try:
            return origin[args if len(args) > 1 else args[0]]
        except TypeError as exc:
            raise SerializationError(f"Cannot parameterize '{head}' with {inner[:-1]}: {exc}") from exc
    if text in _BUILTIN_TYPES:
        return _BUILTIN_TYPES[text]
    if text in ("Any", "typing.Any"):
        return Any
    if text == "...":
        return Ellipsis
    if text.startswith("typing.") and text.count(".") == 1:  # typing.List, typing.Optional: always allowed
        found = getattr(typing, text.split(".", 1)[1], None)
        if found is None or inspect.isroutine(found) or isinstance(found, types.ModuleType):
            raise SerializationError(f"'{text}' is not a type of the typing module.")
        return found
    if hasattr(builtins, text) and isinstance(getattr(builtins, text), type):
        return getattr(builtins, text)
    return import_object(text, allowed_modules=allowed_modules)


def object_to_dict(obj: Any) -> dict[str, Any]:
    """Serialize a configurable object through its own ``to_dict``.

    Args:
        obj: Any object with a ``to_dict()`` method returning the ``{type, init_parameters}`` envelope.

    Returns:
        The envelope.

    Raises:
        SerializationError: When the object has no ``to_dict``.
    """
    to_dict = getattr(obj, "to_dict", None)
    if not callable(to_dict):
        raise SerializationError(
            f"Cannot serialize {type(obj).__name__}: it has no to_dict() method. "
            f"Give the class to_dict/from_dict methods."
        )
    result: dict[str, Any] = to_dict()
    return result


def object_from_dict(data: dict[str, Any], *, allowed_modules: Iterable[str] | None = None) -> Any:
    """Rebuild an object from its envelope, importing the class named in ``type``.

    The class's own ``from_dict`` is used when it has one, else :func:`default_from_dict`. A Haystack 2.x
    ``type`` (``haystack.tools.tool.Tool``) is read as handrail's class through :func:`haystack_to_handrail`.

    Args:
        data: ``{"type": ..., "init_parameters": ...}``; not modified.
        allowed_modules: See :func:`import_object`.

    Returns:
        The rebuilt object.

    Raises:
        SerializationError: When ``data`` has no ``type``, the type cannot be imported, or it is a Haystack type
            the table does not map.
    """
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise SerializationError(f"Expected a dict with a 'type' key, got {data!r}")
    data = {**data, "type": haystack_to_handrail(data["type"])}
    if "init_parameters" not in data and isinstance(data.get("data"), dict):  # Haystack's Tool and Toolset form
        data["init_parameters"] = data.pop("data")
    cls = import_object(data["type"], allowed_modules=allowed_modules)
    if not isinstance(cls, type):
        raise SerializationError(
            f"'{data['type']}' names a {type(cls).__name__}, not a class; an object's 'type' must be its class."
        )
    from_dict = getattr(cls, "from_dict", None)
    if callable(from_dict):
        return from_dict(copy.deepcopy(data))
    return default_from_dict(cls, data)


def haystack_to_handrail(path: str) -> str:
    """Return handrail's dotted path for a Haystack 2.x one (``haystack.tools.tool.Tool``); others unchanged.

    The table is :data:`handrail.core.haystack_yaml.HAYSTACK_TYPES`.

    Args:
        path: A dotted path, Haystack's or any other.

    Returns:
        handrail's counterpart of a ``haystack.*`` / ``haystack_experimental.*`` path, else ``path`` itself.

    Raises:
        SerializationError: ``path`` is inside Haystack and the table has no counterpart for it (named).
    """
    if not is_haystack_path(path):
        return path
    mapped = translate_haystack_path(path)
    if mapped is None:
        raise SerializationError(
            f"'{path}' is a Haystack type handrail has no counterpart for; see the table in "
            f"handrail.core.haystack_yaml.HAYSTACK_TYPES (docs: Loading Haystack YAML)."
        )
    return mapped
