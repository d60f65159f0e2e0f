"""C13 — approve, edit, reject after a pause, each resume in a fresh process from its own copy of the snapshot.

The first run pauses in a worker process (``tests.components.agents.durable_worker``); four more workers
each load a copy of the snapshot file and resume it with one decision for ``c1``. Every worker logs its
tool calls to its own file and reports what the scripted model was given.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from handrail.dataclasses import ChatMessage, ChatRole
from handrail.human_in_the_loop.snapshots import list_pending
from tests.cases._helpers import result_for
from tests.components.agents import durable_worker as worker

DECISIONS: dict[str, dict[str, Any]] = {
    "confirm": {"execute": True},
    "modify": {"execute": True, "final_tool_params": {"amount": 5}},
    "reject": {"execute": False, "feedback": "too much"},
    "invalid": {"execute": True, "final_tool_params": {"amount": "lots"}},
}


def _calls(log: Path) -> list[tuple[str, Any]]:
    return [(entry["tool"], entry["amount"]) for entry in worker.read_log(log)]


def _seen(out: dict[str, Any]) -> list[ChatMessage]:
    """What the model was given at its one call of the resumed run."""
    assert len(out["model_inputs"]) == 1, out["model_inputs"]
    return [ChatMessage.from_dict(m) for m in out["model_inputs"][0]]


@pytest.fixture(scope="module")
def resumed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Pause once, then resume four copies of the snapshot in four fresh processes (in parallel)."""
    root = tmp_path_factory.mktemp("c13")
    paused = worker.finish(worker.start("pause", dir=root / "paused", log=root / "paused.jsonl"))
    assert paused["outcome"] == "paused", paused
    source = Path(paused["snapshot"])
    processes = {}
    for name, decision in DECISIONS.items():
        (root / name).mkdir()
        copy = root / name / source.name
        shutil.copy2(source, copy)
        processes[name] = worker.start(
            "resume", dir=root / name, log=root / f"{name}.jsonl", snapshot=copy, decision=decision
        )
    try:
        outs = {name: worker.finish(process) for name, process in processes.items()}
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.kill()
                process.communicate()
    return {"root": root, "paused": paused, "source": source, "outs": outs}


def _status(path: Path) -> str:
    status: str = json.loads(path.read_text())["status"]
    return status


def test_the_first_run_pauses_before_the_transfer(resumed: dict[str, Any]) -> None:
    root, paused, source = resumed["root"], resumed["paused"], resumed["source"]
    assert paused["tool_call_ids"] == ["c1"]
    assert _calls(root / "paused.jsonl") == []
    assert source.parent == root / "paused" and _status(source) == "paused"
    pending = list_pending(source.parent)
    assert [(p.snapshot_id, p.tool_call_id, p.arguments) for p in pending] == [(source.stem, "c1", {"amount": 10})]


def test_confirm_runs_the_transfer_once(resumed: dict[str, Any]) -> None:
    out, root = resumed["outs"]["confirm"], resumed["root"]
    assert out["outcome"] == "ok", out
    assert out["answer"] == "Transfer done"
    assert _calls(root / "confirm.jsonl") == [("transfer", 10)]
    result = result_for(_seen(out), "c1")
    assert (result.result, result.error) == ("sent 10", False)
    assert _status(root / "confirm" / resumed["source"].name) == "done"
    assert list_pending(root / "confirm") == []


def test_modify_runs_the_edited_transfer_once_and_tells_the_model(resumed: dict[str, Any]) -> None:
    out, root = resumed["outs"]["modify"], resumed["root"]
    assert out["outcome"] == "ok", out
    assert out["answer"] == "Transfer done"
    assert _calls(root / "modify.jsonl") == [("transfer", 5)]
    seen = _seen(out)
    assert result_for(seen, "c1").result == "sent 5"
    explained = [m.text or "" for m in seen if m.role is ChatRole.USER and "updated by the user" in (m.text or "")]
    assert len(explained) == 1, [m.to_dict() for m in seen]
    assert "transfer" in explained[0] and "amount" in explained[0] and "5" in explained[0]
    assert _status(root / "modify" / resumed["source"].name) == "done"


def test_reject_does_not_run_and_the_model_sees_the_feedback(resumed: dict[str, Any]) -> None:
    out, root = resumed["outs"]["reject"], resumed["root"]
    assert out["outcome"] == "ok", out
    assert out["answer"] == "Transfer done"
    assert _calls(root / "reject.jsonl") == []
    result = result_for(_seen(out), "c1")
    assert result.error is True
    assert "Tool execution for 'transfer' was rejected by the user." in result.result
    assert "too much" in result.result
    assert _status(root / "reject" / resumed["source"].name) == "done"


def test_an_edit_that_fails_the_schema_is_refused_before_anything_runs(resumed: dict[str, Any]) -> None:
    out, root = resumed["outs"]["invalid"], resumed["root"]
    assert out["outcome"] == "error", out
    assert "ConfigurationError" in out["types"]
    assert "refused" in out["message"] and "'c1'" in out["message"] and "'lots'" in out["message"]
    assert out["model_inputs"] == []
    assert _calls(root / "invalid.jsonl") == []
    copy = root / "invalid" / resumed["source"].name
    assert _status(copy) == "paused"  # nothing was decided: the snapshot can still be resumed
    assert [p.tool_call_id for p in list_pending(copy.parent)] == ["c1"]


def test_the_original_snapshot_is_untouched_by_the_resumes_of_its_copies(resumed: dict[str, Any]) -> None:
    assert _status(resumed["source"]) == "paused"
    assert [p.tool_call_id for p in list_pending(resumed["source"].parent)] == ["c1"]


def test_each_copy_is_resumed_from_its_own_directory(resumed: dict[str, Any]) -> None:
    root = resumed["root"]
    for name in ("confirm", "modify", "reject"):
        files = [p.name for p in (root / name).glob("*.json")]
        assert files == [resumed["source"].name], (name, files)
