"""Helpers for the ``tools`` argument of agents and tool invokers: flatten, serialize, deserialize.

A ``tools`` argument is ``None``, a :class:`~handrail.tools.toolset.Toolset`, or a list whose items
are Tools and Toolsets. Serialization keeps the Tool/Toolset boundaries so that a Toolset
subclass comes back as itself.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Sequence
from typing import Any, TypeAlias

from handrail.core.serialization import object_from_dict, reading
from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError
from handrail.tools.tool import Tool
from handrail.tools.toolset import Toolset

__all__ = ["ToolsType", "deserialize_tools", "flatten_tools", "serialize_tools"]

ToolsType: TypeAlias = "Sequence[Tool | Toolset] | Toolset"
"""What a ``tools`` argument may hold (besides ``None``): a Toolset, or a list of Tools and Toolsets."""


def _items(tools: ToolsType, what: str) -> list[Tool | Toolset]:
    """Return the top-level items of ``tools``, checking their types."""
    if isinstance(tools, Toolset):
        return [tools]
    if isinstance(tools, Tool) or not isinstance(tools, (list, tuple)):
        raise ConfigurationTypeError(
            f"{what} expects None, a Toolset or a list of Tool/Toolset items, got {type(tools).__name__}: {tools!r}."
        )
    for item in tools:
        if not isinstance(item, (Tool, Toolset)):
            raise ConfigurationTypeError(
                f"{what}: items must be Tool or Toolset objects, got {type(item).__name__}: {item!r}."
            )
    return list(tools)


def flatten_tools(tools: ToolsType | None) -> list[Tool]:
    """Flatten a ``tools`` argument into one list of Tools with unique names.

    Toolsets are iterated now, so a dynamic Toolset contributes the tools it has at this moment.

    Args:
        tools: ``None``, a Toolset, or a list of Tools and Toolsets.

    Returns:
        The tools in order (``[]`` for ``None``).

    Raises:
        ConfigurationTypeError: When ``tools`` or one of its items has another type (the
            message names that type).
        ConfigurationError: When two tools share a name: "Duplicate tool names found: [...]".

    Examples:
        >>> flatten_tools(None)
        []
    """
    if tools is None:
        return []
    flat: list[Tool] = []
    for item in _items(tools, "flatten_tools"):
        flat.extend(item if isinstance(item, Toolset) else [item])
    counts = Counter(t.name for t in flat)
    duplicates = sorted(name for name, count in counts.items() if count > 1)
    if duplicates:
        servers = any(getattr(t, "remote_name", None) is not None for t in flat if t.name in duplicates)
        hint = " (tools of MCP servers: give one MCPToolset a prefix=)" if servers else ""
        raise ConfigurationError(f"Duplicate tool names found: {duplicates}{hint}")
    return flat


def serialize_tools(tools: ToolsType | None) -> dict[str, Any] | list[dict[str, Any]] | None:
    """Serialize a ``tools`` argument, keeping Tool and Toolset boundaries.

    Args:
        tools: ``None``, a Toolset, or a list of Tools and Toolsets.

    Returns:
        ``None`` for ``None``; the Toolset's dict for a Toolset; else a list with one dict per item
        (a Tool's dict or a Toolset's dict).

    Raises:
        ConfigurationTypeError: When ``tools`` or an item has another type.
        SerializationError: When a tool cannot be serialized (a lambda or a closure).
    """
    if tools is None:
        return None
    if isinstance(tools, Toolset):
        return tools.to_dict()
    return [item.to_dict() for item in _items(tools, "serialize_tools")]


def deserialize_tools(
    data: dict[str, Any] | list[dict[str, Any]] | None,
) -> Toolset | list[Tool | Toolset] | None:
    """Rebuild what :func:`serialize_tools` wrote (``data`` is not modified).

    Each dict is rebuilt through :func:`~handrail.core.serialization.object_from_dict`, so Tool and
    Toolset subclasses come back with their own class.

    Args:
        data: ``None``, one Toolset dict, or a list of Tool and Toolset dicts.

    Returns:
        ``None``, a Toolset, or a list of Tools and Toolsets, mirroring ``data``.

    Raises:
        SerializationError: When an entry is malformed or does not rebuild into a Tool or Toolset.
    """
    if data is None:
        return None
    if isinstance(data, dict):
        with reading("tools"):
            obj = object_from_dict(copy.deepcopy(data))
        if not isinstance(obj, Toolset):
            raise SerializationError(f"Expected a Toolset dict, got type '{data.get('type')}'.")
        return obj
    if not isinstance(data, list):
        raise SerializationError(
            f"tools: expected None, a Toolset dict or a list of dicts, got {type(data).__name__}.", field="tools"
        )
    items: list[Tool | Toolset] = []
    for i, entry in enumerate(data):
        with reading(f"tools[{i}]"):  # an error names the tool's field: tools[0].function
            obj = object_from_dict(copy.deepcopy(entry))
        if not isinstance(obj, (Tool, Toolset)):
            raise SerializationError(f"Expected a Tool or Toolset dict, got type '{entry.get('type')}'.")
        items.append(obj)
    return items
