"""A process that resumes many paused snapshots of one PostgreSQL snapshot store at once, with ``run_async``.

Run as ``python -m tests.stores.resume_worker STORE IDS_FILE CALLS_FILE GATE_DIR``: it loads every snapshot
whose id is a line of IDS_FILE (STORE as ``open_snapshot_store`` takes it), writes ``GATE_DIR/ready-<pid>``,
waits for ``GATE_DIR/go``, then resumes them all concurrently (``asyncio.gather``). The approved tool appends
its ``n`` to CALLS_FILE. The last line of stdout is a JSON list with one outcome per id:
``{"id", "outcome": "done" | "unavailable" | "error", "message"}``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from pathlib import Path
from typing import Any

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage
from handrail.errors import SnapshotUnavailableError
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.stores import open_snapshot_store
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function
from tests.stores.snapshot_worker import poll

_CALLS: list[Path] = []
_WRITE = threading.Lock()


def record(n: int) -> str:
    """Record that call ``n`` ran.

    Args:
        n: The call's number.
    """
    with _WRITE, _CALLS[0].open("a", encoding="utf-8") as out:
        out.write(f"{n}\n")
    return f"recorded {n}"


def make_agent(replies: list[ChatMessage], store: Any) -> Agent:
    """An agent whose one tool, ``record``, needs approval (pausing into ``store``)."""
    return Agent(
        chat_generator=ScriptedChatGenerator(replies), tools=[create_tool_from_function(record)],
        confirmation_strategies={"record": BreakpointConfirmationStrategy(snapshot_store=store)},
    )  # fmt: skip


async def _resume_all(agent: Agent, snapshots: list[Any]) -> list[dict[str, Any]]:
    results = await asyncio.gather(*(agent.run_async([], snapshot=s) for s in snapshots), return_exceptions=True)
    outcomes = []
    for snapshot, result in zip(snapshots, results, strict=True):
        sid = snapshot.snapshot_id
        if isinstance(result, SnapshotUnavailableError):
            outcomes.append({"id": sid, "outcome": "unavailable", "message": str(result)})
        elif isinstance(result, BaseException):
            outcomes.append({"id": sid, "outcome": "error", "message": f"{type(result).__name__}: {result}"})
        else:
            outcomes.append({"id": sid, "outcome": "done", "message": result["last_message"].text})
    return outcomes


def main(argv: list[str]) -> int:
    location, ids_file, calls_file, gate = argv
    _CALLS.append(Path(calls_file))
    ids = Path(ids_file).read_text(encoding="utf-8").split()
    store = open_snapshot_store(location)
    snapshots = [store.load(i) for i in ids]
    agent = make_agent([ChatMessage.from_assistant("done")] * len(ids), location)
    (Path(gate) / f"ready-{Path(calls_file).name}").write_text("")
    poll(lambda: (Path(gate) / "go").exists(), "the go signal")
    outcomes = asyncio.run(_resume_all(agent, snapshots))
    store.close()
    print(json.dumps(outcomes), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
