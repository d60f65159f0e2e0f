"""Every public package exports exactly its ``__all__``: what ``dir()`` offers, and every name in it resolves.

A public package is one whose dotted path has no underscored part. ``dir(package)`` (the lazy ``__dir__`` of
packages that import their names on first use) must offer no public name beyond ``__all__`` — such as a
``TYPE_CHECKING`` or ``annotations`` left over from an import — and no name of ``__all__`` may be missing or fail
to import. Submodules are attributes too once imported; they are reached by their own path, not exported.
``handrail.cli`` is the ``handrail`` command (its one export is the console entry point ``main``), not a library
package, and is left out.
"""

from __future__ import annotations

import importlib
import json
import pathlib
import types

import pytest

import handrail

_ROOT = pathlib.Path(handrail.__file__).parent
_NOT_A_LIBRARY = {"handrail.cli"}


def _public_packages() -> list[str]:
    names = []
    for init in sorted(_ROOT.rglob("__init__.py")):
        parts = ("handrail", *init.parent.relative_to(_ROOT).parts)
        name = ".".join(parts)
        if not any(part.startswith("_") for part in parts) and name not in _NOT_A_LIBRARY:
            names.append(name)
    return names


PUBLIC_PACKAGES = _public_packages()


def _offered(package: types.ModuleType) -> set[str]:
    """The public names ``dir(package)`` offers, its own submodules aside."""
    names = set()
    for name in dir(package):
        if name.startswith("_"):
            continue
        value = getattr(package, name)
        if isinstance(value, types.ModuleType) and value.__name__ == f"{package.__name__}.{name}":
            continue
        names.add(name)
    return names


def test_the_public_packages_are_found() -> None:
    expected = {
        "handrail",
        "handrail.components",
        "handrail.components.agents",
        "handrail.components.generators",
        "handrail.components.generators.chat",
        "handrail.components.routers",
        "handrail.components.tools",
        "handrail.core",
        "handrail.dataclasses",
        "handrail.hooks",
        "handrail.human_in_the_loop",
        "handrail.specs",
        "handrail.stores",
        "handrail.testing",
        "handrail.testing.store_suites",
        "handrail.tools",
        "handrail.tools.builtin",
    }
    assert expected <= set(PUBLIC_PACKAGES)
    assert not any(part.startswith("_") for name in PUBLIC_PACKAGES for part in name.split("."))


@pytest.mark.parametrize("name", PUBLIC_PACKAGES)
def test_a_public_package_offers_exactly_its_all(name: str) -> None:
    package = importlib.import_module(name)
    exported = package.__all__

    assert isinstance(exported, list | tuple)
    assert len(exported) == len(set(exported)), f"{name}.__all__ names something twice"
    assert _offered(package) - set(exported) == set(), f"{name} offers public names missing from __all__"
    assert set(exported) - _offered(package) == set(), f"{name}.__all__ names what dir({name}) does not offer"


@pytest.mark.parametrize("name", PUBLIC_PACKAGES)
def test_every_name_in_all_resolves(name: str) -> None:
    package = importlib.import_module(name)

    for exported in package.__all__:
        value = getattr(package, exported)  # a lazy export imports its module here
        assert not isinstance(value, types.ModuleType), f"{name}.{exported} is a module, not an export"
    namespace: dict[str, object] = {}
    exec(f"from {name} import *", namespace)  # the star import reads __all__
    assert set(namespace) - {"__builtins__"} == set(package.__all__)


def test_a_stray_public_name_is_caught() -> None:
    package = types.ModuleType("handrail_probe")
    package.__all__ = ["kept"]  # type: ignore[attr-defined]
    package.kept = 1  # type: ignore[attr-defined]
    package.TYPE_CHECKING = False  # type: ignore[attr-defined]
    package.json = json  # type: ignore[attr-defined]  # a module, but not one of the package's own

    assert _offered(package) - set(package.__all__) == {"TYPE_CHECKING", "json"}  # type: ignore[attr-defined]


def test_stores_exports_what_a_store_of_ones_own_is_built_on() -> None:
    """The docs tell users to build stores on SnapshotStoreBase and pass MessageCache: both are public there."""
    import handrail.stores as stores
    from handrail.dataclasses.snapshot import MessageCache
    from handrail.stores._snapshot_base import SnapshotStoreBase

    assert {"SnapshotStoreBase", "MessageCache"} <= set(stores.__all__)
    assert stores.SnapshotStoreBase is SnapshotStoreBase and stores.MessageCache is MessageCache
    assert issubclass(stores.SQLiteSnapshotStore, stores.SnapshotStoreBase)
