"""What a replay reports: the first divergence (where, what kind, a unified diff) and the replay's result."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["DivergenceKind", "ReplayDivergence", "ReplayResult", "json_diff"]

DivergenceKind = Literal["model_input", "tool_calls", "decision_point", "hooks", "steps", "effect"]
"""What differed: the model's input, the tool calls, a decision point (an approval asked, or a pause, where the
recording had none, or none where it had one), the hooks run, the number of steps (the run ended earlier or went
on longer than the recording), or another effect (loading the stores)."""


def json_diff(expected: Any, actual: Any, *, expected_name: str = "recorded", actual_name: str = "replayed") -> str:
    """A unified diff of the JSON of ``expected`` and ``actual`` (indented, keys sorted), empty when equal."""
    left = json.dumps(expected, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    right = json.dumps(actual, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    return "\n".join(difflib.unified_diff(left, right, expected_name, actual_name, lineterm=""))


def _effect_name(data: Any) -> str:
    return str(data.get("type")) if isinstance(data, dict) else "the end of the run"


@dataclass(frozen=True, slots=True)
class ReplayDivergence:
    """The first place where a replayed run did not do what its recording did."""

    step: int
    """The step (model call) it happened in, counted from 1 across the recording's runs."""
    effect: int
    """The effect's number among those compared, counted from 1."""
    kind: DivergenceKind
    """What differed."""
    expected: dict[str, Any] | None
    """The recorded effect's JSON (None: the recording had ended)."""
    actual: dict[str, Any] | None
    """The replayed run's effect's JSON (None: the run had ended)."""
    diff: str
    """A unified diff of the JSON of ``expected`` and ``actual``."""
    line: int = 0
    """The recording's line of the expected effect (0 when there is none)."""

    @property
    def summary(self) -> str:
        """One line: where and what."""
        where = f"step {self.step}, effect {self.effect}" + (f" (recording line {self.line})" if self.line else "")
        kind, recorded, replayed = self.kind.replace("_", " "), _effect_name(self.expected), _effect_name(self.actual)
        if recorded == replayed:
            return f"Diverged at {where}: {kind} differs ({recorded})."
        return f"Diverged at {where}: {kind}: recorded {recorded}, replayed {replayed}."

    def report(self) -> str:
        """The summary line and the diff."""
        return f"{self.summary}\n{self.diff}" if self.diff else self.summary


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """What a replay did: how many effects matched, and the first divergence (None: replayed identically)."""

    matched: int
    """The effects compared that matched the recording."""
    steps: int
    """The model calls replayed."""
    divergence: ReplayDivergence | None = None
    """The first divergence, or None."""
    result: dict[str, Any] | None = None
    """The last replayed run's result (``Agent.run``'s dict) when it ran to its end, else None."""

    @property
    def diverged(self) -> bool:
        """True when the replay found a divergence."""
        return self.divergence is not None

    def assert_identical(self) -> None:
        """Raise AssertionError with :meth:`report` (the divergence and its diff) unless it replayed identically.

        ``replay("run.jsonl", agent).assert_identical()`` is a regression test: pytest shows the diff.
        """
        if self.divergence is not None:
            raise AssertionError(self.report())

    def report(self) -> str:
        """A short report: the effects matched, then "replayed identically" or the divergence with its diff."""
        head = f"{self.matched} effects matched over {self.steps} model calls"
        if self.divergence is None:
            return f"{head}: replayed identically."
        return f"{head}.\n{self.divergence.report()}"
