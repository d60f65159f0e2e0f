"""The ``mcp_servers`` field of agent files: MCP servers whose tools the agent gets, as :class:`MCPToolset` objects.

Each entry is one server, reached by running ``command`` (stdio) or at ``url`` (streamable HTTP)::

    mcp_servers:
      - name: files                       # the server's label in messages and approvals
        command: python                   # must be allowed: allowed_commands, or the caller's (--allow-command)
        args: [files_server.py]
        cwd: servers                      # relative to the agent file's folder (the default: that folder)
        env:
          FILES_ROOT: ./data
          FILES_TOKEN: {type: env_var, env_vars: [FILES_TOKEN]}   # a Secret, read when the server starts
        tool_names: [read, delete]
      - name: calendar
        url: http://127.0.0.1:8000/mcp
        headers:
          Authorization: {type: env_var, env_vars: [CALENDAR_TOKEN]}

A Secret is written as :meth:`Secret.to_dict <handrail.core.secret.Secret.to_dict>` writes an env-var secret (as a
generator's ``api_key`` is written): the file names the variable, never the value. A plain value is refused where
it would be a credential: any header or variable whose name holds ``auth`` (not ``author``), ``key``, ``token``,
``secret``, ``session``, ``cookie``, ``password`` or ``credential`` (``Authorization``, ``X-Api-Key``,
``OPENAI_KEY``, ...), a password in the URL, and a URL query parameter so named (``?token=``, ``?api_key=``).
Loading refuses what the file alone gets wrong (both or neither of ``command`` and ``url``, a stdio setting on an
HTTP server and the reverse, a plain credential, a bad timeout); building refuses a command that is not allowed.
Every error names the file, the line and the field.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from handrail.specs._errors import Location, SpecError, building, dotted

__all__ = ["MCP_TAGS", "EnvVarSecretEntry", "MCPServerEntry", "build_mcp_toolsets", "check_unique_names",
           "commands_option", "tools_of_servers"]  # fmt: skip

MCP_TAGS = ("MCPTextValue", "MCPEnvVarSecret")
"""The union tags pydantic puts into error locations (left out of the field paths the messages name)."""

_SECRET_FORM = "{type: env_var, env_vars: [NAME]}"
_STDIO_ONLY = ("args", "cwd", "env")
_HTTP_ONLY = ("headers",)
_CREDENTIAL_WORDS = re.compile(r"auth(?!or(?!i))|key|token|secret|session|cookie|passw(or)?d|credential", re.IGNORECASE)
"""A header, variable or URL query parameter whose name holds one of these is a credential (``AUTHOR`` is not)."""

Seconds = Annotated[float, Field(gt=0, le=86_400, strict=True)]
"""A timeout in seconds, in (0, 86400] (``true`` is not 1)."""


class EnvVarSecretEntry(BaseModel):
    """A Secret read from the environment when the server is started or connected to (never written in the file)."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["env_var"] = Field(description="env_var: the value is read from an environment variable.")
    env_vars: list[Annotated[str, Field(min_length=1)]] = Field(
        min_length=1, description="The variables tried in order; the first one set to a non-empty value is used."
    )
    strict: bool = Field(
        True, strict=True, description="true: connecting fails when none is set; false: the value is left out."
    )

    @model_validator(mode="before")
    @classmethod
    def _the_form(cls, value: Any) -> Any:
        if isinstance(value, dict) and value.get("type") == "token":
            raise PydanticCustomError(
                "secret_in_file",
                "a secret's value is never written in an agent file: put it in an environment variable and "
                "write {form}",
                {"form": _SECRET_FORM},
            )
        if isinstance(value, dict) and "type" not in value:
            raise PydanticCustomError(
                "secret_form",
                "a secret is written as {form} (as Secret.to_dict writes it; strict: false to leave the value "
                "out when the variable is unset)",
                {"form": _SECRET_FORM},
            )
        return value

    def to_secret(self) -> Any:
        """The :class:`~handrail.core.secret.Secret` this entry describes (nothing is read now)."""
        from handrail.core.secret import Secret

        return Secret.from_env_var(list(self.env_vars), strict=self.strict)


def _value_tag(value: Any) -> str:
    return MCP_TAGS[1] if isinstance(value, dict | EnvVarSecretEntry) else MCP_TAGS[0]


TextOrSecret = Annotated[
    Annotated[str, Tag(MCP_TAGS[0])] | Annotated[EnvVarSecretEntry, Tag(MCP_TAGS[1])],
    Discriminator(_value_tag),
]
"""An ``env`` or ``headers`` value: a text, or a Secret read from the environment."""


class MCPServerEntry(BaseModel):
    """One MCP server: ``command`` (+ ``args``, ``cwd``, ``env``) for stdio, or ``url`` (+ ``headers``)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "oneOf": [{"required": ["command"]}, {"required": ["url"]}],
            "allOf": [
                {"if": {"required": ["url"]}, "then": {"properties": dict.fromkeys(_STDIO_ONLY, False)}},
                {"if": {"required": ["command"]}, "then": {"properties": dict.fromkeys(_HTTP_ONLY, False)}},
            ],
        },
    )

    name: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$",
        description="The server's label in messages and approvals (letters, digits, _ . -; unique in the file).",
    )
    command: str | None = Field(
        None, min_length=1, description="stdio: the program to run (a name on PATH or a path); it must be allowed."
    )
    args: list[str] = Field(default_factory=list, description="stdio: the program's arguments.")
    cwd: str | None = Field(
        None, min_length=1, description="stdio: its working directory, relative to the agent file's folder "
        "(default: that folder).",
    )  # fmt: skip
    env: dict[str, TextOrSecret] = Field(
        default_factory=dict,
        description="stdio: its environment variables besides HOME, LOGNAME, PATH, SHELL, TERM and USER (nothing "
        "else of this process's environment reaches it); a value is a text or {type: env_var, env_vars: [NAME]}.",
    )
    url: str | None = Field(None, description="streamable HTTP: the server's endpoint, http(s)://host:port/mcp.")
    headers: dict[str, TextOrSecret] = Field(
        default_factory=dict,
        description="streamable HTTP: headers sent with every request; a value is a text or {type: env_var, "
        "env_vars: [NAME]}.",
    )
    tool_names: list[Annotated[str, Field(min_length=1)]] | None = Field(
        None, min_length=1, description="Only these tools (their names on the server); a name it lacks is refused."
    )
    prefix: str | None = Field(
        None, min_length=1, description="Put '<prefix>_' before each tool's name (two servers with a tool of one name)."
    )
    connect_timeout: Seconds = Field(10.0, description="Seconds to start the server and finish the handshake.")
    call_timeout: Seconds = Field(60.0, description="Seconds a call may take; then it is cancelled.")
    tool_timeouts: dict[str, Seconds] = Field(
        default_factory=dict, description="Per tool (its name on the server): seconds a call may take."
    )
    list_timeout: Seconds = Field(10.0, description="Seconds listing the tools may take.")
    mode: Literal["auto", "legacy"] = Field(
        "auto", description="auto: the newest protocol the server speaks; legacy: always the older handshake."
    )
    max_reconnects: int = Field(
        3, ge=0, le=100, strict=True, description="How often a lost connection is opened again before calls fail."
    )
    max_result_chars: int = Field(
        100_000, ge=100, strict=True, description="The longest text result the model reads whole (longer: cut)."
    )
    use_structured_content: bool = Field(
        False, strict=True, description="true: the model reads a result's structured content (JSON) when it has one."
    )

    @model_validator(mode="after")
    def _one_kind(self) -> MCPServerEntry:
        problems = [*self._kind_problems(), *self._credential_problems()]
        if problems:
            raise ValidationError.from_exception_data(
                "MCPServerEntry",
                [
                    InitErrorDetails(type=PydanticCustomError("mcp_server", message), loc=loc, input=value)
                    for loc, message, value in problems
                ],
            )
        return self

    def _kind_problems(self) -> list[tuple[tuple[str | int, ...], str, Any]]:
        if self.command is not None and self.url is not None:
            return [(("url",), "give command (a stdio server) or url (a streamable HTTP server), not both", self.url)]
        if self.command is None and self.url is None:
            return [((), "give command (a stdio server) or url (a streamable HTTP server)", None)]
        kind, wrong = ("url", _STDIO_ONLY) if self.url is not None else ("command", _HTTP_ONLY)
        found: list[tuple[tuple[str | int, ...], str, Any]] = [
            ((name,), f"{name} is a setting of {'a stdio' if kind == 'url' else 'an HTTP'} server; this one has "
             f"{kind}", getattr(self, name))
            for name in wrong if name in self.model_fields_set
        ]  # fmt: skip
        if self.url is not None:
            found.extend(_url_problems(self.url))
        unknown = sorted(set(self.tool_timeouts) - set(self.tool_names or self.tool_timeouts))
        if unknown:
            found.append((("tool_timeouts", unknown[0]), f"{unknown[0]!r} is not in tool_names {self.tool_names}",
                          self.tool_timeouts[unknown[0]]))  # fmt: skip
        return found

    def _credential_problems(self) -> list[tuple[tuple[str | int, ...], str, Any]]:
        found: list[tuple[tuple[str | int, ...], str, Any]] = []
        for field, values in (("env", self.env), ("headers", self.headers)):
            for key, value in values.items():
                if isinstance(value, str) and _credential(field, key):
                    found.append((
                        (field, key),
                        f"{key} holds a credential, which is never written in an agent file: put it in an "
                        f"environment variable and write {{type: env_var, env_vars: [{_env_name(field, key)}]}}",
                        "***",
                    ))  # fmt: skip
        return found

    def settings(self) -> dict[str, Any]:
        """The :class:`MCPToolset` settings of this entry (all but the server and the confirmation)."""
        names = ("tool_names", "prefix", "connect_timeout", "call_timeout", "tool_timeouts", "list_timeout", "mode",
                 "max_reconnects", "max_result_chars", "use_structured_content")  # fmt: skip
        return {name: getattr(self, name) for name in names}


def _url_problems(url: str) -> list[tuple[tuple[str | int, ...], str, Any]]:
    from urllib.parse import parse_qsl, urlsplit

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError as exc:
        return [(("url",), f"not a URL: {exc}", url)]
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return [(("url",), "must be an http:// or https:// URL with a host, e.g. http://127.0.0.1:8000/mcp", url)]
    if parts.password is not None:
        return [(("url",), "holds a password, which is never written in an agent file: send it in a header read "
                           f"from the environment (headers: {{Authorization: {_SECRET_FORM}}})", "***")]  # fmt: skip
    names = [name for name, _ in parse_qsl(parts.query) if _CREDENTIAL_WORDS.search(name)]
    if names:
        return [(("url",), f"its query holds {names[0]}=, a credential, which is never written in an agent file: "
                           f"send it in a header read from the environment (headers: {{Authorization: "
                           f"{_SECRET_FORM}}})", "***")]  # fmt: skip
    return []


def _credential(field: str, key: str) -> bool:
    return bool(_CREDENTIAL_WORDS.search(key))


def _env_name(field: str, key: str) -> str:
    return (re.sub(r"[^A-Za-z0-9]+", "_", key).strip("_").upper() or "NAME") if field == "env" else "NAME"


def check_unique_names(entries: list[MCPServerEntry]) -> None:
    """Refuse two servers of one name, at the second one's ``name``.

    Raises:
        ValidationError: Located at ``mcp_servers.<index>.name`` of the second.
    """
    seen: dict[str, int] = {}
    for i, entry in enumerate(entries):
        first = seen.setdefault(entry.name, i)
        if first != i:
            message = f"a second server named {entry.name!r} (the first is mcp_servers.{first})"
            raise ValidationError.from_exception_data("AgentSpec", [InitErrorDetails(
                type=PydanticCustomError("mcp_server", message), loc=("mcp_servers", i, "name"), input=entry.name,
            )])  # fmt: skip


def commands_option(commands: Iterable[str]) -> tuple[str, ...]:
    """The caller's ``allowed_commands``, checked.

    Raises:
        SpecError: One str instead of a list, or an empty command.
    """
    if isinstance(commands, str):
        raise SpecError(f"allowed_commands must be a list of commands, not one str ({commands!r:.60}).")
    found = tuple(commands)
    bad = [c for c in found if not isinstance(c, str) or not c.strip()]
    if bad:
        raise SpecError(f"allowed_commands holds {bad[0]!r:.60}; each must be a command (e.g. 'python').")
    return found


def build_mcp_toolsets(
    entries: list[MCPServerEntry], base_dir: Path, allowed_commands: tuple[str, ...], strategy: Any
) -> list[Any]:
    """The :class:`~handrail.tools.mcp.MCPToolset` of each entry; nothing is started or connected to.

    Args:
        entries: The file's ``mcp_servers``.
        base_dir: The agent file's folder (a server's ``cwd`` is relative to it, and is it by default).
        allowed_commands: The programs a stdio server may run (the file's and the caller's), exactly as written.
        strategy: The toolsets' ``confirmation_strategy`` (for tools whose server's hints say to ask).

    Raises:
        SpecError: A command that is not allowed, a ``cwd`` that is no directory, or a setting the toolset
            refuses; ``location`` is the field.
    """
    from handrail.tools.mcp import MCPToolset, StdioServer, StreamableHttpServer

    toolsets: list[Any] = []
    for i, entry in enumerate(entries):
        at: Location = ("mcp_servers", i)
        fields = [(*at, name) for name in MCPServerEntry.model_fields if name in entry.model_fields_set]
        with building(f"the MCP server {entry.name!r}", at, fields):
            if entry.command is not None:
                server: Any = StdioServer(
                    _allowed(entry.command, allowed_commands, at), entry.args, name=entry.name,
                    env={k: _value(v) for k, v in entry.env.items()}, cwd=_cwd(base_dir, entry.cwd, at),
                )  # fmt: skip
            else:
                headers = {k: _value(v) for k, v in entry.headers.items()}
                server = StreamableHttpServer(str(entry.url), headers=headers, name=entry.name)
            toolsets.append(MCPToolset(server, **entry.settings(), confirmation_strategy=strategy))
    return toolsets


def tools_of_servers(toolsets: list[Any]) -> dict[str, set[str]]:
    """Connect to each server (a stdio one is started), list its tools, and close every connection again.

    Args:
        toolsets: The toolsets :func:`build_mcp_toolsets` built, in the file's order.

    Returns:
        ``{tool name as the model sees it: its argument names}`` of every server's tools.

    Raises:
        SpecError: A server that cannot be reached, or lacks a tool of its ``tool_names``; at ``mcp_servers.<i>``.
    """
    found: dict[str, set[str]] = {}
    try:
        for i, toolset in enumerate(toolsets):
            at: Location = ("mcp_servers", i)
            with building(f"the MCP server {toolset.label!r}", at, [(*at, "tool_names")]):
                toolset.warm_up()
            found.update({t.name: set((t.parameters or {}).get("properties", {})) for t in toolset})
    finally:
        for toolset in toolsets:
            toolset.close()
    return found


def _value(value: str | EnvVarSecretEntry) -> Any:
    return value if isinstance(value, str) else value.to_secret()


def _allowed(command: str, allowed: tuple[str, ...], at: Location) -> str:
    if command in allowed:
        return command
    where = (*at, "command")
    raise SpecError(
        f"{dotted(where)}: {command!r} runs a program, which this file may do only when the command is allowed: "
        f"name it in the file's allowed_commands or pass it as allowed_commands= (the CLI's --allow-command "
        f"{command}). Allowed now: {list(allowed) or 'none'}.",
        where,
    )


def _cwd(base_dir: Path, cwd: str | None, at: Location) -> str:
    folder = (base_dir / Path(cwd).expanduser() if cwd is not None else base_dir).resolve()
    if not folder.is_dir():
        where = (*at, "cwd")
        raise SpecError(f"{dotted(where)}: {folder} is not a directory.", where)
    return str(folder)
