"""The sandboxed Jinja2 environments ConditionalRouter renders its templates in.

Imported only when a router is built, so ``import handrail`` never loads Jinja2.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from jinja2 import StrictUndefined, Undefined, meta
from jinja2.exceptions import SecurityError
from jinja2.nativetypes import NativeCodeGenerator, NativeTemplate, native_concat
from jinja2.sandbox import SandboxedEnvironment

__all__ = ["make_environment", "template_variables"]


_MAX_DEPTH = 8
"""How deep :func:`_refuse_undefined` looks into nested lists, tuples, sets and dicts."""


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


MAX_REPEAT = 1_000_000
"""The longest string or list a template may build with ``*`` (items)."""
MAX_POWER_BITS = 100_000
"""The largest integer a template may build with ``**`` (bits)."""


def _power_too_big(base: Any, exponent: Any) -> bool:
    """Whether ``base ** exponent`` of two ints has more than :data:`MAX_POWER_BITS` bits (0 and ±1 stay small)."""
    if not (isinstance(base, int) and isinstance(exponent, int)) or abs(base) <= 1:
        return False
    return exponent * abs(base).bit_length() > MAX_POWER_BITS


class _StrictSandboxedEnvironment(SandboxedEnvironment):
    """A sandbox in which unsafe attribute access fails at once instead of rendering as undefined.

    ``*`` and ``**`` are checked before they run: Jinja2's sandbox limits ``range`` but not ``'a' * 10**9`` or
    ``10 ** 10 ** 8``, which would take the process's memory or CPU for minutes.
    """

    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        """Apply ``*`` or ``**`` when its result stays within :data:`MAX_REPEAT` items / :data:`MAX_POWER_BITS` bits.

        Raises:
            SecurityError: The result would be larger.
        """
        if operator == "*":
            for seq, times in ((left, right), (right, left)):
                size = len(seq) * times if isinstance(seq, str | bytes | list | tuple) and isinstance(times, int) else 0
                if size > MAX_REPEAT:
                    raise SecurityError(f"'*' would build {size:,} items; the limit is {MAX_REPEAT:,}.")
        elif _power_too_big(left, right):
            raise SecurityError(f"'**' would build an integer of more than {MAX_POWER_BITS:,} bits.")
        return super().call_binop(context, operator, left, right)

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
