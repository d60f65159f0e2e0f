"""Fixtures for the MCP tests: the test double in process, over stdio and over streamable HTTP (loopback only)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from handrail.tools.mcp._connection import MCPConnection
from handrail.tools.mcp._servers import StdioServer, StreamableHttpServer
from tests.mcp.helpers import APIS, Api
from tests.mcp.server_double import build_server

SCRIPT = Path(__file__).with_name("server_double.py")
MODES = ("inproc", "stdio", "http")


@dataclass
class HttpServer:
    """A running HTTP test double: its spec and its process."""

    spec: StreamableHttpServer
    process: subprocess.Popen[bytes]
    port: int


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_http_server(port: int | None = None) -> HttpServer:
    """Start ``server_double.py http PORT`` (a free port unless given) and wait until it answers (at most 15 s)."""
    port = free_port() if port is None else port
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), "http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 15
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"the HTTP test double did not start (exit status {process.poll()})") from None
            time.sleep(0.05)
    return HttpServer(StreamableHttpServer(f"http://127.0.0.1:{port}/mcp", name="http-double"), process, port)


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait(10)


def stdio_spec(**env: Any) -> StdioServer:
    """The stdio test double run by this Python."""
    return StdioServer(sys.executable, [str(SCRIPT), "stdio"], env=env, name="stdio-double")


def child_pids() -> set[int]:
    """The live child processes of this process (zombies too, until reaped), from /proc."""
    found: set[int] = set()
    for path in Path(f"/proc/{os.getpid()}/task").glob("*/children"):
        try:
            found |= {int(pid) for pid in path.read_text().split()}
        except OSError:  # the thread ended meanwhile
            continue
    return found


def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Poll ``condition`` until it holds or ``timeout`` seconds pass; whether it held."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def mcp_server_obj() -> Any:
    """A fresh in-process test double (an MCPServer object)."""
    return build_server()


@pytest.fixture
def stdio_server() -> StdioServer:
    """A StdioServer spec for the test double."""
    return stdio_spec()


@pytest.fixture
def http_server() -> Iterator[HttpServer]:
    """A fresh HTTP test double on a free 127.0.0.1 port, killed after the test."""
    server = start_http_server()
    try:
        yield server
    finally:
        stop(server.process)


@pytest.fixture(scope="module")
def shared_http_server() -> Iterator[HttpServer]:
    """One HTTP test double for a module's tests that neither change its tools nor stop it."""
    server = start_http_server()
    try:
        yield server
    finally:
        stop(server.process)


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def any_server(mode: str, request: pytest.FixtureRequest) -> Any:
    """The test double in each of the three modes: an MCPServer object, a StdioServer, a StreamableHttpServer.

    The HTTP one is shared by the module's tests; a test that changes the server's tools asks for
    ``fresh_server`` instead.
    """
    if mode == "inproc":
        return build_server()
    if mode == "stdio":
        return stdio_spec()
    server: HttpServer = request.getfixturevalue("shared_http_server")
    return server.spec


@pytest.fixture
def fresh_server(mode: str, request: pytest.FixtureRequest) -> Any:
    """Like ``any_server``, but with an HTTP test double of the test's own."""
    if mode == "http":
        server: HttpServer = request.getfixturevalue("http_server")
        return server.spec
    return request.getfixturevalue("any_server")


@pytest.fixture(params=APIS)
def api(request: pytest.FixtureRequest) -> Api:
    """The sync methods, or the async ones awaited from an event loop of the test's own."""
    return Api(str(request.param))


@pytest.fixture
def conn(any_server: Any) -> Iterator[MCPConnection]:
    """A connection to the test double in each mode, closed after the test."""
    connection = MCPConnection(any_server)
    try:
        yield connection
    finally:
        connection.close()
