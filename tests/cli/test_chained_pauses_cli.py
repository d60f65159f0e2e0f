"""The command line through a run that pauses at four steps: every pause is decided and resumed as the CLI says.

The agent file is the chained run of ``tests.cases.chained_worker`` (``lookup`` and ``calc`` need approval,
``note`` does not). Each pause is approved, rejected or edited with ``handrail approvals``, and the run continues
with the resume command the decision printed (the agent file rewritten with the replies still to come: its scripted
model restarts in every command). The final history is that of the same agent file run with ``--approve ask``
answered the same way, and every call that ran, ran once.
"""

from __future__ import annotations

import collections
import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from handrail.dataclasses.decisions import ConfirmationUIResult
from handrail.specs import build_agent, load_agent_spec
from tests.cases import chained_worker as worker
from tests.cases.test_chained_pauses import PLAN, RAN, ScriptedUI
from tests.cli.test_approvals import cli, last_json
from tests.specs.test_agent_spec import scripted_generator_yaml

_TOOLS = ", ".join(f"tests.cases.chained_worker.{name}" for name in ("lookup", "calc", "note"))


def chained_yaml(path: Path, model_calls: int = 0) -> Path:
    """The chained agent file, its scripted model starting after ``model_calls`` replies."""
    path.write_text(
        scripted_generator_yaml(worker.SCRIPT[model_calls:]) + f"\ntools: [{_TOOLS}]\nallowed_modules: [tests.cases]\n"
        "confirmation:\n  lookup: always\n  calc: always\n  note: never\n",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def calls_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "calls.jsonl"
    monkeypatch.setenv(worker.LOG_ENV, str(path))
    return path


def _decide(folder: Path, snapshot_id: str, call_id: str, answer: ConfirmationUIResult) -> Any:
    args = ["approvals", "reject" if answer.action == "reject" else "approve", snapshot_id, "--dir", folder]
    args += ["--call", call_id, "--by", "ann"]
    if answer.feedback:
        args += ["--feedback", answer.feedback]
    if answer.new_tool_params is not None:
        args += ["--edit", json.dumps(answer.new_tool_params)]
    return cli(*args)


def test_four_pauses_decided_and_resumed_as_printed_end_as_at_the_console(tmp_path: Path, calls_log: Path) -> None:
    agent_file = chained_yaml(tmp_path / "agent.yaml")
    folder = tmp_path / "approvals"
    out = cli("run", "--json", "--pause-for-approval", folder, agent_file, worker.QUESTION.text or "")
    for number, answers in enumerate(PLAN):
        assert out.exit_code == 4, (number, out.output)
        paused = last_json(out)
        waiting = [(c["id"], c["tool_name"]) for c in paused["pending_tool_calls"]]
        assert [tool for _, tool in waiting] == [tool for tool, _ in answers], (number, waiting)
        sid = paused["snapshot_id"]
        for (call_id, _), (_, answer) in zip(waiting, answers, strict=True):
            decided = _decide(folder, sid, call_id, answer)
            assert decided.exit_code == 0, decided.output
        hint = decided.output.rpartition("Continue the run with: ")[2].strip()
        assert hint.startswith(f"handrail resume {sid} "), decided.output
        shown = last_json(cli("approvals", "show", sid, "--dir", folder, "--json"))
        chained_yaml(agent_file, shown["model_calls"])
        out = cli(*shlex.split(hint)[1:], "--json")
    assert out.exit_code == 0, out.output
    assert collections.Counter(worker.read_log(calls_log)) == collections.Counter(RAN)

    console_log = tmp_path / "console.jsonl"
    calls_log.rename(console_log)
    said = [answer for pause in PLAN for _, answer in pause]
    spec = load_agent_spec(chained_yaml(tmp_path / "console.yaml"))
    agent = build_agent(spec, base_dir=tmp_path, approve="ask", confirmation_ui=ScriptedUI(said))
    expected = agent.run([worker.QUESTION])
    assert last_json(out)["messages"] == [m.to_dict() for m in expected["messages"]]
    assert collections.Counter(worker.read_log(calls_log)) == collections.Counter(RAN)
