r"""JSON data: the one definition shared by the reader of tool-call arguments and the snapshot writer.

A value is *JSON data* when a snapshot can hold it exactly: ``None``, ``bool``, ``int``, finite
``float``, ``int`` Python can write as text (at most ``sys.get_int_max_str_digits()`` digits, 4,300 by
default), ``str`` holding valid Unicode (no surrogate code point: UTF-8 cannot write one), lists
(and tuples, written as lists) and dicts whose keys are ``str`` (``json.dumps`` also writes
``int``/``float``/``bool``/``None`` keys, as strings), with containers nested at most
:data:`MAX_DEPTH` levels deep, the outermost one counted.

:func:`parse_json` reads JSON text into JSON data and refuses what Python's ``json.loads`` accepts
beyond it (``NaN``, ``Infinity``, ``-Infinity``, numbers too large for a float, lone ``\ud800``
escapes, nesting past :data:`MAX_DEPTH`); :func:`json_problem` and :func:`check_json` find the
first part of a value that is not JSON data. So arguments that pass the parser can always be
written to a snapshot, and a pause never fails on what a tool call was allowed to run with.

Examples:
    >>> parse_json('{"city": "Oslo", "days": [1, 2]}')
    {'city': 'Oslo', 'days': [1, 2]}
    >>> parse_json('{"v": NaN}')
    Traceback (most recent call last):
    ...
    handrail.core.json_data.JSONDataError: NaN is not a JSON number: JSON numbers are finite
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

__all__ = ["MAX_DEPTH", "JSONDataError", "check_json", "clip_path", "int_problem", "json_problem", "parse_json",
           "problem_text", "shown_text", "text_problem", "writable_text"]  # fmt: skip

MAX_DEPTH = 64
"""The deepest nesting of containers that is JSON data (the outermost container is level 1); the snapshot
writer and reader refuse deeper values, and the tool-call argument parser refuses them at the parse boundary."""

_SAFE_INT_BITS = 640 * 3
"""Ints of at most this many bits have at most 640 digits (2**3 < 10), the lowest limit Python allows to set
with ``sys.set_int_max_str_digits``: text of such an int can always be written, checked without converting it."""
_SURROGATE = re.compile("[\ud800-\udfff]")
_TOO_DEEP = "values nested more than"


class JSONDataError(ValueError):
    """JSON text that is not JSON data as handrail writes it (the message says why, without the text)."""


def _type_name(value: object) -> str:
    cls = type(value)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _a(name: str) -> str:
    """``name`` with its indefinite article: "a tuple", "an object"."""
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def text_problem(text: str) -> str | None:
    """Why a snapshot cannot hold ``text`` (it holds a surrogate code point), or None when it can."""
    if text.isascii():
        return None
    found = _SURROGATE.search(text)
    if found is None:
        return None
    return f"the text holds a lone surrogate {found.group()!r}, which is not valid Unicode (UTF-8 cannot write it)"


def writable_text(text: str) -> str:
    r"""``text`` with each surrogate code point replaced by its ``\uXXXX`` escape: text a snapshot can hold.

    Examples:
        >>> writable_text("ok \ud800")
        'ok \\ud800'
    """
    return text if text_problem(text) is None else text.encode("utf-8", "backslashreplace").decode("utf-8")


def int_problem(value: int) -> str | None:
    """Why ``value`` cannot be written as JSON text (more digits than Python converts), or None when it can.

    Examples:
        >>> int_problem(10**5000)
        'an integer of more than 4300 digits cannot be written as text (sys.get_int_max_str_digits())'
    """
    if value.bit_length() <= _SAFE_INT_BITS:
        return None
    limit = sys.get_int_max_str_digits()
    if limit == 0:
        return None
    try:
        int.__repr__(value)
    except ValueError:
        return f"an integer of more than {limit} digits cannot be written as text (sys.get_int_max_str_digits())"
    return None


def _problem(value: Any, depth: int, max_depth: int) -> tuple[str, str] | None:
    """``(path suffix, reason)`` for the first part of ``value`` (inside ``depth`` containers) that is not JSON."""
    if isinstance(value, str):
        problem = text_problem(value)
        return None if problem is None else ("", problem)
    if isinstance(value, float):
        return None if math.isfinite(value) else ("", f"{value!r} is not allowed in JSON")
    if value is None:
        return None
    if isinstance(value, int):  # bool and IntEnum members included, as json.dumps writes them
        problem = int_problem(value)
        return None if problem is None else ("", problem)
    if isinstance(value, dict | list | tuple):
        if depth >= max_depth:
            return "", f"{_TOO_DEEP} {max_depth} levels deep (or a reference cycle) are refused"
        return _children_problem(value, depth + 1, max_depth)
    return "", f"{_a(_type_name(value))} is not JSON data"


def _plain(item: Any) -> bool:
    """True for the common leaves that are JSON data as they are (checked without a call to :func:`_problem`)."""
    kind = type(item)
    return (
        (kind is str and item.isascii())
        or (kind is int and item.bit_length() <= _SAFE_INT_BITS)
        or kind is bool
        or item is None
    )


def _key_problem(key: Any) -> tuple[str, str] | None:
    if isinstance(key, str):
        problem = text_problem(key)
        return None if problem is None else (f".keys()[{key!r}]", problem)
    if isinstance(key, int) and int_problem(key) is not None:
        return f".keys()[<a {key.bit_length()}-bit int>]", f"{int_problem(key)} (as a key)"
    if isinstance(key, int | float | bool) or key is None:
        return None
    return f".keys()[{key!r}]", f"{_a(_type_name(key))} key is not allowed in JSON"


def _children_problem(value: Any, depth: int, max_depth: int) -> tuple[str, str] | None:
    if not isinstance(value, dict):
        for i, item in enumerate(value):
            found = None if _plain(item) else _problem(item, depth, max_depth)
            if found is not None:
                return f"[{i}]{found[0]}", found[1]
        return None
    for key, item in value.items():
        found = None if type(key) is str and key.isascii() else _key_problem(key)
        if found is None and not _plain(item):
            found = _problem(item, depth, max_depth)
            if found is not None:
                return f"[{key!r}]{found[0]}", found[1]
        elif found is not None:
            return found
    return None


def json_problem(value: Any, max_depth: int = MAX_DEPTH) -> tuple[str, str] | None:
    """Find the first part of ``value`` that is not JSON data.

    Args:
        value: The value.
        max_depth: The deepest nesting of containers allowed (the outermost counts as level 1).

    Returns:
        None for JSON data, else ``(path, reason)``: the path into ``value`` (e.g. ``"['a'][1]"``, ``""``
        for ``value`` itself) and why that part is refused.
    """
    if type(value) is dict and max_depth >= 1 and _flat_plain(value):  # most tool arguments: one call, no walk
        return None
    return _problem(value, 0, max_depth)


def _flat_plain(value: dict[Any, Any]) -> bool:
    """True when every key is ASCII text and every item a plain leaf (a finite float included): JSON as it is."""
    for key, item in value.items():
        kind = type(item)
        if not (
            type(key) is str
            and key.isascii()
            and (
                (kind is str and item.isascii())
                or (kind is int and item.bit_length() <= _SAFE_INT_BITS)
                or (kind is float and item - item == 0.0)  # inf - inf and nan - nan are nan
                or kind is bool
                or item is None
            )
        ):
            return False
    return True


def clip_path(path: str, limit: int = 160) -> str:
    """``path`` itself, or its start and end around ``…`` when longer than ``limit`` characters.

    A path into a value nested 64 levels deep would otherwise fill the error message.

    Examples:
        >>> clip_path("args" + "['a']" * 40, limit=30)
        "args['a']['a']['a'][…'a']['a']"
    """
    if len(path) <= limit:
        return path
    head = limit * 2 // 3
    return f"{path[:head]}…{path[head - limit + 1 :]}"


def check_json(value: Any, where: str = "value") -> None:
    """Check that ``value`` is JSON data a snapshot can hold; name the first part that is not.

    Args:
        value: The value to check.
        where: How to name ``value`` in the error message.

    Raises:
        SerializationError: Naming the place, e.g. ``messages[3]['meta']['when']``, and why.

    Examples:
        >>> check_json({"a": [1, 2.5, None]})
        >>> check_json({"a": [1, float("nan")]}, "meta")
        Traceback (most recent call last):
        ...
        handrail.errors.SerializationError: meta['a'][1]: nan is not allowed in JSON.
    """
    problem = json_problem(value)
    if problem is not None:
        from handrail.errors import SerializationError

        raise SerializationError(f"{clip_path(where + problem[0])}: {problem[1]}.")


def _refuse_constant(name: str) -> Any:
    raise JSONDataError(f"{name} is not a JSON number: JSON numbers are finite")


def parse_json(text: str, max_depth: int = MAX_DEPTH) -> Any:
    r"""Read JSON text into JSON data, refusing what a snapshot could not hold.

    Args:
        text: The JSON text.
        max_depth: The deepest nesting of containers allowed (the outermost counts as level 1).

    Returns:
        The value (``json.loads(text)`` where that is JSON data).

    Raises:
        JSONDataError: For text that is not JSON (the parser's message, e.g. ``Expecting value: line 1
            column 2 (char 1)``), ``NaN``/``Infinity``/``-Infinity``, a number too large for a float, an integer
            of more digits than ``sys.get_int_max_str_digits()``, a lone
            surrogate escape (``"\ud800"``), or containers nested deeper than ``max_depth`` (however deep:
            never a RecursionError).
    """
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except JSONDataError:
        raise
    except RecursionError:
        raise JSONDataError(f"{_TOO_DEEP} {max_depth} levels deep are refused") from None
    except ValueError as exc:
        raise JSONDataError(str(exc)) from None
    problem = json_problem(value, max_depth)
    if problem is not None:
        raise JSONDataError(problem_text(problem))
    return value


def problem_text(problem: tuple[str, str]) -> str:
    """A :func:`json_problem` answer as one phrase: ``at ['v']: nan is not allowed in JSON``.

    The path of a value nested too deeply is left out (it would only repeat ``[0]`` sixty-four times).
    """
    path, reason = problem
    if reason.startswith(_TOO_DEEP):
        return reason.replace(" (or a reference cycle)", "")
    return f"at {clip_path(path)}: {reason}" if path else reason


def shown_text(value: Any, max_depth: int = MAX_DEPTH) -> str:
    r"""JSON-like text of a value that is not JSON data, which a snapshot can hold, for showing what was sent.

    ``NaN`` and ``Infinity`` are written as those words, a surrogate code point as its ``\uXXXX`` escape, an int
    of more digits than Python writes as ``<an integer of more than 4300 digits>``,
    containers deeper than ``max_depth + 1`` levels as ``"…"``, and other objects by their ``repr``: text
    that :func:`parse_json` refuses again, naming the same problem where it can.

    Examples:
        >>> shown_text({"v": float("nan"), "s": "\ud800"})
        '{"v": NaN, "s": "\\ud800"}'
    """
    return writable_text(_shown(value, 0, max_depth + 1))


def _shown(value: Any, depth: int, limit: int) -> str:
    if isinstance(value, dict | list | tuple):
        if depth >= limit:
            return '"…"'
        if isinstance(value, dict):
            items = (f"{_key_text(k)}: {_shown(v, depth + 1, limit)}" for k, v in value.items())
            return "{" + ", ".join(items) + "}"
        return "[" + ", ".join(_shown(v, depth + 1, limit) for v in value) + "]"
    if isinstance(value, int) and int_problem(value) is not None:
        return f"<an integer of more than {sys.get_int_max_str_digits()} digits>"
    if value is None or isinstance(value, str | int | float):
        return json.dumps(value, ensure_ascii=False)
    return repr(value)


def _key_text(key: Any) -> str:
    if isinstance(key, int) and int_problem(key) is not None:
        return json.dumps(_shown(key, 0, 1))
    return json.dumps(key if isinstance(key, str) else str(key), ensure_ascii=False)
