"""``handrail run -v`` / ``-vv`` / ``--log-json`` and ``handrail resume -v``: the run's log records on stderr."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from handrail.cli import main
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.dataclasses.snapshot import load_snapshot
from tests.cli.test_approvals import DONE, LOG_ENV, PAY, agent_yaml
from tests.cli.test_cli import CALC_THEN_ANSWER, agent_file

TIME = r"\d\d:\d\d:\d\d"


def cli(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def test_dash_v_prints_one_line_per_model_and_tool_call_on_stderr(tmp_path: Path) -> None:
    result = cli("run", "-v", agent_file(tmp_path, CALC_THEN_ANSWER), "What is 17*23?")
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert re.fullmatch(rf"{TIME} run [0-9a-f]{{32}} started model=scripted-model", lines[0]), lines
    assert re.fullmatch(rf"{TIME} step 1 chat scripted-model \d+\.\d\ds", lines[1]), lines
    assert re.fullmatch(rf"{TIME} tool calculator c1 ok \d+\.\d\ds", lines[2]), lines
    assert re.fullmatch(rf"{TIME} run [0-9a-f]{{32}} done exit=text steps=2 \d+\.\d\ds", lines[-1]), lines
    assert "17 * 23" not in result.stderr  # no arguments at -v
    assert "run " not in result.stdout and "391" in result.stdout  # the answer on stdout, the logs not


def test_dash_vv_adds_the_debug_records(tmp_path: Path) -> None:
    result = cli("run", "-vv", agent_file(tmp_path, CALC_THEN_ANSWER), "q")
    assert result.exit_code == 0, result.output
    assert re.search(rf'^{TIME} tool calculator c1 arguments {{"expression": "17 \* 23"}}$', result.stderr, re.M)
    assert re.search(rf'^{TIME} tool calculator c1 result "391"$', result.stderr, re.M)


def test_with_json_stdout_holds_only_the_json_object(tmp_path: Path) -> None:
    result = cli("run", "-v", "--json", agent_file(tmp_path, CALC_THEN_ANSWER), "q")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["answer"] == "17 × 23 = 391."  # the whole of stdout is the one object
    assert "step 1 chat" in result.stderr


def test_log_json_writes_one_object_per_record(tmp_path: Path) -> None:
    result = cli("run", "-v", "--log-json", agent_file(tmp_path, CALC_THEN_ANSWER), "q")
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stderr.splitlines()]
    assert [r["event"] for r in records] == ["run_started", "model_call", "tool_call", "model_call", "run_ended"]
    assert len({r["run_id"] for r in records}) == 1
    tool = records[2]
    assert (tool["logger"], tool["tool_call_id"], tool["step"], tool["ok"]) == ("handrail.run.tool", "c1", 1, True)
    assert cli("run", "--log-json", agent_file(tmp_path, CALC_THEN_ANSWER), "q").exit_code == 2  # needs -v


def test_without_dash_v_nothing_is_logged_and_the_logger_is_left_as_it_was(tmp_path: Path) -> None:
    result = cli("run", agent_file(tmp_path, CALC_THEN_ANSWER), "q")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert cli("run", "-vv", agent_file(tmp_path, CALC_THEN_ANSWER), "q").exit_code == 0
    logger = logging.getLogger("handrail.run")
    assert logger.level == logging.NOTSET and not any(isinstance(h, logging.StreamHandler) and
                                                      not isinstance(h, logging.NullHandler)
                                                      for h in logger.handlers)  # fmt: skip


def test_a_line_escapes_control_characters() -> None:
    from handrail.cli._verbose import LineFormatter

    message = ("tool t c1 error: %s", ("a\n\x1b[2J",))
    record = logging.LogRecord("handrail.run.tool", logging.WARNING, __file__, 1, *message, None)
    line = LineFormatter().format(record)
    assert re.fullmatch(rf"{TIME} warning: tool t c1 error: a\\n\\x1b\[2J", line), line


def test_a_failing_tool_is_a_warning_line(tmp_path: Path) -> None:
    bad = [ChatMessage.from_assistant(tool_calls=[ToolCall("calculator", {"expression": "1/0"}, "c1")]),
           ChatMessage.from_assistant("no")]  # fmt: skip
    result = cli("run", "-v", agent_file(tmp_path, bad), "q")
    assert result.exit_code == 0, result.output
    assert re.search(rf"^{TIME} warning: tool calculator c1 error \d+\.\d\ds: ", result.stderr, re.M), result.stderr


def test_a_pause_and_its_resume_log_the_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LOG_ENV, str(tmp_path / "transfers.log"))  # where the transfer tool writes
    agent = agent_yaml(tmp_path / "agent.yaml", [PAY])
    folder = tmp_path / "approvals"
    paused = cli("run", "-v", "--json", "--pause-for-approval", folder, agent, "Pay the rent.")
    assert paused.exit_code == 4, paused.output
    snapshot_id = json.loads(paused.stdout)["snapshot_id"]
    assert f"paused at tool_invoker snapshot={snapshot_id} waiting=c1" in paused.stderr
    assert f"approval waiting: transfer c1 snapshot={snapshot_id}" in paused.stderr
    # the id the resume logs under (its chain's first snapshot: this one) is on the paused run's end line too
    assert re.search(rf"^{TIME} run \S+ paused steps=1 \d+\.\d\ds snapshot={snapshot_id} durable_run_id={snapshot_id}$",
                     paused.stderr, re.M)  # fmt: skip
    assert cli("approvals", "approve", snapshot_id, "--dir", folder, "--by", "alice").exit_code == 0
    agent_yaml(agent, [DONE])
    resumed = cli("resume", "-v", snapshot_id, "--dir", folder)
    assert resumed.exit_code == 0, resumed.output
    run_id = load_snapshot(folder / f"{snapshot_id}.json").run_id  # the durable id a resumed run logs from the start
    assert re.search(rf"^{TIME} run {run_id} started model=scripted-model resumed from {snapshot_id}$",
                     resumed.stderr, re.M), resumed.stderr  # fmt: skip
    assert re.search(rf"^{TIME} approval transfer c1 approved by alice \(given to the resumed run\)$", resumed.stderr,
                     re.M), resumed.stderr  # fmt: skip
    assert re.search(rf"^{TIME} tool transfer c1 ok ", resumed.stderr, re.M)
    assert re.search(rf"^{TIME} run {run_id} done exit=text ", resumed.stderr, re.M)
