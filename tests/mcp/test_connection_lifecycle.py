"""MCPConnection when things go wrong: crashes, a killed HTTP server, reconnect budgets, servers that never start,
outer cancellation, and many connections opened and closed in any order. Plus the stdio environment and stderr.
"""

from __future__ import annotations

import asyncio
import logging
import random
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from handrail.core.secret import Secret
from handrail.errors import MCPConnectionError
from handrail.tools.mcp._connection import MCPConnection
from handrail.tools.mcp._servers import StdioServer, StreamableHttpServer
from tests.mcp.conftest import HttpServer, child_pids, free_port, start_http_server, stdio_spec, stop, wait_until
from tests.mcp.helpers import Api, text
from tests.mcp.server_double import build_server


def _pid(api: Api, conn: MCPConnection) -> int:
    return int(api.call(conn, "pid").structured_content["result"])


def test_a_crash_over_stdio_fails_the_call_and_the_next_call_starts_a_new_process(api: Api) -> None:
    conn = MCPConnection(stdio_spec())
    try:
        first = _pid(api, conn)
        started = time.monotonic()
        with pytest.raises(MCPConnectionError) as caught:
            api.call(conn, "crash")

        assert time.monotonic() - started < 10
        assert caught.value.server == "stdio-double"
        assert "'crash'" in str(caught.value) and "outcome is unknown" in str(caught.value)
        assert wait_until(lambda: first not in child_pids())
        second = _pid(api, conn)
        assert second != first
        assert text(api.call(conn, "add", {"a": 1, "b": 2})) == "3"
    finally:
        conn.close()


def test_a_stdio_server_that_died_while_idle_is_reconnected_by_the_next_call() -> None:
    api = Api("sync")
    conn = MCPConnection(stdio_spec())
    try:
        first = _pid(api, conn)
        subprocess.run(["kill", "-9", str(first)], check=True)
        assert wait_until(lambda: not conn.connected)  # the owner saw the end of the stream

        assert text(api.call(conn, "add", {"a": 1, "b": 2})) == "3"  # reconnected, not failed
        assert _pid(api, conn) != first
    finally:
        conn.close()


def test_the_reconnect_budget_runs_out_and_then_requests_fail_fast() -> None:
    api = Api("sync")
    conn = MCPConnection(stdio_spec(), max_reconnects=2)
    try:
        for _ in range(3):  # the first connection and two reconnects, each crashed
            with pytest.raises(MCPConnectionError):
                api.call(conn, "crash")
        before = child_pids()

        with pytest.raises(MCPConnectionError) as caught:
            api.call(conn, "add", {"a": 1, "b": 2})

        assert "gave up after 2 reconnects; last error:" in str(caught.value)
        assert "closed the connection" in str(caught.value)
        assert child_pids() <= before  # no process was started for it
        api.close(conn)  # closing starts over
        assert text(api.call(conn, "add", {"a": 1, "b": 2})) == "3"
    finally:
        conn.close()


def test_a_request_that_works_resets_the_reconnect_count() -> None:
    api = Api("async")
    conn = MCPConnection(stdio_spec(), max_reconnects=1)
    try:
        for _ in range(3):
            with pytest.raises(MCPConnectionError):
                api.call(conn, "crash")
            assert text(api.call(conn, "add", {"a": 1, "b": 2})) == "3"  # one reconnect, then it works
    finally:
        conn.close()


async def test_an_http_server_killed_during_a_call_fails_it_without_cancelling_the_caller(
    http_server: HttpServer,
) -> None:
    conn = MCPConnection(http_server.spec)
    try:
        await conn.connect_async()
        threading.Timer(0.5, http_server.process.kill).start()
        started = time.monotonic()

        try:
            await conn.call_tool_async("slow", {"seconds": 30}, timeout=60)
        except MCPConnectionError as exc:
            error: BaseException = exc
        else:  # pragma: no cover
            pytest.fail("the call did not fail")

        assert time.monotonic() - started < 10
        assert not isinstance(error, BaseExceptionGroup)
        assert "'slow'" in str(error) and "http-double" in str(error)
        current = asyncio.current_task()
        assert current is not None and current.cancelling() == 0
        await asyncio.sleep(0)  # this task was not cancelled: it goes on
        # the server is gone: the next call tries one reconnect, which cannot connect
        with pytest.raises(MCPConnectionError, match="Cannot connect to MCP server http-double"):
            await conn.call_tool_async("add", {"a": 1, "b": 2}, timeout=20)
    finally:
        await conn.aclose()


def test_an_http_server_restarted_on_its_port_is_reconnected(api: Api) -> None:
    server = start_http_server()
    conn = MCPConnection(server.spec)
    try:
        assert text(api.call(conn, "add", {"a": 1, "b": 2})) == "3"
        stop(server.process)
        with pytest.raises(MCPConnectionError):
            api.call(conn, "slow", {"seconds": 0.1})
        restarted = start_http_server(server.port)
        try:
            assert text(api.call(conn, "add", {"a": 2, "b": 2})) == "4"
        finally:
            stop(restarted.process)
    finally:
        conn.close()
        stop(server.process)


@pytest.mark.parametrize(
    ("server", "cause"),
    [
        (StdioServer("/nonexistent/handrail-mcp-server", name="missing"), "No such file"),
        (
            StdioServer(sys.executable, ["-c", "import sys; sys.exit(3)"], name="exits"),
            "closed the connection before the handshake",
        ),
        (StreamableHttpServer(f"http://127.0.0.1:{free_port()}/mcp", name="closed-port"), "Connect"),
    ],
    ids=["command-missing", "exits-at-once", "port-closed"],
)
def test_a_server_that_cannot_start_fails_the_connect_quickly(server: Any, cause: str, api: Api) -> None:
    conn = MCPConnection(server, connect_timeout=5)
    started = time.monotonic()

    with pytest.raises(MCPConnectionError) as caught:
        api.connect(conn)

    assert time.monotonic() - started < 10
    assert f"Cannot connect to MCP server {server.name}" in str(caught.value)
    assert cause.lower() in str(caught.value).lower()
    assert not conn.connected


def test_a_server_that_never_answers_times_out_and_its_process_is_ended() -> None:
    api = Api("async")
    before = child_pids()
    conn = MCPConnection(
        StdioServer(sys.executable, ["-c", "import time; time.sleep(60)"], name="mute"), connect_timeout=1
    )
    started = time.monotonic()

    with pytest.raises(MCPConnectionError, match=r"did not connect within 1 s"):
        api.connect(conn)

    assert time.monotonic() - started < 10
    assert wait_until(lambda: child_pids() <= before)
    conn.close()


def test_the_stdio_environment_is_only_what_was_given_with_secrets_resolved(
    monkeypatch: pytest.MonkeyPatch, api: Api
) -> None:
    monkeypatch.setenv("HANDRAIL_TEST_MCP_TOKEN", "tok-3141")
    monkeypatch.setenv("HANDRAIL_TEST_NOT_GIVEN", "leak")
    spec = stdio_spec(
        GIVEN="yes",
        TOKEN=Secret.from_env_var("HANDRAIL_TEST_MCP_TOKEN"),
        OPTIONAL=Secret.from_env_var("HANDRAIL_TEST_MCP_UNSET", strict=False),
    )
    conn = MCPConnection(spec)
    try:

        def env(name: str) -> str:
            return text(api.call(conn, "env", {"name": name}))

        assert env("GIVEN") == "yes"
        assert env("TOKEN") == "tok-3141"
        assert env("OPTIONAL") == "<unset>"
        assert env("HANDRAIL_TEST_NOT_GIVEN") == "<unset>"
        assert env("PATH") != "<unset>"  # the SDK's allow-list
    finally:
        conn.close()


def test_child_stderr_lines_go_to_the_stderr_logger_with_secrets_masked(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, api: Api
) -> None:
    monkeypatch.setenv("HANDRAIL_TEST_MCP_SECRET", "s3cr3t-value-2718")
    caplog.set_level(logging.INFO, logger="handrail.tools.mcp.stderr")
    conn = MCPConnection(stdio_spec(KEY=Secret.from_env_var("HANDRAIL_TEST_MCP_SECRET")))
    try:
        api.call(conn, "echo_stderr", {"text": "hello from the server"})
        api.call(conn, "echo_stderr", {"text": "key=s3cr3t-value-2718"})

        def lines() -> list[str]:
            return [r.getMessage() for r in caplog.records if r.name == "handrail.tools.mcp.stderr"]

        assert wait_until(lambda: "stdio-double: hello from the server" in lines())
        assert wait_until(lambda: any(line.startswith("stdio-double: key=") for line in lines()))
        assert not any("s3cr3t-value-2718" in line for line in lines())
        assert all(r.levelno == logging.INFO for r in caplog.records if r.name == "handrail.tools.mcp.stderr")
    finally:
        conn.close()


async def test_cancelling_a_task_inside_aclose_still_ends_the_process() -> None:
    conn = MCPConnection(stdio_spec())
    await conn.connect_async()
    pid = int((await conn.call_tool_async("pid", {}, timeout=20)).structured_content["result"])
    closing = asyncio.ensure_future(conn.aclose())
    await asyncio.sleep(0)
    closing.cancel()

    with pytest.raises(asyncio.CancelledError):
        await closing

    assert pid not in child_pids()  # closing finished before the cancellation went on
    assert not conn.connected


async def test_cancelling_a_task_that_holds_a_connection_ends_the_process() -> None:
    pids: list[int] = []

    async def hold() -> None:
        async with MCPConnection(stdio_spec()) as conn:
            pids.append(int((await conn.call_tool_async("pid", {}, timeout=20)).structured_content["result"]))
            await asyncio.sleep(60)

    holder = asyncio.ensure_future(hold())
    while not pids:
        await asyncio.sleep(0.05)
    holder.cancel()

    with pytest.raises(asyncio.CancelledError):
        await holder
    assert pids[0] not in child_pids()


async def test_cancelling_a_connect_leaves_nothing_once_closed() -> None:
    before = child_pids()
    conn = MCPConnection(stdio_spec())
    connecting = asyncio.ensure_future(conn.connect_async())
    await asyncio.sleep(0.1)
    connecting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await connecting

    await conn.aclose()
    assert wait_until(lambda: child_pids() <= before)


def _servers_for(count: int, http: HttpServer) -> list[Any]:
    kinds = [stdio_spec, build_server, lambda: http.spec]
    return [kinds[i % 3]() for i in range(count)]


def _no_cancel_scope_trouble(caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]) -> None:
    out, err = capfd.readouterr()
    messages = [record.getMessage() for record in caplog.records]
    assert not [m for m in messages if "cancel scope" in m.lower()]
    assert "cancel scope" not in (out + err).lower()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [r.getMessage() for r in caplog.records]


def test_twenty_connections_opened_and_closed_in_random_order_leave_nothing(
    shared_http_server: HttpServer, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    before = child_pids()
    conns = [MCPConnection(server) for server in _servers_for(20, shared_http_server)]
    for conn in random.sample(conns, len(conns)):
        assert text(conn.call_tool("add", {"a": 1, "b": 2}, timeout=20)) == "3"
    for conn in random.sample(conns, len(conns)):
        conn.close()

    assert not any(conn.connected for conn in conns)
    assert wait_until(lambda: child_pids() <= before)
    _no_cancel_scope_trouble(caplog, capfd)


async def test_twenty_connections_opened_and_closed_concurrently_leave_nothing(
    shared_http_server: HttpServer, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    before = child_pids()
    conns = [MCPConnection(server) for server in _servers_for(20, shared_http_server)]
    results = await asyncio.gather(
        *(conn.call_tool_async("add", {"a": 1, "b": 2}, timeout=30) for conn in random.sample(conns, len(conns)))
    )
    assert [text(result) for result in results] == ["3"] * 20

    await asyncio.gather(*(conn.aclose() for conn in random.sample(conns, len(conns))))

    assert not any(conn.connected for conn in conns)
    for _ in range(200):
        if child_pids() <= before:
            break
        await asyncio.sleep(0.05)
    assert child_pids() <= before
    _no_cancel_scope_trouble(caplog, capfd)


def test_connections_left_open_are_closed_at_interpreter_exit_without_noise() -> None:
    code = f"""
import sys
sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
from handrail.tools.mcp._connection import MCPConnection
from tests.mcp.conftest import stdio_spec
from tests.mcp.server_double import build_server
conns = [MCPConnection(stdio_spec()), MCPConnection(build_server())]
for conn in conns:
    conn.connect()
print(conns[0].call_tool("pid", {{}}, timeout=20).structured_content["result"])
"""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)

    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 30
    pid = int(done.stdout.split()[-1])
    assert wait_until(lambda: not Path(f"/proc/{pid}").exists() or "zombie" in _state(pid))
    noise = [line for line in done.stderr.splitlines() if "Task was destroyed" in line or "Exception ignored" in line]
    assert noise == []
    assert "Traceback" not in done.stderr


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:
        return "zombie"
