"""A value as JSON text that is always valid JSON: what a log preview and a span's content attribute show.

``json.dumps`` alone writes ``NaN`` (not JSON) and, with ``default=str``, a set or an object as a quoted string
(``"{1, 2}"``), which a content attribute then quotes again. Here a set or tuple is a list, a NaN or an infinity
is the string ``"NaN"`` / ``"Infinity"`` / ``"-Infinity"``, a mapping's keys are strings, and any other object is
its ``str()``, once; a value that holds itself is cut there (``"<circular>"``).
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Mapping
from typing import Any

__all__ = ["json_safe", "json_text"]


def json_safe(value: Any, _seen: frozenset[int] = frozenset()) -> Any:
    """``value`` as plain JSON data (dict with str keys, list, str, int, finite float, bool, None).

    Examples:
        >>> json_safe({"s": {2, 1}, "f": float("nan"), 1: (True, None)})
        {'s': [1, 2], 'f': 'NaN', '1': [True, None]}
    """
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, Mapping | list | tuple | set | frozenset):
        if id(value) in _seen:
            return "<circular>"
        seen = _seen | {id(value)}
        if isinstance(value, Mapping):
            return {k if isinstance(k, str) else str(json_safe(k, seen)): json_safe(v, seen) for k, v in value.items()}
        items = [json_safe(v, seen) for v in value]
        if isinstance(value, set | frozenset):
            with contextlib.suppress(TypeError):  # mixed kinds: the set's own order
                items.sort()
        return items
    return str(value)


def json_text(value: Any, compact: bool = False) -> str:
    """``value`` (through :func:`json_safe`) as JSON text, never ``NaN`` (``allow_nan=False``)."""
    separators = (",", ":") if compact else None
    return json.dumps(json_safe(value), ensure_ascii=False, allow_nan=False, separators=separators)
