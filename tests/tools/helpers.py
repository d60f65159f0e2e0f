"""Module-level functions, tools and classes used by the tools tests (importable by dotted path).

``add`` and ``get_weather`` are the shared ones of :mod:`tests.common_tools`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from handrail.tools import Tool, Toolset, tool
from tests.common_tools import add as add
from tests.common_tools import get_weather as get_weather


@tool(name="weather_async", description="Async weather.")
async def get_weather_async(location: str) -> str:
    return f"Rainy in {location}"


def lookup(city: str) -> dict[str, Any]:
    return {"city": city, "temperature": 7, "docs": [city]}


async def add_async(a: int, b: int = 1) -> int:
    return a + b


def failing(x: int) -> int:
    raise RuntimeError(f"boom {x}")


def to_text(result: Any) -> str:
    return f"result={result}"


def concat(current: Any, new: Any) -> list[Any]:
    return [*(current or []), *new]


ADD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer", "default": 1}},
    "required": ["a"],
}


def make_add_tool(name: str = "add") -> Tool:
    return Tool(name=name, description="Add two integers.", parameters=ADD_SCHEMA, function=add)


class CountingTool(Tool):
    """A Tool subclass that counts its warm-ups."""

    warm_ups: int = 0

    def warm_up(self) -> None:
        self.warm_ups += 1


class GrowingToolset(Toolset):
    """A dynamic Toolset: tools appear after construction."""

    def grow(self, name: str) -> Tool:
        new_tool = make_add_tool(name)
        self.add(new_tool)
        return new_tool


class LazyToolset(Toolset):
    """A dynamic Toolset that overrides only ``__iter__``; its tools come from a source list."""

    source: list[Tool]

    def __init__(self, tools: list[Tool] | None = None) -> None:
        super().__init__(tools)
        self.source = []

    def __iter__(self) -> Iterator[Tool]:
        return iter([*self.tools, *self.source])
