"""The ledger records the text the model was given for each finished call, so a resumed run gives the same history.

A result whose value the snapshot cannot hold (an int JSON cannot write, a to_dict() that raises) is dropped from
the record; its text (here the "could not be turned into text" error result) is what replay gives the model.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.errors import StringConversionError
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.stores import open_snapshot_store
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function
from tests.cases._helpers import user
from tests.components._helpers import run_in_mode


class _Broken:
    def to_dict(self) -> dict[str, Any]:
        raise RuntimeError("boom")


VALUES: dict[str, Any] = {"huge": 10**5000, "broken": _Broken()}


def _agent(value: Any, store_url: str | None, to_state: bool) -> Agent:
    def bad(q: str) -> dict[str, Any]:
        """Return a value the snapshot cannot hold.

        Args:
            q: Ignored.
        """
        return {"v": value, "text": "hi"}

    def search(query: str) -> str:
        """Search.

        Args:
            query: Ignored.
        """
        return "ok"

    replies = [
        ChatMessage.from_assistant(
            tool_calls=[ToolCall("bad", {"q": "x"}, id="b1"), ToolCall("search", {"query": "z"}, id="s0")]
        ),
        ChatMessage.from_assistant("done"),
    ]  # fmt: skip
    outputs = {"big": {"source": "v"}} if to_state else None
    tools = [create_tool_from_function(bad, outputs_to_state=outputs), create_tool_from_function(search)]
    strategies = {} if store_url is None else {"search": BreakpointConfirmationStrategy(snapshot_store=store_url)}
    return Agent(chat_generator=ScriptedChatGenerator(replies), tools=tools,
                 state_schema={"big": {"type": object}}, confirmation_strategies=strategies)  # fmt: skip


def _history(result: dict[str, Any]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for m in result["messages"]:
        r = m.tool_call_result
        out.append((m.role, m.text, None if r is None else (r.origin.id, r.result, r.error)))
    return out


def _paused_and_resumed(
    value: Any, store_url: str, mode: str, to_state: bool, raise_on_failure: bool = False
) -> dict[str, Any]:
    with pytest.raises(HITLBreakpointException):
        run_in_mode(_agent(value, store_url, to_state), mode, [user("q")])
    store = open_snapshot_store(store_url)
    sid = store.list_pending()[0].snapshot_id
    store.record_decision(sid, ToolExecutionDecision("search", execute=True, tool_call_id="s0", decided_by="t"))
    entry = store.load(sid).ledger["b1"]
    assert entry.status == "done" and entry.result is not None
    assert isinstance(entry.result["text"], str) and entry.result["error"] is True and "value" not in entry.result
    resumed = _agent(value, store_url, to_state)
    resumed.raise_on_tool_invocation_failure = raise_on_failure
    resumed.chat_generator = ScriptedChatGenerator([ChatMessage.from_assistant("done")])  # type: ignore[misc]
    return run_in_mode(resumed, mode, [], snapshot=store.load(sid))


@pytest.fixture(params=["directory", "sqlite"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return str(tmp_path / "snaps") if request.param == "directory" else f"sqlite:///{tmp_path / 'snaps.db'}"


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("kind", sorted(VALUES))
def test_a_resumed_run_gives_the_model_the_result_text_an_unpaused_run_gives(
    kind: str, mode: str, store_url: str
) -> None:
    # The ledger recorded {"text": null} for a result it could not write, and replay gave the model 'None'.
    unpaused = _history(run_in_mode(_agent(VALUES[kind], None, False), mode, [user("q")]))
    assert any(h[2] is not None and h[2][0] == "b1" and "could not be turned into text" in h[2][1] for h in unpaused)
    assert _history(_paused_and_resumed(VALUES[kind], store_url, mode, False)) == unpaused


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_dropped_value_that_outputs_to_state_needed_is_named_and_the_history_still_matches(
    mode: str, store_url: str
) -> None:
    unpaused = run_in_mode(_agent(VALUES["huge"], None, True), mode, [user("q")])
    assert unpaused["big"] == 10**5000  # without a pause the value reaches State
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        resumed = _paused_and_resumed(VALUES["huge"], store_url, mode, True)
    assert any("call 'b1' to 'bad' holds no value to merge into State" in str(w.message) for w in caught)
    assert resumed.get("big") is None  # it cannot be restored after a pause: the warning says so
    assert _history(resumed) == _history(unpaused)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_recorded_error_text_raises_on_resume_when_tool_failures_raise(mode: str, store_url: str) -> None:
    unpaused = _agent(VALUES["huge"], None, False)
    unpaused.raise_on_tool_invocation_failure = True
    with pytest.raises(StringConversionError, match="could not be turned into text") as first:
        run_in_mode(unpaused, mode, [user("q")])
    with pytest.raises(StringConversionError) as replayed:
        _paused_and_resumed(VALUES["huge"], store_url, mode, False, raise_on_failure=True)
    assert str(replayed.value) == f"{first.value} (call 'b1')"
