"""Rules over arguments (handrail.core._rules): what a rule may hold, what it evaluates to, how it fails."""

from __future__ import annotations

from typing import Any

import pytest

from handrail.core._rules import MAX_RULE_CHARS, RuleFailed, compile_rule
from handrail.errors import ConfigurationError, ConfigurationTypeError


@pytest.mark.parametrize(
    ("rule", "arguments", "expected"),
    [
        ("amount > 100", {"amount": 101}, True),
        ("amount > 100", {"amount": 100}, False),
        ("amount > 100 and currency == 'EUR'", {"amount": 5}, False),  # short-circuits: currency is not read
        ("not (amount <= 100 or currency != 'EUR')", {"amount": 500, "currency": "EUR"}, True),
        ("'DE' in iban and iban[:2] == 'DE'", {"iban": "DE89 3704"}, True),
        ("to.country == 'NO'", {"to": {"country": "NO"}}, True),
        ("lines | length > 2", {"lines": [1, 2, 3]}, True),
        ("currency | lower == 'eur'", {"currency": "EUR"}, True),
        ("memo is defined and memo is not none", {}, False),
        ("amount * 2 + 1 >= 11 if big else false", {"amount": 5, "big": True}, True),
        ("true", {}, True),
    ],
)
def test_a_rule_evaluates_over_the_arguments(rule: str, arguments: dict[str, Any], expected: bool) -> None:
    assert compile_rule(rule).holds(arguments) is expected


@pytest.mark.parametrize(
    ("rule", "problem"),
    [
        ("amount >", "does not parse"),
        ("amount > 100 }}{{ 1", "does not parse"),
        ("memo.startswith('x')", "function or method call"),
        ("range(10) | length > 2", "function or method call"),
        ("lines | map('upper') | length > 1", "the filter 'map'"),
        ("amount.__class__", "attribute '__class__'"),
        ("_secret == 1", "name '_secret'"),
        ("amount | round(precision=2) > 1", "positional arguments only"),
        ("", "is empty"),
        ("x" * (MAX_RULE_CHARS + 1), "characters"),
    ],
)
def test_a_rule_that_may_not_be_is_refused_when_built(rule: str, problem: str) -> None:
    with pytest.raises(ConfigurationError, match=problem):
        compile_rule(rule)


def test_a_rule_is_a_string() -> None:
    with pytest.raises(ConfigurationTypeError, match="is a str"):
        compile_rule(100)


def test_names_outside_the_tools_arguments_are_refused() -> None:
    rule = compile_rule("amount > 100 and currency == 'EUR'", names=["amount", "currency"])
    assert rule.variables == {"amount", "currency"}
    with pytest.raises(ConfigurationError, match=r"reads 'amont', which is not an argument of the tool \(its "
                                                 r"arguments: amount\)"):  # fmt: skip
        compile_rule("amont > 100", names=["amount"], what="ask_when")


@pytest.mark.parametrize(
    ("rule", "arguments", "cause"),
    [
        ("amount > 100", {}, "'amount' is undefined"),
        ("amount > 100", {"amount": "lots"}, "not supported between"),
        ("amount", {"amount": 5}, "its result is int 5, not true or false"),
        ("lipsum", {}, "'lipsum' is undefined"),  # Jinja2's globals are not there
        ("amount ** 100000000 > 1", {"amount": 7}, "past the limit"),
    ],
)
def test_a_rule_that_cannot_judge_the_arguments_raises_rule_failed(
    rule: str, arguments: dict[str, Any], cause: str
) -> None:
    with pytest.raises(RuleFailed, match=cause) as caught:
        compile_rule(rule).holds(arguments)
    assert caught.value.rule is not None and caught.value.rule.source == rule
    assert str(caught.value).startswith(f"the rule {rule!r} cannot be evaluated on these arguments")
