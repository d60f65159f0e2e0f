"""MCPConnection against the test double in its three modes (in process, stdio, streamable HTTP), sync and async.

Listing, calling, error results, timeouts, caller cancellation, concurrent requests, tool-list changes in both
protocol eras, and closing.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer

from handrail.errors import MCPConnectionError, MCPProtocolError, MCPTimeoutError, RunError
from handrail.tools.mcp._connection import MCPConnection
from handrail.tools.mcp._loop import run_sync
from tests.mcp.conftest import wait_until
from tests.mcp.helpers import Api, text
from tests.mcp.server_double import INSTRUCTIONS, build_server


def _expected_tools() -> dict[str, Any]:
    server = build_server()
    return {tool.name: tool for tool in asyncio.run(server.list_tools())}


def test_lists_the_servers_tools_with_their_descriptions_and_schemas(conn: MCPConnection, api: Api) -> None:
    tools = api.list_tools(conn)

    expected = _expected_tools()
    assert [tool.name for tool in tools] == list(expected)
    for tool in tools:
        assert tool.description == expected[tool.name].description
        assert tool.input_schema == expected[tool.name].input_schema
    by_name = {tool.name: tool for tool in tools}
    assert by_name["calendar.read"].annotations.read_only_hint is True
    assert by_name["delete_file"].annotations.destructive_hint is True
    assert by_name["structured"].output_schema is not None
    assert conn.connected
    assert conn.protocol_version == "2026-07-28"
    assert conn.instructions == INSTRUCTIONS


def test_a_call_returns_the_text_and_the_structured_content(conn: MCPConnection, api: Api) -> None:
    result = api.call(conn, "add", {"a": 1, "b": 2})

    assert not result.is_error
    assert text(result) == "3"
    assert result.structured_content == {"result": 3}


def test_image_and_structured_results_come_as_the_sdk_gives_them(conn: MCPConnection, api: Api) -> None:
    image = api.call(conn, "image")
    weather = api.call(conn, "structured", {"city": "Rome"})

    assert image.content[0].type == "image" and image.content[0].mime_type == "image/png"
    assert weather.structured_content == {"city": "Rome", "celsius": 21.5}


def test_a_failing_tool_an_unknown_tool_and_bad_arguments_are_error_results(conn: MCPConnection, api: Api) -> None:
    failed = api.call(conn, "fail", {"msg": "the disk is full"})
    unknown = api.call(conn, "no_such_tool")
    bad = api.call(conn, "add", {"a": "x"})

    assert failed.is_error and "the disk is full" in text(failed)
    assert unknown.is_error and "no_such_tool" in text(unknown)
    assert bad.is_error and "validation error" in text(bad)
    assert text(api.call(conn, "add", {"a": 2, "b": 2})) == "4"  # still usable


@pytest.mark.parametrize("code", [-32099, -32001, -32000])
def test_a_json_rpc_error_is_a_protocol_error_naming_the_server_and_code(
    conn: MCPConnection, api: Api, code: int
) -> None:
    # -32001 and -32000 are the codes of the SDK's own timeout and closed connection: from the server they are
    # still the server's answer, not a timeout nor a lost connection
    before = api.call(conn, "pid").structured_content["result"]
    with pytest.raises(MCPProtocolError) as caught:
        api.call(conn, "protocol_error", {"code": code})

    assert caught.value.code == code
    assert caught.value.server == conn.label
    assert f"with error {code}: the double refuses" in str(caught.value) and conn.label in str(caught.value)
    assert caught.value.__context__ is None and caught.value.__cause__ is None
    assert conn.connected
    assert api.call(conn, "pid").structured_content["result"] == before  # the same connection, no reconnect
    assert text(api.call(conn, "add", {"a": 1, "b": 1})) == "2"


def test_structured_content_against_the_output_schema_is_dropped_and_the_text_kept(
    conn: MCPConnection, api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="handrail.tools.mcp")
    result = api.call(conn, "bad_structured")

    assert not result.is_error
    assert text(result) == "n is seven"
    assert result.structured_content is None
    warnings = [
        r.getMessage() for r in caplog.records if r.name == "handrail.tools.mcp" and r.levelno == logging.WARNING
    ]
    assert any(
        conn.label in m and "'bad_structured'" in m and "'seven' is not of type 'integer'" in m for m in warnings
    ), warnings
    assert all("\n" not in m for m in warnings)
    assert conn.connected


def test_a_malformed_result_is_a_short_protocol_error(stdio_server: Any) -> None:
    conn = MCPConnection(stdio_server)
    try:
        with pytest.raises(MCPProtocolError) as caught:
            conn.call_tool("bogus_content", {}, timeout=20)

        message = str(caught.value)
        assert message.startswith("MCP server stdio-double: the call of 'bogus_content' returned a malformed result: ")
        assert len(message) < 500 and "\n" not in message and "errors.pydantic.dev" not in message
        assert caught.value.code is None and caught.value.__cause__ is None and caught.value.__context__ is None
        assert text(conn.call_tool("add", {"a": 1, "b": 2}, timeout=20)) == "3"
    finally:
        conn.close()


def test_a_call_past_its_timeout_is_cancelled_on_the_server_and_the_connection_stays(
    conn: MCPConnection, api: Api
) -> None:
    started = time.monotonic()
    with pytest.raises(MCPTimeoutError) as caught:
        api.call(conn, "slow", {"seconds": 30}, timeout=0.5)

    assert time.monotonic() - started < 10  # not the 30 s of the tool
    error = caught.value
    assert (error.server, error.tool, error.timeout) == (conn.label, "slow", 0.5)
    assert isinstance(error, TimeoutError) and isinstance(error, RunError)
    assert str(error) == (
        f"MCP server {conn.label}: the call of 'slow' took longer than 0.5 s; the server was asked to cancel it, "
        "and its outcome is unknown (it may have run); it is not sent again."
    )
    assert error.__context__ is None and error.__cause__ is None  # no anyio internals as a "root cause"
    assert text(api.call(conn, "add", {"a": 1, "b": 2})) == "3"
    # notifications/cancelled reached the server: its handler was interrupted
    assert wait_until(lambda: api.call(conn, "cancelled").structured_content["result"] >= 1)


async def test_cancelling_the_awaiting_task_cancels_the_call_on_the_server(conn: MCPConnection) -> None:
    await conn.connect_async()
    call = asyncio.ensure_future(conn.call_tool_async("slow", {"seconds": 30}, timeout=60))
    await asyncio.sleep(0.5)
    call.cancel()

    with pytest.raises(asyncio.CancelledError):
        await call
    result = await conn.call_tool_async("add", {"a": 1, "b": 2}, timeout=20)
    assert text(result) == "3"

    async def cancelled() -> int:
        return int((await conn.call_tool_async("cancelled", {}, timeout=20)).structured_content["result"])

    for _ in range(100):
        if await cancelled() >= 1:
            break
        await asyncio.sleep(0.05)
    assert await cancelled() >= 1


async def test_concurrent_calls_from_several_tasks_share_one_connection(conn: MCPConnection) -> None:
    results = await asyncio.gather(
        *(conn.call_tool_async("add", {"a": i, "b": 1}, timeout=20) for i in range(10)),
        conn.call_tool_async("slow", {"seconds": 0.3}, timeout=20),
    )

    assert [text(result) for result in results[:10]] == [str(i + 1) for i in range(10)]
    assert text(results[10]) == "slept 0.3"


def test_concurrent_calls_from_several_threads_share_one_connection(conn: MCPConnection) -> None:
    found: dict[int, str] = {}

    def work(i: int) -> None:
        conn.call_tool("slow", {"seconds": 0.2}, timeout=20)
        found[i] = text(conn.call_tool("add", {"a": i, "b": i}, timeout=20))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert found == {i: str(2 * i) for i in range(6)}


def test_meta_reaches_the_server(conn: MCPConnection, api: Api) -> None:
    result = api.call(conn, "request_meta", meta={"tenant": "t1"})

    assert result.structured_content == {"tenant": "t1"}


@pytest.mark.parametrize("era", ["auto", "legacy"])
def test_a_tool_list_change_calls_on_tools_changed_in_both_protocol_eras(fresh_server: Any, era: str) -> None:
    changed = threading.Event()
    conn = MCPConnection(fresh_server, mode=era, on_tools_changed=changed.set)
    try:
        conn.connect()
        assert conn.protocol_version == ("2026-07-28" if era == "auto" else "2025-11-25")
        # each era gets only its own announcement: the listen stream, or the notification
        conn.call_tool("enable_extra", {"announce": "listen" if era == "auto" else "legacy"}, timeout=20)

        assert changed.wait(10)
        assert "extra" in [tool.name for tool in conn.list_tools()]
        assert text(conn.call_tool("extra", {}, timeout=20)) == "extra"
    finally:
        conn.close()


def test_a_blocking_call_from_on_tools_changed_is_refused_not_a_deadlock(mcp_server_obj: Any) -> None:
    seen: list[BaseException] = []
    conn: MCPConnection

    def callback() -> None:
        try:
            conn.list_tools()
        except RuntimeError as exc:
            seen.append(exc)

    conn = MCPConnection(mcp_server_obj, on_tools_changed=callback)
    try:
        conn.call_tool("enable_extra", {}, timeout=20)
        assert wait_until(lambda: bool(seen))
        assert "MCP event-loop thread" in str(seen[0])
    finally:
        conn.close()


def test_close_is_idempotent_and_a_later_request_connects_again(conn: MCPConnection, api: Api) -> None:
    api.connect(conn)
    assert conn.connected

    api.close(conn)
    api.close(conn)

    assert not conn.connected
    assert text(api.call(conn, "add", {"a": 1, "b": 2})) == "3"
    assert conn.connected


def test_close_before_any_connect_does_nothing(mcp_server_obj: Any, api: Api) -> None:
    conn = MCPConnection(mcp_server_obj)
    api.close(conn)
    assert not conn.connected


def test_a_call_in_flight_when_closing_fails_with_a_connection_error(conn: MCPConnection) -> None:
    conn.connect()
    failure: list[BaseException] = []

    def call() -> None:
        try:
            conn.call_tool("slow", {"seconds": 30}, timeout=60)
        except BaseException as exc:
            failure.append(exc)

    worker = threading.Thread(target=call)
    worker.start()
    time.sleep(0.5)
    conn.close()
    worker.join(15)

    assert not worker.is_alive()
    assert len(failure) == 1 and isinstance(failure[0], MCPConnectionError)


def test_the_loop_runs_in_one_daemon_thread_named_handrail_mcp(conn: MCPConnection) -> None:
    conn.connect()

    async def where() -> threading.Thread:
        return threading.current_thread()

    thread = run_sync(where(), 10)
    assert thread.name == "handrail-mcp" and thread.daemon
    assert run_sync(where(), 10) is thread


class _SlowListing(MCPServer):
    """A server that takes 30 s to list its tools."""

    async def list_tools(self) -> Any:
        await asyncio.sleep(30)
        return await super().list_tools()


def test_listing_past_the_list_timeout_is_a_timeout_error(api: Api) -> None:
    conn = MCPConnection(_SlowListing("slow-list"), list_timeout=0.5)
    started = time.monotonic()
    try:
        with pytest.raises(MCPTimeoutError) as caught:
            api.list_tools(conn)

        assert time.monotonic() - started < 10
        assert (caught.value.server, caught.value.tool, caught.value.timeout) == ("slow-list", None, 0.5)
        assert "listing the tools took longer than 0.5 s; the server was asked to cancel it." in str(caught.value)
        assert conn.connected  # a timeout does not end the connection
    finally:
        conn.close()
