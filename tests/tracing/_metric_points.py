"""Reading handrail's metrics back from an InMemoryMetricReader."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, Metric, ScopeMetrics

__all__ = ["Reader"]


@dataclass
class Reader:
    """The reader and the private provider it reads (one per test)."""

    memory: InMemoryMetricReader
    provider: MeterProvider

    def scopes(self) -> list[ScopeMetrics]:
        data = self.memory.get_metrics_data()
        if data is None:
            return []
        return [s for r in data.resource_metrics for s in r.scope_metrics if s.scope.name == "handrail"]

    def metric(self, name: str) -> Metric:
        found = [m for s in self.scopes() for m in s.metrics if m.name == name]
        assert len(found) == 1, f"expected one metric {name!r}, found {len(found)}"
        return found[0]

    def points(self, name: str) -> list[Any]:
        """The data points of ``name`` (none when it was never recorded)."""
        return [p for s in self.scopes() for m in s.metrics if m.name == name for p in m.data.data_points]

    def counts(self, name: str) -> dict[tuple[tuple[str, Any], ...], int]:
        """A counter's values by sorted attribute items (zero values left out)."""
        return {tuple(sorted(p.attributes.items())): p.value for p in self.points(name) if p.value}

    def total(self, name: str) -> int:
        """The sum of a counter's (or up-down counter's) values over every attribute set."""
        return sum(int(p.value) for p in self.points(name))
