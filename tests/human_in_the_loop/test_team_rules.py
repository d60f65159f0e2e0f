"""Policies for teams, built in Python: an invalid rule or setting is refused when the policy, the strategy or the
Agent is built (never a silently open gate), and the settings survive serialization."""

from __future__ import annotations

from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.core.serialization import object_from_dict
from handrail.errors import ConfigurationError, ConfigurationTypeError
from handrail.human_in_the_loop import (
    AlwaysAskPolicy,
    AskWhenPolicy,
    BlockingConfirmationStrategy,
    BreakpointConfirmationStrategy,
    ConfirmationUIResult,
)
from handrail.testing import ScriptedChatGenerator, call, reply, user
from handrail.tools import Tool, create_tool_from_function
from tests.common_tools import SENT, transfer


def _strategy(**settings: Any) -> BreakpointConfirmationStrategy:
    return BreakpointConfirmationStrategy("snaps", **settings)


@pytest.mark.parametrize(
    ("rule", "problem"), [("amount >", "does not parse"), ("amount.bit_length() > 3", "function or method call")]
)
def test_an_invalid_rule_is_refused_when_the_policy_is_built(rule: str, problem: str) -> None:
    with pytest.raises(ConfigurationError, match=problem):
        AskWhenPolicy(rule)


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({"quorum": 0}, "quorum must be an int from 1 to 20"),
        ({"quorum": 21}, "quorum must be an int from 1 to 20"),
        ({"quorum": True}, "quorum must be an int"),
        ({"quorum_when": "amount > 10"}, "quorum_when applies a quorum above 1"),
        ({"quorum": 2, "quorum_when": "amount >"}, "does not parse"),
        ({"quorum": 2, "on_expiry": "approve", "expires_after": None}, "an expiry may not decide what 2 people must"),
        ({"quorum": 2, "allowed_decisions": ["reject"]}, "needs approve or edit"),
        ({"confirmation_policy": AlwaysAskPolicy}, "not a policy object"),
    ],
)
def test_an_invalid_team_setting_is_refused_when_the_strategy_is_built(settings: dict[str, Any], problem: str) -> None:
    with pytest.raises((ConfigurationError, ConfigurationTypeError), match=problem):
        _strategy(**settings)


def test_initiator_may_approve_is_a_bool() -> None:
    with pytest.raises(ConfigurationTypeError, match="initiator_may_approve must be True or False"):
        _strategy(initiator_may_approve="no")


class _Approves:
    """A UI that approves every call it is shown, and counts them."""

    def __init__(self) -> None:
        self.asked: list[dict[str, Any]] = []

    def get_user_confirmation(self, tool_name: str, tool_description: str, tool_params: dict[str, Any],
                              injected_params: dict[str, Any] | None = None) -> ConfirmationUIResult:  # fmt: skip
        self.asked.append(tool_params)
        return ConfirmationUIResult("confirm")

    def to_dict(self) -> dict[str, Any]:
        return {"type": "tests.human_in_the_loop.test_team_rules._Approves", "init_parameters": {}}


def _agent(strategy: Any, key: Any = "transfer", tools: list[Tool] | None = None) -> Agent:
    return Agent(chat_generator=ScriptedChatGenerator([]), tools=tools or [create_tool_from_function(transfer)],
                 confirmation_strategies={key: strategy})  # fmt: skip


@pytest.mark.parametrize(
    ("strategy", "named"),
    [
        (_strategy(confirmation_policy=AskWhenPolicy("amont > 100")), "'amont'"),
        (_strategy(quorum=2, quorum_when="sum > 10"), "'sum'"),
        (BlockingConfirmationStrategy(confirmation_policy=AskWhenPolicy("total > 1"), confirmation_ui=_Approves()),
         "'total'"),
    ],
)  # fmt: skip
def test_a_rule_reading_a_name_the_tool_does_not_take_is_refused_when_the_agent_is_built(
    strategy: Any, named: str
) -> None:
    with pytest.raises(ConfigurationError, match=rf"confirmation_strategies\['transfer'\]: .*reads {named}"):
        _agent(strategy)


def test_names_are_checked_under_tuple_keys_and_star_and_state_values_count() -> None:
    with pytest.raises(ConfigurationError, match="reads 'amount'"):
        _agent(_strategy(confirmation_policy=AskWhenPolicy("amount > 1")), key=("transfer", "lookup"),
               tools=[create_tool_from_function(transfer), _lookup()])  # fmt: skip
    _agent(_strategy(confirmation_policy=AskWhenPolicy("amount > 1")), key="*",
           tools=[create_tool_from_function(transfer), _lookup()])  # some tool takes it  # fmt: skip
    with pytest.raises(ConfigurationError, match="reads 'nobody'"):
        _agent(_strategy(confirmation_policy=AskWhenPolicy("nobody > 1")), key="*")

    def limited(amount: int, limit: int) -> str:
        """Pay within a limit.

        Args:
            amount: How much.
            limit: The account's limit.
        """
        return "ok"

    from_state = create_tool_from_function(limited, inputs_from_state={"limit": "limit"})
    _agent(_strategy(confirmation_policy=AskWhenPolicy("amount > limit")), key="limited", tools=[from_state])


def _lookup() -> Tool:
    from tests.common_tools import lookup

    return create_tool_from_function(lookup)


def test_a_pausing_strategy_and_its_policy_survive_to_dict() -> None:
    strategy = _strategy(confirmation_policy=AskWhenPolicy("amount > 100"), quorum=2, quorum_when="amount > 1000",
                         initiator_may_approve=False, allowed_decisions=["approve", "reject"])  # fmt: skip
    data = strategy.to_dict()
    params = data["init_parameters"]
    assert params["confirmation_policy"] == {"type": "handrail.human_in_the_loop.policies.AskWhenPolicy",
                                             "init_parameters": {"rule": "amount > 100"}}  # fmt: skip
    assert (params["quorum"], params["quorum_when"], params["initiator_may_approve"]) == (2, "amount > 1000", False)
    back = BreakpointConfirmationStrategy.from_dict(data)
    assert back.confirmation_policy == AskWhenPolicy("amount > 100") and back.quorum == 2
    assert (back.quorum_when, back.initiator_may_approve) == ("amount > 1000", False)
    assert object_from_dict(AskWhenPolicy("a > 1").to_dict()) == AskWhenPolicy("a > 1")
    assert repr(AskWhenPolicy("a > 1")) == "AskWhenPolicy('a > 1')"
    plain = _strategy().to_dict()["init_parameters"]
    assert not {"confirmation_policy", "quorum", "quorum_when", "initiator_may_approve"} & set(plain)


def test_at_a_console_the_rule_decides_who_is_asked() -> None:
    ui = _Approves()
    strategy = BlockingConfirmationStrategy(confirmation_policy=AskWhenPolicy("amount > 100"), confirmation_ui=ui)
    replies = [reply(call("transfer", {"amount": 5}, "c1"), call("transfer", {"amount": 500}, "c2")), reply("ok")]
    SENT.clear()
    agent = Agent(chat_generator=ScriptedChatGenerator(replies), tools=[create_tool_from_function(transfer)],
                  confirmation_strategies={"transfer": strategy})  # fmt: skip
    agent.run([user("pay")])
    assert ui.asked == [{"amount": 500}] and sorted(SENT) == [5, 500]


def test_a_rule_that_fails_on_the_arguments_asks_and_warns() -> None:
    policy = AskWhenPolicy("amount > limit")
    with pytest.warns(RuntimeWarning, match="'limit' is undefined; a person is asked"):
        assert policy.should_ask("transfer", "", {"amount": 5}) is True
    assert policy.should_ask("transfer", "", {"amount": 5, "limit": 10}) is False


def test_called_directly_a_pausing_strategy_asks_its_policy_first() -> None:
    from handrail.dataclasses.breakpoints import HITLBreakpointException

    strategy = _strategy(confirmation_policy=AskWhenPolicy("amount > 100"))
    decision = strategy.run(tool_name="transfer", tool_description="", tool_params={"amount": 5}, tool_call_id="c1")
    assert decision.execute and decision.decided_by == "policy" and decision.tool_call_id == "c1"
    with pytest.raises(HITLBreakpointException):
        strategy.run(tool_name="transfer", tool_description="", tool_params={"amount": 500}, tool_call_id="c2")
