"""The sandboxed Jinja2 environments ConditionalRouter, the Agent's user_prompt and argument rules render in.

Imported only when a router, a user prompt or a rule is built, so ``import handrail`` never loads Jinja2. They
live in ``core`` so that every layer above (confirmation policies, the approval store's re-evaluation of a rule on
edited arguments, the router) uses this one sandbox.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any, NoReturn

from jinja2 import StrictUndefined, Undefined, meta
from jinja2.exceptions import SecurityError
from jinja2.nativetypes import NativeCodeGenerator, NativeTemplate, native_concat
from jinja2.sandbox import SandboxedEnvironment

from handrail.core._sandbox_limits import check_binop, check_call, limited_filters

__all__ = ["LimitedSandboxedEnvironment", "make_environment", "template_variables"]


_MAX_DEPTH = 8
"""How deep :func:`_refuse_undefined` looks into nested lists, tuples, sets and dicts."""

_MAX_CALL_DEPTH = 100
"""How deep calls may nest within one render: a recursive macro stops here with a SecurityError, long before
Python's own recursion limit (whose RecursionError would come with a traceback thousands of lines long)."""

_call_depth: ContextVar[int] = ContextVar("handrail_template_call_depth", default=0)


def _refuse_undefined(value: Any, depth: int = 0) -> Any:
    """Turn an undefined value (also one inside a list or dict literal) into an error.

    Without this, ``{{ [x.missing] }}`` would render ``[Undefined]`` as text, or hand the
    Undefined object itself out of a native render.
    """
    if isinstance(value, Undefined):
        str(value)  # StrictUndefined raises UndefinedError naming the missing name or attribute
    elif depth < _MAX_DEPTH and isinstance(value, list | tuple | set | frozenset):
        for item in value:
            _refuse_undefined(item, depth + 1)
    elif depth < _MAX_DEPTH and isinstance(value, dict):
        for item in (*value.keys(), *value.values()):
            _refuse_undefined(item, depth + 1)
    return value


class LimitedSandboxedEnvironment(SandboxedEnvironment):
    """Jinja2's sandbox, plus the size and work limits of :mod:`handrail.core._sandbox_limits`.

    Operators, calls and filters that could build huge values, and the ranges of one render (inside
    :func:`~handrail.core._sandbox_limits.rendering`), are checked before they run; ``lipsum`` is gone.
    Used for router templates and the Agent's ``user_prompt``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.filters.update(limited_filters(self.filters))
        self.globals.pop("lipsum", None)  # lipsum(10**6) generates text for as long as it is asked

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        """Apply an operator whose result stays within the limits.

        Raises:
            SecurityError: The result would be larger.
        """
        check_binop(operator, left, right)
        return super().call_binop(context, operator, left, right)

    def call(self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        """Call ``__obj`` unless it would pad, join or format past the limits, or exhaust the render's ranges.

        Raises:
            SecurityError: It would, or calls nest deeper than 100 (a macro recursing without end).
        """
        check_call(__obj, args, kwargs)
        depth = _call_depth.get()
        if depth >= _MAX_CALL_DEPTH:
            raise SecurityError(
                f"the template's calls nest more than {_MAX_CALL_DEPTH} deep (a macro that calls itself without end?)."
            )
        token = _call_depth.set(depth + 1)
        try:
            return super().call(__context, __obj, *args, **kwargs)
        finally:
            _call_depth.reset(token)


class _StrictSandboxedEnvironment(LimitedSandboxedEnvironment):
    """The limited sandbox, in which unsafe attribute access fails at once instead of rendering as undefined."""

    def unsafe_undefined(self, obj: Any, attribute: str) -> NoReturn:
        """Raise SecurityError for an attribute the sandbox does not allow (``__class__``, ``_private``...).

        Raises:
            SecurityError: Always.
        """
        raise SecurityError(f"access to attribute {attribute!r} of {type(obj).__name__!r} object is unsafe.")


class _SandboxedNativeEnvironment(_StrictSandboxedEnvironment):
    """The sandbox, rendering ``{{ value }}`` to the Python object itself (Jinja2's native types)."""

    code_generator_class = NativeCodeGenerator
    concat = staticmethod(native_concat)  # type: ignore[assignment]
    template_class = NativeTemplate


def make_environment(*, native: bool, filters: Mapping[str, Callable[..., Any]]) -> SandboxedEnvironment:
    """Build the environment one router renders its templates in.

    Args:
        native: True renders to Python objects (``unsafe=True``); False renders to text.
        filters: Custom filters by name, added to Jinja2's built-in ones.

    Returns:
        A sandboxed environment with strict undefined values: a missing attribute or key is an error.
    """
    cls = _SandboxedNativeEnvironment if native else _StrictSandboxedEnvironment
    environment = cls(undefined=StrictUndefined, finalize=_refuse_undefined)
    environment.filters.update(filters)
    return environment


def template_variables(environment: SandboxedEnvironment, source: str) -> set[str]:
    """Return the variables a template reads from its context (not Jinja2's globals such as ``range``).

    Args:
        environment: The environment that will render the template.
        source: The template text.

    Returns:
        The undeclared variable names.

    Raises:
        jinja2.TemplateSyntaxError: When the template does not parse.
    """
    names = meta.find_undeclared_variables(environment.parse(source))
    return {name for name in names if name not in environment.globals}
