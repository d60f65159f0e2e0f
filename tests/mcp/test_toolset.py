"""MCPToolset in an Agent (MCP-T1..T10, T14 of the reference notes): the test double in process, over stdio and HTTP.

The model is scripted; every tool call goes to a real MCP server through the SDK.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import Field

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, ImageContent
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.snapshot import load_snapshot
from handrail.errors import (
    ConfigurationError,
    MCPToolError,
    SerializationError,
    SnapshotDriftError,
    UnknownOutcomeError,
)
from handrail.human_in_the_loop import (
    AlwaysAskPolicy,
    BlockingConfirmationStrategy,
    BreakpointConfirmationStrategy,
    NeverAskPolicy,
)
from handrail.testing import FunctionChatGenerator, ScriptedChatGenerator, call, reply, user
from handrail.tools import MCPTool, MCPToolset, StreamableHttpServer
from handrail.tools.mcp._connection import MCPConnection
from handrail.utils import Secret
from tests.human_in_the_loop._helpers import ScriptedUI
from tests.mcp import _durable_child as child
from tests.mcp.conftest import HttpServer, child_pids, start_http_server, stdio_spec, stop, wait_until
from tests.mcp.server_double import build_server

ALLOW = {"*": BlockingConfirmationStrategy(NeverAskPolicy(), ScriptedUI())}
"""Every call runs: the tests that are not about approvals say so explicitly (the default asks at the console)."""


def _run(toolset: Any, replies: list[ChatMessage], mode: str = "sync", **agent: Any) -> dict[str, Any]:
    agent.setdefault("confirmation_strategies", ALLOW)
    built = Agent(chat_generator=ScriptedChatGenerator(replies), tools=[toolset], **agent)
    try:
        if mode == "sync":
            return built.run([user("go")])
        return asyncio.run(built.run_async([user("go")]))
    finally:
        built.close()


def _results(result: dict[str, Any]) -> dict[str, tuple[Any, bool]]:
    return {m.tool_call_result.origin.id: (m.tool_call_result.result, m.tool_call_result.error)
            for m in result["messages"] if m.tool_call_result}  # fmt: skip


@pytest.fixture(params=["sync", "async"])
def run_mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


# -- T1/T2: the server's tools, called by an agent -------------------------------------------------------------


def test_the_tools_are_the_servers_with_their_schemas(any_server: Any) -> None:
    listed = {t.name: t for t in MCPConnection(any_server).list_tools()}
    toolset = MCPToolset(any_server)
    try:
        toolset.warm_up()
        tools = {t.remote_name: t for t in toolset}
    finally:
        toolset.close()
    assert set(tools) == set(listed)
    for name, tool in tools.items():
        assert tool.parameters == listed[name].input_schema
        assert tool.description == (listed[name].description or name)
    assert tools["calendar.read"].name == "calendar_read"  # T9: what model APIs accept
    assert tools["calendar.read"].annotations == {"read_only_hint": True}
    assert tools["structured"].output_schema == listed["structured"].output_schema is not None


def test_an_agent_calls_add_and_reads_3(any_server: Any, run_mode: str) -> None:
    result = _run(MCPToolset(any_server), [reply(call("add", {"a": 1, "b": 2}, id="c1")), reply("3")], run_mode)
    assert _results(result) == {"c1": ("3", False)}
    assert result["last_message"].text == "3"


def test_mcp_tool_is_a_toolset_of_one(mcp_server_obj: Any) -> None:
    one = MCPTool("calendar.read", mcp_server_obj)
    try:
        one.warm_up()
        assert [t.name for t in one] == ["calendar_read"]
        assert one.tools[0].invoke(day="monday") == "nothing on monday"
    finally:
        one.close()


# -- T3: errors are results the model reads ---------------------------------------------------------------------


def test_a_tool_error_unknown_tool_and_bad_arguments_are_error_results(mcp_server_obj: Any) -> None:
    replies = [
        reply(
            call("fail", {"msg": "disk full"}, id="f"),
            call("nope", {}, id="u"),
            call("add", {"a": "x", "b": 1}, id="b"),
        ),
        reply("sorry"),
    ]
    result = _run(MCPToolset(mcp_server_obj), replies)
    results = _results(result)
    assert results["f"][1] and "disk full" in results["f"][0] and "MCP server" in results["f"][0]
    assert results["u"][1] and "nope" in results["u"][0]
    assert results["b"][1] and "'x' is not of type 'integer'" in results["b"][0]  # checked before it is sent
    assert result["last_message"].text == "sorry"  # the run went on


def test_a_protocol_error_is_an_error_result_with_its_code(mcp_server_obj: Any) -> None:
    result = _run(MCPToolset(mcp_server_obj), [reply(call("protocol_error", {}, id="p")), reply("ok")])
    text, error = _results(result)["p"]
    assert error and "-32099" in text and "the double refuses" in text


# -- T4: timeouts ------------------------------------------------------------------------------------------------


def test_a_call_past_its_timeout_is_an_error_result_and_the_connection_goes_on(any_server: Any, run_mode: str) -> None:
    toolset = MCPToolset(any_server, tool_timeouts={"slow": 0.5})
    replies = [reply(call("slow", {"seconds": 30}, id="s")), reply(call("add", {"a": 2, "b": 2}, id="a")), reply("ok")]
    results = _results(_run(toolset, replies, run_mode))
    assert results["s"][1] and "0.5 s" in results["s"][0] and "asked to cancel" in results["s"][0]
    assert results["a"] == ("4", False)


# -- T5/T6: a server that dies -----------------------------------------------------------------------------------


def test_a_stdio_server_that_crashes_gives_an_error_and_the_next_call_reconnects(run_mode: str) -> None:
    replies = [reply(call("crash", {}, id="c")), reply(call("add", {"a": 1, "b": 1}, id="a")), reply("ok")]
    results = _results(_run(MCPToolset(stdio_spec()), replies, run_mode))
    assert results["c"][1] and "connection was lost" in results["c"][0] and "not sent again" in results["c"][0]
    assert results["a"] == ("2", False)


def test_an_http_server_killed_during_a_call_gives_an_error_not_a_cancelled_run() -> None:
    server: HttpServer = start_http_server()
    try:
        killer = threading.Timer(1.0, server.process.kill)
        killer.start()
        replies = [reply(call("slow", {"seconds": 30}, id="s")), reply("the server went away")]
        result = _run(MCPToolset(server.spec, max_reconnects=0), replies, "async")
        killer.join()
    finally:
        stop(server.process)
    text, error = _results(result)["s"]
    assert error and "lost during the call of 'slow'" in text
    assert result["last_message"].text == "the server went away"


def test_a_durable_run_killed_mid_call_reports_the_outcome_unknown_and_never_sends_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "snaps"
    process = subprocess.Popen([sys.executable, "-m", "tests.mcp._durable_child", str(directory)],
                               cwd=Path(__file__).resolve().parents[2], stderr=subprocess.DEVNULL)  # fmt: skip

    def running() -> bool:
        files = [p for p in directory.glob("*.json") if not p.name.startswith(".")]
        return (
            bool(files) and json.loads(files[0].read_text()).get("ledger", {}).get("k1", {}).get("status") == "running"
        )

    try:
        assert wait_until(running, 60), f"no running call in a snapshot (exit status {process.poll()})"
        os.kill(process.pid, signal.SIGKILL)
        process.wait(30)
    finally:
        if process.poll() is None:
            process.kill()
    (path,) = [p for p in directory.glob("*.json") if not p.name.startswith(".")]
    sent: list[str] = []
    original = MCPConnection.call_tool_async

    async def counting(self: MCPConnection, name: str, *args: Any, **kwargs: Any) -> Any:
        sent.append(name)
        return await original(self, name, *args, **kwargs)

    monkeypatch.setattr(MCPConnection, "call_tool_async", counting)
    monkeypatch.setattr(MCPConnection, "call_tool", lambda self, name, *a, **k: sent.append(name))
    agent = child.durable_agent(directory, [reply("Gave up waiting")])
    with pytest.raises(UnknownOutcomeError, match="'k1'"):
        agent.run([], snapshot=load_snapshot(path))
    agent = child.durable_agent(directory, [reply("Gave up waiting")])
    try:
        result = agent.run([], snapshot=load_snapshot(path), unknown_outcome="fail")
    finally:
        agent.close()
    assert result["last_message"].text == "Gave up waiting"
    text, error = _results(result)["k1"]
    assert error and "Outcome unknown" in text
    assert sent == []  # the new connection never sent slow again


# -- T7: big results ---------------------------------------------------------------------------------------------


def test_a_big_result_is_cut_for_the_model_and_kept_whole_by_the_offload(any_server: Any) -> None:
    kept: dict[str, str] = {}

    def offload(text: str) -> str:
        kept["big-1"] = text
        return "store://big-1"

    toolset = MCPToolset(any_server, max_result_chars=10_000, result_offload=offload)
    results = _results(_run(toolset, [reply(call("big", {"n": 3_000_000}, id="b")), reply("long")]))
    text, error = results["b"]
    assert not error and len(text) <= 10_000
    assert "2,990,000" in text or "characters cut" in text
    assert "store://big-1" in text
    assert len(kept["big-1"]) == 3_000_000


def test_an_image_result_stays_an_image_part(mcp_server_obj: Any) -> None:
    results = _results(_run(MCPToolset(mcp_server_obj), [reply(call("image", {}, id="i")), reply("a picture")]))
    parts, error = results["i"]
    assert not error and any(isinstance(p, ImageContent) and p.mime_type == "image/png" for p in parts)


def test_structured_content_when_asked_for(mcp_server_obj: Any) -> None:
    toolset = MCPToolset(mcp_server_obj, use_structured_content=True)
    text, _ = _results(_run(toolset, [reply(call("structured", {"city": "Oslo"}, id="w")), reply("ok")]))["w"]
    assert json.loads(text)["city"] == "Oslo"


# -- T8: the tool list changes -----------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
def test_a_new_tool_is_offered_from_the_next_step_and_a_removed_one_is_gone(fresh_server: Any, protocol: str) -> None:
    toolset = MCPToolset(fresh_server, mode=protocol)
    script = [
        call("enable_extra", {}, id="e"),
        call("pid", {}, id="p"),  # this step may have begun before the announcement arrived
        call("extra", {}, id="x"),
        call("remove", {"name": "add"}, id="r"),
        call("pid", {}, id="q"),
        call("add", {"a": 1, "b": 1}, id="a"),
    ]
    offered: list[list[str]] = []

    def model(messages: list[ChatMessage], tools: Any) -> ChatMessage:
        offered.append([t.name for t in tools or []])
        step = len(offered) - 1
        if step in (1, 4):  # the announcement travels on its own (the 2026 listen stream): wait until it is in
            assert wait_until(lambda: step_saw_change(step) or toolset._changed.is_set(), 10)
        return ChatMessage.from_assistant(tool_calls=[script[step]]) if step < len(script) else reply("done")

    def step_saw_change(step: int) -> bool:
        return ("extra" in offered[step]) if step == 1 else ("add" not in offered[step])

    agent = Agent(chat_generator=FunctionChatGenerator(model), tools=[toolset], confirmation_strategies=ALLOW)
    try:
        result = agent.run([user("go")])
    finally:
        agent.close()
    assert "extra" not in offered[0] and "extra" in offered[2]  # listed again at a step's start, not mid-step
    assert "add" in offered[3] and "add" not in offered[5]
    results = _results(result)
    assert results["x"] == ("extra", False)
    assert results["a"][1] and "add" in results["a"][0]  # the model called a tool the server removed: named


def test_calling_a_tool_the_server_removed_names_it(mcp_server_obj: Any) -> None:
    toolset = MCPToolset(mcp_server_obj, confirmation_strategy=None)
    toolset.warm_up()
    try:
        by_name = {t.name: t for t in toolset}
        by_name["remove"].invoke(name="add")
        assert wait_until(lambda: toolset._changed.is_set(), 10)
        with pytest.raises(Exception, match="no longer has tool 'add'") as info:
            by_name["add"].invoke(a=1, b=2)
        assert isinstance(info.value.__cause__, MCPToolError)
    finally:
        toolset.close()


# -- T9: names ---------------------------------------------------------------------------------------------------


def test_two_servers_with_one_tool_name_need_a_prefix() -> None:
    first, second = MCPToolset(build_server()), MCPToolset(build_server())
    with pytest.raises(ConfigurationError, match="Duplicate tool names found"):
        Agent(chat_generator=ScriptedChatGenerator([reply("x")]), tools=[first, second]).run([user("go")])
    prefixed = MCPToolset(build_server(), prefix="b")
    replies = [reply(call("b_calendar_read", {"day": "monday"}, id="c")), reply("free")]
    result = _run(MCPToolset(build_server(), tool_names=["add"]) + prefixed, replies)
    assert _results(result)["c"] == ("nothing on monday", False)


def test_tool_names_the_server_lacks_are_refused(mcp_server_obj: Any) -> None:
    with pytest.raises(ConfigurationError, match=r"no tool \['nope'\].*calendar\.read"):
        MCPToolset(mcp_server_obj, tool_names=["add", "nope"]).warm_up()


# -- T10: annotations set the default, an explicit strategy wins -------------------------------------------------


def test_a_destructive_tool_pauses_and_a_read_only_one_runs_under_the_default(tmp_path: Path) -> None:
    toolset = MCPToolset(build_server(), confirmation_strategy=BreakpointConfirmationStrategy(str(tmp_path)))
    replies = [
        reply(call("calendar_read", {"day": "friday"}, id="r")),
        reply(call("delete_file", {"path": "a"}, id="d")),
    ]
    agent = Agent(chat_generator=ScriptedChatGenerator(replies), tools=[toolset])
    try:
        with pytest.raises(HITLBreakpointException) as info:
            agent.run([user("go")])
    finally:
        agent.close()
    snapshot = load_snapshot(info.value.snapshot_file_path)
    assert _results({"messages": snapshot.messages})["r"] == ("nothing on friday", False)
    assert [e.tool_name for e in snapshot.ledger.values() if e.status not in ("done", "failed")] == ["delete_file"]


def test_an_explicit_strategy_wins_over_the_hints_both_ways() -> None:
    ask_ui = ScriptedUI([])
    from handrail.dataclasses.decisions import ConfirmationUIResult

    ask_ui.answers = [ConfirmationUIResult("reject")]
    strategies = {
        "delete_file": BlockingConfirmationStrategy(NeverAskPolicy(), ScriptedUI()),  # hints say ask: runs
        "calendar_read": BlockingConfirmationStrategy(AlwaysAskPolicy(), ask_ui),  # hints say run: asks
    }
    replies = [reply(call("delete_file", {"path": "a"}, id="d"), call("calendar_read", {"day": "x"}, id="r")),
               reply("ok")]  # fmt: skip
    results = _results(_run(MCPToolset(build_server()), replies, confirmation_strategies=strategies))
    assert results["d"] == ("deleted a", False)
    assert results["r"][1] and [c["tool_name"] for c in ask_ui.calls] == ["calendar_read"]


def test_the_person_sees_the_server_the_tool_its_hints_and_the_arguments() -> None:
    ui = ScriptedUI([])
    from handrail.dataclasses.decisions import ConfirmationUIResult

    ui.answers = [ConfirmationUIResult("reject")]
    toolset = MCPToolset(build_server(), confirmation_strategy=BlockingConfirmationStrategy(AlwaysAskPolicy(), ui))
    _run(toolset, [reply(call("delete_file", {"path": "a.txt"}, id="d")), reply("ok")], confirmation_strategies=None)
    (asked,) = ui.calls
    assert "MCP server 'double'" in asked["tool_description"] and "tool 'delete_file'" in asked["tool_description"]
    assert "destructive=True" in asked["tool_description"] and asked["tool_params"] == {"path": "a.txt"}
    toolset.warm_up()
    preview = next(t for t in toolset.tools if t.name == "delete_file").preview_of({"path": "a.txt"})
    toolset.close()
    assert preview is not None and json.loads(preview.content)["arguments"] == {"path": "a.txt"}


# -- drift and T14: serialization --------------------------------------------------------------------------------


def test_a_paused_run_whose_server_tools_changed_is_refused_with_the_diff(tmp_path: Path) -> None:
    server = build_server()
    toolset = MCPToolset(server, confirmation_strategy=BreakpointConfirmationStrategy(str(tmp_path)))
    agent = Agent(chat_generator=ScriptedChatGenerator([reply(call("delete_file", {"path": "a"}, id="d"))]),
                  tools=[toolset])  # fmt: skip
    with pytest.raises(HITLBreakpointException) as info:
        agent.run([user("go")])
    agent.close()
    server.remove_tool("add")
    again = Agent(chat_generator=ScriptedChatGenerator([reply("x")]), tools=[MCPToolset(server)])
    with pytest.raises(SnapshotDriftError, match='-    "add"'):
        again.run([], snapshot=load_snapshot(info.value.snapshot_file_path))
    again.close()


def test_a_toolset_round_trips_without_its_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TOKEN", "s3cr3t-value")
    server = StreamableHttpServer("http://127.0.0.1:9/mcp", headers={"Authorization": Secret.from_env_var("MCP_TOKEN")})
    ask = BlockingConfirmationStrategy(AlwaysAskPolicy(), ScriptedUI())
    toolset = MCPToolset(
        server, prefix="cal", tool_timeouts={"slow": 5}, max_result_chars=500, confirmation_strategy=ask
    )
    data = toolset.to_dict()
    assert "s3cr3t-value" not in json.dumps(data)
    back = MCPToolset.from_dict(data)
    assert back.to_dict() == data and back.prefix == "cal" and back.tool_timeouts == {"slow": 5.0}
    assert isinstance(back.server.headers["Authorization"], Secret)
    one = MCPTool("add", stdio_spec())
    assert MCPTool.from_dict(one.to_dict()).to_dict() == one.to_dict()


def test_an_in_process_server_cannot_be_serialized(mcp_server_obj: Any) -> None:
    with pytest.raises(SerializationError, match="in-process"):
        MCPToolset(mcp_server_obj).to_dict()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"call_timeout": 0}, "call_timeout"),
        ({"tool_timeouts": {"slow": -1}}, r"tool_timeouts\['slow'\]"),
        ({"mode": "2026"}, "mode"),
        ({"prefix": " "}, "prefix"),
        ({"max_reconnects": -1}, "max_reconnects"),
        ({"tool_names": "add"}, "tool_names"),
        ({"confirmation_strategy": "ask"}, "confirmation_strategy"),
    ],
)
def test_bad_settings_are_refused_naming_them(mcp_server_obj: Any, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises((ConfigurationError, TypeError), match=message):
        MCPToolset(mcp_server_obj, **kwargs)


# -- lifecycle ---------------------------------------------------------------------------------------------------


def test_closing_the_agent_ends_the_server_process() -> None:
    before = child_pids()
    agent = Agent(chat_generator=ScriptedChatGenerator([reply(call("add", {"a": 1, "b": 1})), reply("2")]),
                  tools=[MCPToolset(stdio_spec())], confirmation_strategies=ALLOW)  # fmt: skip
    agent.run([user("go")])
    assert child_pids() - before  # the server runs while the agent is open
    agent.close()
    assert wait_until(lambda: not (child_pids() - before), 15)


def test_eager_connect_lists_at_construction(mcp_server_obj: Any) -> None:
    toolset = MCPToolset(mcp_server_obj, eager_connect=True)
    try:
        assert "add" in [t.name for t in toolset.tools] and toolset.protocol_version
    finally:
        toolset.close()


# -- the fresh-user probe's findings ------------------------------------------------------------------------------


def test_a_combined_toolset_closes_its_servers_and_round_trips() -> None:
    before = child_pids()
    combined = MCPToolset(stdio_spec(), prefix="p", tool_names=["add"]) + MCPToolset(
        stdio_spec(), prefix="q", tool_names=["add"]
    )
    replies = [reply(call("p_add", {"a": 1, "b": 1}, id="p"), call("q_add", {"a": 2, "b": 2}, id="q")), reply("ok")]
    assert _results(_run(combined, replies)) == {"p": ("2", False), "q": ("4", False)}  # _run closes the agent
    assert wait_until(lambda: not (child_pids() - before), 15)
    data = combined.to_dict()
    assert [part["init_parameters"]["prefix"] for part in data["init_parameters"]["parts"]] == ["p", "q"]
    assert type(combined).from_dict(data).to_dict() == data


def _server_with(**tools: Any) -> Any:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("odd")
    for name, fn in tools.items():
        server.add_tool(fn, name=name)
    return server


def test_a_tool_that_cannot_be_used_is_left_out_and_named(caplog: pytest.LogCaptureFixture) -> None:
    def risky(x: Annotated[str, Field(pattern="(a+)+$")]) -> str:
        """A pattern that backtracks for ever on some inputs."""
        return x

    def fine(x: str) -> str:
        """Fine."""
        return x

    server = _server_with(risky=risky, fine=fine)
    toolset = MCPToolset(server)
    with caplog.at_level("WARNING", logger="handrail.tools.mcp"):
        toolset.warm_up()
    assert [t.name for t in toolset] == ["fine"]
    assert any("'risky' is left out" in r.getMessage() and "MCP server 'odd'" in r.getMessage() for r in caplog.records)
    toolset.close()
    with pytest.raises(ConfigurationError, match=r"MCP server 'odd': tool 'risky' cannot be used"):
        MCPToolset(server, tool_names=["risky"]).warm_up()


def test_a_strategy_key_matching_no_listed_tool_warns_with_the_name_the_model_sees(mcp_server_obj: Any) -> None:
    ask = BlockingConfirmationStrategy(AlwaysAskPolicy(), ScriptedUI())
    agent = Agent(chat_generator=ScriptedChatGenerator([reply("x")]), tools=[MCPToolset(mcp_server_obj)],
                  confirmation_strategies={"calendar.read": ask})  # fmt: skip
    with pytest.warns(UserWarning, match=r"Did you mean 'calendar_read' for 'calendar.read'"):
        agent.run([user("go")])
    agent.close()


def test_tool_timeouts_take_both_names_and_refuse_an_unknown_one() -> None:
    toolset = MCPToolset(build_server(), prefix="k", tool_timeouts={"k_slow": 0.5})
    results = _results(_run(toolset, [reply(call("k_slow", {"seconds": 30}, id="s")), reply("ok")]))
    assert results["s"][1] and "0.5 s" in results["s"][0]
    with pytest.raises(ConfigurationError, match=r"tool_timeouts names no tool of the server: \['nosuch'\]"):
        MCPToolset(build_server(), tool_timeouts={"nosuch": 1}).warm_up()


def test_a_tool_of_a_closed_toolset_says_so_instead_of_reconnecting(mcp_server_obj: Any) -> None:
    toolset = MCPToolset(mcp_server_obj)
    toolset.warm_up()
    add = next(t for t in toolset if t.name == "add")
    toolset.close()
    with pytest.raises(Exception, match="is closed; warm it up again"):
        add.invoke(a=1, b=2)
    assert toolset._connection is None  # nothing connected again


@pytest.mark.parametrize("offload", [lambda text: None, lambda text: 1 / 0])
def test_an_offload_that_gives_nothing_or_fails_still_cuts_the_result(offload: Any) -> None:
    toolset = MCPToolset(build_server(), max_result_chars=1_000, result_offload=offload)
    text, error = _results(_run(toolset, [reply(call("big", {"n": 50_000}, id="b")), reply("ok")]))["b"]
    assert not error and len(text) <= 1_000 and "characters cut" in text and " is at " not in text


def test_settings_that_would_do_nothing_are_refused(mcp_server_obj: Any) -> None:
    with pytest.raises(TypeError, match="takes no tool_names"):
        MCPTool("add", mcp_server_obj, tool_names=["big"])
    with pytest.raises(ConfigurationError, match="tool_names is empty"):
        MCPToolset(mcp_server_obj, tool_names=[])
    for bad in (None, "python server.py", {"command": "python"}):
        with pytest.raises(TypeError, match="StdioServer"):
            MCPToolset(bad)


def test_two_servers_with_one_tool_name_are_told_about_prefix() -> None:
    with pytest.raises(ConfigurationError, match=r"give one MCPToolset a prefix="):
        Agent(chat_generator=ScriptedChatGenerator([reply("x")]),
              tools=[MCPToolset(build_server()), MCPToolset(build_server())]).run([user("go")])  # fmt: skip
