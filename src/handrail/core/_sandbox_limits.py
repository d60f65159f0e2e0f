"""Size and work limits for router templates, checked before an operation runs.

Jinja2's sandbox stops templates from reaching Python internals and caps one ``range`` at 100,000 items,
but a template can still build a gigabyte string (``'a' * 10**9``, ``'a' | center(10**9)``,
``'%01000000000d' % 1``) or loop for hours over nested ranges. The checks here refuse those before
they run, so a router loaded from a file cannot take the process's memory or CPU.

Not covered: the ``~`` operator (it compiles to a plain join, out of the sandbox's reach) and nested loops
over lists or strings a template built within these limits (each at most :data:`MAX_ITEMS` long); give
routers templates you would run yourself.
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from jinja2 import pass_eval_context
from jinja2.exceptions import SecurityError

__all__ = ["MAX_INT_BITS", "MAX_ITEMS", "MAX_RANGE_ITEMS", "check_binop", "check_call", "limited_filters", "rendering"]

MAX_ITEMS = 1_000_000
"""The longest string, bytes or list a template may build (items)."""
MAX_INT_BITS = 100_000
"""The largest integer a template may build (bits)."""
MAX_RANGE_ITEMS = 1_000_000
"""How many items all the ``range`` calls of one render may produce together (nested loops multiply)."""

_SEQUENCES = (str, bytes, list, tuple)
_WIDE = re.compile(r"\d{7,}")  # a width or precision of 1,000,000 or more in a format string
_NESTED_FIELD = re.compile(r"\{[^{}]*:[^{}]*\{")  # '{:{}}': a width taken from the arguments
_STAR_WIDTH = re.compile(r"%[-+ #0]*(?:\*|\d*\.\*)")  # '%*d', '%.*f': a width or precision from the arguments
_PADDING = frozenset({"center", "ljust", "rjust", "zfill"})
_range_budget: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("range_budget", default=None)


def _refuse(what: str) -> SecurityError:
    return SecurityError(f"{what}; templates may build at most {MAX_ITEMS:,} items or {MAX_INT_BITS:,}-bit integers.")


def _bits(value: Any) -> int:
    return abs(value).bit_length() if isinstance(value, int) else 0


def check_binop(operator: str, left: Any, right: Any) -> None:
    """Refuse ``*``, ``**``, ``+`` or ``%`` whose result would pass the limits.

    Raises:
        SecurityError: Naming the operator and the size it would build.
    """
    if operator == "*":
        if isinstance(left, int) and isinstance(right, int) and _bits(left) + _bits(right) > MAX_INT_BITS:
            raise _refuse("'*' would build an integer past the limit")
        for seq, times in ((left, right), (right, left)):
            if isinstance(seq, _SEQUENCES) and isinstance(times, int) and len(seq) * times > MAX_ITEMS:
                raise _refuse(f"'*' would build {len(seq) * times:,} items")
    elif operator == "**":
        if isinstance(left, int) and isinstance(right, int) and abs(left) > 1 and right * _bits(left) > MAX_INT_BITS:
            raise _refuse("'**' would build an integer past the limit")
    elif operator == "+":
        if isinstance(left, _SEQUENCES) and isinstance(right, _SEQUENCES) and len(left) + len(right) > MAX_ITEMS:
            raise _refuse(f"'+' would build {len(left) + len(right):,} items")
    elif operator == "%" and isinstance(left, str) and _wide_percent(left, right):
        raise _refuse("a '%' format with a width or precision of a million or more")


def check_call(function: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any] | None = None) -> None:
    """Refuse a call of a str/bytes method that would pad, join or format past the limits.

    Raises:
        SecurityError: Naming the method.
    """
    kwargs = kwargs or {}
    owner = getattr(getattr(function, "__wrapped__", function), "__self__", None)  # jinja2 wraps str.format
    if not isinstance(owner, str | bytes):
        if function is range or getattr(function, "__name__", "") == "safe_range":
            _spend_range(args)
        return
    name = getattr(function, "__name__", "")
    if name in _PADDING and args and isinstance(args[0], int) and args[0] > MAX_ITEMS:
        raise _refuse(f"'{name}' would pad to {args[0]:,} characters")
    if name in ("format", "format_map") and (
        _WIDE.search(str(owner)) or (_NESTED_FIELD.search(str(owner)) and _big_int((*args, *kwargs.values())))
    ):
        raise _refuse("a format with a width or precision of a million or more")
    if name == "replace" and len(args) >= 2:
        _check_replace(owner, args[0], args[1], args[2] if len(args) > 2 else -1)
    if name == "expandtabs" and args and isinstance(args[0], int):
        tabs = owner.count("\t") if isinstance(owner, str) else owner.count(b"\t")
        if args[0] * tabs > MAX_ITEMS:
            raise _refuse("'expandtabs' would build too many characters")
    if name == "join" and args and isinstance(args[0], list | tuple):
        _check_join(args[0], len(owner))


def _wide_percent(template: str, values: Any) -> bool:
    """Whether ``template % values`` pads past the limit: a wide width in the text, or one passed for ``*``."""
    return bool(_WIDE.search(template)) or (
        bool(_STAR_WIDTH.search(template)) and _big_int(values if isinstance(values, tuple) else (values,))
    )


def _big_int(values: Any) -> bool:
    """Whether an argument is an int of a million or more (a width passed as ``{:{}}`` or ``%*d``)."""
    return any(isinstance(v, int) and v >= MAX_ITEMS for v in values)


def _check_replace(text: Any, old: Any, new: Any, count: Any) -> None:
    if not (isinstance(text, str | bytes) and isinstance(old, str | bytes) and isinstance(new, str | bytes)):
        return
    found = text.count(old) if old else len(text) + 1  # type: ignore[arg-type]
    if isinstance(count, int) and count >= 0:
        found = min(found, count)
    size = len(text) + found * (len(new) - len(old))
    if size > MAX_ITEMS:
        raise _refuse(f"'replace' would build {size:,} items")


def _check_join(items: list[Any] | tuple[Any, ...], separator: int) -> None:
    size = sum(len(x) for x in items if isinstance(x, _SEQUENCES)) + separator * len(items)
    if size > MAX_ITEMS:
        raise _refuse(f"'join' would build {size:,} items")


def _spend_range(args: tuple[Any, ...]) -> None:
    budget = _range_budget.get()
    if budget is None:
        return
    try:
        budget[0] -= len(range(*args))
    except (TypeError, ValueError, OverflowError):
        return  # range() itself reports bad arguments
    if budget[0] < 0:
        raise SecurityError(f"the ranges of one render would produce more than {MAX_RANGE_ITEMS:,} items together.")


@contextmanager
def rendering() -> Iterator[None]:
    """Give the render in this block its own ``range`` budget (:data:`MAX_RANGE_ITEMS`)."""
    token = _range_budget.set([MAX_RANGE_ITEMS])
    try:
        yield
    finally:
        _range_budget.reset(token)


def _limited_join(original: Callable[..., Any]) -> Callable[..., Any]:
    @pass_eval_context
    def join(eval_ctx: Any, value: Any, d: Any = "", attribute: Any = None) -> Any:
        if isinstance(value, list | tuple):
            _check_join(value, len(d) if isinstance(d, str) else 0)
        return original(eval_ctx, value, d, attribute)

    return join


def _limited_replace(original: Callable[..., Any]) -> Callable[..., Any]:
    @pass_eval_context
    def replace(eval_ctx: Any, s: Any, old: Any, new: Any, count: Any = None) -> Any:
        _check_replace(str(s), str(old), str(new), count if isinstance(count, int) else -1)
        return original(eval_ctx, s, old, new, count)

    return replace


def _limited(name: str, original: Callable[..., Any], width_at: int | None) -> Callable[..., Any]:
    def checked(value: Any, *args: Any, **kwargs: Any) -> Any:
        width = args[width_at] if width_at is not None and len(args) > width_at else None
        if isinstance(width, int) and width > MAX_ITEMS:
            raise _refuse(f"the '{name}' filter would pad to {width:,} characters")
        if name == "format" and isinstance(value, str) and (_WIDE.search(value) or _wide_percent(value, args)):
            raise _refuse("the 'format' filter with a width or precision of a million or more")
        return original(value, *args, **kwargs)

    checked.__name__ = name
    return checked


def limited_filters(filters: Mapping[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """Jinja2's ``center``, ``indent``, ``format`` and ``join`` filters, with the size limits in front."""
    widths = {"center": 0, "indent": 0, "format": None}
    limited = {name: _limited(name, filters[name], at) for name, at in widths.items() if name in filters}
    if "join" in filters:
        limited["join"] = _limited_join(filters["join"])
    if "replace" in filters:
        limited["replace"] = _limited_replace(filters["replace"])
    return limited
