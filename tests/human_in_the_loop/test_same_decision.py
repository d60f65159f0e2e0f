"""One rule for "the same decision" (ToolExecutionDecision.same_as) and one lookup order (ToolExecutionDecision.find).

The ledger, the snapshot stores and the Agent's resume checks all use them. Before, the stores looked up the given
decisions first and the ledger the recorded one first, and resume compared decisions field by field where the
stores compared what they do: the cases below got different answers from the three.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

import handrail
from handrail.components.agents import Agent
from handrail.components.agents._ledger import Ledger
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.snapshot import AgentSnapshot, LedgerEntry
from handrail.errors import DecisionConflictError
from handrail.human_in_the_loop import BreakpointConfirmationStrategy, PausingStrategy
from handrail.human_in_the_loop.snapshots import awaiting_decision, recorded_decision, with_decision
from handrail.human_in_the_loop.types import is_pausing_strategy
from handrail.stores import FileSnapshotStore
from handrail.testing import ScriptedChatGenerator
from handrail.testing.store_suites.snapshots import make_paused_snapshot
from handrail.tools import create_tool_from_function
from tests.common_tools import SENT, lookup, transfer


@pytest.fixture(autouse=True)
def _sent() -> None:
    SENT.clear()


APPROVE = ToolExecutionDecision("transfer", True, "c1", decided_by="ana")
REJECT = ToolExecutionDecision("transfer", False, "c1", feedback="no")


@pytest.mark.parametrize(
    ("other", "same"),
    [
        (ToolExecutionDecision("transfer", True, "c1", decided_by="bob"), True),  # who decided does not matter
        (ToolExecutionDecision("transfer", True, None), True),  # nor a missing call id
        (ToolExecutionDecision("transfer", True, "c1", final_tool_params={"amount": 5}), True),  # = proposed
        (ToolExecutionDecision("transfer", True, "c1", feedback=""), True),  # empty feedback is none
        (ToolExecutionDecision("transfer", True, "c1", final_tool_params={"amount": 6}), False),  # an edit
        (ToolExecutionDecision("transfer", True, "c1", feedback="ok"), False),
        (ToolExecutionDecision("transfer", False, "c1"), False),
        (ToolExecutionDecision("transfer", True, "c2"), False),  # another call
        (ToolExecutionDecision("lookup", True, "c1"), False),
    ],
)
def test_the_same_decision(other: ToolExecutionDecision, same: bool) -> None:
    assert APPROVE.same_as(other, {"amount": 5}) is same
    assert other.same_as(APPROVE, {"amount": 5}) is same  # symmetric


def test_a_rejects_arguments_are_not_compared_and_without_proposed_arguments_none_is_not_an_edit() -> None:
    assert REJECT.same_as(dataclasses.replace(REJECT, final_tool_params={"amount": 1}))
    edited = ToolExecutionDecision("transfer", True, "c1", final_tool_params={"amount": 5})
    assert not APPROVE.same_as(edited)  # the proposed arguments are not known: an edit is an edit


CALLS = [ToolCall("transfer", {"amount": 5}, "c1"), ToolCall("transfer", {"amount": 7}, "c2"),
         ToolCall("lookup", {"q": "x"}, "c3")]  # fmt: skip


def test_the_lookup_order_is_recorded_then_given_by_id_then_given_without_id() -> None:
    c1, c2, c3 = CALLS
    by_id = ToolExecutionDecision("transfer", False, "c1", feedback="given")
    assert ToolExecutionDecision.find(c1, recorded=APPROVE, given=[by_id], step_calls=CALLS) is APPROVE
    assert ToolExecutionDecision.find(c1, recorded=None, given=[by_id], step_calls=CALLS) is by_id
    unnamed_lookup = ToolExecutionDecision("lookup", True)
    unnamed_transfer = ToolExecutionDecision("transfer", True)
    given = [unnamed_transfer, unnamed_lookup, by_id]
    assert ToolExecutionDecision.find(c1, recorded=None, given=given, step_calls=CALLS) is by_id  # id beats no id
    assert ToolExecutionDecision.find(c3, recorded=None, given=given, step_calls=CALLS) is unnamed_lookup
    # c2's tool is called twice in the step: a decision without an id answers neither call
    assert ToolExecutionDecision.find(c2, recorded=None, given=given, step_calls=CALLS) is None
    assert ToolExecutionDecision.find(c2, recorded=None, given=[]) is None


def _contradicting() -> AgentSnapshot:
    """c1's ledger entry records an approval, while the step's given decisions reject c1."""
    snapshot = make_paused_snapshot()
    entry = dataclasses.replace(snapshot.ledger["c1"], status="approved", decision=APPROVE, decided_by="ana")
    return dataclasses.replace(snapshot, ledger={**snapshot.ledger, "c1": entry}, tool_execution_decisions=[REJECT])


def test_the_stores_and_the_ledger_find_the_same_decision() -> None:
    """The old stores answered REJECT (given first) where the run's ledger applied APPROVE (recorded first)."""
    snapshot = _contradicting()
    assert recorded_decision(snapshot, "c1") is APPROVE
    ledger = Ledger(snapshot.ledger, snapshot.tool_execution_decisions)
    assert ledger.decision_for(snapshot.pending_tool_calls[0], snapshot.pending_tool_calls) is APPROVE
    assert [c.id for c in awaiting_decision(snapshot)] == ["c2"]
    with pytest.raises(DecisionConflictError, match="already decided"):
        with_decision(snapshot, REJECT)
    assert with_decision(snapshot, dataclasses.replace(APPROVE, decided_by="bob")) is snapshot


def _agent(replies: list[ChatMessage], strategy: Any) -> Agent:
    return Agent(
        chat_generator=ScriptedChatGenerator(replies),
        tools=[create_tool_from_function(transfer), create_tool_from_function(lookup)],
        confirmation_strategies={"transfer": strategy},
    )


def test_a_resume_refuses_a_given_decision_that_contradicts_the_recorded_one(tmp_path: Path) -> None:
    """The old resume checks let it through and ran c1 with the ledger's approval, though the listing said rejected."""
    agent = _agent([ChatMessage.from_assistant("done")], BreakpointConfirmationStrategy(tmp_path))
    with pytest.raises(DecisionConflictError, match="records a different decision for call 'c1'"):
        agent.run([], snapshot=_contradicting(), allow_drift=True)
    assert SENT == []


def test_approving_again_with_the_proposed_arguments_is_the_recorded_approval(tmp_path: Path) -> None:
    """The stores took it for the same decision; the old resume refused it as a conflict (field by field)."""
    store = FileSnapshotStore(tmp_path / "approvals")
    pay = ChatMessage.from_assistant(tool_calls=[ToolCall("transfer", {"amount": 5}, "c1")])
    with pytest.raises(HITLBreakpointException) as paused:
        _agent([pay], BreakpointConfirmationStrategy(snapshot_store=store)).run([ChatMessage.from_user("pay")])
    snapshot_id = paused.value.snapshot.snapshot_id
    assert snapshot_id is not None
    store.record_decision(snapshot_id, ToolExecutionDecision("transfer", True, "c1"), decided_by="ana")
    again = ToolExecutionDecision("transfer", True, "c1", feedback="", final_tool_params={"amount": 5})
    assert store.decide(snapshot_id, again)[1] is False  # nothing recorded: it is the decision already there
    agent = _agent([ChatMessage.from_assistant("paid")], BreakpointConfirmationStrategy(snapshot_store=store))
    result = handrail.resume(snapshot_id, store=store, agent=agent, decisions=[again])
    assert result["last_message"].text == "paid" and SENT == [5]
    assert store.load(snapshot_id).ledger["c1"].decided_by == "ana"  # the first decision stays the record


class _OwnPausing:
    """A pausing strategy that is not a BreakpointConfirmationStrategy: the protocol, not the class, counts."""

    pauses_run = True

    def __init__(self, store: FileSnapshotStore) -> None:
        self.snapshot_file_path: str | None = None
        self.snapshot_store = store
        self.metadata = {"ticket": 7}

    def run(self, **kwargs: Any) -> ToolExecutionDecision:
        raise AssertionError("a pausing strategy is never asked")


class _FlagOnly:
    pauses_run = True  # but none of a pausing strategy's attributes


def test_pausing_strategies_are_recognised_by_their_protocol(tmp_path: Path) -> None:
    store = FileSnapshotStore(tmp_path / "approvals")
    own = _OwnPausing(store)
    assert isinstance(own, PausingStrategy) and is_pausing_strategy(own)
    assert is_pausing_strategy(BreakpointConfirmationStrategy(tmp_path))
    assert not is_pausing_strategy(_FlagOnly())
    off = _OwnPausing(store)
    off.pauses_run = False
    assert isinstance(off, PausingStrategy) and not is_pausing_strategy(off)
    pay = ChatMessage.from_assistant(tool_calls=[ToolCall("transfer", {"amount": 5}, "c1")])
    with pytest.raises(HITLBreakpointException) as paused:
        _agent([pay], own).run([ChatMessage.from_user("pay")])
    snapshot_id = paused.value.snapshot.snapshot_id
    assert snapshot_id is not None
    assert store.load(snapshot_id).metadata == {"ticket": 7} and SENT == []


def test_a_ledger_entry_from_a_snapshot_keeps_its_decision_when_given_again() -> None:
    entry = LedgerEntry("c1", "transfer", "approved", {"amount": 5}, decision=APPROVE, decided_by="ana")
    ledger = Ledger({"c1": entry}, [dataclasses.replace(APPROVE, decided_by=None)])
    assert ledger.decision_for(CALLS[0], CALLS) is APPROVE
