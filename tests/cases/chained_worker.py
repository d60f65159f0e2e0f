"""Separate processes for the chained-pause cases: start or resume one scripted run that pauses at several steps.

``python -m tests.cases.chained_worker`` (run from the repository root) is a fork server: it imports handrail once
and never runs an agent itself; for each request line on stdin (JSON: ``store``, ``mode`` "sync" | "async",
``log``, ``resume``: a snapshot id or null) it forks a new process that builds the agent from scratch, starts or
resumes the run (``agent.run`` / ``agent.run_async``) and exits; the server then prints that process's one JSON
line: ``{"outcome": "paused", "snapshot_id", "waiting": [[id, tool], ...], "decisions": [...]}`` (the decisions
the pause snapshot carries), ``{"outcome": "ok", "messages": [...]}``, ``{"outcome": "error", "type", "message"}``
or ``{"outcome": "crash", "traceback"}``, with its ``pid``. Nothing of one step's run is in the memory of the
next: each step is its own process, forked from a server in which no run took place. Tools append one JSON line
per call to ``log``.

The scripted model is rebuilt in every process, so a resumed run gets the replies still to come: the script from
the number of model calls the snapshot records (``component_visits["chat_generator"]``).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import traceback
from typing import Any

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.errors import HandrailError
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.stores import open_snapshot_store
from handrail.testing import ScriptedChatGenerator
from handrail.tools import Tool, Toolset, create_tool_from_function
from tests.cases._helpers import asst, user

LOG_ENV = "HANDRAIL_TEST_CHAINED_LOG"
QUESTION = user("What is the rent for two months, and when is it due?")
SCRIPT = [
    asst(calls=[("c1", "lookup", {"query": "rent"})]),
    asst(calls=[("c2", "calc", {"expression": "2*600"})]),
    asst("Retrying with the rent you gave.", calls=[("c2", "calc", {"expression": "2*650"})]),  # c2 again: c2#2
    asst(calls=[("c4", "lookup", {"query": "due date"}), ("c5", "calc", {"expression": "1+1"}), ("c6", "note", {})]),
    asst("Two months of rent are 1350; it is due on the 1st."),
]
"""Five model replies: four tool steps (the last with three calls, ``note`` needing no approval), then the answer."""
APPROVED = ("lookup", "calc")
"""The tools that need a decision (``note`` runs without one)."""


def _log(tool: str, value: str) -> None:
    with open(os.environ[LOG_ENV], "a", encoding="utf-8") as handle:
        handle.write(json.dumps([tool, value]) + "\n")


def lookup(query: str) -> str:
    """Look a fact up.

    Args:
        query: What to look up.
    """
    _log("lookup", query)
    return {"rent": "650 a month", "due date": "the 1st"}.get(query, "nothing found")


def calc(expression: str) -> str:
    """Compute a product or a sum of two integers.

    Args:
        expression: E.g. ``2*650``.
    """
    _log("calc", expression)
    op = "*" if "*" in expression else "+"
    left, right = (int(part) for part in expression.split(op))
    return str(left * right if op == "*" else left + right)


def note() -> str:
    """Note that the rent was checked."""
    _log("note", "rent checked")
    return "noted"


def tools() -> list[Tool | Toolset]:
    return [create_tool_from_function(f) for f in (lookup, calc, note)]


def read_log(path: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """The tool calls logged to ``path``, in order."""
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as handle:
        return [tuple(json.loads(line)) for line in handle if line.strip()]


def _agent(url: str, model_calls: int) -> Agent:
    return Agent(
        chat_generator=ScriptedChatGenerator(SCRIPT[model_calls:]),
        tools=tools(),
        confirmation_strategies={name: BreakpointConfirmationStrategy(snapshot_store=url) for name in APPROVED},
    )


def run(url: str, mode: str, snapshot_id: str | None) -> dict[str, Any]:
    """Start the run (``snapshot_id`` None) or resume the snapshot, ``agent.run`` or ``agent.run_async``."""
    kwargs: dict[str, Any] = {}
    model_calls = 0
    if snapshot_id is not None:
        store = open_snapshot_store(url)
        try:
            snapshot = store.load(snapshot_id)
        finally:
            store.close()
        model_calls = snapshot.component_visits["chat_generator"]
        kwargs = {"messages": [], "snapshot": snapshot}
    else:
        kwargs = {"messages": [QUESTION]}
    agent = _agent(url, model_calls)
    try:
        result = agent.run(**kwargs) if mode == "sync" else asyncio.run(agent.run_async(**kwargs))
    except HITLBreakpointException as exc:
        assert exc.snapshot is not None
        return {
            "outcome": "paused",
            "snapshot_id": exc.snapshot.snapshot_id,
            "waiting": [[c.id, c.tool_name] for c in exc.snapshot.pending_tool_calls if c.id in exc.tool_call_ids],
            "decisions": [d.to_dict() for d in exc.snapshot.tool_execution_decisions],
        }
    except HandrailError as exc:
        return {"outcome": "error", "type": type(exc).__name__, "message": str(exc)}
    return {"outcome": "ok", "messages": [m.to_dict() for m in result["messages"]]}


def _step(request: dict[str, Any]) -> dict[str, Any]:
    os.environ[LOG_ENV] = request["log"]
    try:
        out = run(request["store"], request["mode"], request.get("resume"))
    except BaseException:
        out = {"outcome": "crash", "traceback": traceback.format_exc()}
    return {**out, "pid": os.getpid()}


def _warm() -> None:
    """Import what every step imports (tool schemas, the stores), so each forked step does not pay for it."""
    import importlib
    import importlib.util

    tools()
    for kind in ("file", "sqlite", "postgres"):
        if kind != "postgres" or importlib.util.find_spec("psycopg") is not None:
            importlib.import_module(f"handrail.stores.snapshot_{kind}")


def main() -> None:
    """Serve requests until stdin closes; each in a forked process of its own."""
    _warm()
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:  # the step's own process
            os.close(reader)
            with os.fdopen(writer, "w", encoding="utf-8") as handle:
                handle.write(json.dumps(_step(request)))
            os._exit(0)
        os.close(writer)
        with os.fdopen(reader, encoding="utf-8") as handle:
            answer = handle.read()
        os.waitpid(pid, 0)
        print(answer or json.dumps({"outcome": "crash", "traceback": "the step's process wrote nothing"}), flush=True)


def history(messages: list[dict[str, Any]]) -> list[ChatMessage]:
    return [ChatMessage.from_dict(m) for m in messages]


if __name__ == "__main__":
    main()
