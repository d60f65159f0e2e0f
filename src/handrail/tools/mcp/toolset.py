"""MCPToolset and MCPTool: the tools of a Model Context Protocol server, as handrail tools.

The toolset connects at ``warm_up()`` (the Agent warms its tools before the first step; ``eager_connect=True``
connects in the constructor), lists the server's tools, and offers each as an :class:`MCPServerTool`:

* its name fits model APIs (``calendar.read`` → ``calendar_read``; with ``prefix="cal"``: ``cal_calendar_read``),
  while the call goes to the server under the original name;
* its description and input schema are the server's (handrail validates the model's arguments against the
  schema before anything is sent); the output schema and the annotations are kept;
* the annotations set whether a call asks a person when the Agent's ``confirmation_strategies`` say nothing
  about the tool: a tool the server marks ``read_only_hint`` (and not ``open_world_hint`` or
  ``destructive_hint``) runs without asking, every other tool asks through ``confirmation_strategy`` (default: a
  console prompt). Annotations are hints from a server you may not control: an explicit strategy of the Agent
  for the tool's name always wins, both ways;
* a call is sent once: ``tools/call`` is never retried (it may not be idempotent); a timeout sends the
  protocol's cancellation and gives the model an error result naming the timeout.

A list change the server announces is applied when the toolset is next listed, which the Agent does at the start
of each step, never during one.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from handrail.core.serialization import (
    deserialize_callable,
    object_from_dict,
    pattern_may_hang,
    qualified_name,
    serialize_callable,
)
from handrail.errors import ConfigurationError, ConfigurationTypeError, MCPToolError, SerializationError
from handrail.tools._confirmation import ASK
from handrail.tools._names import wire_name
from handrail.tools.mcp._results import ResultOptions, convert_result
from handrail.tools.mcp._servers import StdioServer, StreamableHttpServer, server_label
from handrail.tools.preview import Preview
from handrail.tools.tool import Tool
from handrail.tools.toolset import Toolset

if TYPE_CHECKING:
    from handrail.tools.mcp._connection import MCPConnection

__all__ = ["MCPServerTool", "MCPTool", "MCPToolset", "asks_by_hints"]

logger = logging.getLogger("handrail.tools.mcp")

_HINTS = ("read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint")
_OPEN = {"type": "object", "properties": {}}


def asks_by_hints(annotations: Mapping[str, Any] | None) -> bool:
    """Whether a tool with these annotations asks a person by default.

    Only a tool the server marks read-only, and not open-world or destructive, runs without asking; a tool with
    no annotations asks (the protocol's defaults: not read-only, destructive, open-world).

    Examples:
        >>> asks_by_hints({"read_only_hint": True}), asks_by_hints({}), asks_by_hints(None)
        (False, True, True)
        >>> asks_by_hints({"read_only_hint": True, "open_world_hint": True})
        True
    """
    hints = annotations or {}
    if hints.get("read_only_hint") is not True:
        return True
    return hints.get("destructive_hint") is True or hints.get("open_world_hint") is True


@dataclass
class MCPServerTool(Tool):
    """One tool of an MCP server, as the model sees it and as the person deciding its calls sees it.

    Built by :class:`MCPToolset`; not serialized on its own (its toolset is).
    """

    server: str = field(default="", kw_only=True)
    """The server's label (``MCPToolset.label``)."""
    remote_name: str = field(default="", kw_only=True)
    """The tool's name on the server (the name the call is sent with)."""
    annotations: dict[str, Any] = field(default_factory=dict, kw_only=True)
    """The server's hints (``read_only_hint``, ``destructive_hint``, ``idempotent_hint``, ``open_world_hint``,
    ``title``): set by the server, never verified."""
    output_schema: dict[str, Any] | None = field(default=None, kw_only=True)
    """The server's JSON Schema of the tool's structured result, if it declared one."""
    confirmation_default: Any = field(default=None, kw_only=True, compare=False, repr=False)
    """What its calls ask when the Agent has no strategy for it: None (run), ``"ask"`` or a strategy."""

    @property
    def approval_description(self) -> str:
        """What the person deciding a call reads about the tool: server, name, hints, then the description."""
        hints = ", ".join(f"{k.removesuffix('_hint').replace('_', '-')}={v}" for k, v in self.annotations.items()
                          if k in _HINTS)  # fmt: skip
        return (
            f"MCP server '{self.server}', tool '{self.remote_name}'"
            f" (the server's hints, unverified: {hints or 'none'}). {self.description}"
        )

    def to_dict(self) -> dict[str, Any]:
        """Refused: an MCP tool is serialized through its :class:`MCPToolset`.

        Raises:
            SerializationError: Always.
        """
        raise SerializationError(
            f"Tool '{self.name}' comes from MCP server '{self.server}': serialize its MCPToolset instead."
        )


class MCPToolset(Toolset):
    """The tools of one MCP server.

    Args:
        server: A :class:`~handrail.tools.mcp.StdioServer`, a :class:`~handrail.tools.mcp.StreamableHttpServer`,
            or an in-process server object (``mcp.server.mcpserver.MCPServer``, for tests; not serializable).
        tool_names: Only these tools (server names); a name the server lacks is refused at warm-up.
        tool_filter: ``tool_filter(mcp_tool) -> bool``: keep a listed tool when True (after ``tool_names``).
        prefix: Put ``{prefix}_`` before every tool's name, so that two servers' tools of one name can live in
            one Agent.
        connect_timeout: Seconds to connect (start the process and the handshake).
        call_timeout: Seconds a call may take; then the server is told to cancel it and the model gets an error.
        tool_timeouts: ``{server tool name: seconds}``: a call timeout per tool.
        list_timeout: Seconds a ``tools/list`` may take.
        mode: ``"auto"`` (the 2026-07-28 protocol when the server has it, else the older handshake) or
            ``"legacy"`` (always the older handshake).
        max_reconnects: How many times a lost connection is opened again (a new process for stdio) before calls
            fail at once.
        max_result_chars: The longest text result the model reads whole; longer keeps its head and tail.
        result_offload: ``offload(text) -> reference``: where the whole text of a cut result goes (the reference
            is in the marker the model reads); a dotted path when serialized.
        use_structured_content: True: the model reads a result's structured content (JSON) when it has one.
        eager_connect: Connect in the constructor instead of at warm-up.
        confirmation_strategy: How a call of a tool whose hints say "ask" is decided when the Agent has no
            strategy for it; None: a console prompt (``BlockingConfirmationStrategy(AlwaysAskPolicy(),
            SimpleConsoleUI())``).

    Raises:
        ConfigurationError: A bad setting (names it).
        ConfigurationTypeError: A setting of the wrong type.
    """

    tools_may_ask: ClassVar[bool] = True
    """Its tools, even those that appear later, may bring their own confirmation (the Agent then gates them)."""

    def __init__(
        self,
        server: Any,
        *,
        tool_names: Iterable[str] | None = None,
        tool_filter: Callable[[Any], bool] | None = None,
        prefix: str | None = None,
        connect_timeout: float = 10.0,
        call_timeout: float = 60.0,
        tool_timeouts: Mapping[str, float] | None = None,
        list_timeout: float = 10.0,
        mode: Literal["auto", "legacy"] = "auto",
        max_reconnects: int = 3,
        max_result_chars: int = 100_000,
        result_offload: Callable[[str], str] | None = None,
        use_structured_content: bool = False,
        eager_connect: bool = False,
        confirmation_strategy: Any = None,
    ) -> None:
        super().__init__([])
        _check_server(server)
        self.server = server
        self.label = server_label(server)
        """The server's name in messages and approvals."""
        self.tool_names = _names_option(tool_names)
        self.tool_filter = _callable_option("tool_filter", tool_filter)
        self.prefix = _prefix_option(prefix)
        self.connect_timeout = _seconds("connect_timeout", connect_timeout)
        self.call_timeout = _seconds("call_timeout", call_timeout)
        self.tool_timeouts = {k: _seconds(f"tool_timeouts[{k!r}]", v) for k, v in dict(tool_timeouts or {}).items()}
        self.list_timeout = _seconds("list_timeout", list_timeout)
        if mode not in ("auto", "legacy"):
            raise ConfigurationError(f"MCPToolset mode must be 'auto' or 'legacy', got {mode!r:.40}.")
        self.mode: Literal["auto", "legacy"] = mode
        self.max_reconnects = _count("max_reconnects", max_reconnects, 0)
        self.max_result_chars = _count("max_result_chars", max_result_chars, 100)
        self.result_offload = _callable_option("result_offload", result_offload)
        self.use_structured_content = _flag("use_structured_content", use_structured_content)
        self.eager_connect = _flag("eager_connect", eager_connect)
        if confirmation_strategy is not None and not callable(getattr(confirmation_strategy, "run", None)):
            raise ConfigurationTypeError(
                f"MCPToolset confirmation_strategy must be a confirmation strategy object (with run()), got "
                f"{type(confirmation_strategy).__name__}."
            )
        self.confirmation_strategy = confirmation_strategy
        self._connection: MCPConnection | None = None
        self._lock = threading.RLock()
        self._changed = threading.Event()
        self._listed = False
        self._removed: set[str] = set()
        if eager_connect:
            self.warm_up()

    # -- lifecycle ----------------------------------------------------------------------------------------------

    def warm_up(self) -> None:
        """Connect (once) and list the server's tools.

        Raises:
            MCPConnectionError: The server could not be reached in ``connect_timeout`` seconds.
            ConfigurationError: ``tool_names`` names a tool the server lacks, or two tools get one name.
        """
        with self._lock:
            if not self._listed:
                self._set_tools(self._conn().list_tools())

    async def warm_up_async(self) -> None:
        """:meth:`warm_up` for async callers (the connection's own task does the work either way)."""
        if not self._listed:
            listed = await self._conn().list_tools_async()
            with self._lock:
                if not self._listed:
                    self._set_tools(listed)

    def close(self) -> None:
        """End the connection and, for stdio, the server's process (idempotent); a later warm-up connects again."""
        with self._lock:
            conn, self._connection, self._listed = self._connection, None, False
            self.tools = []
        if conn is not None:
            conn.close()

    async def aclose(self) -> None:
        """:meth:`close` for async callers; it finishes even when the caller is cancelled."""
        with self._lock:
            conn, self._connection, self._listed = self._connection, None, False
            self.tools = []
        if conn is not None:
            await conn.aclose()

    @property
    def protocol_version(self) -> str | None:
        """The protocol revision the connection agreed on (None before connecting)."""
        return None if self._connection is None else self._connection.protocol_version

    @property
    def instructions(self) -> str | None:
        """The server's instructions for the model, if it gave any (None before connecting)."""
        return None if self._connection is None else self._connection.instructions

    def __iter__(self) -> Iterator[Tool]:
        """The tools now; a change the server announced is listed first (the Agent lists at each step's start)."""
        if self._changed.is_set() and self._listed:
            self._refresh()
        return iter(list(self.tools))

    # -- the server's tools -------------------------------------------------------------------------------------

    def _conn(self) -> MCPConnection:
        if self._connection is None:
            from handrail.tools.mcp._connection import MCPConnection

            self._connection = MCPConnection(
                self.server, connect_timeout=self.connect_timeout, list_timeout=self.list_timeout, mode=self.mode,
                max_reconnects=self.max_reconnects, on_tools_changed=self._changed.set,
            )  # fmt: skip
        return self._connection

    def _refresh(self) -> None:
        with self._lock:
            if not self._changed.is_set():
                return
            self._changed.clear()
            before = {t.name for t in self.tools}
            try:
                self._set_tools(self._conn().list_tools())
            except Exception as exc:  # keep the tools of the last list: the next step lists again
                self._changed.set()
                logger.warning("MCP server '%s' changed its tools, but listing them failed: %s", self.label, exc)
                return
            after = {t.name for t in self.tools}
            if before != after:
                logger.info("MCP server '%s' tools changed: added %s, removed %s", self.label,
                            sorted(after - before), sorted(before - after))  # fmt: skip

    def _set_tools(self, listed: list[Any]) -> None:
        names = [t.name for t in listed]
        if self.tool_names is not None:
            missing = [n for n in self.tool_names if n not in names]
            if missing and not self._listed:
                raise ConfigurationError(
                    f"MCP server '{self.label}' has no tool {missing} (tool_names); its tools: {sorted(names)}."
                )
            listed = [t for t in listed if t.name in self.tool_names]
        if self.tool_filter is not None:
            listed = [t for t in listed if self.tool_filter(t)]
        if not self._listed:
            self._check_timeouts(names)
        tools = self._usable(listed)
        seen: dict[str, str] = {}
        for tool in tools:
            other = seen.setdefault(tool.name, tool.remote_name)
            if other != tool.remote_name:
                raise ConfigurationError(
                    f"MCP server '{self.label}': tools '{other}' and '{tool.remote_name}' both become "
                    f"'{tool.name}' for the model; keep one with tool_names or tool_filter."
                )
        self._removed = {getattr(t, "remote_name", t.name) for t in self.tools} - {t.remote_name for t in tools}
        self.tools = list(tools)
        self._listed = True

    def _usable(self, listed: list[Any]) -> list[MCPServerTool]:
        """The listed tools as handrail tools; one that cannot be used is left out with a warning naming why.

        A tool named in ``tool_names`` that cannot be used is an error instead (it was asked for by name).
        """
        tools: list[MCPServerTool] = []
        for item in listed:
            remote = str(getattr(item, "name", ""))
            if any(t.remote_name == remote for t in tools):
                logger.warning("MCP server '%s' lists tool %r twice; the second is left out.", self.label, remote)
                continue
            try:
                tool = self._tool(item)
                _check_patterns(tool.parameters)
            except (ConfigurationError, ConfigurationTypeError) as exc:
                if self.tool_names is not None and remote in self.tool_names:
                    raise ConfigurationError(
                        f"MCP server '{self.label}': tool {remote!r:.100} cannot be used: {exc}"
                    ) from exc
                logger.warning(
                    "MCP server '%s': tool %.100r is left out, it cannot be used: %s", self.label, remote, exc
                )
                continue
            tools.append(tool)
        return tools

    def _check_timeouts(self, names: list[str]) -> None:
        known = set(names) | {wire_name(f"{self.prefix}_{n}" if self.prefix else n) for n in names}
        unknown = sorted(set(self.tool_timeouts) - known)
        if unknown:
            raise ConfigurationError(
                f"MCP server '{self.label}': tool_timeouts names no tool of the server: {unknown} (its tools: "
                f"{sorted(names)}); the keys are the tools' names on the server, or the names the model sees."
            )

    def _timeout(self, remote: str, name: str) -> float:
        return self.tool_timeouts.get(remote, self.tool_timeouts.get(name, self.call_timeout))

    def _tool(self, listed: Any) -> MCPServerTool:
        remote = str(listed.name)
        annotations = _annotations(getattr(listed, "annotations", None))
        asks = asks_by_hints(annotations)
        schema = dict(getattr(listed, "input_schema", None) or _OPEN)
        schema.setdefault("type", "object")
        options = ResultOptions(self.label, self.max_result_chars, self.use_structured_content, self.result_offload)
        name = wire_name(f"{self.prefix}_{remote}" if self.prefix else remote)
        timeout = self._timeout(remote, name)

        def call(**arguments: Any) -> Any:
            self._check_present(remote)
            return convert_result(remote, self._conn().call_tool(remote, arguments, timeout=timeout), options)

        async def call_async(**arguments: Any) -> Any:
            self._check_present(remote)
            result = await self._conn().call_tool_async(remote, arguments, timeout=timeout)
            return convert_result(remote, result, options)

        def preview(arguments: dict[str, Any]) -> Preview:
            import json

            shown = {"server": self.label, "tool": remote, "hints (from the server, unverified)": annotations,
                     "arguments": arguments}  # fmt: skip
            return Preview("json", json.dumps(shown, ensure_ascii=False, default=str), title=f"{self.label} · {remote}")

        return MCPServerTool(
            name=name,
            description=str(getattr(listed, "description", None) or getattr(listed, "title", None) or remote),
            parameters=schema, function=call, async_function=call_async, preview=preview,
            outputs_to_string={"raw_result": True},
            server=self.label, remote_name=remote, annotations=annotations,
            output_schema=getattr(listed, "output_schema", None),
            confirmation_default=(self.confirmation_strategy or ASK) if asks else None,
        )  # fmt: skip

    def _check_present(self, remote: str) -> None:
        if not self._listed:
            raise MCPToolError(
                f"The MCPToolset of server '{self.label}' is closed; warm it up again to call '{remote}' (an Agent "
                f"does at its next run, with the tools it lists then).",
                server=self.label,
                tool=remote,
            )
        if self._changed.is_set():  # announced but not listed yet: list now, so a removed tool is named as such
            self._refresh()
        if remote in self._removed:
            raise MCPToolError(
                f"MCP server '{self.label}' no longer has tool '{remote}' (its tool list changed); it was not called.",
                server=self.label,
                tool=remote,
            )

    # -- serialization ------------------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Serialize to ``{"type", "init_parameters"}``: the server and every setting.

        ``Secret`` values stay Secret dicts (never their value); functions become dotted paths.

        Raises:
            SerializationError: The server is an in-process object, or a function is a lambda or a closure.
        """
        strategy = self.confirmation_strategy
        params: dict[str, Any] = {
            "server": server_to_dict(self.server),
            "tool_names": None if self.tool_names is None else list(self.tool_names),
            "tool_filter": None if self.tool_filter is None else serialize_callable(self.tool_filter),
            "prefix": self.prefix,
            "connect_timeout": self.connect_timeout,
            "call_timeout": self.call_timeout,
            "tool_timeouts": dict(self.tool_timeouts),
            "list_timeout": self.list_timeout,
            "mode": self.mode,
            "max_reconnects": self.max_reconnects,
            "max_result_chars": self.max_result_chars,
            "result_offload": None if self.result_offload is None else serialize_callable(self.result_offload),
            "use_structured_content": self.use_structured_content,
            "eager_connect": self.eager_connect,
            "confirmation_strategy": None if strategy is None else strategy.to_dict(),
        }
        return {"type": qualified_name(self), "init_parameters": params}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MCPToolset:
        """Rebuild from :meth:`to_dict` output (``data`` is not modified).

        Nothing connects unless ``eager_connect`` is set.

        Raises:
            SerializationError: A missing or malformed field (named).
        """
        params = data.get("init_parameters") if isinstance(data, Mapping) else None
        if not isinstance(params, Mapping) or "server" not in params:
            raise SerializationError(f"MCPToolset data needs init_parameters with a 'server': {data!r:.200}")
        kwargs = dict(params)
        kwargs["server"] = server_from_dict(params["server"])
        for key in ("tool_filter", "result_offload"):
            if kwargs.get(key) is not None:
                kwargs[key] = deserialize_callable(kwargs[key])
        if kwargs.get("confirmation_strategy") is not None:
            kwargs["confirmation_strategy"] = object_from_dict(kwargs["confirmation_strategy"])
        try:
            return cls(**kwargs)
        except TypeError as exc:
            raise SerializationError(f"MCPToolset data has a field it does not take: {exc}") from exc

    def __repr__(self) -> str:
        return f"{type(self).__name__}(server={self.label!r}, tools={[t.name for t in self.tools]})"


class MCPTool(MCPToolset):
    """One tool of an MCP server: an :class:`MCPToolset` limited to ``name`` (a toolset of one).

    Args:
        name: The tool's name on the server.
        server: As for :class:`MCPToolset`.
        **kwargs: Any other :class:`MCPToolset` setting.
    """

    def __init__(self, name: str, server: Any, **kwargs: Any) -> None:
        if not isinstance(name, str) or not name:
            raise ConfigurationTypeError(f"MCPTool needs the server's tool name as a str, got {name!r:.60}.")
        if "tool_names" in kwargs:
            raise ConfigurationTypeError(
                f"MCPTool is the one tool {name!r:.60}: it takes no tool_names (use MCPToolset)."
            )
        super().__init__(server, tool_names=[name], **kwargs)
        self.name = name

    def to_dict(self) -> dict[str, Any]:
        """As :meth:`MCPToolset.to_dict`, with ``name`` instead of ``tool_names``."""
        data = super().to_dict()
        params = data["init_parameters"]
        params.pop("tool_names", None)
        data["init_parameters"] = {"name": self.name, **params}
        return data


_SERVERS: dict[str, type[StdioServer] | type[StreamableHttpServer]] = {
    qualified_name(StdioServer): StdioServer, qualified_name(StreamableHttpServer): StreamableHttpServer,
}  # fmt: skip


def server_to_dict(server: Any) -> dict[str, Any]:
    """A server description as a dict (``Secret`` values as Secret dicts).

    Raises:
        SerializationError: An in-process server object (it lives in this process only).
    """
    if isinstance(server, StdioServer | StreamableHttpServer):
        return server.to_dict()
    raise SerializationError(
        f"MCPToolset cannot be serialized: its server is an in-process {type(server).__name__} object, which lives "
        f"in this process only; use StdioServer or StreamableHttpServer to save it."
    )


def server_from_dict(data: Any) -> StdioServer | StreamableHttpServer:
    """The server description of :func:`server_to_dict` output.

    Raises:
        SerializationError: Not a StdioServer or StreamableHttpServer dict.
    """
    kind = data.get("type") if isinstance(data, Mapping) else None
    cls = _SERVERS.get(str(kind))
    if cls is None:
        raise SerializationError(
            f"MCPToolset server must be a StdioServer or StreamableHttpServer dict, got type {kind!r:.100}."
        )
    return cls.from_dict(data)


def _annotations(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    dump = getattr(value, "model_dump", None)
    raw = dump(exclude_none=True) if callable(dump) else dict(value)
    return {k: v for k, v in raw.items() if v is not None and (k in _HINTS or k == "title")}


def _names_option(value: Iterable[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str) or not all(isinstance(n, str) and n for n in value):
        raise ConfigurationTypeError(f"MCPToolset tool_names must be a list of tool names, got {value!r:.80}.")
    names = tuple(value)
    if not names:
        raise ConfigurationError("MCPToolset tool_names is empty, which would offer no tool; None offers them all.")
    return names


def _check_patterns(schema: Any) -> None:
    """Refuse a server's schema whose ``pattern`` could take hours to match (its schema is untrusted input)."""
    if isinstance(schema, Mapping):
        for key, value in schema.items():
            patterns = [value] if key == "pattern" else list(value) if key == "patternProperties" else []
            for pattern in patterns:
                if isinstance(pattern, str) and pattern_may_hang(pattern):
                    raise ConfigurationError(
                        f"its input schema has the pattern {pattern!r:.100}, which repeats a group that itself repeats "
                        f"(such as '(a+)+') and can take hours to match a model's argument"
                    )
            _check_patterns(value)
    elif isinstance(schema, list):
        for item in schema:
            _check_patterns(item)


def _check_server(server: Any) -> None:
    if server is None or isinstance(server, str | bytes | int | float | bool | Mapping | list | tuple):
        raise ConfigurationTypeError(
            f"MCPToolset needs a server: StdioServer(command, args) for a program, StreamableHttpServer(url) for a "
            f"URL, or an in-process server object; got {type(server).__name__} {server!r:.80}."
        )


def _prefix_option(value: str | None) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError(f"MCPToolset prefix must be a non-empty str, got {value!r:.40}.")
    return value


def _callable_option(name: str, value: Any) -> Any:
    if value is not None and not callable(value):
        raise ConfigurationTypeError(f"MCPToolset {name} must be callable, got {type(value).__name__}.")
    return value


def _seconds(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 86_400:
        raise ConfigurationError(f"MCPToolset {name} must be a number of seconds in (0, 86400], got {value!r:.40}.")
    return float(value)


def _count(name: str, value: Any, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ConfigurationError(f"MCPToolset {name} must be an int of at least {least}, got {value!r:.40}.")
    return value


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigurationTypeError(f"MCPToolset {name} must be True or False, got {value!r:.40}.")
    return value
