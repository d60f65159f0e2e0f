"""Lazy package exports: names are imported from their modules on first use (keeps imports fast)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, str], namespace: MutableMapping[str, Any], public: list[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Build a package's module-level ``__getattr__`` and ``__dir__`` (PEP 562).

    Args:
        package: The package's ``__name__`` (for error messages).
        exports: ``{name: module path}``: where each exported name is defined.
        namespace: The package's ``globals()``; an imported name is cached there.
        public: The package's ``__all__``.

    Returns:
        ``(__getattr__, __dir__)`` to assign at module level.

    Examples:
        >>> getattr_, dir_ = lazy_exports("pkg", {"dumps": "json"}, {}, ["dumps"])
        >>> getattr_("dumps").__module__
        'json'
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *public})

    return __getattr__, __dir__
