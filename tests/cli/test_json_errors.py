"""``--json`` prints every error of ``handrail run`` / ``resume`` as one JSON object on stdout, same exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from handrail.cli import main
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.dataclasses.snapshot import write_snapshot
from tests.cli.test_cli import BROKEN_STREAM
from tests.human_in_the_loop.test_snapshots import paused_snapshot
from tests.specs.test_agent_spec import scripted_generator_yaml

CALL = [
    ChatMessage.from_assistant(tool_calls=[ToolCall("search", {"query": "x"}, "c1")]),
    ChatMessage.from_assistant("ok"),
]


def _setup(tmp: Path) -> dict[str, Path]:
    agent = tmp / "agent.yaml"
    agent.write_text(scripted_generator_yaml(CALL) + "\ntools: [search]\nconfirmation: {search: always}\n")
    bad = tmp / "bad.yaml"
    bad.write_text("tools: [calculator]\nmax_agent_steps: true\n")
    (tmp / "broken_stream_gen.py").write_text(BROKEN_STREAM)
    broken = tmp / "broken.yaml"
    broken.write_text("generator:\n  type: broken_stream_gen.BrokenStream\nallowed_modules: [broken_stream_gen]\n")
    snaps = tmp / "snaps"
    write_snapshot(paused_snapshot(), snaps / "s1.json")
    write_snapshot(paused_snapshot(status="resumed", continued_in="s9.json"), snaps / "old.json")
    return {"agent": agent, "bad": bad, "broken": broken, "snaps": snaps, "missing": tmp / "missing.yaml"}


CASES: list[tuple[str, list[str], str, int]] = [
    ("empty question", ["run", "{agent}", "  "], "UsageError", 2),
    ("no agent file", ["run", "{missing}", "q"], "SpecError", 2),
    ("a bad agent file", ["run", "{bad}", "q"], "SpecError", 2),
    ("temporal flag alone", ["run", "--task-queue", "q1", "{agent}", "q"], "UsageError", 2),
    ("two ways to approve", ["run", "--approve", "all", "--pause-for-approval", "{snaps}", "{agent}", "q"],
     "UsageError", 2),
    ("two models", ["run", "--model", "small", "--openai-base-url", "http://127.0.0.1:9", "{agent}", "q"],
     "UsageError", 2),
    ("asking without a terminal", ["run", "{agent}", "q"], "UsageError", 2),
    ("a model that fails", ["run", "{broken}", "q"], "GenerationError", 1),
    ("a store that cannot be opened", ["run", "--pause-for-approval", "nosuch://x", "{agent}", "q"], "UsageError", 2),
    ("an unknown snapshot", ["resume", "nope", "--dir", "{snaps}"], "UsageError", 2),
    ("a snapshot resumed already", ["resume", "old", "--dir", "{snaps}"], "SnapshotResumedError", 2),
    ("a snapshot without its agent file", ["resume", "s1", "--dir", "{snaps}"], "UsageError", 2),
    ("no such directory", ["resume", "s1", "--dir", "{missing}"], "UsageError", 2),
]  # fmt: skip


def _invoke(args: list[str], paths: dict[str, Path], as_json: bool) -> Result:
    filled = [a.format(**paths) for a in args]
    return CliRunner().invoke(main, [filled[0], *(["--json"] if as_json else []), *filled[1:]])


@pytest.mark.parametrize(("args", "kind", "code"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_every_error_is_one_json_object_with_the_same_exit_code(tmp_path: Path, args: list[str], kind: str,
                                                                 code: int) -> None:  # fmt: skip
    paths = _setup(tmp_path)
    plain = _invoke(args, paths, as_json=False)
    assert plain.exit_code == code, plain.output
    result = _invoke(args, paths, as_json=True)
    assert result.exit_code == code, result.output
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout  # one object, nothing else on stdout
    error = json.loads(lines[0])["error"]
    assert error["type"] == kind
    assert error["message"] and "Traceback" not in result.output
    assert "error:" not in result.stderr  # the error is the JSON object, not a line on stderr too
