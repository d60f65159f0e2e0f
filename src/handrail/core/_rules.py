"""Rules over a tool call's arguments (``amount > 100``), evaluated in the sandbox ConditionalRouter renders in.

A rule is one Jinja2 expression — the language of the router's conditions, without the ``{{ }}`` — whose
variables are the call's arguments: comparisons, ``and`` / ``or`` / ``not``, arithmetic, literals (numbers,
strings, lists, dicts, ``true``, ``false``, ``none``), ``in``, item and attribute access (``to.iban``,
``lines[0]``), ``a if b else c``, Jinja2's tests (``amount is defined``, ``memo is none``, ``n is even``) and a
few filters (:data:`FILTERS`: ``lines | length > 3``, ``currency | lower == "eur"``). Calls of functions or
methods, other filters, names that start with ``_`` and Jinja2's globals (``range``, ``namespace``...) are
refused when the rule is built, with a :class:`~handrail.errors.ConfigurationError` naming the rule and the
construct; so are a syntax error and (with ``names``) a variable that is not an argument of the tool.

Evaluation (:meth:`Rule.holds`) runs in :class:`~handrail.core._sandbox.LimitedSandboxedEnvironment` with its
size limits and strict undefined values: an argument the call does not carry is an error (write
``amount is defined and amount > 100`` for an optional one), and so is a result that is not ``true`` or
``false``. Every failure at run time is a :class:`RuleFailed` naming the rule and the cause; the callers decide
what failing closed means there (a policy asks, an edit is refused).

Examples:
    >>> rule = compile_rule("amount > 100 and currency == 'EUR'")
    >>> sorted(rule.variables), rule.holds({"amount": 250, "currency": "EUR"}), rule.holds({"amount": 5})
    (['amount', 'currency'], True, False)
    >>> try:
    ...     rule.holds({"currency": "EUR"})
    ... except RuleFailed as failed:
    ...     print(str(failed).split(": ")[-1])
    'amount' is undefined
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from handrail.errors import ConfigurationError, ConfigurationTypeError

if TYPE_CHECKING:
    from jinja2.environment import TemplateExpression

__all__ = ["FILTERS", "MAX_RULE_CHARS", "Rule", "RuleFailed", "compile_rule"]

MAX_RULE_CHARS = 2000
"""The longest rule (characters)."""
FILTERS = frozenset({
    "abs", "count", "default", "d", "first", "float", "int", "last", "length", "lower", "max", "min", "round",
    "string", "sum", "trim", "upper",
})  # fmt: skip
"""The filters a rule may use (none of them builds large values or runs code)."""


class RuleFailed(Exception):
    """A rule could not be evaluated on these arguments (an undefined name, a type error, a non-boolean result).

    Not a :class:`~handrail.errors.HandrailError`: it never leaves handrail; each caller turns it into what
    failing closed means for it.

    Attributes:
        rule: The rule that failed.
    """

    def __init__(self, message: str, rule: Rule | None = None) -> None:
        super().__init__(message)
        self.rule = rule


def _allowed_nodes() -> tuple[type, ...]:
    from jinja2 import nodes

    return (
        nodes.Name, nodes.Const, nodes.List, nodes.Tuple, nodes.Dict, nodes.Pair, nodes.Getattr, nodes.Getitem,
        nodes.Slice, nodes.Compare, nodes.Operand, nodes.And, nodes.Or, nodes.Not, nodes.Neg, nodes.Pos,
        nodes.Add, nodes.Sub, nodes.Mul, nodes.Div, nodes.FloorDiv, nodes.Mod, nodes.Pow, nodes.CondExpr,
        nodes.Test, nodes.Filter, nodes.Concat,
    )  # fmt: skip


def _refused(source: str, problem: str) -> ConfigurationError:
    return ConfigurationError(f"The rule {source!r} is refused: {problem}.")


def _check_node(node: Any, source: str, allowed: tuple[type, ...]) -> None:
    """Refuse what a rule may not hold (see the module docstring), naming it."""
    from jinja2 import nodes

    if not isinstance(node, allowed):
        what = "a function or method call" if isinstance(node, nodes.Call) else f"the construct {type(node).__name__}"
        raise _refused(source, f"{what} is not allowed in a rule (comparisons, and/or/not, arithmetic, tests and "
                               f"the filters {', '.join(sorted(FILTERS))} are)")  # fmt: skip
    if isinstance(node, nodes.Name) and node.name.startswith("_"):
        raise _refused(source, f"the name {node.name!r} starts with '_'")
    if isinstance(node, nodes.Getattr) and node.attr.startswith("_"):
        raise _refused(source, f"the attribute {node.attr!r} starts with '_'")
    if isinstance(node, nodes.Filter) and node.name not in FILTERS:
        raise _refused(source, f"the filter {node.name!r} is not one of {', '.join(sorted(FILTERS))}")
    if isinstance(node, nodes.Filter | nodes.Test) and (node.kwargs or node.dyn_args or node.dyn_kwargs):
        raise _refused(source, f"{node.name!r} takes positional arguments only in a rule")


@functools.cache
def _environment() -> Any:
    from jinja2 import StrictUndefined

    from handrail.core._sandbox import _StrictSandboxedEnvironment

    environment = _StrictSandboxedEnvironment(undefined=StrictUndefined)
    environment.globals.clear()  # range, dict, namespace...: a rule reads the arguments only
    return environment


@dataclass(frozen=True, slots=True, eq=False)
class Rule:
    """A compiled rule (build one with :func:`compile_rule`)."""

    source: str
    """The rule as written."""
    variables: frozenset[str]
    """The names it reads (argument names)."""
    _expression: TemplateExpression
    """The compiled expression."""

    def holds(self, arguments: Mapping[str, Any]) -> bool:
        """Whether the rule is true for ``arguments`` (the call's effective arguments).

        Raises:
            RuleFailed: It cannot be evaluated on them, or its result is not a boolean.
        """
        from jinja2 import Undefined

        from handrail.core._sandbox_limits import rendering

        try:
            with rendering():
                result = self._expression(**dict(arguments))
            if isinstance(result, Undefined):
                str(result)  # StrictUndefined raises UndefinedError naming the missing name
            if type(result) is not bool:
                problem = f"its result is {type(result).__name__} {result!r:.60}, not true or false"
                raise RuleFailed(problem)
        except RuleFailed as exc:
            raise RuleFailed(f"the rule {self.source!r} cannot be evaluated on these arguments: {exc}", self) from None
        except Exception as exc:  # anything the sandbox or an argument value raises: the rule failed on them
            detail = str(exc).rstrip(".") or type(exc).__name__
            message = f"the rule {self.source!r} cannot be evaluated on these arguments: {detail}"
            raise RuleFailed(message, self) from exc
        return result

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Rule) and other.source == self.source

    def __hash__(self) -> int:
        return hash(self.source)

    def __repr__(self) -> str:
        return f"Rule({self.source!r})"


def compile_rule(source: object, *, names: Iterable[str] | None = None, what: str = "rule") -> Rule:
    """Parse and check a rule.

    Args:
        source: The rule text (a Jinja2 expression, without ``{{ }}``).
        names: The argument names it may read (the tool's parameters); None: any name.
        what: How the messages name it (``"ask_when"``, ``"quorum_when"``).

    Returns:
        The compiled rule.

    Raises:
        ConfigurationTypeError: ``source`` is not a str.
        ConfigurationError: It is empty, too long, does not parse, holds a construct a rule may not hold, or reads a
            name outside ``names``.
    """
    if not isinstance(source, str):
        raise ConfigurationTypeError(f"A {what} is a str (an expression such as 'amount > 100'), got "
                                     f"{type(source).__name__}.")  # fmt: skip
    rule = _compiled(source.strip(), what)
    if names is not None:
        known = set(names)
        unknown = sorted(rule.variables - known)
        if unknown:
            raise ConfigurationError(
                f"The {what} {rule.source!r} reads {', '.join(map(repr, unknown))}, which "
                f"{'is not an argument' if len(unknown) == 1 else 'are not arguments'} of the tool (its arguments: "
                f"{', '.join(sorted(known)) or 'none'}); a rule that can never see its variable would never hold."
            )
    return rule


@functools.lru_cache(maxsize=512)
def _compiled(source: str, what: str) -> Rule:
    from jinja2 import TemplateSyntaxError, nodes
    from jinja2.environment import TemplateExpression
    from jinja2.parser import Parser

    if not source:
        raise ConfigurationError(f"The {what} is empty; write an expression such as 'amount > 100'.")
    if len(source) > MAX_RULE_CHARS:
        raise ConfigurationError(f"The {what} has {len(source):,} characters; at most {MAX_RULE_CHARS:,}.")
    environment = _environment()
    try:
        parser = Parser(environment, source, state="variable")
        expression = parser.parse_expression()
        if not parser.stream.eos:
            raise TemplateSyntaxError("unexpected text after the expression", parser.stream.current.lineno)
    except TemplateSyntaxError as exc:
        raise ConfigurationError(f"The {what} {source!r} does not parse: {exc.message}.") from None
    allowed = _allowed_nodes()
    for node in (expression, *expression.find_all(nodes.Node)):
        _check_node(node, source, allowed)
    variables = frozenset(n.name for n in expression.find_all(nodes.Name) if n.ctx == "load")
    if isinstance(expression, nodes.Name) and expression.ctx == "load":
        variables |= {expression.name}
    expression.set_environment(environment)
    body = [nodes.Assign(nodes.Name("result", "store"), expression, lineno=1)]
    template = environment.from_string(nodes.Template(body, lineno=1))
    return Rule(source, variables, TemplateExpression(template, False))
