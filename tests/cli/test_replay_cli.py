"""``handrail run --record`` and ``handrail replay``: a round trip with the scripted model, a changed agent file
reported with a diff (exit 1), a damaged recording refused naming its line (exit 2), a pause and its resume."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import Result

from handrail.dataclasses import ChatMessage, ToolCall
from tests.cli.test_approvals import cli, last_json, no_traceback
from tests.specs.test_agent_spec import scripted_generator_yaml

CALC_THEN_ANSWER = [
    ChatMessage.from_assistant(tool_calls=[ToolCall("calculator", {"expression": "17 * 23"}, "c1")]),
    ChatMessage.from_assistant("17 × 23 = 391."),
]


def agent_yaml(path: Path, replies: list[ChatMessage], prompt: str = "You compute.", extra: str = "") -> Path:
    path.write_text(scripted_generator_yaml(replies) + f"\ntools: [calculator]\nsystem_prompt: {prompt}\n" + extra,
                    encoding="utf-8")  # fmt: skip
    return path


def recorded(tmp_path: Path) -> tuple[Path, Path]:
    agent = agent_yaml(tmp_path / "agent.yaml", CALC_THEN_ANSWER)
    record = tmp_path / "run.jsonl"
    out = cli("run", "--record", record, agent, "What is 17*23?")
    assert out.exit_code == 0, out.output
    return agent, record


def replayed(*args: str | Path) -> Result:
    result = cli("replay", *args)
    no_traceback(result)
    return result


def test_a_recorded_run_replays_identically_with_the_agent_file_named_in_the_recording(tmp_path: Path) -> None:
    agent, record = recorded(tmp_path)
    header = json.loads(record.read_text().splitlines()[0])
    assert header["metadata"]["agent_file"] == str(agent.resolve()) and header["metadata"]["approve"] == "ask"

    agent.write_text("not: [an agent file", encoding="utf-8")  # the model replies come from the recording, and
    agent_yaml(tmp_path / "other.yaml", [])  # the agent file may script none
    out = replayed(record, "--agent", tmp_path / "other.yaml")
    assert out.exit_code == 0, out.output
    assert "3 effects matched over 2 model calls: replayed identically." in out.output


def test_a_changed_system_prompt_is_reported_at_the_first_model_call_with_a_diff(tmp_path: Path) -> None:
    agent, record = recorded(tmp_path)
    agent_yaml(agent, [], prompt="You compute, carefully.")

    out = replayed(record)
    assert out.exit_code == 1, out.output
    assert "0 effects matched over 0 model calls." in out.output
    assert "Diverged at step 1, effect 1 (recording line 3): model input" in out.output
    assert '-          "text": "You compute."' in out.output.splitlines()
    assert '+          "text": "You compute, carefully."' in out.output.splitlines()


def test_a_damaged_recording_is_refused_naming_the_line_with_exit_code_2(tmp_path: Path) -> None:
    _, record = recorded(tmp_path)
    text = record.read_text().splitlines()
    text[2] = text[2][: len(text[2]) // 2]  # cut off mid-line
    record.write_text("\n".join(text) + "\n")

    out = replayed(record)
    assert out.exit_code == 2
    assert f"{record}, line 3: not JSON" in out.output


def test_a_recording_without_an_agent_file_or_a_missing_file_exits_2(tmp_path: Path) -> None:
    missing = replayed(tmp_path / "none.jsonl")
    assert missing.exit_code == 2 and "cannot read the recording" in missing.output
    bare = tmp_path / "bare.jsonl"
    bare.write_text('{"kind": "header", "format": 1, "metadata": {}}\n{"kind": "run", "input": {"messages": []}}\n'
                    '{"kind": "end", "outcome": "done"}\n')  # fmt: skip
    out = replayed(bare)
    assert out.exit_code == 2 and "pass --agent AGENT.yaml" in out.output


def test_record_does_not_go_with_temporal(tmp_path: Path) -> None:
    agent = agent_yaml(tmp_path / "agent.yaml", [])
    out = cli("run", "--temporal", "localhost:7233", "--task-queue", "q", "--store", "sqlite:///x.db", "--record",
              tmp_path / "r.jsonl", agent, "q")  # fmt: skip
    assert out.exit_code == 2 and "--record does not apply with --temporal" in out.output


def test_a_paused_run_and_its_resume_are_recorded_to_one_file_and_replay_identically(tmp_path: Path) -> None:
    confirm = "confirmation:\n  calculator: always\n"
    agent = agent_yaml(tmp_path / "agent.yaml", CALC_THEN_ANSWER, extra=confirm)
    folder, record = tmp_path / "approvals", tmp_path / "run.jsonl"
    paused = cli("run", "--json", "--pause-for-approval", folder, "--record", record, agent, "What is 17*23?")
    assert paused.exit_code == 4, paused.output
    sid = last_json(paused)["snapshot_id"]
    assert cli("approvals", "approve", sid, "--dir", folder, "--by", "ann").exit_code == 0
    agent_yaml(agent, CALC_THEN_ANSWER[1:], extra=confirm)  # the scripted model restarts in the new process
    done = cli("resume", sid, "--dir", folder, "--record", record)
    assert done.exit_code == 0, done.output

    kinds = [json.loads(line)["kind"] for line in record.read_text().splitlines()]
    assert kinds.count("header") == 1 and kinds.count("run") == 2 and kinds[-1] == "end"
    resumed = [json.loads(line) for line in record.read_text().splitlines() if '"kind":"run"' in line][1]
    assert resumed["resumed_from"] == sid and resumed["decisions"][0]["decided_by"] == "ann"

    out = replayed(record)
    assert out.exit_code == 0, out.output
    assert "(2 runs)" in out.output and "replayed identically" in out.output


def test_a_record_file_in_a_missing_directory_exits_2_before_the_run(tmp_path: Path) -> None:
    agent = agent_yaml(tmp_path / "agent.yaml", CALC_THEN_ANSWER)
    out = cli("run", "--record", tmp_path / "no" / "run.jsonl", agent, "q")
    no_traceback(out)
    assert out.exit_code == 2 and "does not exist; create it first" in out.output
    assert "391" not in out.output
