"""The processes of the MCP approval end-to-end tests, each a ``python -m tests.mcp._approval_processes`` command.

``start STORE_URL TEXT``: starts a run of the agent ``files`` (:func:`tests.mcp._approval_agent.files_agent`, the
model asking for ``delete_file``) as the service starts runs (:class:`handrail.server.RunLauncher`: durably, its
snapshots naming the agent), waits until it paused or ended, prints one JSON line ``{"run_id", "status"}`` and
exits.

``serve --store STORE_URL --port 0``: the approval service over the store, as ``handrail serve`` runs it
(:func:`handrail.server.serve`: the HTTP API on 127.0.0.1 and the resumer, until SIGTERM), with the agent
``files`` registered as a Python factory (its model gives the answer), which ``handrail serve`` cannot take from
the command line. It prints ``handrail serve: listening on URL`` once the port listens, as ``handrail serve``
does (tests/server/_processes.py waits for that line).
"""

from __future__ import annotations

import argparse
import json
import sys

from handrail.server import RunLauncher, serve
from handrail.stores import open_snapshot_store
from tests.mcp._approval_agent import ANSWER, PAUSE, factory

__all__ = ["main"]

AGENT = "files"
PREVIEW_TIMEOUT = 60.0
"""Seconds a preview may take: the first one starts the MCP server's process and connects (2 s, the default, is
short for that on a loaded machine)."""


def _start(store_url: str, text: str) -> None:
    store = open_snapshot_store(store_url)
    launcher = RunLauncher(store, agents={AGENT: factory(PAUSE)})
    try:
        run = launcher.start_run(AGENT, [text])
        if not launcher.wait(120):
            raise SystemExit("the run did not pause or end within 120 s")
        record = store.get_run(run.run_id)
    finally:
        launcher.close()
        store.close()
    print(json.dumps({"run_id": record.run_id, "status": record.status, "error": record.error}), flush=True)


def _serve(store_url: str, port: int) -> None:
    store = open_snapshot_store(store_url)

    def ready(url: str) -> None:
        print(f"handrail serve: listening on {url} (store {store_url}).", flush=True)

    try:
        serve(store, agents={AGENT: factory(ANSWER)}, host="127.0.0.1", port=port, on_ready=ready,
              preview_timeout=PREVIEW_TIMEOUT)  # fmt: skip
    finally:
        store.close()


def main(argv: list[str]) -> None:
    """Run the ``start`` or ``serve`` command (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m tests.mcp._approval_processes")
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("start")
    start.add_argument("store_url")
    start.add_argument("text")
    served = commands.add_parser("serve")
    served.add_argument("--store", required=True)
    served.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    if args.command == "start":
        _start(args.store_url, args.text)
    else:
        _serve(args.store, args.port)


if __name__ == "__main__":
    main(sys.argv[1:])
