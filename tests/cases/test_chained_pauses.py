"""A run that pauses for approval at four different steps, decided and resumed each time from a fresh process.

The run (``tests.cases.chained_worker``) asks ``lookup`` (approved), ``calc`` (rejected), ``calc`` again under the
rejected call's id (edited), then ``lookup`` + ``calc`` + ``note`` in one step (approved, rejected, no approval
needed: it runs at the pause) and answers. Each pause is decided in the store (``record_decision``) and resumed by
a new worker process, alternating ``run`` and ``run_async``, on a directory, SQLite and PostgreSQL store; the
history at the end equals the one of the same run decided at the console, and every approved call ran once.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ConfirmationUIResult, ToolExecutionDecision
from handrail.errors import SnapshotUnavailableError
from handrail.human_in_the_loop import AlwaysAskPolicy, BlockingConfirmationStrategy, BreakpointConfirmationStrategy
from handrail.stores import open_snapshot_store
from handrail.testing import ScriptedChatGenerator
from tests.cases import chained_worker as worker
from tests.cases._helpers import asst
from tests.cli.test_approvals_stores import postgres_url
from tests.human_in_the_loop._helpers import ScriptedUI
from tests.stores.conftest import postgres_database, postgres_dsn, postgres_server_dsn  # noqa: F401 - fixtures

REPO_ROOT = Path(__file__).resolve().parents[2]

PLAN: list[list[tuple[str, ConfirmationUIResult]]] = [
    [("lookup", ConfirmationUIResult("confirm"))],
    [("calc", ConfirmationUIResult("reject", feedback="The rent is 650 a month, not 600."))],
    [("calc", ConfirmationUIResult("modify", new_tool_params={"expression": "650*2"}))],
    [("lookup", ConfirmationUIResult("confirm")), ("calc", ConfirmationUIResult("reject", feedback="Not needed."))],
]
"""Per pause, the calls waiting (by tool, in call order) and the answer each gets."""
RAN = [("lookup", "rent"), ("calc", "650*2"), ("note", "rent checked"), ("lookup", "due date")]
"""The calls that run, each exactly once: the approved ones, the edit, and the call needing no approval."""


def _decision(tool: str, call_id: str, answer: ConfirmationUIResult) -> ToolExecutionDecision:
    return ToolExecutionDecision(
        tool, execute=answer.action != "reject", tool_call_id=call_id, feedback=answer.feedback,
        final_tool_params=answer.new_tool_params,
    )  # fmt: skip


@pytest.fixture(scope="module")
def at_the_console(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """The same run decided at the console, in one process: ``(its history as dicts, the calls that ran)``."""
    log = tmp_path_factory.mktemp("console") / "calls.jsonl"
    answers = [answer for pause in PLAN for _, answer in pause]
    strategy = BlockingConfirmationStrategy(confirmation_policy=AlwaysAskPolicy(), confirmation_ui=ScriptedUI(answers))
    agent = Agent(
        chat_generator=ScriptedChatGenerator(worker.SCRIPT),
        tools=worker.tools(),
        confirmation_strategies=dict.fromkeys(worker.APPROVED, strategy),
    )
    old = os.environ.get(worker.LOG_ENV)
    os.environ[worker.LOG_ENV] = str(log)
    try:
        result = agent.run([worker.QUESTION])
    finally:
        if old is None:
            del os.environ[worker.LOG_ENV]
        else:
            os.environ[worker.LOG_ENV] = old
    assert result["exit_reason"] == "text"
    return [m.to_dict() for m in result["messages"]], worker.read_log(log)


class Steps:
    """The fork server of ``chained_worker``: each :meth:`__call__` runs one step in a new process."""

    def __init__(self) -> None:
        paths = [str(REPO_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.cases.chained_worker"], cwd=REPO_ROOT, env=env, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        )  # fmt: skip
        self.pids: set[int] = set()

    def __call__(self, url: str, mode: str, log: Path, snapshot_id: str | None = None) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        request = {"store": url, "mode": mode, "log": str(log), "resume": snapshot_id}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, f"the chained_worker server stopped (exit code {self.process.poll()})"
        out: dict[str, Any] = json.loads(line)
        assert out["outcome"] != "crash", out["traceback"]
        assert out["pid"] not in self.pids and out["pid"] != self.process.pid  # a new process each time
        self.pids.add(out["pid"])
        return out

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            if self.process.stdout is not None:
                self.process.stdout.close()


@pytest.fixture(scope="module")
def steps() -> Iterator[Steps]:
    server = Steps()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    kind = request.param
    if kind == "dir":
        return str(tmp_path / "approvals")
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'approvals.db'}"
    monkeypatch = request.getfixturevalue("monkeypatch")
    return postgres_url(request.getfixturevalue("postgres_dsn"), monkeypatch)


@pytest.mark.parametrize(
    ("store_url", "first_mode"),
    [("dir", "sync"), ("sqlite", "async"), pytest.param("postgres", "sync", marks=pytest.mark.postgres)],
    indirect=["store_url"],
)
def test_four_pauses_resumed_in_fresh_processes_end_as_at_the_console(
    store_url: str,
    first_mode: str,
    tmp_path: Path,
    at_the_console: tuple[list[dict[str, Any]], Any],
    steps: Steps,
) -> None:
    log = tmp_path / "calls.jsonl"
    modes = ["sync", "async"] if first_mode == "sync" else ["async", "sync"]
    out = steps(store_url, modes[0], log)
    seen: list[str] = []
    for number, answers in enumerate(PLAN):
        assert out["outcome"] == "paused", (number, out)
        assert [tool for _, tool in out["waiting"]] == [tool for tool, _ in answers], (number, out)
        assert out["decisions"] == [], f"pause {number} carries decisions of an earlier step: {out['decisions']}"
        snapshot_id = out["snapshot_id"]
        assert snapshot_id not in seen
        seen.append(snapshot_id)
        store = open_snapshot_store(store_url)
        try:
            for (call_id, tool), (_, answer) in zip(out["waiting"], answers, strict=True):
                store.record_decision(snapshot_id, _decision(tool, call_id, answer), decided_by="ann")
        finally:
            store.close()
        out = steps(store_url, modes[(number + 1) % 2], log, snapshot_id)
    assert out["outcome"] == "ok", out
    console_history, console_ran = at_the_console
    assert out["messages"] == console_history
    assert collections.Counter(worker.read_log(log)) == collections.Counter(console_ran) == collections.Counter(RAN)
    for number, snapshot_id in enumerate(seen):  # nothing resumes twice; no call ran again
        ended = number == len(seen) - 1  # the run finished from its last pause; the earlier ones were resumed
        expected = "SnapshotFinishedError" if ended else "SnapshotResumedError"  # SnapshotUnavailableErrors, code 2
        assert steps(store_url, modes[number % 2], log, snapshot_id)["type"] == expected
    assert collections.Counter(worker.read_log(log)) == collections.Counter(RAN)


# ----------------------------------------------------------------------------- decisions belong to their step


@pytest.fixture
def calls_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "calls.jsonl"
    monkeypatch.setenv(worker.LOG_ENV, str(path))
    yield path


def _paused(agent: Agent, **kwargs: Any) -> HITLBreakpointException:
    with pytest.raises(HITLBreakpointException) as caught:
        agent.run(**kwargs)
    return caught.value


def _pausing_agent(folder: Path, replies: list[ChatMessage]) -> Agent:
    return Agent(
        chat_generator=ScriptedChatGenerator(replies),
        tools=worker.tools(),
        confirmation_strategies={n: BreakpointConfirmationStrategy(str(folder)) for n in worker.APPROVED},
    )


def test_a_decision_without_a_call_id_answers_only_the_step_it_was_given_for(tmp_path: Path, calls_log: Path) -> None:
    """A later call of the same tool pauses again: the earlier step's decision is spent, not reused."""
    folder = tmp_path / "approvals"
    first = asst(calls=[("c1", "lookup", {"query": "rent"})])
    again = asst(calls=[("c2", "lookup", {"query": "due date"})])
    paused = _paused(_pausing_agent(folder, [first]), messages=[worker.QUESTION])
    assert paused.snapshot is not None
    snapshot = open_snapshot_store(str(folder)).load(paused.snapshot.snapshot_id or "")
    decided = [ToolExecutionDecision("lookup", execute=True)]  # no tool_call_id: the one lookup call of the step
    agent = _pausing_agent(folder, [again, asst("done")])
    second = _paused(agent, messages=[], snapshot=dataclasses.replace(snapshot, tool_execution_decisions=decided))
    assert second.tool_call_ids == ["c2"]
    assert second.snapshot is not None and second.snapshot.tool_execution_decisions == []
    assert worker.read_log(calls_log) == [("lookup", "rent")]


def test_a_record_that_still_carries_an_earlier_steps_decision_resumes(tmp_path: Path, calls_log: Path) -> None:
    """Records written before the fix carry the spent decision into the next pause; they resume, nothing reruns."""
    folder = tmp_path / "approvals"
    replies = worker.SCRIPT[:2]
    paused = _paused(_pausing_agent(folder, replies[:1]), messages=[worker.QUESTION])
    first_id = paused.snapshot.snapshot_id if paused.snapshot else None
    assert first_id is not None
    store = open_snapshot_store(str(folder))
    approve = ToolExecutionDecision("lookup", execute=True, tool_call_id="c1")
    store.record_decision(first_id, approve, decided_by="ann")
    second = _paused(_pausing_agent(folder, replies[1:]), messages=[], snapshot=store.load(first_id))
    second_id = second.snapshot.snapshot_id if second.snapshot else None
    assert second_id is not None
    path = folder / f"{second_id}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["tool_execution_decisions"] = [{**approve.to_dict(), "decided_by": "ann"}]  # as older versions wrote it
    path.write_text(json.dumps(data), encoding="utf-8")
    stale = store.load(second_id)
    assert [d.tool_call_id for d in stale.tool_execution_decisions] == ["c1"]
    store.record_decision(second_id, ToolExecutionDecision("calc", execute=True, tool_call_id="c2"), decided_by="bo")
    agent = _pausing_agent(folder, [asst("1200")])
    result = asyncio.run(agent.run_async(messages=[], snapshot=store.load(second_id)))
    assert result["last_message"].text == "1200"
    assert worker.read_log(calls_log) == [("lookup", "rent"), ("calc", "2*600")]
    with pytest.raises(SnapshotUnavailableError):
        agent.run(messages=[], snapshot=store.load(second_id))
