"""A step of many approved calls, paused into a store and resumed; also a worker process that is killed mid-step.

Run from the repository root as ``python -m tests.components.agents.batch_worker --store URL --snapshot ID --log
PATH --stall-from K``: it resumes the snapshot (every call approved); ``tick`` calls whose ``i`` is at least K log
their start, write ``<log>.stalled-<i>`` and sleep for a minute (the test kills the process meanwhile).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.stores import open_snapshot_store
from handrail.testing import ScriptedChatGenerator
from handrail.tools import ToolCallId, create_tool_from_function
from tests.components.agents.durable_worker import append_log
from tests.components.agents.durable_worker import read_log as read_log  # for the tests of this worker

REPO_ROOT = Path(__file__).resolve().parents[3]
CONFIG: dict[str, Any] = {"log": None, "stall_from": None}


def _log(entry: dict[str, Any]) -> None:
    if CONFIG["log"] is None:
        return
    append_log(CONFIG["log"], entry)


def tick(i: int, key: ToolCallId) -> str:
    """Tick.

    Args:
        i: Which tick.
    """
    _log({"call": key})
    stall = CONFIG["stall_from"]
    if stall is not None and i >= stall:
        Path(f"{CONFIG['log']}.stalled-{i}").write_text("")
        time.sleep(60)
    return f"tick {i}"


def calls(n: int) -> ChatMessage:
    """The model's reply asking for ``tick(i)`` for i < n, ids ``c<i>``."""
    return ChatMessage.from_assistant(
        tool_calls=[ToolCall(tool_name="tick", arguments={"i": i}, id=f"c{i}") for i in range(n)]
    )


def agent(store: Any, replies: list[ChatMessage], generator: Any = None, tool: Any = tick) -> Agent:
    """``tick`` (or ``tool``, named tick) pauses for approval into ``store``."""
    return Agent(
        chat_generator=generator or ScriptedChatGenerator(replies),
        tools=[create_tool_from_function(tool, name="tick")],
        confirmation_strategies={"tick": BreakpointConfirmationStrategy(snapshot_store=store)},
    )


def paused_and_approved(store: Any, n: int) -> str:
    """Pause a run whose one step has ``n`` tick calls into ``store``, approve every call; returns the id."""
    try:
        agent(store, [calls(n)]).run([ChatMessage.from_user("go")])
    except HITLBreakpointException:
        pass
    else:
        raise AssertionError("the run did not pause")
    [snapshot_id] = {p.snapshot_id for p in store.list_pending()}
    for i in range(n):
        store.record_decision(snapshot_id, ToolExecutionDecision("tick", True, f"c{i}"))
    return snapshot_id


def start(**options: Any) -> subprocess.Popen[str]:
    """Start a worker process; ``options`` become ``--name value``."""
    args = [sys.executable, "-m", "tests.components.agents.batch_worker"]
    for name, value in options.items():
        args += [f"--{name.replace('_', '-')}", os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
    paths = [str(REPO_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    return subprocess.Popen(args, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="batch_worker")
    parser.add_argument("--store", required=True)
    parser.add_argument("--snapshot", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--stall-from", type=int)
    args = parser.parse_args(argv)
    CONFIG.update(log=args.log, stall_from=args.stall_from)
    store = open_snapshot_store(args.store)
    result = agent(store, [ChatMessage.from_assistant("done")]).run([], snapshot=store.load(args.snapshot))
    print(json.dumps({"answer": result["last_message"].text}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
