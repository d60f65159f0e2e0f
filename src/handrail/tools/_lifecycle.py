"""Warming up and closing the tools and toolsets given to an Agent or a ToolInvoker, each object once.

A Toolset is an object of its own here, not only a list of tools: its ``warm_up()`` is called (once) before
its tools are read, since a toolset may only know its tools once it is ready (one that connects to a server in
``warm_up``), and its ``close()`` / ``aclose()`` is called when its owner is closed. Tools are warmed and closed
too, those inside toolsets included; a tool the toolset's own ``warm_up`` warmed already is not warmed again.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

from handrail.tools.tool import Tool
from handrail.tools.toolset import Toolset

__all__ = ["aclose_objects", "close_objects", "mark_warmed", "objects_to_close", "tools_need_warm_up", "warm_up_tools"]


def _items(tools: Any) -> list[Any]:
    if tools is None:
        return []
    if isinstance(tools, Toolset):
        return [tools]
    return list(tools)


def _parts(tools: Any) -> Iterator[Any]:
    """Each toolset, then its tools as they are now; each tool given alone."""
    for item in _items(tools):
        yield item
        if isinstance(item, Toolset):
            yield from item


def tools_need_warm_up(tools: Any, warmed: dict[int, object]) -> bool:
    """Whether a toolset or a tool of ``tools`` is not in ``warmed`` (ids of the objects warmed so far)."""
    return any(id(part) not in warmed for part in _parts(tools))


def warm_up_tools(tools: Any, warmed: dict[int, object], closed: dict[int, object] | None = None) -> None:
    """Call ``warm_up()`` on each toolset and each tool of ``tools`` not in ``warmed``, and record them there.

    A toolset is warmed before its tools are listed; tools it warmed itself (the base Toolset warms its tools)
    are recorded without a second call. Tools added to a toolset later are warmed by the next call. An object
    whose ``warm_up`` raised is not recorded, so the next call tries it again.

    Args:
        tools: A list of Tools and Toolsets, or one Toolset.
        warmed: ``{id(object): object}``; the reference keeps the id from being reused by another object.
        closed: The owner's objects closed since their last warm-up (see :func:`objects_to_close`): an object
            warmed again is open again, and the next close closes it.
    """
    closed = {} if closed is None else closed
    for item in _items(tools):
        if isinstance(item, Toolset):
            if id(item) not in warmed:
                item.warm_up()
                mark_warmed(item, warmed, closed)
                for tool in getattr(item, "_warmed", {}).values():
                    mark_warmed(tool, warmed, closed)
            for tool in item:
                _warm_tool(tool, warmed, closed)
        else:
            _warm_tool(item, warmed, closed)


def mark_warmed(obj: object, warmed: dict[int, object], closed: dict[int, object]) -> None:
    """Record ``obj`` as warmed (the reference keeps its id from being reused) and no longer closed."""
    warmed[id(obj)] = obj
    closed.pop(id(obj), None)


def _warm_tool(tool: Tool, warmed: dict[int, object], closed: dict[int, object]) -> None:
    if id(tool) not in warmed:
        tool.warm_up()
        mark_warmed(tool, warmed, closed)


def _closing_order(objects: list[Any]) -> list[Any]:
    seen: set[int] = set()
    unique = []
    for obj in objects:
        if id(obj) not in seen:
            seen.add(id(obj))
            unique.append(obj)
    return unique


def objects_to_close(
    tools: Any, others: tuple[object, ...], warmed: dict[int, object], closed: dict[int, object]
) -> list[Any]:
    """The objects a close must close, recorded as closed: call it under the owner's warm-up lock.

    They are ``others``, then each toolset and tool of ``tools`` (a toolset's tools listed before it is closed),
    each once, leaving out those closed already and not warmed since: closing twice closes nothing the second
    time, and an object whose ``close`` raised is not closed again. ``warmed`` is emptied (and a base Toolset
    forgets the tools it warmed), so the next run warms everything again, as after a fresh start.

    Args:
        tools: A list of Tools and Toolsets, or one Toolset.
        others: The owner's other objects (an Agent's chat generator and hooks).
        warmed: The owner's ``{id(object): object}`` of the objects warmed.
        closed: The owner's ``{id(object): object}`` of the objects closed and not warmed since.
    """
    parts = _closing_order([*others, *_parts(tools)])
    todo = [obj for obj in parts if id(obj) not in closed]
    for obj in parts:
        toolset_warmed = getattr(obj, "_warmed", None) if isinstance(obj, Toolset) else None
        if isinstance(toolset_warmed, dict):
            for tool in obj:
                toolset_warmed.pop(id(tool), None)
    closed.clear()  # objects no longer the owner's are dropped with it
    closed.update((id(obj), obj) for obj in parts)
    warmed.clear()
    return todo


def close_objects(objects: list[Any]) -> None:
    """Call ``close()`` on each object that has one.

    Every object is closed even when one raises; the first error is raised afterwards.
    """
    errors: list[Exception] = []
    for obj in objects:
        close = getattr(obj, "close", None)
        if callable(close):
            try:
                close()
            except Exception as exc:
                errors.append(exc)
    if errors:
        raise errors[0]


async def aclose_objects(objects: list[Any]) -> None:
    """Async twin of :func:`close_objects`: awaits ``aclose()`` where an object has one, else calls ``close()``."""
    errors: list[Exception] = []
    for obj in objects:
        aclose = getattr(obj, "aclose", None)
        close = aclose if callable(aclose) else getattr(obj, "close", None)
        if not callable(close):
            continue
        try:
            result = close()
            if inspect.isawaitable(result):
                await result
        except Exception as exc:
            errors.append(exc)
    if errors:
        raise errors[0]
