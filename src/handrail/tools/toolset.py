"""Toolset: a named group of tools that can be handed to an Agent or a ToolInvoker as one item."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from handrail.core._haystack_types import envelope_parameters
from handrail.core.serialization import object_from_dict, qualified_name, reading
from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError
from handrail.tools.tool import Tool

__all__ = ["Toolset"]


class Toolset:
    """A group of tools with unique names.

    Every method reads the tools through iteration, so a dynamic subclass (one whose tools
    appear after construction, e.g. once it connected to a server in ``warm_up``) only needs
    to keep :attr:`tools` current, or to override ``__iter__``. Agents flatten toolsets at every
    step, so tools added later are seen by the next step.

    Args:
        tools: The tools (a list); ``None`` means none.

    Raises:
        ConfigurationTypeError: When a single Tool, a non-list, or a list holding something other
            than Tools is given.
        ConfigurationError: When two tools share a name.

    Examples:
        >>> echo = Tool(name="echo", description="Echo.", function=lambda text: text,
        ...             parameters={"type": "object", "properties": {"text": {"type": "string"}}})
        >>> ts = Toolset([echo])
        >>> len(ts), "echo" in ts, ts[0] is echo
        (1, True, True)
    """

    def __init__(self, tools: list[Tool] | None = None) -> None:
        if isinstance(tools, Tool):
            raise ConfigurationTypeError("A single Tool cannot be passed to Toolset; use a list: Toolset([tool])")
        if tools is not None and not isinstance(tools, (list, tuple)):
            raise ConfigurationTypeError(f"Toolset expects a list of Tool objects, got {type(tools).__name__}.")
        items = list(tools or [])
        for item in items:
            _check_is_tool(item)
        _check_unique(t.name for t in items)
        self.tools: list[Tool] = items
        """The tools, in the order they were given."""
        self._warmed: dict[int, Tool] = {}

    def add(self, tool: Tool | Toolset) -> None:
        """Add a Tool, or every tool of another Toolset (as they are now).

        Args:
            tool: A Tool or a Toolset.

        Raises:
            ConfigurationError: When a name would be in this Toolset twice (nothing is added then).
            ConfigurationTypeError: When ``tool`` is neither a Tool nor a Toolset.
        """
        if isinstance(tool, Tool):
            new_tools = [tool]
        elif isinstance(tool, Toolset):
            new_tools = list(tool)
        else:
            raise ConfigurationTypeError(f"Toolset.add expects a Tool or a Toolset, got {type(tool).__name__}.")
        _check_unique(t.name for t in [*self, *new_tools])
        self.tools.extend(new_tools)

    def __add__(self, other: Tool | Toolset | list[Tool]) -> Toolset:
        """A combined Toolset: this one's tools, then ``other``'s (a Tool, a list of Tools or another Toolset).

        The combination reads each part as it is at every step (a dynamic Toolset's new tools appear) and warms up
        each part through the part's own ``warm_up``. Serialized, it is one Toolset of the tools it holds then.

        Raises:
            ConfigurationError: A name in both parts (a ValueError, as Haystack raises), naming it.
            ConfigurationTypeError: ``other`` is none of those.
        """
        if isinstance(other, Tool):
            parts: list[Tool | Toolset] = [self, Toolset([other])]
        elif isinstance(other, Toolset):
            parts = [self, other]
        elif isinstance(other, list | tuple) and all(isinstance(t, Tool) for t in other):
            parts = [self, Toolset(list(other))]
        else:
            raise ConfigurationTypeError(
                f"A Toolset can be added to a Tool, a list of Tools or another Toolset, not {type(other).__name__}."
            )
        return _Combined(parts)

    def warm_up(self) -> None:
        """Warm up every tool once (idempotent; tools added since the last call are warmed now)."""
        for item in self:
            if id(item) not in self._warmed:
                item.warm_up()
                self._warmed[id(item)] = item  # keeping the object alive keeps its id unique

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self.tools))

    def __len__(self) -> int:
        return len(list(iter(self)))

    def __getitem__(self, index: int) -> Tool:
        return list(iter(self))[index]

    def __contains__(self, item: object) -> bool:
        """True when a tool of that name (for a str) or that Tool (for a Tool) is in the Toolset."""
        if isinstance(item, str):
            return any(t.name == item for t in self)
        if isinstance(item, Tool):
            return any(t is item or t == item for t in self)
        return False

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Toolset):
            return NotImplemented
        return type(self) is type(other) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(tools={[t.name for t in self]})"

    def to_dict(self) -> dict[str, Any]:
        """Serialize to ``{"type": <class path>, "init_parameters": {"tools": [tool dicts]}}``.

        Subclasses whose constructor takes other arguments override this and :meth:`from_dict`.

        Raises:
            SerializationError: When a tool cannot be serialized (a lambda or a closure).
        """
        return {"type": qualified_name(self), "init_parameters": {"tools": [t.to_dict() for t in self.tools]}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Toolset:
        """Rebuild a Toolset from :meth:`to_dict` output (``data`` is not modified).

        Each tool comes back with the class named in its own ``type`` (Tool subclasses included). Haystack 2.x's
        form, ``{"type": "haystack.tools.toolset.Toolset", "data": {"tools": [...]}}``, is read too.

        Args:
            data: ``{"type": ..., "init_parameters": {"tools": [tool dicts]}}``.

        Returns:
            An instance of ``cls``.

        Raises:
            SerializationError: When ``init_parameters`` or ``tools`` is malformed or an entry is not a Tool.
        """
        params = envelope_parameters(data)
        if not isinstance(params, Mapping):
            raise SerializationError(f"Toolset data has no 'init_parameters' (or Haystack's 'data'): {data!r:.300}")
        tool_dicts = params.get("tools") or []
        if not isinstance(tool_dicts, list):
            raise SerializationError(f"Toolset 'tools' must be a list of tool dicts, got {type(tool_dicts).__name__}.")
        tools: list[Tool] = []
        for i, entry in enumerate(tool_dicts):
            with reading(f"tools[{i}]"):  # an error names the tool's field: tools[0].function
                obj = object_from_dict(entry)
            if not isinstance(obj, Tool):
                raise SerializationError(f"Toolset entry of type '{entry.get('type')}' is not a Tool.")
            tools.append(obj)
        return cls(tools=tools)


def _check_is_tool(item: object) -> None:
    if not isinstance(item, Tool):
        raise ConfigurationTypeError(f"Toolset items must be Tool objects, got {type(item).__name__}: {item!r}.")


def _check_unique(names: Iterable[str]) -> None:
    counts = Counter(names)
    duplicates = sorted(name for name, count in counts.items() if count > 1)
    if duplicates:
        raise ConfigurationError(f"Duplicate tool names found: {duplicates}")


class _Combined(Toolset):
    """``a + b``: the parts' tools, read afresh at every step, each part warmed up by its own ``warm_up``."""

    def __init__(self, parts: list[Tool | Toolset]) -> None:
        super().__init__([])
        self._parts = parts
        _check_unique(t.name for t in self)

    def __iter__(self) -> Iterator[Tool]:
        tools = [t for part in self._parts for t in part]  # type: ignore[union-attr]
        return iter(tools)

    def add(self, tool: Tool | Toolset) -> None:
        """Add a Tool or a Toolset as one more part (names stay unique)."""
        if not isinstance(tool, Tool | Toolset):
            raise ConfigurationTypeError(f"Toolset.add expects a Tool or a Toolset, got {type(tool).__name__}.")
        part: Toolset = tool if isinstance(tool, Toolset) else Toolset([tool])
        _check_unique(t.name for t in [*self, *part])
        self._parts.append(part)

    def warm_up(self) -> None:
        """Warm up each part through its own ``warm_up`` (each is idempotent)."""
        for part in self._parts:
            part.warm_up()

    @property
    def tools_may_ask(self) -> bool:
        """Whether a part's tools may bring their own confirmation (an MCP toolset's do)."""
        return any(getattr(part, "tools_may_ask", False) for part in self._parts)

    def close(self) -> None:
        """Close each part that has a ``close()`` (an MCP toolset ends its server); every part, even when one raises."""
        from handrail.tools._lifecycle import close_objects

        close_objects(list(self._parts))

    async def aclose(self) -> None:
        """Async twin of :meth:`close`."""
        from handrail.tools._lifecycle import aclose_objects

        await aclose_objects(list(self._parts))

    def to_dict(self) -> dict[str, Any]:
        """One Toolset of the tools the parts hold now; the parts themselves when one serializes itself otherwise.

        A part with its own ``to_dict`` (an MCP toolset, whose tools are its server's) is kept as a part:
        ``{"type": <this class>, "init_parameters": {"parts": [part dicts]}}``.
        """
        if all(type(part).to_dict is Toolset.to_dict for part in self._parts if isinstance(part, Toolset)):
            return Toolset(list(self)).to_dict()
        return {"type": qualified_name(self), "init_parameters": {"parts": [p.to_dict() for p in self._parts]}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Toolset:
        """Rebuild from :meth:`to_dict` output (either form).

        Raises:
            SerializationError: A malformed ``parts`` list or a part that is not a Toolset.
        """
        params = envelope_parameters(data)
        if not isinstance(params, Mapping) or "parts" not in params:
            return Toolset.from_dict(data)
        parts = params["parts"]
        if not isinstance(parts, list):
            raise SerializationError(f"A combined Toolset's 'parts' must be a list, got {type(parts).__name__}.")
        built = [object_from_dict(part) for part in parts]
        if not all(isinstance(part, Toolset) for part in built):
            raise SerializationError("Each part of a combined Toolset must be a Toolset.")
        return cls(built)
