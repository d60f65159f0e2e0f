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

__all__ = ["aclose_tools", "close_tools", "tools_need_warm_up", "warm_up_tools"]


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


def warm_up_tools(tools: Any, warmed: dict[int, object]) -> None:
    """Call ``warm_up()`` on each toolset and each tool of ``tools`` not in ``warmed``, and record them there.

    A toolset is warmed before its tools are listed; tools it warmed itself (the base Toolset warms its tools)
    are recorded without a second call. Tools added to a toolset later are warmed by the next call. An object
    whose ``warm_up`` raised is not recorded, so the next call tries it again.

    Args:
        tools: A list of Tools and Toolsets, or one Toolset.
        warmed: ``{id(object): object}``; the reference keeps the id from being reused by another object.
    """
    for item in _items(tools):
        if isinstance(item, Toolset):
            if id(item) not in warmed:
                item.warm_up()
                warmed[id(item)] = item
                for tool in getattr(item, "_warmed", {}).values():
                    warmed[id(tool)] = tool
            for tool in item:
                _warm_tool(tool, warmed)
        else:
            _warm_tool(item, warmed)


def _warm_tool(tool: Tool, warmed: dict[int, object]) -> None:
    if id(tool) not in warmed:
        tool.warm_up()
        warmed[id(tool)] = tool


def _closing_order(objects: list[Any]) -> list[Any]:
    seen: set[int] = set()
    unique = []
    for obj in objects:
        if id(obj) not in seen:
            seen.add(id(obj))
            unique.append(obj)
    return unique


def close_tools(tools: Any, others: tuple[object, ...] = ()) -> None:
    """Call ``close()`` on ``others``, then on each toolset and tool of ``tools`` that has one, each object once.

    Every object is closed even when one raises; the first error is raised afterwards. The tools of a toolset
    are listed before it is closed.
    """
    errors: list[Exception] = []
    for obj in _closing_order([*others, *_parts(tools)]):
        close = getattr(obj, "close", None)
        if callable(close):
            try:
                close()
            except Exception as exc:
                errors.append(exc)
    if errors:
        raise errors[0]


async def aclose_tools(tools: Any, others: tuple[object, ...] = ()) -> None:
    """Async twin of :func:`close_tools`: awaits ``aclose()`` where an object has one, else calls ``close()``."""
    errors: list[Exception] = []
    for obj in _closing_order([*others, *_parts(tools)]):
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
