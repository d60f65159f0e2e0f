"""What the ``--temporal`` commands share: the options, the connection, the ledger store, errors as exit codes.

``handrail worker --temporal``, ``handrail run --temporal`` and ``handrail runs`` talk to a Temporal frontend
(``HOST:PORT``) through :mod:`handrail.temporal`. Every failure they expect is one error line and an exit code
of the table in ``handrail --help``: a malformed address or a missing option is bad usage (2, click's own
message), an address that does not answer is 1 (said in one line, within :data:`CONNECT_SECONDS`), an unknown
run id or a refused decision is 2.

The Temporal SDK's threads can abort the interpreter while it finalizes (sdk-python #300): a process that used
it ends with ``os._exit`` after flushing (:func:`exit_now_if_temporal`, called by the ``handrail`` entry point).
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import json
import re
import sys
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from handrail.cli._common import EXIT_RUN_FAILED, EXIT_USAGE, error, printable, quote

__all__ = [
    "CONNECT_SECONDS",
    "Target",
    "client_store",
    "connect_or_fail",
    "exit_now_if_temporal",
    "fail",
    "os_user",
    "parse_address",
    "run_async",
    "target_options",
    "temporal_errors",
]

T = TypeVar("T")
CONNECT_SECONDS = 10.0
"""How long connecting to Temporal may take before the command says the address does not answer."""
_ADDRESS = re.compile(r"(?P<host>[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?):(?P<port>[0-9]{1,5})")


def parse_address(ctx: click.Context | None, param: click.Parameter | None, value: str | None) -> str | None:
    """The ``--temporal`` callback: ``HOST:PORT`` (a host name or an IPv4 address, a port 1-65535)."""
    if value is None:
        return None
    match = _ADDRESS.fullmatch(value.strip())
    if match is None or not 1 <= int(match["port"]) <= 65535:
        raise click.BadParameter(
            f"{printable(value)!r} is not HOST:PORT (e.g. 127.0.0.1:7233, temporal.example.com:7233).", ctx, param
        )
    return value.strip()


def os_user() -> str:
    """Who runs the command (recorded as who started a run or decided a call)."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no user name in the environment nor the password database
        return "unknown"


@dataclass(frozen=True, slots=True)
class Target:
    """Where the runs are: the Temporal address and namespace, the ledger store URL (None: none given)."""

    address: str
    namespace: str
    store_url: str | None

    def args(self) -> str:
        """The options that name this target on a command line shown to the user."""
        parts = [f"--temporal {quote(self.address)}"]
        if self.namespace != "default":
            parts.append(f"--namespace {quote(self.namespace)}")
        if self.store_url is not None:
            parts.append(f"--store {quote(self.store_url)}")
        return " ".join(parts)


def target_options(*, store_required: bool, temporal_required: bool = True) -> Callable[[Any], Any]:
    """``--temporal``, ``--namespace`` and ``--store`` (the ledger) for a command that talks to Temporal."""
    store_help = (
        "The ledger the workers use (sqlite:///PATH or postgresql://...): large payloads are kept there by "
        "reference." + ("" if store_required else " Needed only to read a run whose data is large.")
    )

    def decorate(command: Any) -> Any:
        for option in reversed([
            click.option("--temporal", "address", required=temporal_required, metavar="HOST:PORT",
                         callback=parse_address, help="The Temporal frontend (e.g. 127.0.0.1:7233)."),
            click.option("--namespace", default="default", show_default=True, metavar="NS",
                         help="The Temporal namespace."),
            click.option("--store", "store_url", required=store_required, metavar="URL", help=store_help),
            click.option("--tls", is_flag=True, expose_value=False, callback=_remember,
                         help="Connect with TLS (a Temporal cluster with TLS, Temporal Cloud)."),
            click.option("--api-key-env", metavar="VAR", expose_value=False, callback=_remember,
                         help="Read a Temporal Cloud API key from environment variable VAR (implies --tls; the "
                              "key is never taken on the command line)."),
        ]):  # fmt: skip
            command = option(command)
        return command

    return decorate


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Keep ``--tls`` / ``--api-key-env`` for :func:`connect_or_fail` (no command takes them as a parameter)."""
    ctx.meta[f"handrail.temporal.{param.name}"] = value
    return value


def _security(out: Any) -> dict[str, Any]:
    """The ``tls`` and ``api_key`` connection options the command line gave."""
    import os

    ctx = click.get_current_context(silent=True)
    meta = ctx.meta if ctx is not None else {}
    options: dict[str, Any] = {}
    variable = meta.get("handrail.temporal.api_key_env")
    if variable:
        key = os.environ.get(variable)
        if not key:
            fail(out, f"--api-key-env {printable(variable)}: that environment variable is not set or empty.")
        options["api_key"] = key
        options["tls"] = True
    if meta.get("handrail.temporal.tls"):
        options["tls"] = True
    return options


def fail(out: Any, message: str, code: int = EXIT_USAGE) -> NoReturn:
    """One error line, then exit with ``code``."""
    error(out, message)
    sys.exit(code)


class NoStore:
    """The ledger of a client given no ``--store``: it keeps nothing, so a payload kept by reference is unreadable.

    Reading one fails with the codec's error, which names this store and asks for ``--store``.
    """

    url = "none"

    def begin(self, key: str, *, again: bool = False) -> Any:
        raise NotImplementedError("a client without --store runs no tool")

    def done(self, key: str, outcome: dict[str, Any]) -> None:
        raise NotImplementedError("a client without --store runs no tool")

    def row(self, key: str) -> Any:
        return None

    def put_blob(self, digest: str, data: bytes) -> None:
        raise NotImplementedError("no --store to keep a large payload in: pass the workers' --store")

    def get_blob(self, digest: str) -> bytes | None:
        return None

    def close(self) -> None:
        pass

    def __repr__(self) -> str:
        return "no --store (pass the workers' --store URL to read it)"


def client_store(out: Any, store_url: str | None, *, create: bool = False) -> Any:
    """The ledger store of ``--store`` (a :class:`NoStore` when None).

    A client (``run``, ``runs``) never creates a SQLite ledger: a file that is not there means the workers use
    another store (they create theirs when they start), and is refused. ``create`` (the worker) creates it.
    """
    from handrail.errors import ConfigurationError
    from handrail.temporal import open_temporal_store

    if store_url is None:
        return NoStore()
    path = _sqlite_path(store_url)
    if not create and path is not None and not path.is_file():
        fail(out, f"--store {printable(store_url)}: no ledger at {printable(path)}. Give the --store the workers "
                  f"use (a worker creates its ledger when it starts).")  # fmt: skip
    try:
        return open_temporal_store(store_url)
    except ConfigurationError as exc:
        fail(out, f"--store {printable(store_url)}: {exc}")


def _sqlite_path(url: str) -> Path | None:
    """The file of a SQLite ledger URL (``sqlite:///PATH`` or a plain path); None for another kind."""
    if url.startswith("sqlite:///"):
        return Path(url[len("sqlite:///") :])
    return None if "://" in url or not url.strip() else Path(url)


def _connect_reason(exc: BaseException) -> str:
    """The short reason of a failed connection (the SDK's text is a Rust debug dump)."""
    text = str(exc)
    for pattern in (r'message: "([^"]+)"', r'ConnectError\("([^"]+)"', r"error: ([^(]+)"):
        found = re.search(pattern, text)
        if found:
            return found.group(1).strip()
    return text[:200]


async def connect_or_fail(out: Any, target: Target, store: Any, *, tracing: bool = False) -> Any:
    """A client of ``target`` (:func:`handrail.temporal.connect`, traced with ``tracing``), or an error line, exit 1."""
    from handrail.errors import ConfigurationError
    from handrail.temporal import TemporalUnavailableError, connect

    try:
        return await connect(target.address, store, namespace=target.namespace, connect_timeout=CONNECT_SECONDS,
                             tracing=tracing, **_security(out))  # fmt: skip
    except TemporalUnavailableError as exc:
        cause = exc.__cause__
        if isinstance(cause, TimeoutError):
            fail(out, f"Temporal at {printable(target.address)} did not answer within {CONNECT_SECONDS:.0f} s.",
                 EXIT_RUN_FAILED)  # fmt: skip
        fail(out, f"cannot reach Temporal at {printable(target.address)}: {printable(_connect_reason(cause or exc))}. "
                  f"Is the server running there?", EXIT_RUN_FAILED)  # fmt: skip
    except ConfigurationError as exc:
        fail(out, str(exc))


def rpc_problem(exc: BaseException) -> tuple[str, str] | None:
    """``(status name, message)`` of a Temporal RPC error, or None for another exception."""
    from temporalio.service import RPCError

    if isinstance(exc, RPCError):
        return exc.status.name, exc.message
    return None


@contextlib.contextmanager
def temporal_errors(out: Any, target: Target, run_id: str | None = None) -> Iterator[None]:
    """Temporal's and handrail's expected errors as one line and an exit code (an unknown run is 2)."""
    from handrail.errors import HandrailError
    from handrail.temporal import DecisionRefused, RunExistsError, RunNotFoundError

    try:
        yield
    except click.ClickException:
        raise
    except RunNotFoundError:
        fail(out, f"no run {printable(run_id or '?')!r} on Temporal at {printable(target.address)} (namespace "
                  f"{printable(target.namespace)}).")  # fmt: skip
    except (RunExistsError, DecisionRefused) as exc:  # bad input: a run id used before, a decision refused
        fail(out, str(exc), EXIT_USAGE)
    except HandrailError as exc:
        fail(out, str(exc), getattr(exc, "exit_code", EXIT_RUN_FAILED))
    except Exception as exc:
        problem = rpc_problem(exc)
        if problem is None:
            raise
        status, message = problem
        where = f"Temporal at {target.address} (namespace {target.namespace})"
        if status == "NOT_FOUND" and run_id is not None:
            fail(out, f"no run {printable(run_id)!r} on {printable(where)}.")
        if status == "NOT_FOUND":
            fail(out, f"{printable(where)}: {printable(message)}")
        if status == "UNAVAILABLE":
            fail(out, f"{printable(where)} is unavailable: {printable(message)}", EXIT_RUN_FAILED)
        fail(out, f"{printable(where)} refused the request ({status}): {printable(message)}", EXIT_RUN_FAILED)


def run_async(make: Callable[[], Awaitable[T]]) -> T:
    """Run the coroutine ``make()`` on a new event loop (the Temporal client is asynchronous)."""

    async def main() -> T:
        return await make()

    return asyncio.run(main())


def exit_now_if_temporal(code: int) -> None:
    """When the Temporal SDK was loaded: flush and ``os._exit(code)``, so its threads cannot abort the exit."""
    import os

    if "temporalio.client" not in sys.modules:
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def json_line(value: Any) -> str:
    """``value`` as compact JSON (for arguments shown on one line)."""
    return json.dumps(value, ensure_ascii=False, default=str)
