"""Replay: a recording replays identically with no model, tool or person asked; a change (the system prompt, a tool
result, a decision point, the number of steps) is reported at the first effect that differs, with a diff."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.state import State
from handrail.errors import ReplayDivergedError
from handrail.hooks import RedactionHook, hook
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.stores import InMemoryChatMessageStore
from handrail.testing import ScriptedChatGenerator, call, read_recording, replay, reply, user
from handrail.tools import tool
from handrail.tracing.recording import Recorder, ReplayDriver

from ._replay_agents import Person, add, approve_reject_edit, approving_agent, lines, three_calls, write_lines


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    """A run with an approve, a reject and an edit."""
    path = tmp_path / "run.jsonl"
    approving_agent(three_calls(), approve_reject_edit()).run([user("Add them.")], recorder=path)
    return path


def fresh(**more: Any) -> Agent:
    """The same agent, with a model and a person that fail if asked anything."""
    return approving_agent([], Person([]), **more)


def test_a_run_with_an_approve_a_reject_and_an_edit_replays_identically(recorded: Path) -> None:
    agent = fresh()
    result = replay(recorded, agent)

    assert not result.diverged and result.divergence is None
    assert result.matched == 4 and result.steps == 2
    assert result.result is not None and result.result["last_message"].text == "Done."
    assert [m.role.value for m in result.result["messages"]].count("tool") == 3  # c1, the rejection of c2, c3
    assert agent.chat_generator.calls == []  # type: ignore[attr-defined]  # no model called
    assert result.report() == "4 effects matched over 2 model calls: replayed identically."


def test_a_changed_system_prompt_diverges_at_the_first_model_call_with_the_prompt_in_the_diff(recorded: Path) -> None:
    result = replay(recorded, fresh(prompt="You add numbers, politely."))

    divergence = result.divergence
    assert result.diverged and divergence is not None
    assert (divergence.step, divergence.effect, divergence.kind) == (1, 1, "model_input")
    assert divergence.line == 3  # header, run, then the first model call
    assert '-          "text": "You add numbers."' in divergence.diff.splitlines()
    assert '+          "text": "You add numbers, politely."' in divergence.diff.splitlines()
    assert result.matched == 0
    assert divergence.summary == "Diverged at step 1, effect 1 (recording line 3): model input differs (call_model)."


def test_a_changed_tool_result_diverges_at_the_next_model_call(recorded: Path) -> None:
    data = lines(recorded)
    tools_line = next(line for line in data if line.get("effect", {}).get("type") == "run_tools")
    tools_line["result"][0]["value"] = 4  # as if add(1, 2) had returned 4
    write_lines(recorded, data)

    divergence = replay(recorded, fresh()).divergence
    assert divergence is not None
    assert (divergence.step, divergence.kind, divergence.effect) == (2, "model_input", 4)
    assert '-            "result": "3"' in divergence.diff.splitlines()
    assert '+            "result": "4"' in divergence.diff.splitlines()


def test_a_decision_point_the_replayed_agent_does_not_have_diverges(recorded: Path) -> None:
    no_approvals = Agent(chat_generator=ScriptedChatGenerator([]), tools=[add], system_prompt="You add numbers.")
    divergence = replay(recorded, no_approvals).divergence

    assert divergence is not None
    assert (divergence.step, divergence.effect, divergence.kind) == (1, 2, "decision_point")
    assert divergence.expected is not None and divergence.expected["type"] == "ask_approval"
    assert divergence.actual is not None and divergence.actual["type"] == "run_tools"
    assert divergence.summary.endswith(": decision point: recorded ask_approval, replayed run_tools.")


def test_a_decision_point_the_recording_does_not_have_diverges(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    Agent(chat_generator=ScriptedChatGenerator(three_calls()), tools=[add], system_prompt="You add numbers.").run(
        [user("Add them.")], recorder=path
    )
    divergence = replay(path, fresh()).divergence
    assert divergence is not None and divergence.kind == "decision_point"
    assert (divergence.expected or {})["type"] == "run_tools" and (divergence.actual or {})["type"] == "ask_approval"


def test_a_recording_with_fewer_steps_than_the_run_diverges_on_the_number_of_steps(recorded: Path) -> None:
    data = lines(recorded)
    write_lines(recorded, [line for line in data if line.get("n") != 4])

    divergence = replay(recorded, fresh()).divergence
    assert divergence is not None
    assert (divergence.kind, divergence.effect, divergence.expected) == ("steps", 4, None)
    assert divergence.actual is not None and divergence.actual["type"] == "call_model"


def test_the_driver_raises_the_divergence_as_an_error(recorded: Path) -> None:
    recording = read_recording(recorded)
    agent = fresh(prompt="Another prompt.")
    with agent.start([user("Add them.")]) as run, pytest.raises(ReplayDivergedError) as caught:
        ReplayDriver(recording.runs[0]).drive(run)
    assert caught.value.divergence.kind == "model_input"  # type: ignore[attr-defined]
    assert str(caught.value).startswith("Diverged at step 1, effect 1")


def test_a_pause_and_its_resume_are_recorded_to_one_file_and_replayed(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"

    def agent(replies: list[Any]) -> Agent:
        return Agent(chat_generator=ScriptedChatGenerator(replies), tools=[add], system_prompt="You add numbers.",
                     confirmation_strategies={"add": BreakpointConfirmationStrategy(tmp_path / "snaps")})  # fmt: skip

    live = agent([reply(call("add", id="c1", a=1, b=2)), reply("3")])
    with pytest.raises(HITLBreakpointException) as paused:
        live.run([user("1+2?")], recorder=path)
    snapshot = paused.value.snapshot
    assert snapshot is not None
    decided = dataclasses.replace(snapshot, tool_execution_decisions=[
        ToolExecutionDecision("add", True, "c1", decided_by="ann")])  # fmt: skip
    live.run([], snapshot=decided, recorder=path)

    recording = read_recording(path)
    first, second = recording.runs
    assert first.end is not None and first.end["outcome"] == "paused"
    pause = first.effects[-1]
    assert pause["effect"] == {"type": "pause", "position": "tool_invoker", "held": ["c1"]}
    assert pause["snapshot_id"] == snapshot.snapshot_id
    assert second.resumed_from == snapshot.snapshot_id
    assert second.start["snapshot"]["tool_execution_decisions"][0]["decided_by"] == "ann"
    assert [(d["tool_call_id"], d["decided_by"]) for d in second.start["decisions"]] == [("c1", "ann")]
    assert second.end is not None and second.end["outcome"] == "done"
    assert [line["kind"] for line in lines(path)].count("header") == 1

    written = sorted((tmp_path / "snaps").rglob("*"))
    result = replay(path, agent([]))
    assert not result.diverged, result.report()
    assert result.steps == 2 and result.result is not None and result.result["last_message"].text == "3"
    assert sorted((tmp_path / "snaps").rglob("*")) == written  # the replay wrote no snapshot and no record


def test_a_redacted_recording_replays_with_the_same_redaction(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    token = "ghp_" + "A1b2C3d4E5" * 4
    Agent(chat_generator=ScriptedChatGenerator([reply("noted")])).run(
        [user(f"my token is {token}")], recorder=Recorder(path, redact=RedactionHook())
    )

    assert not replay(path, Agent(chat_generator=ScriptedChatGenerator([]))).diverged  # started from the
    # redacted input, the run's model input is the recorded one
    assert token not in path.read_text()


def test_the_agents_redaction_hook_masks_the_recording_and_the_replay_uses_it_too(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    token = "ghp_" + "Z9y8X7w6V5" * 4

    @tool
    def echo(text: str) -> str:
        """Says it back."""
        return text

    live = Agent(chat_generator=ScriptedChatGenerator([reply(call("echo", id="c1", text=token)), reply("ok")]),
                 tools=[echo], hooks={"after_tool": [RedactionHook()]})  # fmt: skip
    live.run([user("echo my token")], recorder=path)

    assert token not in path.read_text() and lines(path)[0]["redacted"] is True
    again = Agent(chat_generator=ScriptedChatGenerator([]), tools=[echo], hooks={"after_tool": [RedactionHook()]})
    result = replay(path, again)
    assert not result.diverged, result.report()


def test_the_stores_are_answered_from_the_recording_and_left_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    store = InMemoryChatMessageStore()
    store.write_messages("chat-1", [user("My name is Ann."), reply("Hello Ann.")])
    kwargs = {"chat_message_store_kwargs": {"chat_history_id": "chat-1"}}

    def agent(replies: list[Any], chat_store: InMemoryChatMessageStore) -> Agent:
        return Agent(chat_generator=ScriptedChatGenerator(replies), chat_message_store=chat_store)

    agent([reply("You are Ann.")], store).run([user("Who am I?")], recorder=path, **kwargs)
    load = lines(path)[2]
    assert load["effect"] == {"type": "load_stores"} and len(load["messages"]) == 3  # history, then the question

    empty = InMemoryChatMessageStore()  # the replay does not read the store: the recording holds what it loaded
    result = replay(path, agent([], empty))
    assert not result.diverged, result.report()
    assert empty.retrieve_messages("chat-1") == []  # and it writes nothing (Finish is not run)


def test_hooks_run_in_the_replay_and_a_hook_that_changes_the_input_diverges(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    seen: list[str] = []

    @hook
    def note(state: State) -> None:
        seen.append("before_llm")

    @hook
    def shout(state: State) -> None:
        messages = state.data["messages"]
        messages[-1] = user(str(messages[-1].text).upper())

    Agent(chat_generator=ScriptedChatGenerator([reply("hi")]), hooks={"before_llm": [note]}).run(
        [user("hello")], recorder=path
    )
    seen.clear()
    assert not replay(path, Agent(chat_generator=ScriptedChatGenerator([]), hooks={"before_llm": [note]})).diverged
    assert seen == ["before_llm"]  # the hook ran in the replay
    changed = replay(path, Agent(chat_generator=ScriptedChatGenerator([]), hooks={"before_llm": [shout]}))
    assert changed.divergence is not None and changed.divergence.kind == "model_input"
    assert '+          "text": "HELLO"' in changed.divergence.diff.splitlines()


def test_a_run_recorded_by_run_async_replays(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    model = ScriptedChatGenerator([reply(call("add", id="c1", a=2, b=2)), reply("4")])
    asyncio.run(Agent(chat_generator=model, tools=[add]).run_async([user("2+2?")], recorder=path))
    assert not replay(path, Agent(chat_generator=ScriptedChatGenerator([]), tools=[add])).diverged


def test_a_run_that_ends_before_the_recording_diverges_on_the_number_of_steps(recorded: Path) -> None:
    result = replay(recorded, fresh(max_agent_steps=1))
    divergence = result.divergence
    assert divergence is not None
    assert (divergence.kind, divergence.effect, divergence.actual) == ("steps", 4, None)
    assert divergence.expected is not None and divergence.expected["type"] == "call_model"
    assert divergence.summary.endswith("recorded call_model, replayed the end of the run.")
    with pytest.raises(AssertionError, match="Diverged at step 2, effect 4"):
        result.assert_identical()
    replay(recorded, fresh()).assert_identical()
