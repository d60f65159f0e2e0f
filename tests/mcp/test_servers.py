"""Server specs (StdioServer, StreamableHttpServer): checks, labels, serialization without secret values; the
lazy import of the SDK, and the error that names the extra when it is missing."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from handrail.core.secret import Secret
from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError
from handrail.tools.mcp._connection import MCPConnection
from handrail.tools.mcp._servers import StdioServer, StreamableHttpServer, server_label
from tests.mcp.server_double import build_server


def test_a_stdio_server_round_trips_with_its_secret_as_a_secret() -> None:
    server = StdioServer(
        "/usr/bin/my-server", ["--fast"], env={"MODE": "x", "TOKEN": Secret.from_env_var("MY_TOKEN")}, cwd="/tmp"
    )

    data = server.to_dict()

    assert data["init_parameters"] == {
        "command": "/usr/bin/my-server",
        "args": ["--fast"],
        "env": {"MODE": "x", "TOKEN": {"type": "env_var", "env_vars": ["MY_TOKEN"], "strict": True}},
        "cwd": "/tmp",
        "name": None,
    }
    assert json.loads(json.dumps(data)) == data
    assert StdioServer.from_dict(data) == server
    assert server_label(server) == "my-server"


def test_an_http_server_round_trips_without_the_header_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HANDRAIL_TEST_MCP_AUTH", "Bearer top-secret-1618")
    server = StreamableHttpServer(
        "http://127.0.0.1:8765/mcp", headers={"Authorization": Secret.from_env_var("HANDRAIL_TEST_MCP_AUTH")}
    )

    data = server.to_dict()

    assert "top-secret-1618" not in json.dumps(data)
    assert StreamableHttpServer.from_dict(data) == server
    assert server_label(server) == "127.0.0.1:8765"
    assert server_label(StreamableHttpServer("https://bob:pw@mcp.example.com/mcp")) == "mcp.example.com:443"
    assert server_label(StreamableHttpServer("http://x/mcp", name="tools")) == "tools"


def test_a_token_secret_refuses_to_serialize_naming_the_field() -> None:
    server = StdioServer("srv", env={"KEY": Secret.from_token("sk-abc")})

    with pytest.raises(SerializationError, match=r"env\['KEY'\]"):
        server.to_dict()


def test_an_in_process_server_is_labelled_by_its_name() -> None:
    assert server_label(build_server()) == "double"


@pytest.mark.parametrize(
    ("make", "error", "text"),
    [
        (lambda: StdioServer(""), ConfigurationTypeError, "a command"),
        (lambda: StdioServer("srv", "one-string"), ConfigurationTypeError, "args must be a list"),
        (lambda: StdioServer("srv", env={"K": 3}), ConfigurationTypeError, "env['K'] must be a str or a Secret"),
        (lambda: StreamableHttpServer("ftp://host/mcp"), ConfigurationError, "http:// or https://"),
        (lambda: StreamableHttpServer("http://u:hunter2@/mcp"), ConfigurationError, "http://u@/mcp"),
        (lambda: MCPConnection(object()), ConfigurationTypeError, "StdioServer, a StreamableHttpServer"),
        (lambda: MCPConnection(StdioServer("srv"), connect_timeout=0), ConfigurationError, "connect_timeout"),
        (lambda: MCPConnection(StdioServer("srv"), mode="new"), ConfigurationError, "'auto' or 'legacy'"),  # type: ignore[arg-type]
        (lambda: MCPConnection(StdioServer("srv"), max_reconnects=-1), ConfigurationError, "max_reconnects"),
    ],
)
def test_bad_settings_are_refused_naming_what_was_wrong(make: object, error: type[Exception], text: str) -> None:
    with pytest.raises(error) as caught:
        make()  # type: ignore[operator]
    assert text in str(caught.value)
    assert "hunter2" not in str(caught.value)


def test_a_strict_secret_that_is_not_set_is_a_configuration_error_and_starts_nothing() -> None:
    conn = MCPConnection(StdioServer("srv", env={"K": Secret.from_env_var("HANDRAIL_TEST_MCP_NEVER_SET")}))

    with pytest.raises(ConfigurationError, match="HANDRAIL_TEST_MCP_NEVER_SET"):
        conn.connect()
    assert not conn.connected


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60)


def test_importing_handrail_and_the_mcp_package_does_not_import_the_sdk() -> None:
    done = _run(
        """
        import sys
        import handrail, handrail.tools
        import handrail.tools.mcp, handrail.tools.mcp._servers, handrail.tools.mcp._connection
        import handrail.tools.mcp._loop
        print(sorted(name for name in sys.modules if name == "mcp" or name.startswith("mcp.")))
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_without_the_sdk_a_connection_names_the_extra_to_install() -> None:
    done = _run(
        """
        import sys
        sys.modules["mcp"] = None  # as if it were not installed
        from handrail.errors import ConfigurationError
        from handrail.tools.mcp._connection import MCPConnection
        from handrail.tools.mcp._servers import StdioServer
        try:
            MCPConnection(StdioServer("srv"))
        except ConfigurationError as exc:
            print(exc)
        """
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'handrail[mcp]'" in done.stdout


def _pipeline_yaml_running(command: str, args: list[str]) -> str:
    from handrail import Pipeline
    from handrail.components.agents import Agent
    from handrail.testing import ScriptedChatGenerator, reply
    from handrail.tools.mcp import MCPToolset

    toolset = MCPToolset(StdioServer(command, args, name="x"), connect_timeout=5)
    pipeline = Pipeline()
    pipeline.add_component("agent", Agent(chat_generator=ScriptedChatGenerator([reply("hi")]), tools=[toolset]))
    return pipeline.dumps()


def test_a_pipeline_yaml_cannot_start_a_program_it_names(tmp_path: Path) -> None:
    from handrail import Pipeline

    marker = tmp_path / "ran.txt"
    text = _pipeline_yaml_running("/bin/sh", ["-c", f"echo ran > {marker}"])

    with pytest.raises(SerializationError) as caught:
        Pipeline.loads(text)

    message = str(caught.value)
    assert "'/bin/sh'" in message and "allow_commands(['/bin/sh'])" in message
    assert not marker.exists()


def test_a_command_allowed_by_allow_commands_loads_and_only_inside() -> None:
    from handrail import Pipeline
    from handrail.tools.mcp import MCPToolset, allow_commands

    text = _pipeline_yaml_running(sys.executable, ["server.py"])

    with allow_commands([sys.executable]):
        pipeline = Pipeline.loads(text)
    with pytest.raises(SerializationError, match="allow_commands"):
        Pipeline.loads(text)
    with allow_commands(["python"]), pytest.raises(SerializationError, match="Allowed now: \\['python'\\]"):
        Pipeline.loads(text)  # exactly as written: 'python' does not allow another path

    toolset = pipeline.get_component("agent").tools[0]
    assert isinstance(toolset, MCPToolset) and toolset.server.command == sys.executable


def test_a_server_built_in_code_or_read_without_an_allowlist_is_not_checked() -> None:
    from handrail.core.serialization import restricted_imports

    data = StdioServer("/bin/sh", ["-c", "true"]).to_dict()

    assert StdioServer.from_dict(data).command == "/bin/sh"  # the caller's own data, no allowlist active
    with restricted_imports([]), pytest.raises(SerializationError, match="'/bin/sh'"):
        StdioServer.from_dict(data)


@pytest.mark.parametrize("commands", ["python", ["python", ""]])
def test_allow_commands_refuses_a_str_or_an_empty_command(commands: object) -> None:
    from handrail.tools.mcp import allow_commands

    with pytest.raises(ConfigurationTypeError, match="allow_commands"), allow_commands(commands):  # type: ignore[arg-type]
        pass


def test_repr_and_label_show_no_password_token_or_plain_value() -> None:
    from handrail.tools.mcp._servers import shown_url

    http = StreamableHttpServer("http://user:pw-1618@host/mcp?token=tk-1618&page=2", headers={"X-Auth": "h-1618"})
    stdio = StdioServer("srv", env={"API_KEY": "e-1618", "T": Secret.from_env_var("T_VAR")})

    shown = repr(http) + repr(stdio) + server_label(http)
    assert "1618" not in shown
    assert "http://user@host/mcp?token=***&page=2" in shown and "'X-Auth': '***'" in shown
    assert "Secret.from_env_var('T_VAR'" in shown and server_label(http) == "host:80"
    assert shown_url("https://h/mcp?author=ann&key=k") == "https://h/mcp?author=ann&key=***"
