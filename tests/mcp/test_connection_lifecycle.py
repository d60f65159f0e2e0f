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
from mcp.server.mcpserver import MCPServer

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


def test_the_reconnect_budget_counts_over_the_connections_life_not_in_a_row(api: Api) -> None:
    log_starts: list[int] = []
    conn = MCPConnection(stdio_spec(), max_reconnects=1)
    try:
        log_starts.append(_pid(api, conn))
        with pytest.raises(MCPConnectionError):
            api.call(conn, "crash")
        log_starts.append(_pid(api, conn))  # the one reconnect: it works
        with pytest.raises(MCPConnectionError):
            api.call(conn, "crash")
        before = child_pids()

        for _ in range(3):  # a request that worked in between does not give the budget back
            with pytest.raises(MCPConnectionError) as caught:
                api.call(conn, "add", {"a": 1, "b": 2})
            assert "gave up after 1 reconnect; last error:" in str(caught.value)
        assert child_pids() <= before
        assert len(set(log_starts)) == 2  # started twice: the first connection and one reconnect
        api.close(conn)  # closing starts the count over
        assert text(api.call(conn, "add", {"a": 1, "b": 2})) == "3"
    finally:
        conn.close()


def test_an_in_process_tool_that_raises_system_exit_fails_the_call_at_once_and_close_is_quick() -> None:
    server = MCPServer("exits")

    @server.tool()
    def leave() -> str:
        """Raise SystemExit."""
        raise SystemExit(1)

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    conn = MCPConnection(server)
    try:
        started = time.monotonic()
        with pytest.raises(MCPConnectionError) as caught:
            conn.call_tool("leave", {}, timeout=2)

        assert time.monotonic() - started < 10
        assert "raised SystemExit" in str(caught.value) and "'leave'" in str(caught.value)
        assert text(conn.call_tool("add", {"a": 1, "b": 2}, timeout=20)) == "3"  # the MCP loop lives on
    finally:
        started = time.monotonic()
        conn.close()
        assert time.monotonic() - started < 10


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


def test_a_server_that_exits_before_the_handshake_names_its_last_stderr_lines_masked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HANDRAIL_TEST_MCP_SECRET", "s3cr3t-value-1618")
    code = (
        "import os, sys\n"
        "for i in range(8): print(f'line {i}', file=sys.stderr)\n"
        "print('fatal: bad key ' + os.environ['KEY'] + ' ' + 'y' * 400, file=sys.stderr)\n"
        "sys.exit(2)\n"
    )
    server = StdioServer(
        sys.executable, ["-c", code], env={"KEY": Secret.from_env_var("HANDRAIL_TEST_MCP_SECRET")}, name="exits"
    )
    conn = MCPConnection(server, connect_timeout=5)

    with pytest.raises(MCPConnectionError) as caught:
        conn.connect()

    message = str(caught.value)
    assert "closed the connection before the handshake" in message
    assert "its last stderr lines: 'line 4' | 'line 5' | 'line 6' | 'line 7' | 'fatal: bad key " in message
    assert "line 3" not in message and "s3cr3t-value-1618" not in message
    assert "y" * 200 not in message  # each line cut
    conn.close()


def test_a_server_that_writes_no_json_rpc_to_stdout_says_so_in_one_line_each(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    code = "import time\nfor i in range(3): print(f'hello {i}, not JSON-RPC', flush=True)\ntime.sleep(30)\n"
    conn = MCPConnection(StdioServer(sys.executable, ["-c", code], name="chatty"), connect_timeout=2)

    with pytest.raises(MCPConnectionError) as caught:
        conn.connect()
    conn.close()

    assert "did not connect within 2 s" in str(caught.value)
    assert "the server wrote 3 lines that are not JSON-RPC to stdout (first: 'hello 0, not JSON-RPC')" in str(
        caught.value
    )
    warnings = [r for r in caught_records(caplog) if "not JSON-RPC" in r.getMessage()]
    assert [r.getMessage() for r in warnings] == [
        f"MCP server chatty wrote a line that is not JSON-RPC: 'hello {i}, not JSON-RPC'" for i in range(3)
    ]
    assert all(r.levelno == logging.WARNING and r.exc_info is None for r in warnings)
    assert not [r for r in caplog.records if r.name == "mcp.client.stdio" and r.levelno >= logging.ERROR]
    assert "Traceback" not in capfd.readouterr().err


def caught_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "handrail.tools.mcp"]


def test_close_after_a_connect_timeout_waits_for_the_process_to_end() -> None:
    before = child_pids()
    conn = MCPConnection(
        StdioServer(sys.executable, ["-c", "import time; time.sleep(60)"], name="mute"), connect_timeout=1
    )
    with pytest.raises(MCPConnectionError):
        conn.connect()

    started = time.monotonic()
    conn.close()

    assert time.monotonic() - started < 15
    assert child_pids() <= before  # ended (and reaped) by the time close() returned


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
