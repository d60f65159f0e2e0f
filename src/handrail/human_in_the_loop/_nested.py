"""Copy and JSON-encode tool arguments without recursion, however deeply the model nested them.

The model chooses how deeply its arguments nest. :func:`copy.deepcopy` recurses twice per level and
``json.dumps`` once, so arguments that parsed (a few hundred levels) could still raise RecursionError
while a person is asked about them. :func:`copy_params` and :func:`encode_json` walk ``dict`` and
``list`` values with an explicit stack instead.
"""

from __future__ import annotations

import copy
import functools
import json
from typing import Any, TypeVar

__all__ = ["copy_params", "encode_json"]

_T = TypeVar("_T")
_ATOMS = (str, int, float, bool, type(None))
_MISSING = object()
_encode_leaf = functools.partial(json.dumps, ensure_ascii=False, default=str)


def copy_params(value: _T) -> _T:
    """Return a deep copy of ``value`` that never recurses through dicts and lists.

    Plain ``dict`` and ``list`` containers (what JSON arguments hold) are copied with an explicit stack,
    keeping key order, shared references and cycles as :func:`copy.deepcopy` does; any other value is
    copied by ``copy.deepcopy`` (sharing the same memo).

    Args:
        value: Tool arguments or any value in them.

    Returns:
        An independent copy with the same shape.
    """
    memo: dict[int, Any] = {}
    todo: list[tuple[Any, Any]] = []
    root: _T = _start_copy(value, memo, todo)
    while todo:
        source, target = todo.pop()
        if type(source) is dict:
            for key, item in source.items():
                target[key] = _start_copy(item, memo, todo)
        else:
            target.extend(_start_copy(item, memo, todo) for item in source)
    return root


def _start_copy(value: Any, memo: dict[int, Any], todo: list[tuple[Any, Any]]) -> Any:
    """The copy of ``value``: an atom itself, a memoized copy, an empty container to fill, or a deepcopy."""
    if type(value) in _ATOMS:
        return value
    found = memo.get(id(value), _MISSING)
    if found is not _MISSING:
        return found
    if type(value) is dict:
        target: Any = {}
    elif type(value) is list:
        target = []
    else:
        return copy.deepcopy(value, memo)
    memo[id(value)] = target
    todo.append((value, target))
    return target


class _Text:
    """A piece of output queued between values; ``leave`` ends the container with that id."""

    __slots__ = ("leave", "text")

    def __init__(self, text: str, leave: int | None = None) -> None:
        self.text = text
        self.leave = leave


def encode_json(value: Any, *, sort_keys: bool = False) -> str:
    """Return ``json.dumps(value, sort_keys=sort_keys, ensure_ascii=False, default=str)``, at any depth.

    The standard encoder is tried first; when it runs out of recursion depth the same text is built
    with an explicit stack (dicts, lists and tuples; every other value is encoded by ``json.dumps``).

    Args:
        value: What to encode (tool arguments).
        sort_keys: Sort the keys of every dict.

    Returns:
        The JSON text.

    Raises:
        TypeError: For a dict key that is not a str, int, float, bool or None (or keys that cannot be sorted).
        ValueError: For a reference cycle.
    """
    try:
        return json.dumps(value, sort_keys=sort_keys, ensure_ascii=False, default=str)
    except RecursionError:
        return _encode_iteratively(value, sort_keys)


def _encode_iteratively(value: Any, sort_keys: bool) -> str:
    parts: list[str] = []
    open_ids: set[int] = set()
    todo: list[Any] = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, _Text):
            parts.append(item.text)
            if item.leave is not None:
                open_ids.discard(item.leave)
        elif isinstance(item, dict | list | tuple) and item:
            if id(item) in open_ids:
                raise ValueError("Circular reference detected")
            open_ids.add(id(item))
            todo.extend(reversed(_open(item, sort_keys)))
        elif isinstance(item, dict):
            parts.append("{}")
        elif isinstance(item, list | tuple):
            parts.append("[]")
        else:
            parts.append(_encode_leaf(item))
    return "".join(parts)


def _open(container: dict[Any, Any] | list[Any] | tuple[Any, ...], sort_keys: bool) -> list[Any]:
    """The pieces of a non-empty container, in output order: brackets, separators and values to encode."""
    if isinstance(container, dict):
        entries = sorted(container.items()) if sort_keys else list(container.items())
        pieces: list[Any] = [_Text("{")]
        for i, (key, item) in enumerate(entries):
            pieces += [_Text(f"{', ' if i else ''}{_encode_key(key)}: "), item]
        return [*pieces, _Text("}", leave=id(container))]
    pieces = [_Text("[")]
    for i, item in enumerate(container):
        pieces += [_Text(", "), item] if i else [item]
    return [*pieces, _Text("]", leave=id(container))]


def _encode_key(key: Any) -> str:
    if isinstance(key, str):
        return _encode_leaf(key)
    if key is None or isinstance(key, bool | int | float):
        return _encode_leaf(_encode_leaf(key))
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
