"""The agents a service runs: factories checked when the service starts, agent files under the allowlist."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.errors import ConfigurationError, ConfigurationTypeError
from handrail.human_in_the_loop import (
    AlwaysAskPolicy,
    BlockingConfirmationStrategy,
    BreakpointConfirmationStrategy,
    SimpleConsoleUI,
)
from handrail.server import AgentRegistry, Resumer, RunLauncher
from handrail.specs import build_agent, load_agent_spec
from handrail.stores import FileSnapshotStore
from handrail.testing import FunctionChatGenerator, user
from handrail.tools import MCPToolset, StdioServer, Tool, create_tool_from_function
from tests.server._agents import AGENT_FILE, SENT, pay_replies, payer, transfer
from tests.server.test_resumer import approve_all


def _agent(**settings: Any) -> Agent:
    return Agent(chat_generator=FunctionChatGenerator(pay_replies), tools=[create_tool_from_function(transfer)],
                 **settings)  # fmt: skip


def test_a_factory_whose_agent_pauses_elsewhere_is_refused_when_the_service_starts(
    sqlite_store: Any, tmp_path: Path
) -> None:
    elsewhere = FileSnapshotStore(tmp_path / "elsewhere")

    def factory(store: Any) -> Agent:
        return _agent(confirmation_strategies={"transfer": BreakpointConfirmationStrategy(snapshot_store=elsewhere)})

    with pytest.raises(ConfigurationError) as info:
        Resumer(sqlite_store, agents={"payer": factory})
    message = str(info.value)
    assert "factory 'payer'" in message and "'transfer'" in message and "not into the service's store" in message


@pytest.mark.parametrize(
    ("strategies", "words"),
    [
        ({"transfer": BlockingConfirmationStrategy(confirmation_policy=AlwaysAskPolicy(),
                                                   confirmation_ui=SimpleConsoleUI())},
         "does not pause the run"),
        (None, "has no confirmation strategy"),
        ({"transfer": BreakpointConfirmationStrategy(snapshot_file_path="/tmp/else")}, "pauses into /tmp/else"),
    ],
)  # fmt: skip
def test_a_factory_whose_agent_would_not_pause_into_the_store_is_refused(
    sqlite_store: Any, strategies: Any, words: str
) -> None:
    with pytest.raises(ConfigurationError, match=words):
        AgentRegistry(sqlite_store, agents={"payer": lambda store: _agent(confirmation_strategies=strategies)})


def _refusing() -> Agent:
    raise ConfigurationError("no API key")


@pytest.mark.parametrize(
    ("factory", "error", "words"),
    [
        ("not callable", ConfigurationTypeError, "must be callable as factory(store) -> Agent"),
        (lambda store: "an agent", ConfigurationTypeError, "must be an Agent, got str"),
        (lambda store: _refusing(), ConfigurationError, "refused to build it: no API key"),
    ],
)
def test_a_bad_factory_is_named(sqlite_store: Any, factory: Any, error: type[Exception], words: str) -> None:
    with pytest.raises(error) as info:
        AgentRegistry(sqlite_store, agents={"payer": factory})
    assert words in str(info.value) and "payer" in str(info.value)


def test_a_store_without_service_records_and_bad_settings_are_refused(sqlite_store: Any) -> None:
    with pytest.raises(ConfigurationTypeError, match="approval records"):
        Resumer(object(), agents={})
    with pytest.raises(ConfigurationError, match="'fail' or 'retry'"):
        Resumer(sqlite_store, unknown_outcome="ignore")
    with pytest.raises(ConfigurationError, match="takeover_interval"):
        Resumer(sqlite_store, takeover_interval=0)
    with pytest.raises(ConfigurationError, match="not a directory"):
        Resumer(sqlite_store, agents_dir="/no/such/dir")


def _pause_from_file(store: Any, path: Path, text: str) -> str:
    """What ``handrail run --pause-for-approval`` does: build the file's agent pausing into the store, run it."""
    agent = build_agent(load_agent_spec(path), base_dir=path.parent, approve="pause", snapshot_store=store,
                        snapshot_metadata={"agent_file": str(path.resolve())})  # fmt: skip
    with pytest.raises(HITLBreakpointException) as info:
        agent.run([user(text)])
    snapshot_id = info.value.snapshot.snapshot_id
    assert snapshot_id is not None
    return snapshot_id


def test_a_snapshot_resumes_with_the_agent_file_it_records(sqlite_store: Any, tmp_path: Path) -> None:
    path = tmp_path / "agents" / "payer.yaml"
    path.parent.mkdir()
    path.write_text(AGENT_FILE, encoding="utf-8")
    run_id = _pause_from_file(sqlite_store, path, "pay 4")
    approve_all(sqlite_store, run_id)
    outside = tmp_path / "other"
    outside.mkdir()
    strict = Resumer(sqlite_store, agents_dir=outside)  # only files inside 'other' are run: this one is not
    try:
        assert strict.run_once().outcomes == {run_id: "unknown agent"} and SENT == []
    finally:
        strict.stop()
    resumer = Resumer(sqlite_store, agents_dir=path.parent)
    try:
        assert resumer.run_once().outcomes == {run_id: "finished"} and SENT == [4]
        assert sqlite_store.get_run(run_id).agent_name == "payer"
    finally:
        resumer.stop()


def test_runs_of_an_agents_directory_record_their_file_and_resume_with_it(sqlite_store: Any, tmp_path: Path) -> None:
    (tmp_path / "payer.yaml").write_text(AGENT_FILE, encoding="utf-8")
    launcher = RunLauncher(sqlite_store, agents_dir=tmp_path)
    try:  # a file added after the start is checked when it is built (one there at the start: at the start)
        (tmp_path / "quiet.yaml").write_text(AGENT_FILE.replace("confirmation: {transfer: always}\n", ""), "utf-8")
        assert launcher.registry.names() == ["payer", "quiet"]
        record = launcher.start_run("payer", ["pay 2"])
        assert launcher.wait(30)
        snapshot = sqlite_store.load(launcher.get_run(record.run_id).record.snapshot_id)
        assert snapshot.metadata["agent_file"] == str((tmp_path / "payer.yaml").resolve())
        with pytest.raises(ConfigurationError, match="has no confirmation strategy"):
            launcher.start_run("quiet", ["pay 1"])  # a file asking no person cannot keep its runs in the store
    finally:
        launcher.close()
    (tmp_path / "quiet.yaml").unlink()  # a service would refuse to start with it
    approve_all(sqlite_store, record.run_id)
    resumer = Resumer(sqlite_store, agents_dir=tmp_path)
    try:
        assert resumer.run_once().outcomes == {record.run_id: "finished"} and SENT == [2]
    finally:
        resumer.stop()


def test_a_factory_is_called_once_with_the_store(sqlite_store: Any) -> None:
    calls: list[Any] = []

    def factory(store: Any) -> Agent:
        calls.append(store)
        return payer(store)

    registry = AgentRegistry(sqlite_store, agents={"payer": factory})
    agent, metadata = registry.agent_named("payer")
    assert calls == [sqlite_store] and registry.agent_named("payer")[0] is agent and metadata == {"agent_name": "payer"}


def _mcp_agent(strategy: Any, **settings: Any) -> Agent:
    """An agent whose tools are an MCP server's (never connected here: the registry does not connect)."""
    files = MCPToolset(StdioServer(sys.executable, ["-c", "raise SystemExit(3)"], name="files"),
                       confirmation_strategy=strategy)  # fmt: skip
    return Agent(chat_generator=FunctionChatGenerator(pay_replies), tools=[files], **settings)


def test_an_agent_whose_mcp_toolset_pauses_into_the_store_is_accepted_without_strategies_of_its_own(
    sqlite_store: Any,
) -> None:
    registry = AgentRegistry(sqlite_store, agents={
        "files": lambda store: _mcp_agent(BreakpointConfirmationStrategy(snapshot_store=store)),
        "covered": lambda store: _mcp_agent(None, confirmation_strategies={  # "*" decides every tool instead
            "*": BreakpointConfirmationStrategy(snapshot_store=store)}),
    })  # fmt: skip
    assert registry.names() == ["covered", "files"]


@pytest.mark.parametrize(
    ("strategy", "words"),
    [
        (
            None,
            "the confirmation_strategy of MCPToolset 'files' is None, so the calls its tools ask about would wait "
            "at a console prompt",
        ),
        (
            BreakpointConfirmationStrategy(snapshot_file_path="/tmp/else"),
            "the confirmation_strategy of MCPToolset 'files' pauses into /tmp/else, not into the service's store",
        ),
    ],
)
def test_an_mcp_toolset_that_would_ask_at_the_console_or_pause_elsewhere_is_refused(
    sqlite_store: Any, strategy: Any, words: str
) -> None:
    with pytest.raises(ConfigurationError) as info:  # its calls would wait at the server's console, or be lost
        AgentRegistry(sqlite_store, agents={"files": lambda store: _mcp_agent(strategy)})
    message = str(info.value)
    assert "factory 'files'" in message and words in message
    assert "give MCPToolset confirmation_strategy=BreakpointConfirmationStrategy(snapshot_store=store)" in message


def test_a_tool_bringing_a_console_confirmation_is_refused_unless_the_agent_decides_it(sqlite_store: Any) -> None:
    @dataclass
    class Asking(Tool):
        confirmation_default: Any = field(default="ask", kw_only=True)

    def build(store: Any, strategies: Any = None) -> Agent:
        tool = Asking(name="wipe", description="Wipe.", parameters={"type": "object", "properties": {}},
                      function=lambda: "wiped")  # fmt: skip
        return Agent(chat_generator=FunctionChatGenerator(pay_replies), tools=[tool],
                     confirmation_strategies=strategies)  # fmt: skip

    with pytest.raises(
        ConfigurationError,
        match="the confirmation tool 'wipe' brings itself \\(BlockingConfirmationStrategy\\) does not pause",
    ):
        AgentRegistry(sqlite_store, agents={"wiper": build})
    strategy = BreakpointConfirmationStrategy(snapshot_store=sqlite_store)
    AgentRegistry(sqlite_store, agents={"wiper": lambda store: build(store, {"wipe": strategy})})
