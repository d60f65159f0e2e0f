"""The ``mcp_servers`` field of agent files: parsing, every refusal (at its file, line and field), the built toolsets,
the approve modes, and a stdio server run end to end (the test double of tests/mcp, over a real process)."""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from handrail.core.secret import EnvVarSecret
from handrail.errors import ConfigurationError
from handrail.human_in_the_loop import (
    AlwaysAskPolicy,
    BlockingConfirmationStrategy,
    BreakpointConfirmationStrategy,
    NeverAskPolicy,
    RichConsoleUI,
)
from handrail.specs import (
    MCPServerEntry,
    RejectingUI,
    SpecError,
    agent_spec_json_schema,
    build_agent,
    check_agent_spec,
    load_agent_spec,
    needs_a_person,
)
from handrail.specs._confirmation import WORKFLOW_DECIDES
from handrail.testing import ScriptedChatGenerator, call, reply, user
from tests.specs.test_agent_spec import scripted_generator_yaml

ROOT = Path(__file__).resolve().parents[2]
DOUBLE = ROOT / "tests" / "mcp" / "server_double.py"
SECRET_VALUE = "s3cr3t-value-never-shown"

TWO_SERVERS = """\
tools: [calculator]
mcp_servers:
  - name: files
    command: python
    args: [files_server.py, --root, data]
    env:
      FILES_ROOT: ./data
      FILES_TOKEN: {type: env_var, env_vars: [FILES_TOKEN]}
    tool_names: [read, delete]
    prefix: f
    call_timeout: 5
    tool_timeouts: {delete: 30}
    connect_timeout: 2.5
    mode: legacy
    max_result_chars: 500
    use_structured_content: true
  - name: calendar
    url: http://127.0.0.1:8000/mcp
    headers:
      Authorization: {type: env_var, env_vars: [CALENDAR_TOKEN, CAL_TOKEN], strict: false}
      X-Client: handrail
allowed_commands: [python]
"""


def write(tmp_path: Path, text: str, name: str = "agent.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def build(path: Path, **kwargs: Any) -> Any:
    kwargs.setdefault("generator", ScriptedChatGenerator([reply("unused")]))
    return build_agent(load_agent_spec(path), base_dir=path.parent, **kwargs)


def toolsets(agent: Any) -> list[Any]:
    from handrail.tools.mcp import MCPToolset

    return [t for t in agent.tools if isinstance(t, MCPToolset)]


# -- parsing -----------------------------------------------------------------------------------------------------


def test_a_file_with_a_stdio_and_an_http_server_parses(tmp_path: Path) -> None:
    spec = load_agent_spec(write(tmp_path, TWO_SERVERS))
    files, calendar = spec.mcp_servers
    assert (files.name, files.command, files.args, files.url) == ("files", "python", ["files_server.py", "--root",
                                                                                      "data"], None)  # fmt: skip
    assert files.env["FILES_ROOT"] == "./data"
    assert files.env["FILES_TOKEN"].env_vars == ["FILES_TOKEN"] and files.env["FILES_TOKEN"].strict is True
    assert (files.tool_names, files.prefix, files.call_timeout, files.tool_timeouts) == (["read", "delete"], "f", 5.0,
                                                                                          {"delete": 30.0})  # fmt: skip
    assert (calendar.command, calendar.url) == (None, "http://127.0.0.1:8000/mcp")
    assert calendar.headers["X-Client"] == "handrail"
    assert spec.allowed_commands == ["python"]


def test_the_published_schema_agrees_on_mcp_servers(tmp_path: Path) -> None:
    schema = agent_spec_json_schema()
    jsonschema.validate(yaml.safe_load(TWO_SERVERS), schema)
    for bad in ("mcp_servers: [{name: a, command: x, url: 'http://h/mcp'}]", "mcp_servers: [{name: a}]",
                "mcp_servers: [{name: a, url: 'http://h/mcp', args: [x]}]",
                "mcp_servers: [{name: a, command: x, headers: {A: b}}]",
                "mcp_servers: [{name: a, command: x, env: {A: {type: token, token: x}}}]",
                "mcp_servers: [{name: a, command: x, call_timeout: 0}]"):  # fmt: skip
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(yaml.safe_load(bad), schema)
        with pytest.raises(SpecError):
            load_agent_spec(write(tmp_path, bad))


def test_the_docs_example_of_mcp_servers_is_a_valid_agent_file(tmp_path: Path) -> None:
    from tests.docs_examples import code_blocks

    (example,) = [code for _, code in code_blocks("agent-files.md", "yaml") if code.startswith("mcp_servers:")]
    files, calendar = load_agent_spec(write(tmp_path, example)).mcp_servers
    assert (files.cwd, files.env["FILES_TOKEN"].env_vars, calendar.prefix) == ("servers", ["FILES_TOKEN"], "cal")
    jsonschema.validate(yaml.safe_load(example), agent_spec_json_schema())


def test_the_entry_defaults_are_the_toolsets() -> None:
    from handrail.tools.mcp import MCPToolset

    parameters = inspect.signature(MCPToolset).parameters
    entry = MCPServerEntry(name="a", url="http://h/mcp")
    for name, value in entry.settings().items():
        default = parameters[name].default
        assert value == ({} if default is None and name == "tool_timeouts" else default), name


ENTRY = "mcp_servers:\n  - name: a\n"


# fmt: off
REFUSED = [  # (file text, line, field, what the message says)
    (ENTRY + "    command: python\n    url: http://h/mcp\n", 4, "mcp_servers.0.url", "not both"),
    (ENTRY + "    args: [x]\n", 2, "mcp_servers.0", "give command (a stdio server) or url"),
    (ENTRY + "    command: python\n    surprise: 1\n", 4, "mcp_servers.0.surprise", "Extra inputs"),
    (ENTRY + "    command: python\n    call_timeout: 0\n", 4, "mcp_servers.0.call_timeout", "greater than 0"),
    (ENTRY + "    command: python\n    connect_timeout: true\n", 4, "mcp_servers.0.connect_timeout",
     "valid number"),
    (ENTRY + "    command: python\n    list_timeout: 100000\n", 4, "mcp_servers.0.list_timeout",
     "less than or equal to 86400"),
    (ENTRY + "    command: python\n    tool_timeouts:\n      add: -1\n", 5, "mcp_servers.0.tool_timeouts.add",
     "greater than 0"),
    (ENTRY + "    command: python\n    max_reconnects: 1.5\n", 4, "mcp_servers.0.max_reconnects", "integer"),
    (ENTRY + "    command: python\n    mode: newest\n", 4, "mcp_servers.0.mode", "'auto' or 'legacy'"),
    (ENTRY + "    command: python\n    env:\n      FILES_TOKEN: abc123\n", 5, "mcp_servers.0.env.FILES_TOKEN",
     "write {type: env_var, env_vars: [FILES_TOKEN]}"),
    (ENTRY + "    url: http://h/mcp\n    headers:\n      Authorization: Bearer abc\n", 5,
     "mcp_servers.0.headers.Authorization", "holds a credential"),
    (ENTRY + "    url: http://h/mcp\n    headers:\n      X-Api-Key: abc\n", 5, "mcp_servers.0.headers.X-Api-Key",
     "holds a credential"),
    (ENTRY + "    command: python\n    env:\n      X: {type: token, token: abc}\n", 5, "mcp_servers.0.env.X",
     "a secret's value is never written in an agent file"),
    (ENTRY + "    command: python\n    env:\n      X: {env: FOO}\n", 5, "mcp_servers.0.env.X",
     "a secret is written as {type: env_var, env_vars: [NAME]}"),
    (ENTRY + "    command: python\n    env:\n      X: {type: env_var, env_vars: []}\n", 5,
     "mcp_servers.0.env.X.env_vars", "at least 1"),
    (ENTRY + "    command: python\n    env:\n      PORT: 8080\n", 5, "mcp_servers.0.env.PORT", "valid string"),
    (ENTRY + "    url: http://h/mcp\n    args: [x]\n", 4, "mcp_servers.0.args", "setting of a stdio server"),
    (ENTRY + "    url: http://h/mcp\n    cwd: here\n", 4, "mcp_servers.0.cwd", "setting of a stdio server"),
    (ENTRY + "    command: python\n    headers: {A: b}\n", 4, "mcp_servers.0.headers", "setting of an HTTP"),
    (ENTRY + "    url: ftp://h/mcp\n", 3, "mcp_servers.0.url", "http:// or https://"),
    (ENTRY + "    url: http://user:pw@h/mcp\n", 3, "mcp_servers.0.url", "holds a password"),
    (ENTRY + "    url: http://h/mcp\n    tool_names: [add]\n    tool_timeouts: {sub: 3}\n", 5,
     "mcp_servers.0.tool_timeouts.sub", "not in tool_names"),
    (ENTRY + "    url: http://h/mcp\n    tool_names: []\n", 4, "mcp_servers.0.tool_names", "at least 1"),
    ("mcp_servers:\n  - url: http://h/mcp\n", 2, "mcp_servers.0.name", "Field required"),
    ("mcp_servers:\n  - name: a b\n    url: http://h/mcp\n", 2, "mcp_servers.0.name", "pattern"),
    (ENTRY + "    url: http://h/mcp\n  - name: a\n    url: http://h/mcp\n", 4, "mcp_servers.1.name",
     "a second server named 'a' (the first is mcp_servers.0)"),
    ("allowed_commands: [python, '']\n", 1, "allowed_commands.1", "at least 1"),
]
# fmt: on


@pytest.mark.parametrize(("text", "line", "field", "fragment"), REFUSED)
def test_refusals_name_file_line_and_field(tmp_path: Path, text: str, line: int, field: str, fragment: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(SpecError) as info:
        load_agent_spec(path)
    message = str(info.value)
    assert f"{path}:{line}: {field}: " in message, message
    assert fragment in message, message
    assert "abc123" not in message and "Bearer abc" not in message and ":pw@" not in message  # no secret echoed


@pytest.mark.parametrize(
    ("field", "name"),
    [("headers", "X-Auth"), ("headers", "Proxy-Authorization"), ("headers", "X-Session-Id"), ("headers", "Cookie"),
     ("headers", "X-Api-Key"), ("env", "OPENAI_KEY"), ("env", "KEYRING_PASS"), ("env", "DB_PASSWORD"),
     ("env", "AUTH"), ("env", "GH_CREDENTIALS")],
)  # fmt: skip
def test_a_plain_credential_under_any_common_name_is_refused(tmp_path: Path, field: str, name: str) -> None:
    kind = "    url: http://h/mcp\n" if field == "headers" else "    command: python\n"
    path = write(tmp_path, f"{ENTRY}{kind}    {field}:\n      {name}: abc123\n")
    with pytest.raises(SpecError, match=rf"{path}:5: mcp_servers\.0\.{field}\.{name}: .*holds a credential") as info:
        load_agent_spec(path)
    assert "abc123" not in str(info.value) and "env_vars:" in str(info.value)


@pytest.mark.parametrize("query", ["token=abc123", "api_key=abc123", "x=1&key=abc123", "access_token=abc123"])
def test_a_credential_in_the_url_query_is_refused(tmp_path: Path, query: str) -> None:
    path = write(tmp_path, f"{ENTRY}    url: http://h/mcp?{query}\n")
    with pytest.raises(SpecError, match=rf"{path}:3: mcp_servers\.0\.url: its query holds .*=, a credential") as info:
        load_agent_spec(path)
    assert "abc123" not in str(info.value)


def test_names_that_only_look_like_credentials_are_plain_values(tmp_path: Path) -> None:
    path = write(tmp_path, f"{ENTRY}    command: python\n    env:\n      GIT_AUTHOR_NAME: ann\n      MODE: fast\n")
    assert load_agent_spec(path).mcp_servers[0].env == {"GIT_AUTHOR_NAME": "ann", "MODE": "fast"}
    assert load_agent_spec(write(tmp_path, f"{ENTRY}    url: http://h/mcp?page=2\n")).mcp_servers[0].url


# -- the command allowlist ---------------------------------------------------------------------------------------

STDIO = "mcp_servers:\n  - name: files\n    command: python\n    args: [server.py]\n"


def test_a_command_not_allowed_is_refused_at_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "tools: [calculator]\n" + STDIO)
    for attempt in (lambda: build(path),
                    lambda: check_agent_spec(load_agent_spec(path), base_dir=tmp_path, approve="all")):  # fmt: skip
        with pytest.raises(SpecError) as info:
            attempt()
        message = str(info.value)
        assert message.startswith(f"{path}:4: mcp_servers.0.command: 'python' runs a program"), message
        assert "allowed_commands" in message and "--allow-command python" in message
        assert info.value.location == ("mcp_servers", 0, "command")


def test_a_command_is_allowed_by_the_file_or_by_the_caller_exactly_as_written(tmp_path: Path) -> None:
    assert toolsets(build(write(tmp_path, STDIO + "allowed_commands: [python]\n")))[0].server.command == "python"
    assert toolsets(build(write(tmp_path, STDIO), allowed_commands=["python"]))[0].server.command == "python"
    check_agent_spec(load_agent_spec(write(tmp_path, STDIO)), allowed_commands=("python",), approve="all")
    by_path = write(tmp_path, STDIO.replace("command: python", "command: /tmp/elsewhere/python"))
    with pytest.raises(SpecError, match="'/tmp/elsewhere/python' runs a program"):
        build(by_path, allowed_commands=["python"])  # a basename allows only itself, not any program of that name
    with pytest.raises(ConfigurationError, match="not one str"):
        build(write(tmp_path, STDIO), allowed_commands="python")


def test_an_http_server_needs_no_allowed_command(tmp_path: Path) -> None:
    agent = build(write(tmp_path, "mcp_servers:\n  - name: cal\n    url: http://127.0.0.1:9/mcp\n"))
    (calendar,) = toolsets(agent)
    assert calendar.server.url == "http://127.0.0.1:9/mcp" and calendar.label == "cal"


def test_the_working_directory_is_the_file_folder_or_relative_to_it(tmp_path: Path) -> None:
    (tmp_path / "servers").mkdir()
    allowed = "allowed_commands: [python]\n"
    assert toolsets(build(write(tmp_path, STDIO + allowed)))[0].server.cwd == str(tmp_path.resolve())
    nested = write(tmp_path, STDIO + "    cwd: servers\n" + allowed)
    assert toolsets(build(nested))[0].server.cwd == str((tmp_path / "servers").resolve())
    missing = write(tmp_path, STDIO + "    cwd: nowhere\n" + allowed)
    with pytest.raises(SpecError, match=rf"^{missing}:5: mcp_servers\.0\.cwd: .*nowhere is not a directory"):
        build(missing)


def test_without_base_dir_paths_are_relative_to_the_file_not_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "servers").mkdir()
    path = write(tmp_path, STDIO + "    cwd: servers\nallowed_commands: [python]\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    spec = load_agent_spec(Path("..") / path.name)  # a path relative to the working directory, too
    agent = build_agent(spec, generator=ScriptedChatGenerator([reply("unused")]), approve="all")
    assert toolsets(agent)[0].server.cwd == str((tmp_path / "servers").resolve())
    assert check_agent_spec(load_agent_spec(path), approve="all") is None  # no "servers is not a directory"


def test_a_setting_the_toolset_refuses_is_reported_at_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "mcp_servers:\n  - name: a\n    url: http://h/mcp\n    prefix: '  '\n")
    with pytest.raises(SpecError, match=rf"^{path}:4: mcp_servers\.0\.prefix: .*prefix must be a non-empty str"):
        build(path)


# -- the built toolsets ------------------------------------------------------------------------------------------


def test_the_agent_holds_one_toolset_per_server_with_its_settings(tmp_path: Path) -> None:
    from handrail.tools.mcp import MCPToolset, StdioServer, StreamableHttpServer

    agent = build(write(tmp_path, TWO_SERVERS))
    assert agent.tools[0].name == "calculator"
    files, calendar = toolsets(agent)
    assert all(type(t) is MCPToolset for t in (files, calendar))
    assert isinstance(files.server, StdioServer) and isinstance(calendar.server, StreamableHttpServer)
    assert (files.label, files.server.command) == ("files", "python")
    assert files.server.args == ("files_server.py", "--root", "data")
    assert files.server.env["FILES_ROOT"] == "./data"
    assert files.tool_names == ("read", "delete") and files.prefix == "f"
    assert (files.call_timeout, files.tool_timeouts, files.connect_timeout) == (5.0, {"delete": 30.0}, 2.5)
    assert (files.mode, files.max_result_chars, files.use_structured_content) == ("legacy", 500, True)
    assert (files.list_timeout, files.max_reconnects, files.eager_connect) == (10.0, 3, False)  # the defaults
    assert calendar.label == "calendar" and calendar.tool_names is None and calendar.call_timeout == 60.0
    assert list(files) == [] and list(calendar) == []  # nothing started or connected to while building


def test_secrets_are_secret_objects_never_their_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FILES_TOKEN", SECRET_VALUE)
    monkeypatch.setenv("CAL_TOKEN", SECRET_VALUE)
    agent = build(write(tmp_path, TWO_SERVERS))
    files, calendar = toolsets(agent)
    token, auth = files.server.env["FILES_TOKEN"], calendar.server.headers["Authorization"]
    assert isinstance(token, EnvVarSecret) and token.env_vars == ("FILES_TOKEN",) and token.strict is True
    assert isinstance(auth, EnvVarSecret) and auth.env_vars == ("CALENDAR_TOKEN", "CAL_TOKEN") and not auth.strict
    assert auth.resolve_value() == SECRET_VALUE  # read from the environment when asked, not before
    written = json.dumps([files.to_dict(), calendar.to_dict()])
    assert '{"type": "env_var", "env_vars": ["FILES_TOKEN"], "strict": true}' in written
    shown = [written, repr(files), repr(calendar), repr(files.server), repr(calendar.server),
             repr(load_agent_spec(tmp_path / "agent.yaml"))]  # fmt: skip
    assert all(SECRET_VALUE not in text for text in shown)


# -- the approve modes -------------------------------------------------------------------------------------------


class Answers:
    """A confirmation UI that records what it is asked and answers from a list."""

    label = "answers"

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []

    def get_user_confirmation(self, tool_name: str, tool_description: str, tool_params: dict[str, Any],
                              injected_params: dict[str, Any] | None = None) -> Any:  # fmt: skip
        from handrail.dataclasses.decisions import ConfirmationUIResult

        self.asked.append(tool_name)
        return ConfirmationUIResult(self.answers.pop(0))


def _strategy(path: Path, **kwargs: Any) -> Any:
    strategies = {id(t.confirmation_strategy): t.confirmation_strategy for t in toolsets(build(path, **kwargs))}
    (strategy,) = strategies.values()  # one strategy, shared by the file's servers
    return strategy


def test_ask_uses_the_console_strategy_of_always_with_the_same_ui(tmp_path: Path) -> None:
    path = write(tmp_path, TWO_SERVERS)
    ui = Answers()
    strategy = _strategy(path, approve="ask", confirmation_ui=ui)
    assert isinstance(strategy, BlockingConfirmationStrategy) and strategy.confirmation_ui is ui
    assert isinstance(strategy.confirmation_policy, AlwaysAskPolicy)
    assert isinstance(_strategy(path).confirmation_ui, RichConsoleUI)  # the default UI, as for the file's tools


def test_all_never_asks_and_none_rejects(tmp_path: Path) -> None:
    path = write(tmp_path, TWO_SERVERS)
    every = _strategy(path, approve="all")
    assert isinstance(every.confirmation_policy, NeverAskPolicy)
    assert every.run(tool_name="f_delete", tool_description="", tool_params={}).execute is True
    refused = _strategy(path, approve="none")
    assert isinstance(refused.confirmation_ui, RejectingUI) and isinstance(refused.confirmation_policy,
                                                                           AlwaysAskPolicy)  # fmt: skip
    decision = refused.run(tool_name="f_delete", tool_description="", tool_params={})
    assert decision.execute is False
    assert "this session runs no call that needs approval" in refused.render_reject("f_delete", decision.feedback)


def test_pause_and_workflow_pause_where_the_files_other_tools_pause(tmp_path: Path) -> None:
    path = write(tmp_path, TWO_SERVERS + "confirmation: {calculator: always}\n")
    agent = build(path, approve="pause", snapshot_dir=tmp_path / "snaps", snapshot_metadata={"agent_file": "x"})
    calculator = agent.confirmation_strategies["calculator"]
    strategy = toolsets(agent)[0].confirmation_strategy
    assert isinstance(strategy, BreakpointConfirmationStrategy)
    assert (strategy.snapshot_file_path, strategy.snapshot_store, strategy.metadata) == (
        calculator.snapshot_file_path, calculator.snapshot_store, calculator.metadata)  # fmt: skip
    assert strategy.snapshot_file_path == str(tmp_path / "snaps") and strategy.metadata == {"agent_file": "x"}
    from handrail.stores import SQLiteSnapshotStore

    store = SQLiteSnapshotStore(tmp_path / "s.db")
    assert _strategy(path, approve="pause", snapshot_store=store).snapshot_store is store
    workflow = _strategy(path, approve="workflow")
    assert isinstance(workflow, BreakpointConfirmationStrategy) and workflow.snapshot_store is WORKFLOW_DECIDES


def test_a_confirmation_entry_naming_an_mcp_tool_is_explicit_and_left_to_the_run(tmp_path: Path) -> None:
    text = TWO_SERVERS + "confirmation:\n  calendar_read: never\n  f_delete:\n    ask_when: path != 'tmp'\n"
    agent = build(write(tmp_path, text), approve="ask", confirmation_ui=Answers())
    assert set(agent.confirmation_strategies) == {"calendar_read", "f_delete"}  # known once connected: not refused
    assert isinstance(agent.confirmation_strategies["calendar_read"].confirmation_policy, NeverAskPolicy)
    assert check_agent_spec(load_agent_spec(tmp_path / "agent.yaml"), approve="all") is None
    static = write(tmp_path, TWO_SERVERS + "confirmation:\n  calculator:\n    ask_when: amount > 1\n")
    with pytest.raises(SpecError, match=r"confirmation\.calculator\.ask_when: .*'amount'"):
        build(static)  # the file's own tools are still checked against their arguments
    without = write(tmp_path, "tools: [calculator]\nconfirmation: {calendar_read: never}\n")
    with pytest.raises(SpecError, match=r"\['calendar_read'\] are not tools of this agent"):
        build(without)  # without mcp_servers a name no tool has is still a mistake


def test_a_file_with_servers_needs_a_person_unless_everything_is_never(tmp_path: Path) -> None:
    assert needs_a_person(load_agent_spec(write(tmp_path, TWO_SERVERS)))
    assert not needs_a_person(load_agent_spec(write(tmp_path, TWO_SERVERS + "confirmation: {'*': never}\n")))
    assert not needs_a_person(load_agent_spec(write(tmp_path, "tools: [calculator]\n")))


def test_the_service_accepts_a_file_whose_servers_pause_into_its_store(tmp_path: Path) -> None:
    from handrail.server import AgentRegistry
    from handrail.server._registry import check_pauses_into
    from handrail.stores import SQLiteSnapshotStore
    from handrail.tools.mcp import MCPToolset, StreamableHttpServer

    store = SQLiteSnapshotStore(tmp_path / "service.db")
    folder = tmp_path / "agents"
    folder.mkdir()
    write(folder, "mcp_servers:\n  - name: cal\n    url: http://127.0.0.1:9/mcp\n", "cal.yaml")
    registry = AgentRegistry(store, agents_dir=folder)  # checked: its only asking tools pause into the store
    agent, _ = registry.agent_named("cal")
    assert toolsets(agent)[0].confirmation_strategy.snapshot_store is store
    console = MCPToolset(StreamableHttpServer("http://127.0.0.1:9/mcp", name="cal"))  # asks at a console
    with pytest.raises(ConfigurationError, match=r"MCPToolset 'cal'.*is None, so .* would wait at a console prompt"):
        check_pauses_into(type(agent)(chat_generator=ScriptedChatGenerator([]), tools=[console]), store, "agent")
    write(folder, STDIO, "files.yaml")
    with pytest.raises(SpecError, match=r"files\.yaml:3: mcp_servers\.0\.command"):
        AgentRegistry(store, agents_dir=folder)
    AgentRegistry(store, agents_dir=folder, allowed_commands=["python"])


def test_the_cli_refuses_a_command_not_allowed_and_names_the_option(tmp_path: Path) -> None:
    path = write(tmp_path, scripted_generator_yaml([reply("x")]) + "\n" + STDIO)
    result = CliRunner().invoke(main_command(), ["run", "--approve", "all", str(path), "q"])
    assert result.exit_code == 2, result.output
    assert f"{path}:" in result.output and "mcp_servers.0.command" in result.output
    assert "--allow-command python" in result.output and "Traceback" not in result.output


def main_command() -> Any:
    from handrail.cli import main

    return main


# -- end to end: the test double over stdio ----------------------------------------------------------------------

DOUBLE_FILE = f"""\
mcp_servers:
  - name: double
    command: {json.dumps(sys.executable)}
    args: [{json.dumps(str(DOUBLE))}, stdio]
    tool_names: [add, env, calendar.read]
    env:
      DOUBLE_TOKEN: {{type: env_var, env_vars: [HANDRAIL_TEST_DOUBLE_TOKEN], strict: false}}
"""


def results(run: dict[str, Any]) -> dict[str, Any]:
    """``{call id: ToolCallResult}`` of a run's messages."""
    found = [m.tool_call_result for m in run["messages"] if m.tool_call_result is not None]
    return {r.origin.id: r for r in found}


def _run(path: Path, model: ScriptedChatGenerator, **kwargs: Any) -> dict[str, Any]:
    agent = build_agent(load_agent_spec(path), base_dir=path.parent, generator=model,
                        allowed_commands=[sys.executable], **kwargs)  # fmt: skip
    try:
        return agent.run([user("go")])
    finally:
        agent.close()


def test_an_agent_file_with_a_stdio_server_runs_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HANDRAIL_TEST_DOUBLE_TOKEN", SECRET_VALUE)
    model = ScriptedChatGenerator([
        reply(call("add", {"a": 2, "b": 40}, id="c1"), call("env", {"name": "DOUBLE_TOKEN"}, id="c2")),
        reply("2 + 40 = 42"),
    ])  # fmt: skip
    result = _run(write(tmp_path, DOUBLE_FILE), model, approve="all")
    added, token = results(result)["c1"], results(result)["c2"]
    assert (added.result, added.error) == ("42", False)
    assert token.result == "***"  # the server got the Secret's value (not '<unset>'); handrail redacts it
    assert SECRET_VALUE not in json.dumps([m.to_dict() for m in result["messages"]])
    assert result["last_message"].text == "2 + 40 = 42"
    assert sorted(t.name for t in model.calls[0]["tools"]) == ["add", "calendar_read", "env"]
    model.assert_complete()


def test_approve_modes_decide_the_servers_tools_end_to_end(tmp_path: Path) -> None:
    path = write(tmp_path, DOUBLE_FILE)

    def model() -> ScriptedChatGenerator:
        both = reply(call("add", {"a": 1, "b": 2}, id="c1"), call("calendar_read", {"day": "monday"}, id="c2"))
        return ScriptedChatGenerator([both, reply("done")])

    ui = Answers("reject")
    asked = _run(path, model(), approve="ask", confirmation_ui=ui)
    assert ui.asked == ["add"]  # calendar.read is read-only by its hints: it runs without asking
    assert results(asked)["c1"].error and "rejected" in results(asked)["c1"].result
    assert results(asked)["c2"].result == "nothing on monday"
    refused = results(_run(path, model(), approve="none"))
    assert refused["c1"].error and "this session runs no call that needs approval" in refused["c1"].result
    assert refused["c2"].result == "nothing on monday"
    explicit = write(tmp_path, DOUBLE_FILE + "confirmation: {add: never, '*': always}\n")
    ui = Answers("confirm")
    both = results(_run(explicit, model(), approve="ask", confirmation_ui=ui))
    assert ui.asked == ["calendar_read"] and both["c1"].result == "3"  # the file's entries win, both ways


def test_the_cli_runs_a_stdio_server_it_is_allowed_to(tmp_path: Path) -> None:
    replies = [reply(call("add", {"a": 20, "b": 22}, id="c1")), reply("It is 42.")]
    path = write(tmp_path, scripted_generator_yaml(replies) + "\n" + DOUBLE_FILE)
    runner = CliRunner()
    refused = runner.invoke(main_command(), ["run", "--approve", "all", str(path), "q"])
    assert refused.exit_code == 2 and "--allow-command" in refused.output, refused.output
    result = runner.invoke(main_command(), ["run", "--approve", "all", "--json", "--allow-command", sys.executable,
                                            str(path), "q"])  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["answer"] == "It is 42." and {k: v for k, v in data["tool_call_counts"].items() if v} == {"add": 1}
    assert data["messages"][2]["content"][0]["tool_call_result"]["result"] == "42"


def test_check_with_connect_mcp_checks_the_confirmation_against_the_servers_tools(tmp_path: Path) -> None:
    def check(extra: str, text: str = DOUBLE_FILE) -> Any:
        spec = load_agent_spec(write(tmp_path, text + extra))
        return check_agent_spec(spec, allowed_commands=[sys.executable], approve="none", connect_mcp=True)

    built = check("confirmation:\n  add:\n    ask_when: a > 1\n  calendar_read: always\n")
    assert set(built) == {"add", "calendar_read"}
    path = tmp_path / "agent.yaml"
    with pytest.raises(SpecError, match=rf"^{path}:9: confirmation: \['ad'\] are not tools of this agent .*'add'"):
        check("confirmation:\n  ad: always\n")  # a typo that build_agent leaves to the run
    with pytest.raises(SpecError, match=rf"^{path}:10: confirmation\.add\.ask_when: .*'c'"):
        check("confirmation:\n  add:\n    ask_when: c > 1\n")
    with pytest.raises(SpecError, match=rf"^{path}:5: mcp_servers\.0\.tool_names: .*has no tool \['nope'\]"):
        check("", DOUBLE_FILE.replace("[add, env, calendar.read]", "[add, nope]"))


def test_a_run_paused_on_a_hint_gated_tool_records_its_file_and_resumes(tmp_path: Path) -> None:
    """No confirmation entry: add asks by its server's hints; the snapshot still names the file for resume."""
    from handrail.dataclasses.snapshot import load_snapshot

    servers = DOUBLE_FILE.replace("[add, env, calendar.read]", "[add]")
    path = tmp_path / "agent.yaml"
    path.write_text(scripted_generator_yaml([reply(call("add", {"a": 20, "b": 22}, id="c1"))]) + "\n" + servers,
                    encoding="utf-8")  # fmt: skip
    folder, runner = tmp_path / "approvals", CliRunner()
    allow = ["--allow-command", sys.executable]
    paused = runner.invoke(main_command(), ["run", "--json", "--pause-for-approval", str(folder), *allow, str(path),
                                            "q"])  # fmt: skip
    assert paused.exit_code == 4, paused.output
    snapshot_id = json.loads(paused.stdout.strip().splitlines()[-1])["snapshot_id"]
    assert load_snapshot(folder / f"{snapshot_id}.json").metadata["agent_file"] == str(path.resolve())

    approved = runner.invoke(main_command(), ["approvals", "approve", snapshot_id, "--dir", str(folder)])
    assert approved.exit_code == 0, approved.output
    path.write_text(scripted_generator_yaml([reply("It is 42.")]) + "\n" + servers, encoding="utf-8")
    resumed = runner.invoke(main_command(), ["resume", snapshot_id, "--dir", str(folder), *allow])
    assert resumed.exit_code == 0, resumed.output
    assert "It is 42." in resumed.output and "--agent" not in resumed.output
