"""Where an MCP server is: a command to run (stdio) or a URL (streamable HTTP). No ``mcp`` import here.

Both are frozen dataclasses that serialize to ``{"type", "init_parameters"}``. A :class:`~handrail.core.secret.Secret`
in ``env`` or ``headers`` stays a Secret (its dict, never its value) and is resolved only when a connection is made.
A third kind of server, an in-process ``mcp.server.mcpserver.MCPServer`` object (for tests), is used as it is and
cannot be serialized.

A :class:`StdioServer` rebuilt from data while a serialization allowlist is active (a pipeline YAML read by
``Pipeline.loads``, an agent read by ``Agent.from_dict`` inside ``restricted_imports``, any file's data) runs its
command only when that command is allowed by :func:`allow_commands`: the data alone cannot start a program. One
built in Python code (``StdioServer("python", ...)``) is the caller's own and is not checked.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any
from urllib.parse import urlsplit

from handrail.core._urls import register_url_passwords, url_without_password
from handrail.core.secret import Secret, deserialize_secret
from handrail.core.serialization import active_allowlist, default_to_dict, init_parameters
from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError

__all__ = ["StdioServer", "StreamableHttpServer", "allow_commands", "resolve_values", "server_label", "shown_url"]

_ALLOWED_COMMANDS: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "handrail_mcp_allowed_commands", default=frozenset()
)


@contextlib.contextmanager
def allow_commands(commands: Iterable[str]) -> Iterator[None]:
    """Let :class:`StdioServer` objects read from data in this context run ``commands`` (besides those allowed).

    Data read under a serialization allowlist (``Pipeline.loads``, ``load_haystack``, an ``Agent.from_dict``
    inside ``restricted_imports``) may describe a stdio server; its command is refused when it is read unless it
    is allowed here, exactly as written (``"python"`` allows ``python``, not ``/usr/bin/python``). Agent files
    allow the commands their ``allowed_commands`` (and the caller's) name.

    Args:
        commands: The commands, each exactly as a server's ``command`` writes it.

    Raises:
        ConfigurationTypeError: One str instead of a list of them, or an empty command.

    Examples:
        >>> from handrail.core.serialization import restricted_imports
        >>> data = StdioServer("python", ["server.py"]).to_dict()
        >>> with restricted_imports([]), allow_commands(["python"]):  # as a file's data is read
        ...     StdioServer.from_dict(data).command
        'python'
    """
    if isinstance(commands, str):
        raise ConfigurationTypeError(f"allow_commands takes a list of commands, not one str ({commands!r:.60}).")
    found = tuple(commands)
    bad = [c for c in found if not isinstance(c, str) or not c.strip()]
    if bad:
        raise ConfigurationTypeError(f"allow_commands got {bad[0]!r:.60}; each must be a command (e.g. 'python').")
    token = _ALLOWED_COMMANDS.set(_ALLOWED_COMMANDS.get() | frozenset(found))
    try:
        yield
    finally:
        _ALLOWED_COMMANDS.reset(token)


def _check_command_from_data(command: object) -> None:
    """Refuse, in data read under an allowlist, a command no :func:`allow_commands` allows (before anything runs)."""
    if active_allowlist() is None or not isinstance(command, str):
        return
    allowed = _ALLOWED_COMMANDS.get()
    if command in allowed:
        return
    raise SerializationError(
        f"StdioServer command {command!r:.200} runs a program, and it was read from data: it runs only when allowed. "
        f"Load inside `with handrail.tools.mcp.allow_commands([{command!r:.200}]):` to allow it (agent files: "
        f"allowed_commands). Allowed now: {sorted(allowed) or 'none'}.",
        path=("command",),
    )


@dataclass(frozen=True)
class StdioServer:
    """An MCP server run as a child process, spoken to over its stdin and stdout.

    The child's environment holds only what ``env`` gives, plus the few variables the MCP SDK always passes on
    (``HOME``, ``LOGNAME``, ``PATH``, ``SHELL``, ``TERM``, ``USER``): nothing else of this process's environment
    (no API key) reaches it unless it is named here. Its stderr goes to the logger ``handrail.tools.mcp.stderr``.

    Examples:
        >>> from handrail.core.secret import Secret
        >>> server = StdioServer("uvx", ["mcp-server-time"], env={"TOKEN": Secret.from_env_var("TIME_TOKEN")})
        >>> server.to_dict()["init_parameters"]["env"]
        {'TOKEN': {'type': 'env_var', 'env_vars': ['TIME_TOKEN'], 'strict': True}}
        >>> server_label(server)
        'uvx'
    """

    command: str
    """The executable (a name looked up on ``PATH``, or a path)."""
    args: Sequence[str] = ()
    """Its command-line arguments (kept as a tuple)."""
    _: KW_ONLY
    env: Mapping[str, str | Secret] = field(default_factory=dict, hash=False)
    """Environment variables of the child: a text, or a Secret resolved when the process starts (a non-strict
    env-var Secret that resolves to nothing leaves the variable out)."""
    cwd: str | None = None
    """The child's working directory; None for this process's."""
    name: str | None = None
    """A short name for messages and logs; None for the command's basename."""

    def __post_init__(self) -> None:
        if not isinstance(self.command, str) or not self.command.strip():
            raise ConfigurationTypeError(f"StdioServer needs a command (a non-empty str), got {self.command!r}.")
        if isinstance(self.args, str) or not all(isinstance(arg, str) for arg in self.args):
            raise ConfigurationTypeError(f"StdioServer args must be a list of str, got {self.args!r}.")
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "env", _checked_values(self.env, "StdioServer", "env"))
        if self.cwd is not None:
            if not isinstance(self.cwd, str | os.PathLike):
                raise ConfigurationTypeError(f"StdioServer cwd must be a path or None, got {self.cwd!r}.")
            object.__setattr__(self, "cwd", os.fspath(self.cwd))
        _check_name(self.name, "StdioServer")

    def __repr__(self) -> str:
        return (f"StdioServer(command={self.command!r}, args={self.args!r}, env={_shown_values(self.env)!r}, "
                f"cwd={self.cwd!r}, name={self.name!r})")  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"type", "init_parameters"}``; a Secret in ``env`` is written as its dict, never its value.

        Raises:
            SerializationError: When ``env`` holds a token Secret (a value held in memory cannot be written).
        """
        return default_to_dict(
            self,
            command=self.command,
            args=list(self.args),
            env=_values_to_dict(self.env, "env"),
            cwd=self.cwd,
            name=self.name,
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StdioServer:
        """Rebuild a server written by :meth:`to_dict` (``data`` is not modified).

        Under a serialization allowlist (the data came from a file), ``command`` must be allowed by
        :func:`allow_commands`; nothing is run here either way.

        Raises:
            SerializationError: For a malformed dict or Secret, or a command read under an allowlist that no
                :func:`allow_commands` allows (the message names it and how to allow it).
        """
        params = init_parameters(copy.deepcopy(dict(data)), cls)
        _check_command_from_data(params.get("command"))
        params["env"] = _values_from_dict(params.get("env"), "env")
        return cls(**params)


@dataclass(frozen=True)
class StreamableHttpServer:
    """An MCP server reached over streamable HTTP at ``url`` (``http://host:port/mcp``).

    Examples:
        >>> from handrail.core.secret import Secret
        >>> server = StreamableHttpServer(
        ...     "https://mcp.example.com/mcp", headers={"Authorization": Secret.from_env_var("MCP_AUTH")}
        ... )
        >>> server_label(server)
        'mcp.example.com:443'
    """

    url: str
    """The server's MCP endpoint, ``http://`` or ``https://`` (a password in it is never shown in messages)."""
    _: KW_ONLY
    headers: Mapping[str, str | Secret] = field(default_factory=dict, hash=False)
    """HTTP headers sent with every request: a text, or a Secret resolved when the connection is made (a
    non-strict env-var Secret that resolves to nothing leaves the header out)."""
    name: str | None = None
    """A short name for messages and logs; None for the URL's host:port."""

    def __post_init__(self) -> None:
        if not isinstance(self.url, str):
            raise ConfigurationTypeError(f"StreamableHttpServer needs a url (a str), got {self.url!r}.")
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigurationError(
                f"StreamableHttpServer needs an http:// or https:// URL with a host, got "
                f"{url_without_password(self.url)!r}."
            )
        register_url_passwords(self.url)
        object.__setattr__(self, "headers", _checked_values(self.headers, "StreamableHttpServer", "headers"))
        _check_name(self.name, "StreamableHttpServer")

    def __repr__(self) -> str:
        return (f"StreamableHttpServer(url={shown_url(self.url)!r}, headers={_shown_values(self.headers)!r}, "
                f"name={self.name!r})")  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"type", "init_parameters"}``; a Secret header is written as its dict, never its value.

        Raises:
            SerializationError: When ``headers`` holds a token Secret.
        """
        return default_to_dict(self, url=self.url, headers=_values_to_dict(self.headers, "headers"), name=self.name)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StreamableHttpServer:
        """Rebuild a server written by :meth:`to_dict` (``data`` is not modified).

        Raises:
            SerializationError: For a malformed dict or Secret.
        """
        params = init_parameters(copy.deepcopy(dict(data)), cls)
        params["headers"] = _values_from_dict(params.get("headers"), "headers")
        return cls(**params)


def server_label(server: object) -> str:
    """A short name of ``server`` for messages and logs.

    Args:
        server: A :class:`StdioServer`, a :class:`StreamableHttpServer`, or an in-process server object.

    Returns:
        The server's ``name`` when it has one; else the command's basename (stdio), the URL's ``host:port``
        (HTTP), or the in-process object's ``name`` (its class name when it has none).
    """
    if isinstance(server, StdioServer):
        return server.name or os.path.basename(server.command.rstrip("/\\")) or server.command
    if isinstance(server, StreamableHttpServer):
        if server.name:
            return server.name
        parts = urlsplit(server.url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return f"{parts.hostname}:{port}"
    name = getattr(server, "name", None)
    return name if isinstance(name, str) and name else type(server).__name__


_QUERY_CREDENTIAL = re.compile(
    r"([?&][^=&#]*(?:auth(?!or(?!i))|key|token|secret|session|cookie|passw(?:or)?d|credential)[^=&#]*=)[^&#]*",
    re.IGNORECASE,
)


def shown_url(url: str) -> str:
    """``url`` as messages and ``repr`` show it: no userinfo password, ``***`` for a credential query value.

    Examples:
        >>> shown_url("http://bob:hunter2@host/mcp?token=abc&page=2")
        'http://bob@host/mcp?token=***&page=2'
    """
    return _QUERY_CREDENTIAL.sub(r"\1***", url_without_password(url))


def _shown_values(values: Mapping[str, str | Secret]) -> dict[str, str | Secret]:
    """``values`` for a ``repr``: a Secret as it is (its repr shows no value), a plain value as ``***``."""
    return {key: value if isinstance(value, Secret) else "***" for key, value in values.items()}


def resolve_values(values: Mapping[str, str | Secret]) -> dict[str, str]:
    """``values`` with each Secret resolved now; a Secret that resolves to nothing is left out.

    Raises:
        ConfigurationError: For a strict env-var Secret whose variables are all unset (the message names them).
    """
    resolved: dict[str, str] = {}
    for key, value in values.items():
        text = value.resolve_value() if isinstance(value, Secret) else value
        if text is not None:
            resolved[key] = text
    return resolved


def _checked_values(values: object, owner: str, field_name: str) -> dict[str, str | Secret]:
    if values is None:
        return {}
    if not isinstance(values, Mapping):
        raise ConfigurationTypeError(f"{owner} {field_name} must be a dict, got {type(values).__name__}.")
    checked: dict[str, str | Secret] = {}
    for key, value in values.items():
        if not isinstance(key, str) or not key:
            raise ConfigurationTypeError(f"{owner} {field_name} keys must be non-empty str, got {key!r}.")
        if not isinstance(value, str | Secret):
            raise ConfigurationTypeError(
                f"{owner} {field_name}[{key!r}] must be a str or a Secret, got {type(value).__name__}."
            )
        checked[key] = value
    return checked


def _check_name(name: object, owner: str) -> None:
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise ConfigurationTypeError(f"{owner} name must be a non-empty str or None, got {name!r}.")


def _values_to_dict(values: Mapping[str, str | Secret], field_name: str) -> dict[str, Any]:
    written: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, Secret):
            try:
                written[key] = value.to_dict()
            except SerializationError as exc:
                raise SerializationError(f"Cannot serialize {field_name}[{key!r}]: {exc}") from exc
        else:
            written[key] = value
    return written


def _values_from_dict(data: object, field_name: str) -> dict[str, str | Secret]:
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise SerializationError(f"'{field_name}' must be a dict, got {type(data).__name__}.", path=(field_name,))
    values: dict[str, str | Secret] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            secret = deserialize_secret(value)
            if secret is not None:
                values[key] = secret
        elif isinstance(value, str):
            values[key] = value
        else:
            raise SerializationError(
                f"'{field_name}.{key}' must be a str or a secret dict, got {type(value).__name__}.",
                path=(field_name, key),
            )
    return values
