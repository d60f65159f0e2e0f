from __future__ import annotations

import math
import operator
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from handrail.errors import CalculationError, ConfigurationError, HandrailError
from handrail.tools import Tool
from handrail.tools.builtin import calculator, evaluate_expression
from handrail.tools.builtin.calculator import MAX_DEPTH, MAX_EXPRESSION_LENGTH, MAX_INTEGER_BITS, calculate


class TestArithmetic:
    @pytest.mark.parametrize(
        ("expression", "expected"),
        [
            ("17*23", 391),
            ("17 * 23", 391),
            ("2 + 3 * 4", 14),
            ("(2 + 3) * 4", 20),
            ("2 ** 3 ** 2", 512),
            ("-2 ** 2", -4),
            ("(-2) ** 2", 4),
            ("+5", 5),
            ("--5", 5),
            ("-(3 - 10)", 7),
            ("7 // 2", 3),
            ("-7 // 2", -4),
            ("7 % 3", 1),
            ("-7 % 3", 2),
            ("10 - 4 - 3", 3),
            ("2 * 3 / 4", 1.5),
            ("1 / 4", 0.25),
            ("2 ** -1", 0.5),
            ("0.1 + 0.2", 0.1 + 0.2),
            ("1e3 + 1", 1001.0),
            ("1_000 * 2", 2000),
            ("  42  ", 42),
            ("48213 / 12.7", 48213 / 12.7),
            ("2 ** 0.5", math.sqrt(2)),
        ],
    )
    def test_operators_follow_python_semantics(self, expression: str, expected: float) -> None:
        result = evaluate_expression(expression)
        assert result == expected
        assert type(result) is type(expected)

    @pytest.mark.parametrize(
        ("expression", "expected"),
        [
            ("sqrt(16)", 4.0),
            ("abs(-3)", 3),
            ("abs(-2.5)", 2.5),
            ("round(2.5)", 2),
            ("round(3.14159, 2)", 3.14),
            ("round(1234, -2)", 1200),
            ("min(3, 1, 2)", 1),
            ("max(3, 1.5, 2)", 3),
            ("max(7)", 7),
            ("floor(-2.5)", -3),
            ("ceil(2.1)", 3),
            ("log(8, 2)", 3.0),
            ("log(e)", 1.0),
            ("log10(1000)", 3.0),
            ("exp(0)", 1.0),
            ("2 * pi", 2 * math.pi),
            ("sqrt(max(9, 16)) + abs(min(-1, -2))", 6.0),
        ],
    )
    def test_functions_and_constants(self, expression: str, expected: float) -> None:
        assert evaluate_expression(expression) == pytest.approx(expected)

    def test_a_long_flat_chain_counts_as_one_level(self) -> None:
        assert evaluate_expression("+".join(["1"] * 400)) == 400
        assert evaluate_expression(" * ".join(["2"] * 200)) == 2**200

    def test_large_but_allowed_integers_are_exact(self) -> None:
        assert evaluate_expression("10 ** 1000") == 10**1000
        assert evaluate_expression("2 ** 3000 - 2 ** 3000") == 0


REFUSALS = {
    "dunder import": ("__import__('os')", "Unknown function '__import__'"),
    "builtin call": ("open('x')", "Unknown function 'open'"),
    "eval": ("eval('1')", "Unknown function 'eval'"),
    "bare name": ("x + 1", "Unknown name 'x'"),
    "function as a name": ("sqrt", "'sqrt' is a function"),
    "attribute": ("(1).real", "Attribute access is not allowed"),
    "dunder attribute": ("().__class__", "Attribute access"),
    "attribute call": ("math.sqrt(4)", "Only the allowed functions can be called"),
    "lambda": ("(lambda: 1)()", "Only the allowed functions"),
    "bare lambda": ("lambda: 1", "Lambda is not allowed"),
    "list comprehension": ("[x for x in range(3)]", "ListComp is not allowed"),
    "generator": ("sum(x for x in range(3))", "Unknown function 'sum'"),
    "subscript": ("[1][0]", "Subscript is not allowed"),
    "string": ("'a' * 3", "Only numbers are allowed"),
    "f-string": ("f'{1}'", "JoinedStr is not allowed"),
    "bool": ("True + 1", "Only numbers are allowed"),
    "none": ("None", "Only numbers are allowed"),
    "complex": ("1j * 2", "Complex numbers are not allowed"),
    "comparison": ("1 < 2", "Compare is not allowed"),
    "boolean operator": ("1 and 2", "BoolOp is not allowed"),
    "conditional": ("1 if 1 else 2", "IfExp is not allowed"),
    "walrus": ("(y := 3)", "NamedExpr is not allowed"),
    "invert": ("~1", "Invert is not allowed"),
    "not": ("not 1", "Not is not allowed"),
    "caret": ("2 ^ 3", "use \\*\\* for powers"),
    "shift": ("1 << 10000", "LShift is not allowed"),
    "thousands separator": ("48,213 / 12.7", "without thousands separators"),
    "keyword argument": ("round(2.5, ndigits=1)", "positional arguments only"),
    "starred argument": ("max(*[1, 2])", "positional arguments only"),
    "too many arguments": ("sqrt(1, 2)", "takes 1 arguments, got 2"),
    "no arguments": ("min()", "takes 1 to 100 arguments, got 0"),
    "round digits not whole": ("round(2.5, 0.5)", "whole number of digits"),
    "round digits huge": ("round(5, -10 ** 9)", "whole number of digits"),
    "huge tower": ("9 ** 9 ** 9", "too large"),
    "huge power": ("2 ** 100000", "too large"),
    "huge power of a big base": ("(10 ** 500) ** 10", "too large"),
    "huge exponent overflow": ("2 ** (10 ** 1000)", "too large"),
    "float power overflow": ("10.0 ** 400", "too large"),
    "float exponent overflow": ("1.5 ** (10 ** 1000)", "too large"),
    "huge product": ("(10 ** 1000) * (10 ** 1000)", "too large"),
    "exp overflow": ("exp(1000)", "too large"),
    "infinite literal": ("1e999", "too large"),
    "int to float overflow": ("10 ** 1000 / 3", "too large"),
    "complex result": ("(-8) ** (1 / 3)", "not a real number"),
    "division by zero": ("1 / 0", "Division by zero"),
    "floor division by zero": ("1 // 0", "Division by zero"),
    "modulo zero": ("5 % 0", "Division by zero"),
    "float division by zero": ("1.5 / 0.0", "Division by zero"),
    "zero to a negative power": ("0 ** -1", "Division by zero"),
    "log base one": ("log(5, 1)", "Division by zero"),
    "sqrt of a negative": ("sqrt(-1)", "math domain error"),
    "log of zero": ("log(0)", "math domain error"),
    "empty": ("", "empty"),
    "blank": ("   \n ", "empty"),
    "syntax": ("2 **", "Invalid expression"),
    "statement": ("import os", "Invalid expression"),
    "deep parentheses": ("(" * 60 + "1" + ")" * 60, f"deeper than {MAX_DEPTH}"),
    "deep unary": ("-" * 60 + "1", f"deeper than {MAX_DEPTH}"),
    "deep right-nested sums": ("1 + (" * 60 + "1" + ")" * 60, "deeper than"),
    "deep calls": ("abs(" * 60 + "1" + ")" * 60, "deeper than"),
    "long text": ("1" + " + 1" * 300, f"at most {MAX_EXPRESSION_LENGTH}"),
}


class TestRefusals:
    @pytest.mark.parametrize(("expression", "message"), list(REFUSALS.values()), ids=list(REFUSALS))
    def test_refused_quickly_with_a_readable_message(self, expression: str, message: str) -> None:
        started = time.perf_counter()
        with pytest.raises(CalculationError, match=message):
            evaluate_expression(expression)
        assert time.perf_counter() - started < 1.0

    def test_the_error_is_a_value_error_and_a_handrail_error(self) -> None:
        with pytest.raises(CalculationError) as caught:
            evaluate_expression("1 / 0")
        assert isinstance(caught.value, ValueError)
        assert isinstance(caught.value, ConfigurationError)
        assert isinstance(caught.value, HandrailError)
        assert caught.value.__cause__ is None

    def test_a_non_string_is_refused(self) -> None:
        with pytest.raises(CalculationError, match="must be a string"):
            evaluate_expression(5)  # type: ignore[arg-type]

    def test_an_integer_at_the_bit_limit_is_accepted_and_one_past_it_refused(self) -> None:
        assert evaluate_expression(f"2 ** {MAX_INTEGER_BITS - 1}") == 2 ** (MAX_INTEGER_BITS - 1)
        with pytest.raises(CalculationError, match="too large"):
            evaluate_expression(f"2 ** {MAX_INTEGER_BITS - 1} * 2")

    def test_nothing_outside_the_allowlist_is_reached(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import builtins

        called: list[str] = []
        monkeypatch.setattr(builtins, "print", lambda *a: called.append("print"))
        with pytest.raises(CalculationError):
            evaluate_expression("print(1)")
        assert called == []


# --------------------------------------------------------------------------- property tests


@dataclass(frozen=True)
class Expr:
    text: str
    value: int | float | None
    """What Python computes; None when the calculator must refuse it as too large."""


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
}


def _python(function: Callable[..., Any], *args: int | float | None) -> int | float | None:
    """Compute like Python does, or None where the calculator refuses (too large; a refused input)."""
    if any(a is None for a in args):
        return None
    try:
        value = function(*args)
    except OverflowError:
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, int) and value.bit_length() > MAX_INTEGER_BITS:
        return None
    return cast(int | float, value)


def _combine(draw: st.DrawFn, children: st.SearchStrategy[Expr]) -> Expr:
    kind = draw(st.sampled_from(["binary", "binary", "unary", "power", "call"]))
    left = draw(children)
    if kind == "unary":
        return Expr(f"-({left.text})", _python(operator.neg, left.value))
    if kind == "power":
        exponent = draw(st.integers(0, 3))
        return Expr(f"({left.text}) ** {exponent}", _python(operator.pow, left.value, exponent))
    right = draw(children)
    if kind == "call":
        name = draw(st.sampled_from(["abs", "max", "min"]))
        if name == "abs":
            return Expr(f"abs({left.text})", _python(abs, left.value))
        return Expr(
            f"{name}({left.text}, {right.text})", _python(max if name == "max" else min, left.value, right.value)
        )
    symbol = draw(st.sampled_from(["+", "-", "*", "/", "//", "%"]))
    if symbol in ("/", "//", "%") and right.value == 0:
        symbol = "+"
    return Expr(f"({left.text}) {symbol} ({right.text})", _python(_BINARY[symbol], left.value, right.value))


_LEAVES = st.one_of(
    st.integers(0, 10**6).map(lambda n: Expr(str(n), n)),
    st.floats(0, 1e6, allow_nan=False, allow_infinity=False).map(lambda x: Expr(repr(x), x)),
)
_EXPRESSIONS = st.recursive(_LEAVES, lambda children: st.composite(_combine)(children), max_leaves=12)


@settings(deadline=None)
@given(_EXPRESSIONS)
def test_matches_python_arithmetic(expr: Expr) -> None:
    assume(len(expr.text) <= MAX_EXPRESSION_LENGTH)
    if expr.value is None:
        with pytest.raises(CalculationError, match="too large"):
            evaluate_expression(expr.text)
        return
    result = evaluate_expression(expr.text)
    assert result == expr.value  # the same operations in the same order: bit-for-bit equal
    assert type(result) is type(expr.value)


@given(st.integers(-(10**12), 10**12), st.integers(-(10**12), 10**12))
def test_integer_operations_are_exact(a: int, b: int) -> None:
    assert evaluate_expression(f"{a} + {b}") == a + b
    assert evaluate_expression(f"{a} - ({b})") == a - b
    assert evaluate_expression(f"{a} * {b}") == a * b
    if b != 0:
        assert evaluate_expression(f"{a} // ({b})") == a // b
        assert evaluate_expression(f"{a} % ({b})") == a % b


@given(st.text(max_size=60))
def test_arbitrary_text_either_evaluates_or_is_refused(text: str) -> None:
    try:
        result = evaluate_expression(text)
    except CalculationError:
        return
    assert isinstance(result, int | float) and not isinstance(result, bool)


# --------------------------------------------------------------------------- the Tool


class TestCalculatorTool:
    def test_spec(self) -> None:
        assert isinstance(calculator, Tool)
        assert calculator.name == "calculator"
        assert calculator.description == "A tool for performing mathematical calculations."
        assert calculator.parameters["required"] == ["expression"]
        assert calculator.parameters["properties"]["expression"]["type"] == "string"
        assert calculator.parameters["properties"]["expression"]["description"]

    def test_invoke_returns_text(self) -> None:
        assert calculator.invoke(expression="17 * 23") == "391"
        assert calculator.invoke(expression="1 / 4") == "0.25"
        assert calculate("48213 / 12.7") == repr(48213 / 12.7)

    def test_arguments_are_validated(self) -> None:
        assert calculator.arguments_error({"expression": "1 + 1"}) is None
        assert calculator.arguments_error({}) is not None
        assert calculator.arguments_error({"expression": 5}) is not None
        assert calculator.arguments_error({"expression": "1", "extra": 1}) is not None

    def test_a_refusal_surfaces_as_a_tool_invocation_error(self) -> None:
        from handrail.errors import ToolInvocationError

        with pytest.raises(ToolInvocationError, match="Division by zero") as caught:
            calculator.invoke(expression="1 / 0")
        assert isinstance(caught.value.__cause__, CalculationError)

    def test_round_trips_by_dotted_path(self) -> None:
        data = calculator.to_dict()
        assert data["type"] == "handrail.tools.tool.Tool"
        assert data["init_parameters"]["function"] == "handrail.tools.builtin.calculator.calculate"
        restored = Tool.from_dict(data)
        assert restored == calculator
        assert restored.invoke(expression="2 ** 10") == "1024"
