"""A separate process for the durability tests: pause, resume or crash one scripted agent run.

Run from the repository root as ``python -m tests.components.agents.durable_worker COMMAND ...``; every
command prints one JSON line on stdout (``{"outcome": "ok" | "paused" | "error", ...}``) and exits 0
unless something unexpected went wrong. Tools append one JSON line per call to ``--log``, a file, so the
test sees side effects across processes.

Commands:
    pause   the C13 run: ``transfer(amount=10)`` needs approval, the run pauses into ``--dir``.
    resume  resume ``--snapshot`` with ``--decision`` (JSON: execute, final_tool_params, feedback) for c1;
            with ``--gate DIR`` the transfer writes ``DIR/started-<pid>`` and waits for ``DIR/release``.
    crash   a durable run (snapshot directory ``--dir``) whose ``charge`` call writes ``--marker`` and
            then blocks for a minute (the test kills the process meanwhile).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.snapshot import load_snapshot
from handrail.errors import HandrailError
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.testing import ScriptedChatGenerator
from handrail.tools import ToolCallId, create_tool_from_function
from tests.cases._helpers import asst, user

REPO_ROOT = Path(__file__).resolve().parents[3]
CONFIG: dict[str, Any] = {"log": None, "gate": None, "marker": None}
"""Set by the command line in a worker, by a fixture in the test process."""

C13_CALL = asst(calls=[("c1", "transfer", {"amount": 10})])
C13_ANSWER = asst("Transfer done")
CRASH_CALL = asst(calls=[("k1", "charge", {"amount": 7})])
CRASH_ANSWER = asst("Charged")


def _log(entry: dict[str, Any]) -> None:
    if CONFIG["log"] is None:
        raise AssertionError("durable_worker.CONFIG['log'] is not set")
    append_log(CONFIG["log"], entry)


def append_log(path: str | os.PathLike[str], entry: dict[str, Any]) -> None:
    """Append ``entry`` with this process's pid to the log at ``path``, on disk before it returns."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({**entry, "pid": os.getpid()}) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def wait_for(condition: Callable[[], bool], process: subprocess.Popen[str], what: str, timeout: float = 120) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` if ``process`` exits first or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while not condition():
        if process.poll() is not None:
            _, err = process.communicate()
            raise AssertionError(f"the worker exited ({process.returncode}) before {what}:\n{err}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def read_log(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The tool calls logged to ``path``, oldest first (``[]`` when nothing ran)."""
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def transfer(amount: int) -> str:
    """Send money.

    Args:
        amount: How much to send.
    """
    if CONFIG["gate"]:
        _hold_at(Path(CONFIG["gate"]))
    _log({"tool": "transfer", "amount": amount})
    return f"sent {amount}"


def charge(amount: int, key: ToolCallId) -> str:
    """Charge the card.

    Args:
        amount: How much to charge.
    """
    _log({"tool": "charge", "amount": amount, "key": key})
    marker = CONFIG["marker"]
    if marker:
        Path(marker).write_text(str(os.getpid()))
        time.sleep(60)
    return f"charged {amount}"


def c13_agent(directory: str | os.PathLike[str], replies: list[ChatMessage]) -> Agent:
    """The C13 agent: ``transfer`` pauses for approval into ``directory``."""
    return Agent(
        chat_generator=ScriptedChatGenerator(replies),
        tools=[create_tool_from_function(transfer)],
        confirmation_strategies={"transfer": BreakpointConfirmationStrategy(str(directory))},
    )


def crash_agent(directory: str | os.PathLike[str], replies: list[ChatMessage]) -> Agent:
    """A durable agent (its snapshot directory is ``directory``); ``charge`` runs without approval."""
    return Agent(
        chat_generator=ScriptedChatGenerator(replies),
        tools=[create_tool_from_function(transfer), create_tool_from_function(charge)],
        confirmation_strategies={"transfer": BreakpointConfirmationStrategy(str(directory))},
    )


def _model_inputs(agent: Agent) -> list[list[dict[str, Any]]]:
    generator = agent.chat_generator
    assert isinstance(generator, ScriptedChatGenerator)
    return [[m.to_dict() for m in call["messages"]] for call in generator.calls]


def _hold_at(gate: Path) -> None:
    """Say this process entered the tool, then wait until the test opens the gate."""
    gate.mkdir(parents=True, exist_ok=True)
    (gate / f"started-{os.getpid()}").write_text("")
    deadline = time.monotonic() + 120
    while not (gate / "release").exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{gate / 'release'} did not appear")
        time.sleep(0.01)


def _run(agent: Agent, messages: list[ChatMessage], **kwargs: Any) -> dict[str, Any]:
    try:
        result = agent.run(messages, **kwargs)
    except HITLBreakpointException as exc:
        return {"outcome": "paused", "snapshot": exc.snapshot_file_path, "tool_call_ids": exc.tool_call_ids,
                "model_inputs": _model_inputs(agent)}  # fmt: skip
    except HandrailError as exc:
        return {
            "outcome": "error",
            "type": type(exc).__name__,
            "types": [cls.__name__ for cls in type(exc).__mro__],
            "message": str(exc),
            "tool_call_id": getattr(exc, "tool_call_id", None),
            "model_inputs": _model_inputs(agent),
        }
    return {
        "outcome": "ok",
        "answer": result["last_message"].text,
        "tool_call_counts": result["tool_call_counts"],
        "model_inputs": _model_inputs(agent),
    }


def start(command: str, **options: Any) -> subprocess.Popen[str]:
    """Start a worker process running ``command``; ``options`` become ``--name value`` (dicts as JSON)."""
    args = [sys.executable, "-m", "tests.components.agents.durable_worker", command]
    for name, value in options.items():
        args += [f"--{name}", json.dumps(value) if isinstance(value, dict) else os.fspath(value)
                 if isinstance(value, os.PathLike) else str(value)]  # fmt: skip
    paths = [str(REPO_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    return subprocess.Popen(args, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen[str], timeout: float = 120) -> dict[str, Any]:
    """Wait for a worker and return its JSON line (fails, showing stderr, when it did not exit 0)."""
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        raise AssertionError(f"worker {process.args!r} timed out:\n{err}") from None
    assert process.returncode == 0, f"worker {process.args!r} exited {process.returncode}:\n{err}"
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="durable_worker")
    parser.add_argument("command", choices=["pause", "resume", "crash"])
    parser.add_argument("--dir", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--snapshot")
    parser.add_argument("--decision", help='JSON: {"execute": bool, "final_tool_params": {...}, "feedback": str}')
    parser.add_argument("--gate")
    parser.add_argument("--marker")
    args = parser.parse_args(argv)
    CONFIG.update(log=args.log, gate=args.gate, marker=args.marker)

    if args.command == "pause":
        out = _run(c13_agent(args.dir, [C13_CALL]), [user("Send 10 to Bob")])
    elif args.command == "crash":
        out = _run(crash_agent(args.dir, [CRASH_CALL, CRASH_ANSWER]), [user("Charge 7")])
    else:
        snapshot = load_snapshot(args.snapshot)
        if args.decision is not None:
            d = json.loads(args.decision)
            decision = ToolExecutionDecision(
                "transfer", d["execute"], "c1", feedback=d.get("feedback"), final_tool_params=d.get("final_tool_params")
            )
            snapshot = dataclasses.replace(snapshot, tool_execution_decisions=[decision])
        out = _run(c13_agent(args.dir, [C13_ANSWER]), [], snapshot=snapshot)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
