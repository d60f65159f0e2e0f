"""Policies for teams in agent files: the mapping form of ``confirmation``, its errors (file, line, field), the
strategies it builds, and a run that pauses only above its rule's threshold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.human_in_the_loop import AskWhenPolicy, BlockingConfirmationStrategy, BreakpointConfirmationStrategy
from handrail.human_in_the_loop.service import ApprovalService
from handrail.specs import SpecError, agent_spec_json_schema, build_agent, load_agent_spec
from handrail.stores import SQLiteSnapshotStore
from handrail.testing import ScriptedChatGenerator, call, reply, user
from tests.common_tools import SENT

TEAM = """\
tools: [tests.common_tools.transfer, calculator]
allowed_modules: [tests]
confirmation:
  calculator: never
  transfer:
    ask_when: amount > 100
    quorum: 2
    quorum_when: amount > 1000
    initiator_may_approve: false
    allowed_decisions: [approve, reject]
    description: Pay **this**?
    expires_after_seconds: 3600
"""


def _file(tmp_path: Path, text: str, replies: list[Any] | None = None) -> Path:
    params = ScriptedChatGenerator(replies or []).to_dict()["init_parameters"]
    generator = "generator:\n  type: handrail.testing.ScriptedChatGenerator\n  init_parameters: " + json.dumps(params)
    path = tmp_path / "agent.yaml"
    path.write_text(generator + "\n" + text, encoding="utf-8")
    return path


def _line(path: Path, text: str) -> int:
    """The line of the file that holds ``text`` (1-based)."""
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_the_mapping_form_builds_a_pausing_strategy_with_the_team_settings(tmp_path: Path) -> None:
    spec = load_agent_spec(_file(tmp_path, TEAM))
    built = build_agent(spec, approve="pause", snapshot_dir=tmp_path / "snaps").confirmation_strategies
    assert built is not None
    strategy = built["transfer"]
    assert isinstance(strategy, BreakpointConfirmationStrategy)
    assert strategy.confirmation_policy == AskWhenPolicy("amount > 100")
    assert (strategy.quorum, strategy.quorum_when, strategy.initiator_may_approve) == (2, "amount > 1000", False)
    assert strategy.allowed_decisions == ("approve", "reject") and strategy.description == "Pay **this**?"
    assert strategy.expires_after is not None and strategy.expires_after.total_seconds() == 3600
    assert isinstance(built["calculator"], BlockingConfirmationStrategy)  # never: it runs without pausing


def test_a_run_from_the_file_pauses_only_above_the_threshold(tmp_path: Path) -> None:
    SENT.clear()
    store = SQLiteSnapshotStore(tmp_path / "a.db")
    replies = [reply(call("transfer", {"amount": 50}, "c1")), reply(call("transfer", {"amount": 5000}, "c2"))]
    agent = build_agent(load_agent_spec(_file(tmp_path, TEAM, replies)), approve="pause", snapshot_store=store)
    with pytest.raises(HITLBreakpointException):
        agent.run([user("pay twice")])
    assert SENT == [50]
    (approval,) = ApprovalService(store).list().items
    assert (approval.tool_call_id, approval.quorum, approval.allowed_decisions) == ("c2", 2, ("approve", "reject"))
    assert approval.initiator_may_approve is False
    store.close()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("ask_when", "amount >", "does not parse"),
        ("ask_when", "amount.real > 1", None),  # attribute access is allowed; checked below to build
        ("quorum_when", "amount | map('x') | length > 1", "the filter 'map'"),
        ("quorum", "0", "greater than or equal to 1"),
        ("quorum", "'2'", "valid integer"),
        ("initiator_may_approve", "'no'", "valid boolean"),
        ("allowed_decisions", "[maybe]", "'approve', 'edit' or 'reject'"),
        ("expires_after_seconds", "-1", "greater than 0"),
        ("surprise", "1", "Extra inputs are not permitted"),
    ],
)
def test_a_bad_setting_names_the_file_line_and_field(
    tmp_path: Path, field: str, value: str, message: str | None
) -> None:
    text = f"tools: [calculator]\nconfirmation:\n  calculator:\n    ask: always\n    {field}: {value}\n"
    if field == "ask_when":
        text = text.replace("    ask: always\n", "")
    path = _file(tmp_path, text)
    if message is None:
        load_agent_spec(path)
        return
    line = _line(path, f"{field}:")
    with pytest.raises(SpecError, match=rf"{path}:{line}: confirmation\.calculator\.{field}[.\d]*: .*{message}"):
        load_agent_spec(path)


def test_ask_and_ask_when_together_are_refused(tmp_path: Path) -> None:
    path = _file(tmp_path, "tools: [calculator]\nconfirmation:\n  calculator:\n    ask: once\n    ask_when: x > 1\n")
    with pytest.raises(SpecError, match=r"confirmation\.calculator: .*not both"):
        load_agent_spec(path)


def test_a_rule_reading_a_name_the_tool_does_not_take_is_refused_at_its_line(tmp_path: Path) -> None:
    path = _file(tmp_path, TEAM.replace("quorum_when: amount > 1000", "quorum_when: amont > 1000"))
    with pytest.raises(SpecError, match=rf"{path}:\d+: confirmation\.transfer\.quorum_when: .*reads 'amont'") as err:
        build_agent(load_agent_spec(path), approve="pause", snapshot_dir=tmp_path)
    assert err.value.location == ("confirmation", "transfer", "quorum_when")
    assert str(err.value).startswith(f"{path}:{_line(path, 'quorum_when:')}: ")


def test_team_settings_are_refused_at_a_console(tmp_path: Path) -> None:
    spec = load_agent_spec(_file(tmp_path, TEAM))
    with pytest.raises(SpecError, match=r"confirmation\.transfer\.quorum: quorum, initiator_may_approve, "
                                        r"allowed_decisions are settings of the approval service"):  # fmt: skip
        build_agent(spec)  # approve="ask": one person, who started the run
    rejecting = build_agent(spec, approve="none").confirmation_strategies  # nobody is asked: nothing loosens
    assert rejecting is not None and rejecting["transfer"].confirmation_policy == AskWhenPolicy("amount > 100")


def test_a_strategy_that_refuses_its_settings_names_the_field(tmp_path: Path) -> None:
    text = "tools: [calculator]\nconfirmation:\n  calculator:\n    quorum: 2\n    on_expiry: approve\n"
    path = _file(tmp_path, text)
    with pytest.raises(SpecError, match=r"confirmation\.calculator\.quorum: .*an expiry may not decide"):
        build_agent(load_agent_spec(path), approve="pause", snapshot_dir=tmp_path)


def test_the_json_schema_describes_both_forms() -> None:
    schema = agent_spec_json_schema()
    one_of = schema["properties"]["confirmation"]["additionalProperties"]["oneOf"]
    assert one_of[0]["enum"] == ["always", "never", "once"]
    entry = schema["$defs"]["ConfirmationEntry"]
    assert {"ask_when", "quorum", "quorum_when", "initiator_may_approve", "allowed_decisions"} <= set(
        entry["properties"]
    )
    assert entry["additionalProperties"] is False and entry["properties"]["quorum"]["maximum"] == 20
