"""Tool names for APIs that only take ``^[a-zA-Z0-9_-]{1,64}$`` (OpenAI's function names), and back.

A Tool's name is any readable text (``"Addition tool"``); OpenAI refuses such a name with a 400.
The generator therefore sends each tool under a *wire name* and maps the model's calls back:

* a name that already fits is sent unchanged (so most tools never notice);
* otherwise every character outside ``a-z A-Z 0-9 _ -`` becomes ``_`` (accents are dropped
  first: ``é`` → ``e``): ``"Addition tool"`` → ``"Addition_tool"``;
* a non-ASCII name, or one still longer than 64, is cut to 55 characters and gets ``_`` plus 8
  hex digits of its SHA-256 (``"météo"`` → ``"meteo_"`` + 8 hex digits; ``"tool_"`` + 8 when
  nothing readable is left): stable across runs and processes, and such a name does not
  collide with the ASCII one it resembles.

The mapping is a pure function of the name, so a conversation's earlier calls are sent under the
same wire names whatever tools the current request offers. Two tools of one request that map to
the same wire name are refused before anything is sent. A name the model sends that is no tool's
wire name comes back unchanged, so the tool step still reports it as an unknown tool.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from handrail.dataclasses.chat_message import ChatMessage, ToolCall
from handrail.dataclasses.streaming import StreamingChunk
from handrail.errors import ConfigurationError
from handrail.tools._names import WIRE_NAME_RULE, wire_name
from handrail.tools.tool import Tool

__all__ = ["WIRE_NAME_RULE", "WireNames", "wire_name"]


@dataclass(frozen=True, slots=True)
class WireNames:
    """The wire names of one request's tools, both ways."""

    to_wire: Mapping[str, str] = field(default_factory=dict)
    """Tool name → wire name, for the tools offered."""
    from_wire: Mapping[str, str] = field(default_factory=dict)
    """Wire name → tool name, for the tools offered."""

    @classmethod
    def of(cls, tools: Iterable[Tool]) -> WireNames:
        """Map the names of ``tools`` (whose names are unique).

        Raises:
            ConfigurationError: When two tools get the same wire name; the message names both.
        """
        to_wire: dict[str, str] = {}
        from_wire: dict[str, str] = {}
        for tool in tools:
            wire = wire_name(tool.name)
            other = from_wire.get(wire)
            if other is not None and other != tool.name:
                raise ConfigurationError(
                    f"The tools {other!r} and {tool.name!r} would both be sent to the model as {wire!r} (tool "
                    f"names on this API are {WIRE_NAME_RULE}); rename one of them."
                )
            to_wire[tool.name] = wire
            from_wire[wire] = tool.name
        return cls(to_wire, from_wire)

    def wire(self, name: str) -> str:
        """The name to send for ``name``: its tool's wire name, else :func:`wire_name` of it."""
        return self.to_wire.get(name) or wire_name(name)

    def original(self, name: Any) -> Any:
        """The tool name the model meant by ``name``; anything that is no tool's wire name unchanged."""
        return self.from_wire.get(name, name) if isinstance(name, str) else name

    @property
    def renames(self) -> bool:
        """True when some tool is sent under another name (else nothing needs mapping)."""
        return any(wire != name for wire, name in self.from_wire.items())

    # ------------------------------------------------------------ OpenAI chat completions shapes

    def request(self, body: dict[str, Any]) -> None:
        """Send the names of a ``chat.completions.create`` body as wire names, in place.

        Renamed: each tool's ``function.name``, each earlier assistant call's ``function.name``
        in ``messages``, and a named ``tool_choice`` (``{"type": "function", "function": {"name"}}``).
        """
        for tool in body.get("tools") or []:
            tool["function"]["name"] = self.wire(tool["function"]["name"])
        for message in body.get("messages") or []:
            for call in message.get("tool_calls") or []:
                call["function"]["name"] = self.wire(call["function"]["name"])
        choice = body.get("tool_choice")
        if not isinstance(choice, Mapping):
            return
        function = choice.get("function")
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            body["tool_choice"] = {**choice, "function": {**function, "name": self.wire(function["name"])}}

    def reply(self, message: ChatMessage) -> ChatMessage:
        """``message`` with its tool calls named by their tools' names (the same object when none changes)."""
        if not self.renames or not message.tool_calls:
            return message
        content = [
            dataclasses.replace(part, tool_name=self.original(part.tool_name)) if type(part) is ToolCall else part
            for part in message._content
        ]
        return dataclasses.replace(message, _content=content)

    def chunk(self, chunk: StreamingChunk) -> StreamingChunk:
        """``chunk`` with its tool-call fragments' names mapped back (the same object when none changes)."""
        if not self.renames or not chunk.tool_calls:
            return chunk
        deltas = [dataclasses.replace(d, tool_name=self.original(d.tool_name)) for d in chunk.tool_calls]
        return dataclasses.replace(chunk, tool_calls=deltas)
