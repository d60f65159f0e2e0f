"""``handrail serve`` processes for the tests: started on 127.0.0.1 with a free port, stopped or killed after."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT = 60.0
"""Seconds a server may take to print its URL and answer /healthz (generous: the machine is shared)."""


@dataclass
class ServeProcess:
    """A running ``handrail serve``."""

    process: subprocess.Popen[str]
    url: str

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        """Send ``sig`` and wait for the exit (killed after ``timeout``); the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                return self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                raise
        return self.process.returncode


def _first_line(process: subprocess.Popen[str], timeout: float) -> str:
    assert process.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if selector.select(timeout=0.5):
            return process.stdout.readline()
        if process.poll() is not None:
            break
    _, err = process.communicate(timeout=5) if process.poll() is not None else ("", "")
    raise AssertionError(f"handrail serve printed no URL (exit {process.poll()}): {err}")


def start_serve(
    store_url: str, *options: str, env: dict[str, str] | None = None, module: str = "handrail.cli"
) -> ServeProcess:
    """Start ``handrail serve --store URL --port 0 [options]`` (``env`` added); returns once /healthz answers.

    ``module``: the module run as ``python -m MODULE serve ...`` (a script of a test's own that serves the same way,
    e.g. with agents given as Python factories).
    """
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]), **(env or {})}
    command = [sys.executable, "-m", module, "serve", "--store", store_url, "--port", "0", *options]
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = _first_line(process, START_TIMEOUT)
    assert "listening on http://127.0.0.1:" in line, line
    url = line.split("listening on ", 1)[1].split(" ", 1)[0]
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            if httpx.get(f"{url}/healthz", timeout=5).status_code == 200:
                return ServeProcess(process, url)
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.05)


@contextmanager
def serving(
    store_url: str, *options: str, env: dict[str, str] | None = None, module: str = "handrail.cli"
) -> Iterator[ServeProcess]:
    """:func:`start_serve`, stopped at the end (SIGKILL if it does not stop)."""
    server = start_serve(store_url, *options, env=env, module=module)
    try:
        yield server
    finally:
        try:
            server.stop()
        finally:
            if server.process.stdout:
                server.process.stdout.close()
            if server.process.stderr:
                server.process.stderr.close()
