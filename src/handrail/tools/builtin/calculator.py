"""The ``calculator`` tool: safe arithmetic on a parsed expression tree (never ``eval``).

The expression is parsed with ``ast.parse(mode="eval")`` and walked node by node; only
the nodes below are evaluated, everything else is refused with a
:class:`~handrail.errors.CalculationError` whose message the model can read.

Allowed:

- numbers: ``int`` and ``float`` literals (``7``, ``2.5``, ``1e-3``, ``1_000``);
- binary operators ``+ - * / // % **`` and unary ``+ -``; parentheses for grouping;
- constants ``pi`` and ``e``;
- functions ``abs(x)``, ``round(x[, ndigits])``, ``min(x, ...)``, ``max(x, ...)``,
  ``sqrt(x)``, ``floor(x)``, ``ceil(x)``, ``log(x[, base])`` (natural by default),
  ``log10(x)`` and ``exp(x)``, with positional arguments only.

Refused: any other name (``__import__``, ``x``), attribute access, other calls, keyword
or starred arguments, lambdas, comprehensions, strings, booleans, complex numbers,
comparisons, bit operators (``^`` gets a hint to use ``**``), tuples (a hint about
thousands separators), text longer than :data:`MAX_EXPRESSION_LENGTH` characters,
nesting deeper than :data:`MAX_DEPTH` levels, integers wider than
:data:`MAX_INTEGER_BITS` bits (checked *before* a power is computed, so ``9**9**9``
is refused at once), non-finite or complex results, division by zero and math domain
errors (``sqrt(-1)``).
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Final

from handrail.core.serialization import file_safe
from handrail.errors import CalculationError
from handrail.tools.tool import Tool

__all__ = [
    "MAX_DEPTH",
    "MAX_EXPRESSION_LENGTH",
    "MAX_INTEGER_BITS",
    "calculate",
    "calculator",
    "evaluate_expression",
]

MAX_EXPRESSION_LENGTH: Final = 1000
"""The longest expression accepted, in characters."""
MAX_DEPTH: Final = 50
"""The deepest nesting accepted: operators, function calls and parentheses, in levels.

A flat chain such as ``1 + 2 + ... + 99`` counts as one level.
"""
MAX_INTEGER_BITS: Final = 4000
"""The widest integer a result (or intermediate value) may have, in bits (about 1200 digits)."""
_MAX_ROUND_DIGITS: Final = 100

_Number = int | float

_BINARY_OPERATORS: Final[dict[type[ast.operator], Callable[[_Number, _Number], _Number]]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_OPERATOR_HINTS: Final[dict[type[ast.operator], str]] = {
    ast.BitXor: "'^' is not supported; use ** for powers (2 ** 10).",
}
_CONSTANTS: Final[dict[str, float]] = {"pi": math.pi, "e": math.e}


def _round(value: _Number, ndigits: _Number | None = None) -> _Number:
    if ndigits is None:
        return round(value)
    if not isinstance(ndigits, int) or abs(ndigits) > _MAX_ROUND_DIGITS:
        raise CalculationError(f"round() needs a whole number of digits between -100 and 100, got {ndigits!r}.")
    return round(value, ndigits)


def _minimum(*values: _Number) -> _Number:
    return min(values)


def _maximum(*values: _Number) -> _Number:
    return max(values)


# name -> (function, fewest arguments, most arguments)
_FUNCTIONS: Final[dict[str, tuple[Callable[..., _Number], int, int]]] = {
    "abs": (abs, 1, 1),
    "round": (_round, 1, 2),
    "min": (_minimum, 1, 100),
    "max": (_maximum, 1, 100),
    "sqrt": (math.sqrt, 1, 1),
    "floor": (math.floor, 1, 1),
    "ceil": (math.ceil, 1, 1),
    "log": (math.log, 1, 2),
    "log10": (math.log10, 1, 1),
    "exp": (math.exp, 1, 1),
}
_ALLOWED_TEXT: Final = (
    "numbers, the operators + - * / // % ** and parentheses, the constants pi and e, and the functions "
    + ", ".join(_FUNCTIONS)
)


def evaluate_expression(expression: str) -> int | float:
    """Evaluate an arithmetic expression safely (see the module docstring for what is allowed).

    Args:
        expression: The expression, e.g. ``"(48213 / 12.7) * 2"``; at most
            :data:`MAX_EXPRESSION_LENGTH` characters.

    Returns:
        The value: an ``int`` when every step stays integral (``17 * 23``), else a ``float``
        (``/`` always gives a float).

    Raises:
        CalculationError: When the expression is empty, too long, not valid syntax, uses
            anything outside the allowlist, nests deeper than :data:`MAX_DEPTH`, produces an
            integer wider than :data:`MAX_INTEGER_BITS` bits or a non-finite or complex value,
            divides by zero, or leaves a function's domain. A ``ValueError`` subclass.

    Examples:
        >>> evaluate_expression("17 * 23")
        391
        >>> evaluate_expression("2 ** 10 / 4")
        256.0
        >>> evaluate_expression("__import__('os')")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        handrail.errors.CalculationError: Unknown function '__import__'. Allowed: ...
    """
    if not isinstance(expression, str):
        raise CalculationError(f"The expression must be a string, got {type(expression).__name__}.")
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise CalculationError(
            f"The expression is {len(expression)} characters long; at most {MAX_EXPRESSION_LENGTH} are accepted."
        )
    text = expression.strip()
    if not text:
        raise CalculationError("The expression is empty.")
    _check_parentheses(text)
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise CalculationError(f"Invalid expression {text!r}: {exc.msg}.") from None
    return _Evaluator().evaluate(tree.body, depth=1)


@file_safe  # the calculator tool's function, named in the files its agents are saved to
def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression and return the result as text (the ``calculator`` tool's function).

    Args:
        expression: The expression, e.g. ``"48213 / 12.7"``.

    Returns:
        The result as text: ``"391"``, ``"3796.2992125984253"``.

    Raises:
        CalculationError: When the expression is refused or cannot be evaluated (see
            :func:`evaluate_expression`); an Agent turns it into an error tool result.
    """
    return repr(evaluate_expression(expression))


def _check_parentheses(text: str) -> None:
    depth = 0
    for char in text:
        if char in "([{":
            depth += 1
            if depth > MAX_DEPTH:
                raise CalculationError(f"The expression nests parentheses deeper than {MAX_DEPTH} levels.")
        elif char in ")]}":
            depth -= 1


def _checked(value: object) -> _Number:
    """Return ``value`` when it is a finite real number of acceptable size, else raise."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        if isinstance(value, complex):
            raise CalculationError("The result is not a real number (a negative number raised to a fractional power?).")
        raise CalculationError(f"Only numbers are allowed, got {type(value).__name__} {value!r}.")
    if isinstance(value, int) and value.bit_length() > MAX_INTEGER_BITS:
        raise CalculationError(f"The result is too large (more than {MAX_INTEGER_BITS} bits).")
    if isinstance(value, float) and not math.isfinite(value):
        raise CalculationError("The result is too large (or not a number).")
    return value


def _short(value: int) -> str:
    text = str(value)
    return text if len(text) <= 20 else f"<a {len(text.lstrip('-'))}-digit number>"


def _power(base: _Number, exponent: _Number) -> _Number:
    if isinstance(base, int) and isinstance(exponent, int):
        _check_integer_power(base, exponent)
    result: object = base**exponent
    return _checked(result)


def _check_integer_power(base: int, exponent: int) -> None:
    """Refuse ``base ** exponent`` before computing it when the result would be too wide (9 ** 9 ** 9)."""
    if exponent > 0 and abs(base) > 1 and exponent * math.log2(abs(base)) > MAX_INTEGER_BITS:
        raise CalculationError(
            f"The result of {_short(base)} ** {_short(exponent)} is too large (more than {MAX_INTEGER_BITS} bits)."
        )


class _Evaluator:
    """Walks an expression tree, refusing every node outside the allowlist."""

    def evaluate(self, node: ast.expr, depth: int) -> _Number:
        if depth > MAX_DEPTH:
            raise CalculationError(f"The expression nests deeper than {MAX_DEPTH} levels.")
        try:
            return self._evaluate(node, depth)
        except ZeroDivisionError:
            raise CalculationError(f"Division by zero in {ast.unparse(node)!r}.") from None
        except OverflowError:
            raise CalculationError(f"The result of {ast.unparse(node)!r} is too large.") from None

    def _evaluate(self, node: ast.expr, depth: int) -> _Number:
        match node:
            case ast.Constant(value=complex()):
                raise CalculationError("Complex numbers are not allowed.")
            case ast.Constant(value=value):
                return _checked(value)
            case ast.BinOp():
                return self._binary_chain(node, depth)
            case ast.UnaryOp(op=ast.USub(), operand=operand):
                return _checked(-self.evaluate(operand, depth + 1))
            case ast.UnaryOp(op=ast.UAdd(), operand=operand):
                return _checked(+self.evaluate(operand, depth + 1))
            case ast.UnaryOp(op=op):
                raise CalculationError(f"The operator {type(op).__name__} is not allowed. Allowed: {_ALLOWED_TEXT}.")
            case ast.Name(id=name):
                return self._name(name)
            case ast.Call():
                return self._call(node, depth)
            case ast.Tuple():
                raise CalculationError(
                    "Tuples are not allowed; write numbers without thousands separators (48213, not 48,213)."
                )
            case ast.Attribute():
                raise CalculationError(f"Attribute access is not allowed: {ast.unparse(node)!r}.")
        raise CalculationError(f"{type(node).__name__} is not allowed in an expression. Allowed: {_ALLOWED_TEXT}.")

    def _binary_chain(self, node: ast.BinOp, depth: int) -> _Number:
        # A left-leaning chain (1 + 2 + 3 ...) is walked iteratively: it counts as one level.
        pending: list[tuple[ast.operator, ast.expr]] = []
        left: ast.expr = node
        while isinstance(left, ast.BinOp):
            pending.append((left.op, left.right))
            left = left.left
        value = self.evaluate(left, depth + 1)
        for op, right in reversed(pending):
            value = _binary(op, value, self.evaluate(right, depth + 1))
        return value

    @staticmethod
    def _name(name: str) -> _Number:
        if name in _CONSTANTS:
            return _CONSTANTS[name]
        if name in _FUNCTIONS:
            raise CalculationError(f"'{name}' is a function; call it, e.g. {name}(2).")
        raise CalculationError(f"Unknown name '{name}'. Allowed: {_ALLOWED_TEXT}.")

    def _call(self, node: ast.Call, depth: int) -> _Number:
        if not isinstance(node.func, ast.Name):
            raise CalculationError(f"Only the allowed functions can be called ({ast.unparse(node.func)!r} is not one).")
        name = node.func.id
        if name not in _FUNCTIONS:
            raise CalculationError(f"Unknown function '{name}'. Allowed: {_ALLOWED_TEXT}.")
        if node.keywords or any(isinstance(arg, ast.Starred) for arg in node.args):
            raise CalculationError(f"{name}() takes positional arguments only.")
        function, fewest, most = _FUNCTIONS[name]
        if not fewest <= len(node.args) <= most:
            expected = str(fewest) if fewest == most else f"{fewest} to {most}"
            raise CalculationError(f"{name}() takes {expected} arguments, got {len(node.args)}.")
        args = [self.evaluate(arg, depth + 1) for arg in node.args]
        try:
            result: object = function(*args)
        except ValueError as exc:  # math domain errors: sqrt(-1), log(0)
            if isinstance(exc, CalculationError):
                raise
            raise CalculationError(f"{ast.unparse(node)} cannot be computed: {exc}.") from None
        return _checked(result)


def _binary(op: ast.operator, left: _Number, right: _Number) -> _Number:
    if isinstance(op, ast.Pow):
        return _power(left, right)
    function = _BINARY_OPERATORS.get(type(op))
    if function is None:
        hint = _OPERATOR_HINTS.get(type(op), f"the operator {type(op).__name__} is not allowed.")
        raise CalculationError(f"{hint} Allowed: {_ALLOWED_TEXT}.")
    return _checked(function(left, right))


_PARAMETERS: Final = {
    "type": "object",
    "properties": {
        "expression": {
            "type": "string",
            "description": (
                "The arithmetic expression to evaluate, e.g. '1250 * 0.2' or 'sqrt(2) * (3 + 4) ** 2'. "
                "Supports + - * / // % ** and parentheses, pi, e, and abs, round, min, max, sqrt, floor, ceil, "
                "log, log10, exp. Write numbers without thousands separators."
            ),
        }
    },
    "required": ["expression"],
    "additionalProperties": False,
}

calculator = Tool(
    name="calculator",
    description="A tool for performing mathematical calculations.",
    parameters=_PARAMETERS,
    function=calculate,
)
"""The ``calculator`` tool: takes ``{"expression": str}``, returns the result as text.

A refused expression raises :class:`~handrail.errors.CalculationError`, which an Agent sends back
to the model as an error tool result.
"""
