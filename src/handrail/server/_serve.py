"""``serve()``: the approval service's HTTP API on uvicorn, with the checks a server makes before it listens.

Before anything is served: a non-loopback address is refused while the store has no token (nobody could log in,
and a later token must not find the port open to the network already); the port is bound here, so a port in use
is a clear error and port 0 picks a free one (``on_ready`` learns the URL). With ``workers > 1`` uvicorn runs
that many processes on the one socket, each building its app from the store's URL.

Shutdown never hangs on open event streams: a SIGINT / SIGTERM first ends every stream (the hub closes), and
uvicorn cancels whatever is left after ``graceful_timeout`` seconds.
"""

from __future__ import annotations

import ipaddress
import json
import os
import socket
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from handrail.errors import ConfigurationError, ConfigurationTypeError

if TYPE_CHECKING:
    from handrail.server._registry import AgentFactory

__all__ = ["ServeConfig", "bind", "is_loopback", "serve", "worker_app"]

_CONFIG_ENV = "HANDRAIL_SERVE_CONFIG"


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback name or address (``localhost``, ``127.0.0.0/8``, ``::1``)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class ServeConfig:
    """How a server process builds its app (passed to uvicorn's worker processes as JSON)."""

    store_url: str
    """The store (a URL or a directory)."""
    agents_dir: str | None = None
    """The agents directory, if any."""
    allow_modules: tuple[str, ...] = ()
    """Module prefixes trusted inside snapshots and agent files."""
    allowed_hosts: tuple[str, ...] = ()
    """Host names besides the loopback ones."""
    keepalive: float = 15.0
    """Seconds between an event stream's keep-alive comments."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Further create_app keyword arguments (JSON data)."""
    allow_commands: tuple[str, ...] = ()
    """Programs the agent files' stdio MCP servers may run."""


def worker_app() -> Any:
    """The uvicorn app factory in a worker process: the app :class:`ServeConfig` in the environment names."""
    from handrail.server._app import create_app
    from handrail.stores import open_snapshot_store

    data = json.loads(os.environ[_CONFIG_ENV])
    config = ServeConfig(**{**data, "allow_modules": tuple(data["allow_modules"]),
                            "allowed_hosts": tuple(data["allowed_hosts"]),
                            "allow_commands": tuple(data.get("allow_commands", ()))})  # fmt: skip
    store = open_snapshot_store(config.store_url, allowed_modules=config.allow_modules)
    return create_app(store, agents_dir=config.agents_dir, allow_modules=config.allow_modules,
                      allow_commands=config.allow_commands,
                      allowed_hosts=config.allowed_hosts, keepalive=config.keepalive, **config.extra)  # fmt: skip


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: a free one).

    Raises:
        ConfigurationError: The port is in use, the address is not this machine's, or binding is not permitted.
    """
    if type(port) is not int or not 0 <= port <= 65535:
        raise ConfigurationError(f"The port must be an int from 0 to 65535, got {port!r:.40}.")
    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ConfigurationError(f"Cannot listen on {host!r}: not an address of this machine ({exc}).") from None
    family, kind, proto, _, address = infos[0]
    # proto must be IPPROTO_TCP (not 0): asyncio sets TCP_NODELAY only on such sockets, and without it a keep-alive
    # client waits 40 ms for each response (Nagle's algorithm against the client's delayed ACK).
    sock = socket.socket(family, kind, proto or socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == 98 or "in use" in str(exc):
            raise ConfigurationError(f"Port {port} on {host} is in use: another server listens there; stop it or "
                                     "choose another --port.") from None  # fmt: skip
        raise ConfigurationError(f"Cannot listen on {host}:{port}: {exc.strerror or exc}.") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def _check_tokens(store: Any, host: str) -> None:
    if is_loopback(host):
        return
    if not store.list_tokens():
        raise ConfigurationError(
            f"Refusing to listen on {host}, which is not a loopback address, while the store has no token: add one "
            "first (handrail tokens add NAME --role admin --store URL), or listen on 127.0.0.1."
        )


def serve(
    store: Any,
    *,
    agents: Mapping[str, AgentFactory] | None = None,
    agents_dir: str | None = None,
    host: str = "127.0.0.1",
    port: int = 8700,
    allowed_hosts: Iterable[str] = (),
    workers: int = 1,
    store_url: str | None = None,
    allow_modules: Iterable[str] = (),
    allow_commands: Iterable[str] = (),
    keepalive: float = 15.0,
    graceful_timeout: float = 3.0,
    log_level: str = "warning",
    on_ready: Callable[[str], None] | None = None,
    **app_options: Any,
) -> None:
    """Serve the approval service's HTTP API on ``host:port`` until SIGINT / SIGTERM, with the resumer.

    Every server process runs a :class:`~handrail.server.Resumer` (paused runs continue once their calls are
    decided or expired; any number of servers and ``handrail worker`` processes may share the store).

    Args:
        store: The store (approvals, tokens, events, runs).
        agents: ``{name: factory}``, ``factory(store) -> Agent``, of the agents runs use (one worker only:
            factories do not cross processes).
        agents_dir: A directory of agent files.
        host: The address to listen on; a non-loopback one needs a token in the store.
        port: The port (0: a free one).
        allowed_hosts: Host names the server answers to besides the loopback names and ``host``.
        workers: Server processes (more than 1 needs ``store_url``).
        store_url: The store's URL, for the worker processes (``workers > 1``).
        allow_modules: Module prefixes trusted inside snapshots and agent files.
        allow_commands: Programs the agent files' stdio MCP servers may run, besides those each file allows.
        keepalive: Seconds between an event stream's keep-alive comments.
        graceful_timeout: Seconds uvicorn waits for open requests at shutdown before cancelling them.
        log_level: uvicorn's log level.
        on_ready: Called with the URL once the socket listens (before the first request is served).
        app_options: Further :func:`~handrail.server.create_app` arguments (``clock``, ``session_ttl``,
            ``unknown_outcome``, ``resume``, ...).

    Raises:
        ConfigurationError: A non-loopback ``host`` without tokens; the port in use; ``workers > 1`` without
            ``store_url`` or with ``agents``. SpecError: An agent file of ``agents_dir`` that could not run (one
            line per file).
    """
    from handrail.server._app import create_app

    try:
        import uvicorn
    except ImportError as exc:  # pragma: no cover - the server extra is not installed
        raise ImportError(f"handrail serve needs uvicorn: pip install 'handrail[server]' ({exc}).") from exc

    if type(workers) is not int or workers < 1:
        raise ConfigurationError(f"workers must be an int >= 1, got {workers!r:.40}.")
    if workers > 1 and (store_url is None or agents):
        raise ConfigurationTypeError(
            "workers > 1 starts separate processes: they need the store's URL (store_url) and agents from a "
            "directory (agents_dir); Python factories (agents=) work with one worker."
        )
    _check_tokens(store, host)
    if workers > 1 and agents_dir is not None:  # the processes check them too, but only this one can refuse cleanly
        from handrail.server._registry import AgentRegistry

        AgentRegistry(
            store, agents_dir=agents_dir, allowed_modules=allow_modules, allowed_commands=allow_commands
        )  # every agent file, or SpecError
    hosts = (host, *allowed_hosts)
    sock = bind(host, port)
    try:
        common: dict[str, Any] = {"log_level": log_level, "timeout_graceful_shutdown": graceful_timeout,
                                  "lifespan": "on", "server_header": False}  # fmt: skip
        if workers > 1:
            assert store_url is not None
            config = ServeConfig(
                store_url, agents_dir, tuple(allow_modules), hosts, keepalive, dict(app_options), tuple(allow_commands)
            )
            os.environ[_CONFIG_ENV] = json.dumps(asdict(config))
            uv_config = uvicorn.Config("handrail.server._serve:worker_app", factory=True, workers=workers, **common)
        else:
            app = create_app(store, agents=agents, agents_dir=agents_dir, allow_modules=allow_modules,
                             allow_commands=allow_commands,
                             allowed_hosts=hosts, keepalive=keepalive, **app_options)  # fmt: skip
            uv_config = uvicorn.Config(app, **common)
        if on_ready is not None:
            on_ready(_url(sock))
        _run(uvicorn, uv_config, sock, workers)
    finally:
        sock.close()


def _run(uvicorn: Any, config: Any, sock: socket.socket, workers: int) -> None:
    if workers > 1:
        from uvicorn.supervisors import Multiprocess

        Multiprocess(config, sockets=[sock]).run()
        return
    uvicorn.Server(config).run(sockets=[sock])
