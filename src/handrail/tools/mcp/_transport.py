"""Building the ``mcp.Client`` of one connection: the stdio child's environment and stderr, the HTTP client.

Imported only once a connection is made (it imports ``mcp``). The stream transports (stdio, HTTP) are wrapped so
the connection's owner learns when the server closed its side (a stdio server that exited, even while idle): then
the next request reconnects instead of failing on a dead connection.
"""

from __future__ import annotations

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

from handrail.core.secret import mask_secrets
from handrail.tools.mcp._servers import StdioServer, StreamableHttpServer, resolve_values

__all__ = ["STDERR_LOGGER", "Target", "open_client", "prepare_target"]

STDERR_LOGGER = logging.getLogger("handrail.tools.mcp.stderr")
"""Where a stdio server's stderr goes, line by line at INFO, each line prefixed by the server's label."""

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
        if isinstance(server, StdioServer):
            self.values = resolve_values(server.env)
        elif isinstance(server, StreamableHttpServer):
            self.values = resolve_values(server.headers)

    @property
    def watched(self) -> bool:
        """Whether the connection runs over a stream transport whose end the owner can see."""
        return isinstance(self.server, StdioServer | StreamableHttpServer)


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
    client_info = mcp.types.Implementation(name="handrail", version=_version())
    stderr: _StderrLog | None = None
    transport: Any
    if isinstance(server, StdioServer):
        stderr = _StderrLog(target.label)
        stack.callback(stderr.close_parent_end)
        params = mcp.StdioServerParameters(
            command=server.command, args=list(server.args), env=target.values, cwd=server.cwd
        )
        transport = _WatchedTransport(stdio_client(params, errlog=stderr.file), ended)
    elif isinstance(server, StreamableHttpServer):
        http = await stack.enter_async_context(httpx2.AsyncClient(headers=target.values, timeout=_HTTP_TIMEOUT))
        transport = _WatchedTransport(streamable_http_client(server.url, http_client=http), ended)
    else:
        transport = server  # an in-process server object
    client = mcp.Client(transport, mode=mode, cache=None, message_handler=message_handler, client_info=client_info)
    try:
        return await stack.enter_async_context(client)
    finally:
        if stderr is not None:
            stderr.close_parent_end()  # the child holds its own copy now (or never started)


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
        threading.Thread(target=self._pump, args=(read_end,), name="handrail-mcp-stderr", daemon=True).start()

    def close_parent_end(self) -> None:
        """Close this process's copy of the write end: the thread ends once every child's copy is closed too."""
        with contextlib.suppress(OSError):
            self.file.close()

    def _pump(self, read_end: int) -> None:
        with os.fdopen(read_end, "rb") as pipe:
            while line := pipe.readline(_LINE_LIMIT):
                text = line.decode("utf-8", "replace").rstrip("\r\n")
                if text.strip():
                    STDERR_LOGGER.info("%s: %s", self._label, mask_secrets(text))


class _WatchedTransport(contextlib.AbstractAsyncContextManager[Streams]):
    """A stream transport whose read stream sets ``ended`` when the server's side of it ends."""

    def __init__(self, inner: Transport, ended: anyio.Event) -> None:
        self._inner = inner
        self._ended = ended

    async def __aenter__(self) -> Streams:
        read_stream, write_stream = await self._inner.__aenter__()
        return _WatchedRead(read_stream, self._ended), write_stream

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        return await self._inner.__aexit__(exc_type, exc, tb)


class _WatchedRead:
    """A read stream (the SDK's ``ReadStream`` protocol) that sets ``ended`` at its end."""

    def __init__(self, inner: _Receiver, ended: anyio.Event) -> None:
        self._inner = inner
        self._ended = ended

    @property
    def last_context(self) -> Any:
        """The sender's context of the last message, when the inner stream keeps one."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        """The next message; sets ``ended`` when there is none any more."""
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._ended.set()
            raise

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
