"""``handrail run --record`` / ``resume --record`` / ``replay``: what they mask by default (and the replay masks the
same way), the files they refuse before the run (exit 2), a fresh recording on each run, recordings cut short."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_approvals import cli, no_traceback
from tests.cli.test_replay_cli import CALC_THEN_ANSWER, agent_yaml, recorded, replayed

KEY = "sk-proj-" + "ABCDEFGHIJ" * 3


def test_a_recording_holds_no_key_like_string_and_replays_identically(tmp_path: Path) -> None:
    agent = agent_yaml(tmp_path / "agent.yaml", CALC_THEN_ANSWER, prompt=f"You compute. Internal key {KEY}")
    record = tmp_path / "run.jsonl"
    assert cli("run", "--record", record, agent, f"What is 17*23? my key is {KEY}").exit_code == 0
    assert KEY not in record.read_text() and "[REDACTED]" in record.read_text()
    header = json.loads(record.read_text().splitlines()[0])
    assert header["redacted"] is True and header["redaction"] == ["default"]

    out = replayed(record)
    assert out.exit_code == 0, out.output
    assert "replayed identically" in out.output
    agent_yaml(agent, [], prompt=f"You compute, carefully. Internal key {KEY}")
    changed = replayed(record)
    assert changed.exit_code == 1 and "carefully" in changed.output and KEY not in changed.output


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_record_file_that_cannot_be_written_exits_2_naming_it_before_the_run(tmp_path: Path) -> None:
    agent = agent_yaml(tmp_path / "agent.yaml", CALC_THEN_ANSWER)
    out = cli("run", "--record", "/dev/full", agent, "q")
    no_traceback(out)
    assert out.exit_code == 2 and "cannot write '/dev/full'" in out.output
    assert "391" not in out.output


def test_run_record_starts_a_fresh_recording_and_refuses_a_file_that_is_not_one(tmp_path: Path) -> None:
    agent, record = recorded(tmp_path)
    again = cli("run", "--approve", "all", "--record", record, agent, "What is 17*23?")
    assert again.exit_code == 0, again.output
    kinds = [json.loads(line)["kind"] for line in record.read_text().splitlines()]
    assert kinds.count("header") == 1 and kinds.count("run") == 1
    assert replayed(record).exit_code == 0

    precious = tmp_path / "precious.txt"
    precious.write_text("precious data\n")
    out = cli("run", "--record", precious, agent, "What is 17*23?")
    no_traceback(out)
    assert out.exit_code == 2 and "is not a handrail recording" in out.output and "391" not in out.output
    assert precious.read_text() == "precious data\n"


def test_resume_record_refuses_to_append_to_a_file_that_is_not_a_recording(tmp_path: Path) -> None:
    confirm = "confirmation:\n  calculator: always\n"
    agent = agent_yaml(tmp_path / "agent.yaml", CALC_THEN_ANSWER, extra=confirm)
    folder = tmp_path / "approvals"
    paused = cli("run", "--json", "--pause-for-approval", folder, agent, "What is 17*23?")
    assert paused.exit_code == 4, paused.output
    sid = json.loads(paused.output.strip().splitlines()[-1])["snapshot_id"]
    precious = tmp_path / "precious.txt"
    precious.write_text("precious data\n")
    out = cli("resume", sid, "--dir", folder, "--record", precious)
    no_traceback(out)
    assert out.exit_code == 2 and "is not a handrail recording" in out.output
    assert precious.read_text() == "precious data\n"


def test_a_recording_cut_short_or_without_a_run_exits_2(tmp_path: Path) -> None:
    agent, record = recorded(tmp_path)
    text = record.read_text().splitlines()
    record.write_text("\n".join(text[:3]) + "\n")
    out = replayed(record)
    assert out.exit_code == 2 and "the recording stops after line 3 (no end line" in out.output
    record.write_text(text[0] + "\n")
    out = replayed(record)
    assert out.exit_code == 2 and "no run in it" in out.output
    missing = json.loads(text[2])
    del missing["result"]
    record.write_text("\n".join([*text[:2], json.dumps(missing), *text[3:]]) + "\n")
    out = replayed(record, "--agent", agent)
    assert out.exit_code == 2 and "line 3: an effect line has no 'result'" in out.output
