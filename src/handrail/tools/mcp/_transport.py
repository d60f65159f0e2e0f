"""Building the ``mcp.Client`` of one connection: the stdio child's environment and stderr, the HTTP client.

Imported only once a connection is made (it imports ``mcp``). The stream transports (stdio, HTTP) are wrapped so
the connection's owner learns when the server closed its side (a stdio server that exited, even while idle): then
the next request reconnects instead of failing on a dead connection.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import logging
import os
import threading
from contextlib import AsyncExitStack
from importlib import metadata
from types import TracebackType
from typing import Any, Protocol, TextIO

import anyio
import httpx2
import mcp
from mcp.client import Transport
from mcp.client.session import MessageHandlerFnT
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage
from mcp.types import CallToolResult
from pydantic import ValidationError

from handrail.core.secret import mask_secrets
from handrail.tools.mcp._servers import StdioServer, StreamableHttpServer, resolve_values

__all__ = ["STDERR_LOGGER", "Target", "open_client", "prepare_target"]

STDERR_LOGGER = logging.getLogger("handrail.tools.mcp.stderr")
"""Where a stdio server's stderr goes, line by line at INFO, each line prefixed by the server's label."""

_logger = logging.getLogger("handrail.tools.mcp")
_SDK_STDIO_LOGGER = "mcp.client.stdio"
_SDK_PARSE_FAILURE = "Failed to parse JSONRPC message from server"
"""What the SDK logs (at ERROR, with a pydantic traceback) for each stdout line of a server that is not JSON-RPC."""
_SHOWN_CHARS = 200
"""A server's line (stderr, or stdout that is not JSON-RPC) is cut to this many characters in a message."""
_STDERR_TAIL = 5
"""How many of a stdio server's last stderr lines a connect error quotes."""

_LINE_LIMIT = 8192
"""A stderr line longer than this (in bytes) is logged in pieces of this size."""
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
"""The SDK's own defaults: 30 s to connect, write or get a pooled connection; 300 s of silence on a stream."""

MessageHandler = MessageHandlerFnT
Streams = tuple[Any, Any]
"""A transport's (read stream, write stream)."""


class _Receiver(Protocol):
    """The part of the SDK's read-stream protocol the watch uses."""

    async def receive(self) -> SessionMessage | Exception: ...

    async def aclose(self) -> None: ...


class Target:
    """What one connection attempt connects to, with its secrets resolved (made before the owner task starts).

    Args:
        server: A StdioServer, a StreamableHttpServer or an in-process server object.
        label: The server's label.

    Raises:
        ConfigurationError: For a strict Secret in ``env`` or ``headers`` whose variables are all unset.
    """

    def __init__(self, server: object, label: str) -> None:
        self.server = server
        self.label = label
        self.values: dict[str, str] = {}
        """The resolved ``env`` (stdio) or ``headers`` (HTTP)."""
        self.bad_lines = 0
        """How many stdout lines of a stdio server were not JSON-RPC (this attempt)."""
        self.first_bad_line: str | None = None
        """The first of them, cut and masked."""
        self.stderr: _StderrLog | None = None
        """A stdio server's stderr pipe (its last lines, for a connect error)."""
        if isinstance(server, StdioServer):
            self.values = resolve_values(server.env)
        elif isinstance(server, StreamableHttpServer):
            self.values = resolve_values(server.headers)

    @property
    def watched(self) -> bool:
        """Whether the connection runs over a stream transport whose end the owner can see."""
        return isinstance(self.server, StdioServer | StreamableHttpServer)

    async def diagnosis(self, *, exited: bool) -> str:
        """What the server's output says about a failed connect: ``""``, or ``"; the server wrote ..."``.

        Args:
            exited: Whether the connection has ended (a stdio process ended): then this waits (at most 0.5 s) for
                its stderr to be read to its end.
        """
        hints: list[str] = []
        if self.bad_lines:
            plural = "line that is" if self.bad_lines == 1 else "lines that are"
            hints.append(
                f"the server wrote {self.bad_lines} {plural} not JSON-RPC to stdout (first: {self.first_bad_line!r})"
            )
        if self.stderr is not None and exited:
            with anyio.move_on_after(0.5):
                while not self.stderr.done.is_set():
                    await anyio.sleep(0.02)
            tail = list(self.stderr.tail)
            if tail:
                hints.append("its last stderr lines: " + " | ".join(repr(line) for line in tail))
        return "".join(f"; {hint}" for hint in hints)


def prepare_target(server: object, label: str) -> Target:
    """A :class:`Target` for ``server`` (resolves its Secrets now)."""
    return Target(server, label)


async def open_client(
    stack: AsyncExitStack,
    target: Target,
    *,
    mode: str,
    message_handler: MessageHandler,
    ended: anyio.Event,
) -> mcp.Client:
    """Enter an ``mcp.Client`` for ``target`` on ``stack`` (connect and handshake); the caller's task owns it.

    Args:
        stack: Exited by the same task, to close the client, the transport and (stdio) end the process.
        target: What to connect to.
        mode: ``"auto"`` or ``"legacy"`` (the SDK's ``mode``).
        message_handler: Gets every notification of the server (and transport exceptions).
        ended: Set when the server's side of a stream transport ends (EOF, a closed stream).

    Returns:
        The entered client.

    Raises:
        OSError: The stdio command could not be started.
        Exception: What the SDK raised while connecting (an ``MCPError``, an exception group from the transport).
    """
    server = target.server
    _quiet_sdk_parse_failures()
    client_info = mcp.types.Implementation(name="handrail", version=_version())
    stderr: _StderrLog | None = None
    transport: Any
    if isinstance(server, StdioServer):
        stderr = target.stderr = _StderrLog(target.label)
        stack.callback(stderr.close_parent_end)
        params = mcp.StdioServerParameters(
            command=server.command, args=list(server.args), env=target.values, cwd=server.cwd
        )
        transport = _WatchedTransport(stdio_client(params, errlog=stderr.file), ended, target)
    elif isinstance(server, StreamableHttpServer):
        http = await stack.enter_async_context(httpx2.AsyncClient(headers=target.values, timeout=_HTTP_TIMEOUT))
        transport = _WatchedTransport(streamable_http_client(server.url, http_client=http), ended, target)
    else:
        transport = server  # an in-process server object
    client = mcp.Client(transport, mode=mode, cache=None, message_handler=message_handler, client_info=client_info)
    try:
        entered = await stack.enter_async_context(client)
    finally:
        if stderr is not None:
            stderr.close_parent_end()  # the child holds its own copy now (or never started)
    _keep_invalid_structured_results(entered, target.label)
    return entered


def _keep_invalid_structured_results(client: mcp.Client, label: str) -> None:
    """Make the client return a tool's result whose structured content fails the tool's output schema.

    The SDK's ``call_tool`` validates structured content against the listed output schema and raises
    ``RuntimeError`` after the call ran (its side effect done), throwing the valid text away. Here the session's
    check is wrapped: such a result comes back with ``structured_content`` set to None, and a WARNING names the
    server, the tool and the schema error.
    """
    session = client.session
    validate = session.validate_tool_result

    async def tolerant(name: str, result: CallToolResult) -> None:
        try:
            await validate(name, result)
        except RuntimeError as exc:
            result.structured_content = None
            _logger.warning(
                "MCP server %s: the structured content of tool %r was dropped (the text content is kept): %s",
                label,
                name,
                _shown(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__, 300),
            )

    session.validate_tool_result = tolerant  # type: ignore[method-assign]


class _ParseFailureFilter(logging.Filter):
    """Drops the SDK's traceback per stdout line that is not JSON-RPC (``_WatchedRead`` logs one line instead)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg != _SDK_PARSE_FAILURE


_PARSE_FILTER = _ParseFailureFilter()


def _quiet_sdk_parse_failures() -> None:
    sdk = logging.getLogger(_SDK_STDIO_LOGGER)
    if _PARSE_FILTER not in sdk.filters:
        sdk.addFilter(_PARSE_FILTER)


def _shown(text: str, limit: int = _SHOWN_CHARS) -> str:
    """``text`` with known secrets masked, cut to ``limit`` characters."""
    text = mask_secrets(text)
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


@functools.cache
def _version() -> str:
    """Handrail's version, as the client's name to the server (from the package metadata)."""
    try:
        return metadata.version("handrail")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a source tree without metadata
        return "0"


class _StderrLog:
    """A pipe for a child's stderr, and a daemon thread that logs what comes out of it, line by line."""

    def __init__(self, label: str) -> None:
        read_end, write_end = os.pipe()
        self.file: TextIO = os.fdopen(write_end, "w", encoding="utf-8", errors="replace")
        self._label = label
        self.tail: collections.deque[str] = collections.deque(maxlen=_STDERR_TAIL)
        """The last lines (masked, cut), for a connect error."""
        self.done = threading.Event()
        """Set once the pipe reached its end (every writer closed it)."""
        threading.Thread(target=self._pump, args=(read_end,), name="handrail-mcp-stderr", daemon=True).start()

    def close_parent_end(self) -> None:
        """Close this process's copy of the write end: the thread ends once every child's copy is closed too."""
        with contextlib.suppress(OSError):
            self.file.close()

    def _pump(self, read_end: int) -> None:
        try:
            with os.fdopen(read_end, "rb") as pipe:
                while line := pipe.readline(_LINE_LIMIT):
                    text = line.decode("utf-8", "replace").rstrip("\r\n")
                    if text.strip():
                        masked = mask_secrets(text)
                        self.tail.append(_shown(masked))
                        STDERR_LOGGER.info("%s: %s", self._label, masked)
        finally:
            self.done.set()


class _WatchedTransport(contextlib.AbstractAsyncContextManager[Streams]):
    """A stream transport whose read stream sets ``ended`` when the server's side of it ends."""

    def __init__(self, inner: Transport, ended: anyio.Event, target: Target) -> None:
        self._inner = inner
        self._ended = ended
        self._target = target

    async def __aenter__(self) -> Streams:
        read_stream, write_stream = await self._inner.__aenter__()
        return _WatchedRead(read_stream, self._ended, self._target), write_stream

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        return await self._inner.__aexit__(exc_type, exc, tb)


class _WatchedRead:
    """A read stream (the SDK's ``ReadStream`` protocol) that sets ``ended`` at its end.

    It also counts (on the target) the lines that were not JSON-RPC, logging each as one WARNING line.
    """

    def __init__(self, inner: _Receiver, ended: anyio.Event, target: Target) -> None:
        self._inner = inner
        self._ended = ended
        self._target = target

    @property
    def last_context(self) -> Any:
        """The sender's context of the last message, when the inner stream keeps one."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        """The next message; sets ``ended`` when there is none any more."""
        try:
            message = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._ended.set()
            raise
        if isinstance(message, ValidationError):
            self._not_json_rpc(message)
        return message

    def _not_json_rpc(self, error: ValidationError) -> None:
        errors = error.errors(include_url=False)
        line = errors[0].get("input") if errors else None
        shown = _shown(line if isinstance(line, str) else str(error).splitlines()[0])
        target = self._target
        target.bad_lines += 1
        if target.first_bad_line is None:
            target.first_bad_line = shown
        _logger.warning("MCP server %s wrote a line that is not JSON-RPC: %r", target.label, shown)

    async def aclose(self) -> None:
        """Close the stream (the connection is ending)."""
        self._ended.set()
        await self._inner.aclose()

    def __aiter__(self) -> _WatchedRead:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _WatchedRead:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
