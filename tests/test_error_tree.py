"""The tree drawn in handrail.errors' docstring is the class hierarchy: parents, further bases and exit codes.

Every public HandrailError subclass anywhere in handrail (SpecError in handrail.specs, RouteConditionException in
the routers, ...) must be drawn, and nothing may be drawn that is not a class.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Iterator
from typing import NamedTuple

import pytest

import handrail
import handrail.errors as errors
from handrail.errors import (
    CalculationError,
    ConfigurationError,
    CorruptRecordError,
    DecisionConflictError,
    HandrailError,
    PersistenceError,
    RunError,
    SnapshotDriftError,
    SnapshotError,
    SnapshotFinishedError,
    SnapshotInterruptedError,
    SnapshotResumedError,
    SnapshotUnavailableError,
    StoreError,
    UnknownOutcomeError,
)


class Drawn(NamedTuple):
    name: str
    parent: str | None
    extra_bases: tuple[str, ...]
    exit_code: int


_LINE = re.compile(
    r"^(?P<tree>(?:[│ ]   )*(?:[├└]── )?)(?P<name>\w+)?(?: \((?P<bases>[\w, ]+)\))?"
    r"(?:\s+(?P<code>\d)  (?P<text>\S.*))?$"
)


def drawing() -> list[str]:
    """The lines of the tree in the errors module's docstring (after ``::``, up to the blank line)."""
    doc = errors.__doc__ or ""
    block = doc[doc.index("::\n") + 3 :].lstrip("\n")
    lines = block[: block.index("\n\n")].splitlines()
    indent = len(lines[0]) - len(lines[0].lstrip())
    return [line[indent:] for line in lines]


def parse(lines: list[str]) -> dict[str, Drawn]:
    """``{name: Drawn}``; a line with no name carries on the line above (its exit code and text)."""
    found: dict[str, Drawn] = {}
    path: list[str] = []  # the names of the open branches, by depth
    last: str | None = None
    for line in lines:
        match = _LINE.match(line)
        assert match, f"not a line of the tree: {line!r}"
        if match["name"] is None:  # the continuation of a long line
            assert last is not None and match["code"], line
            found[last] = found[last]._replace(exit_code=int(match["code"]))
            continue
        depth = len(match["tree"]) // 4
        del path[depth:]
        assert len(path) == depth, f"{match['name']} is drawn below nothing: {line!r}"
        name = match["name"]
        assert name not in found, f"{name} is drawn twice"
        bases = tuple(b.strip() for b in match["bases"].split(",")) if match["bases"] else ()
        found[name] = Drawn(name, path[-1] if path else None, bases, int(match["code"] or -1))
        path.append(name)
        last = name
    return found


def _subclasses(cls: type[BaseException]) -> Iterator[type[BaseException]]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def handrail_errors() -> dict[str, type[BaseException]]:
    """Every public HandrailError subclass defined in handrail, after importing every module of it."""
    for module in pkgutil.walk_packages(handrail.__path__, "handrail."):
        if not module.name.endswith("__main__"):  # python -m handrail.cli runs the command
            importlib.import_module(module.name)
    classes: set[type[BaseException]] = {HandrailError, *_subclasses(HandrailError)}
    public = {cls for cls in classes if cls.__module__.startswith("handrail.") and not cls.__name__.startswith("_")}
    assert len({cls.__name__ for cls in public}) == len(public), "two public errors share a name"
    return {cls.__name__: cls for cls in public}


def problems(lines: list[str]) -> list[str]:
    """How the drawing differs from the classes, one line each.

    A class not drawn, a name drawn that is no class, a wrong parent, further base or exit code.
    """
    drawn = parse(lines)
    classes = handrail_errors()
    found = [f"{name} is not drawn" for name in sorted(set(classes) - set(drawn))]
    found += [f"{name} is drawn but is no error class" for name in sorted(set(drawn) - set(classes))]
    for name in sorted(set(drawn) & set(classes)):
        cls, shown = classes[name], drawn[name]
        bases = [base.__name__ for base in cls.__bases__ if base is not Exception]
        parent = bases[0] if issubclass(cls.__bases__[0], HandrailError) else None
        if shown.parent != parent:
            found.append(f"{name} is drawn under {shown.parent}, its first base is {parent}")
        if list(shown.extra_bases) != bases[1:]:
            found.append(f"{name} is drawn with the bases {list(shown.extra_bases)}, it has {bases[1:]}")
        if shown.exit_code != cls.exit_code:  # type: ignore[attr-defined]
            found.append(f"{name} is drawn with exit code {shown.exit_code}, it has {cls.exit_code}")  # type: ignore[attr-defined]
    return found


def test_the_drawing_is_the_class_hierarchy() -> None:
    assert problems(drawing()) == []


def test_the_drawing_names_spec_and_route_errors_and_the_persistence_branch() -> None:
    drawn = parse(drawing())
    assert drawn["SpecError"] == Drawn("SpecError", "ConfigurationError", (), 2)
    assert drawn["RouteConditionException"] == Drawn("RouteConditionException", "RunError", (), 1)
    assert drawn["CorruptRecordError"] == Drawn("CorruptRecordError", "StoreError", (), 2)
    assert drawn["DecisionConflictError"] == Drawn(
        "DecisionConflictError", "PersistenceError", ("ConfigurationError",), 2
    )
    for name in ("SnapshotFinishedError", "SnapshotResumedError", "SnapshotInterruptedError"):  # not "try again"
        assert drawn[name] == Drawn(name, "SnapshotUnavailableError", (), 2)


def _edited(old: str, new: str) -> list[str]:
    lines = drawing()
    assert sum(old in line for line in lines) == 1, old
    return [line.replace(old, new) for line in lines]


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        ("SpecError    ", "SpecsError   ", "SpecError is not drawn"),
        ("SpecError    ", "SpecsError   ", "SpecsError is drawn but is no error class"),
        ("├── SerializationError   ", "│   └── SerializationError", "SerializationError is drawn under StateError"),
        ("StoreError (RunError)", "StoreError           ", "StoreError is drawn with the bases []"),
        ("CorruptRecordError                 2", "CorruptRecordError                 1", "exit code 1, it has 2"),
    ],
)
def test_a_drawing_that_differs_from_the_classes_is_caught(old: str, new: str, problem: str) -> None:
    assert any(problem in found for found in problems(_edited(old, new)))


@pytest.mark.parametrize(
    ("cls", "branch"),
    [(SnapshotError, PersistenceError), (DecisionConflictError, PersistenceError), (StoreError, PersistenceError),
     (SnapshotUnavailableError, PersistenceError), (CorruptRecordError, PersistenceError),
     (SnapshotDriftError, PersistenceError), (CalculationError, RunError)],
    ids=lambda value: getattr(value, "__name__", ""),
)  # fmt: skip
def test_moved_errors_are_in_their_branch_and_still_caught_where_they_were(
    cls: type[HandrailError], branch: type[HandrailError]
) -> None:
    assert issubclass(cls, branch)
    if cls in (StoreError, SnapshotUnavailableError, CorruptRecordError):
        assert issubclass(cls, RunError)  # except RunError still catches them
    else:
        assert issubclass(cls, ConfigurationError) and issubclass(cls, ValueError)


def _exit_code_before_the_table(cls: type[BaseException]) -> int:
    """The exit code the command's chain of except clauses gave each error before the codes moved to the classes.

    A finished, resumed or interrupted snapshot exited with 2 (nobody holds its claim): those cases are classes now.
    """
    if issubclass(cls, SnapshotFinishedError | SnapshotResumedError | SnapshotInterruptedError):
        return 2
    if issubclass(cls, SnapshotUnavailableError):
        return 5
    if issubclass(cls, ConfigurationError | CorruptRecordError | UnknownOutcomeError):
        return 2  # SpecError, SnapshotDriftError and DecisionConflictError are ConfigurationErrors
    return 1


def test_exit_codes_are_those_the_command_gave_before() -> None:
    for name, cls in handrail_errors().items():
        assert cls.exit_code == _exit_code_before_the_table(cls), name  # type: ignore[attr-defined]
