"""Runs on the dev server: approved, rejected, edited; decisions checked before they enter the history."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.client import WorkflowFailureError

from handrail import temporal as ht
from handrail.human_in_the_loop import AskWhenPolicy
from handrail.testing.builders import call, reply
from tests.temporal._harness import Effects, asking, harness, transfer_agent


@pytest.fixture
def effects() -> Effects:
    return Effects()


async def test_an_approved_call_runs_once_and_the_model_reads_its_result(
    dev_server: Any, ledger_url: str, task_queue: str, effects: Effects
) -> None:
    async with harness(dev_server.address, ledger_url, task_queue, {"demo": transfer_agent(effects)}) as h:
        run_id = await h.start()
        [waiting] = await h.waiting(run_id)
        assert (waiting["call_id"], waiting["tool_name"], waiting["arguments"]) == ("c1", "transfer", {"amount": 5})
        assert effects.done == []  # nothing runs before the decision
        assert (await h.decide(run_id, "c1"))["status"] == "decided"
        result = await h.result(run_id)
    assert effects.done == [("transfer", 5)]
    assert result["answer"] == "done" and result["exit_reason"] == "text"
    tool_message = next(m for m in result["messages"] if m["role"] == "tool")
    assert "sent 5 to bob" in str(tool_message)
    assert result["usage"] == {"model_calls": 2, "tool_calls": 1, "approvals": 1}


async def test_a_rejected_call_never_runs_and_the_model_reads_why(
    dev_server: Any, ledger_url: str, task_queue: str, effects: Effects
) -> None:
    async with harness(dev_server.address, ledger_url, task_queue, {"demo": transfer_agent(effects)}) as h:
        run_id = await h.start()
        await h.waiting(run_id)
        await h.decide(run_id, "c1", "reject", feedback="not today")
        result = await h.result(run_id)
    assert effects.done == []
    assert "not today" in str(result["messages"])


async def test_an_edit_runs_the_edited_arguments(
    dev_server: Any, ledger_url: str, task_queue: str, effects: Effects
) -> None:
    async with harness(dev_server.address, ledger_url, task_queue, {"demo": transfer_agent(effects)}) as h:
        run_id = await h.start()
        await h.waiting(run_id)
        await h.decide(run_id, "c1", "edit", arguments={"amount": 3, "to": "carol"})
        result = await h.result(run_id)
    assert effects.done == [("transfer", 3)]
    assert "sent 3 to carol" in str(result["messages"])


@pytest.mark.parametrize(
    ("call_id", "decision", "kwargs", "reason"),
    [
        ("nope", "approve", {}, "no call 'nope' waits"),
        ("c1", "maybe", {}, "decision must be one of"),
        ("c1", "edit", {"arguments": {"amount": "five"}}, "is not of type 'integer'"),
        ("c1", "edit", {"arguments": {"amount": 1, "bogus": 2}}, "bogus"),
        ("c1", "edit", {}, "an edit needs the new arguments"),
        ("c1", "approve", {"tool_name": "delete_everything"}, "names tool 'delete_everything'"),
        ("c1", "approve", {"decided_by": " "}, "decided_by must name who decided"),
        ("c1", "approve", {"arguments": {"amount": 1}}, "arguments go with an edit"),
    ],
)
async def test_a_decision_that_cannot_apply_is_refused_before_it_enters_the_history(
    dev_server: Any,
    ledger_url: str,
    task_queue: str,
    effects: Effects,
    call_id: str,
    decision: str,
    kwargs: dict[str, Any],
    reason: str,
) -> None:
    async with harness(dev_server.address, ledger_url, task_queue, {"demo": transfer_agent(effects)}) as h:
        run_id = await h.start()
        await h.waiting(run_id)
        before = (await ht.describe(h.client, run_id))["history_length"]
        with pytest.raises(ht.DecisionRefused, match=reason):
            await h.decide(run_id, call_id, decision, **kwargs)
        assert (await ht.describe(h.client, run_id))["history_length"] == before  # refused by the validator
        await h.decide(run_id, "c1", "approve")  # the run still waits for a valid decision
        await h.result(run_id)
    assert effects.done == [("transfer", 5)]


async def test_a_decision_the_policy_does_not_allow_is_refused(
    dev_server: Any, ledger_url: str, task_queue: str, effects: Effects
) -> None:
    agent = transfer_agent(effects, strategy=asking(allowed_decisions=("approve", "reject")))
    async with harness(dev_server.address, ledger_url, task_queue, {"demo": agent}) as h:
        run_id = await h.start()
        [waiting] = await h.waiting(run_id)
        assert waiting["allowed_decisions"] == ["approve", "reject"]
        with pytest.raises(ht.DecisionRefused, match="'edit' is not allowed for 'transfer'"):
            await h.decide(run_id, "c1", "edit", arguments={"amount": 1})
        await h.decide(run_id, "c1", "reject")
        await h.result(run_id)
    assert effects.done == []


async def test_a_duplicate_decision_is_ignored_and_a_conflicting_one_refused(
    dev_server: Any, ledger_url: str, task_queue: str, effects: Effects
) -> None:
    script = [reply(call("transfer", {"amount": 5}, id="c1")), reply(call("transfer", {"amount": 6}, id="c2")),
              reply("done")]  # fmt: skip
    async with harness(dev_server.address, ledger_url, task_queue, {"demo": transfer_agent(effects, script)}) as h:
        run_id = await h.start()
        await h.waiting(run_id)
        assert (await h.decide(run_id, "c1"))["status"] == "decided"
        await h.waiting(run_id)  # c2 now waits; c1 was decided
        assert (await h.decide(run_id, "c1", decided_by="bob"))["status"] == "duplicate"
        with pytest.raises(ht.DecisionRefused, match="already decided"):
            await h.decide(run_id, "c1", "reject")
        await h.decide(run_id, "c2")
        await h.result(run_id)
    assert effects.done == [("transfer", 5), ("transfer", 6)]


async def test_a_quorum_needs_distinct_approvers_and_the_initiator_may_be_barred(
    dev_server: Any, ledger_url: str, task_queue: str, effects: Effects
) -> None:
    agent = transfer_agent(effects, strategy=asking(quorum=2, initiator_may_approve=False))
    async with harness(dev_server.address, ledger_url, task_queue, {"demo": agent}) as h:
        run_id = await h.start(initiator="ivan")
        [waiting] = await h.waiting(run_id)
        assert waiting["quorum"] == 2
        with pytest.raises(ht.DecisionRefused, match="'ivan' started this run"):
            await h.decide(run_id, "c1", decided_by="ivan")
        assert (await h.decide(run_id, "c1", decided_by="alice"))["status"] == "voted"
        assert (await h.decide(run_id, "c1", decided_by="alice"))["status"] == "duplicate"
        assert effects.done == []
        assert (await h.decide(run_id, "c1", decided_by="bob"))["status"] == "decided"
        await h.result(run_id)
    assert effects.done == [("transfer", 5)]


async def test_a_policy_that_does_not_ask_runs_the_call_without_a_person(
    dev_server: Any, ledger_url: str, task_queue: str, effects: Effects
) -> None:
    script = [reply(call("transfer", {"amount": 5}, id="c1")), reply(call("transfer", {"amount": 500}, id="c2")),
              reply("done")]  # fmt: skip
    agent = transfer_agent(effects, script, strategy=asking(AskWhenPolicy("amount > 100")))
    async with harness(dev_server.address, ledger_url, task_queue, {"demo": agent}) as h:
        run_id = await h.start()
        [waiting] = await h.waiting(run_id)
        assert waiting["call_id"] == "c2" and effects.done == [("transfer", 5)]
        await h.decide(run_id, "c2")
        await h.result(run_id)
    assert effects.done == [("transfer", 5), ("transfer", 500)]


async def test_a_run_id_is_used_once_even_after_the_run_closed(
    dev_server: Any, ledger_url: str, task_queue: str, effects: Effects
) -> None:
    agent = transfer_agent(effects, [reply("hi")])
    async with harness(dev_server.address, ledger_url, task_queue, {"demo": agent}) as h:
        run_id = await h.start()
        assert (await h.result(run_id))["answer"] == "hi"
        with pytest.raises(ht.RunExistsError, match="used once"):
            await h.start(run_id=run_id)
    assert effects.done == []


async def test_an_unknown_agent_fails_the_run_with_its_name(
    dev_server: Any, ledger_url: str, task_queue: str, effects: Effects
) -> None:
    async with harness(dev_server.address, ledger_url, task_queue, {"demo": transfer_agent(effects)}) as h:
        run_id = await h.start(agent="ghost")
        with pytest.raises(WorkflowFailureError) as failed:
            await h.result(run_id)
    assert "no agent named 'ghost'" in str(failed.value.cause)


async def test_hooks_run_in_activities_and_state_flows_into_and_out_of_tools(
    dev_server: Any, ledger_url: str, task_queue: str
) -> None:
    from tests.temporal import _golden

    async with harness(dev_server.address, ledger_url, task_queue, _golden.agents()) as h:
        run_id = await h.start("hooks_state", "balance?", region="eu")
        result = await h.result(run_id)
    assert result["answer"] == "balance 42"
    tool_message = next(m for m in result["messages"] if m["role"] == "tool")
    assert '"region": "eu"' in tool_message["content"][0]["tool_call_result"]["result"]  # State reached the tool
    assert result["state"]["balance"] == 42  # outputs_to_state merged in the workflow
    assert result["state"]["llm_calls"] == 2  # the before_llm hook ran before each model call, on the run's State
    assert result["tool_call_counts"] == {"lookup": 1}


async def test_a_decision_names_the_question_it_answers(
    dev_server: Any, ledger_url: str, task_queue: str, effects: Effects
) -> None:
    script = [
        reply(call("transfer", {"amount": 5}, id="c1")),
        reply(call("transfer", {"amount": 6}, id="c2")),
        reply("done"),
    ]
    async with harness(dev_server.address, ledger_url, task_queue, {"demo": transfer_agent(effects, script)}) as h:
        run_id = await h.start()
        [first] = await h.waiting(run_id)
        assert first["asked"] == 1
        await h.decide(run_id, "c1", asked=1)
        [second] = await h.waiting(run_id)
        assert (second["call_id"], second["asked"]) == ("c2", 2)
        with pytest.raises(ht.DecisionRefused, match="question 3 on call 'c2' does not wait"):
            await h.decide(run_id, "c2", asked=3)
        assert (await h.decide(run_id, "c1", asked=1))["status"] == "duplicate"  # a late repeat answers nothing new
        with pytest.raises(ht.DecisionRefused, match="question 1 on call 'c1' was already decided"):
            await h.decide(run_id, "c1", "reject", asked=1)
        assert (await h.decide(run_id, "c2"))["status"] == "decided"  # the number is looked up when not given
        await h.result(run_id)
    assert effects.done == [("transfer", 5), ("transfer", 6)]


async def test_under_a_quorum_an_edit_is_a_new_proposal_judged_again(
    dev_server: Any, ledger_url: str, task_queue: str, effects: Effects
) -> None:
    from handrail.human_in_the_loop import AlwaysAskPolicy

    agent = transfer_agent(effects, strategy=asking(AlwaysAskPolicy(), quorum=2, quorum_when="amount > 10"))
    async with harness(dev_server.address, ledger_url, task_queue, {"demo": agent}) as h:
        run_id = await h.start(question="send 5")
        [waiting] = await h.waiting(run_id)
        assert (waiting["quorum"], waiting["proposal"]) == (1, 1)  # 5 is not over 10: one approver
        answer = await h.decide(run_id, "c1", "edit", arguments={"amount": 5000, "to": "mallory"}, decided_by="cleo")
        assert answer["status"] == "voted"  # 5000 is over 10: judged again, a second approver is needed now
        [waiting] = await h.waiting(run_id)
        assert (waiting["arguments"], waiting["proposal"], waiting["quorum"]) == (
            {"amount": 5000, "to": "mallory"},
            2,
            2,
        )
        with pytest.raises(ht.DecisionRefused, match="the arguments changed since proposal 1"):
            await h.decide(run_id, "c1", decided_by="dan", proposal=1)  # dan saw 5 to bob, not this
        assert effects.done == []
        await h.decide(run_id, "c1", decided_by="dan", proposal=2)
        await h.result(run_id)
    assert effects.done == [("transfer", 5000)]


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"feedback": "x" * 10_001}, "feedback must be a text of at most 10000"),
        ({"decided_by": "d" * 201}, "decided_by is at most 200"),
        ({"decided_by": "\udc00"}, "decided_by holds text that is not Unicode"),
        ({"feedback": "\ud800"}, "feedback holds text that is not Unicode"),
    ],
)
async def test_text_that_could_not_be_recorded_is_refused(
    dev_server: Any, ledger_url: str, task_queue: str, effects: Effects, kwargs: dict[str, Any], reason: str
) -> None:
    async with harness(dev_server.address, ledger_url, task_queue, {"demo": transfer_agent(effects)}) as h:
        run_id = await h.start()
        await h.waiting(run_id)
        with pytest.raises(ht.DecisionRefused, match=reason):
            await h.decide(run_id, "c1", "reject", **kwargs)
        with pytest.raises(ht.DecisionRefused, match="arguments holds text that is not Unicode"):
            await h.decide(run_id, "c1", "edit", arguments={"amount": 1, "to": "\ud800"})
        await h.decide(run_id, "c1")
        await h.result(run_id)
    assert effects.done == [("transfer", 5)]
