"""``handrail run --tracing`` / ``handrail resume --tracing``: the run traced to the global tracer provider; and the
``--log-json`` time (UTC, milliseconds)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import handrail.tracing
from handrail.cli import main
from tests.cli.test_approvals import DONE, LOG_ENV, PAY, agent_yaml
from tests.cli.test_cli import CALC_THEN_ANSWER, agent_file


def cli(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch) -> InMemorySpanExporter:
    """A private provider standing in for the global one (the process's global can be set only once)."""
    from opentelemetry import trace

    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    return spans


def _names(spans: InMemorySpanExporter) -> list[str]:
    return [s.name for s in spans.get_finished_spans() if s.instrumentation_scope.name == "handrail"]


def test_run_and_resume_with_tracing_trace_to_the_global_provider(
    tmp_path: Path, exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = cli("run", "--tracing", agent_file(tmp_path, CALC_THEN_ANSWER), "What is 17*23?")
    assert result.exit_code == 0, result.output
    assert "invoke_agent" in _names(exporter) and any(n.startswith("execute_tool") for n in _names(exporter))
    assert not handrail.tracing.is_enabled()  # on for the command only
    assert result.stderr == ""  # a provider is configured: no note

    monkeypatch.setenv(LOG_ENV, str(tmp_path / "transfers.log"))
    folder = tmp_path / "approvals"
    agent = agent_yaml(tmp_path / "agent.yaml", [PAY])
    paused = cli("run", "--json", "--pause-for-approval", folder, agent, "Pay the rent.")
    snapshot_id = json.loads(paused.stdout)["snapshot_id"]
    assert cli("approvals", "approve", snapshot_id, "--dir", folder, "--by", "alice").exit_code == 0
    agent_yaml(agent, [DONE])
    exporter.clear()
    resumed = cli("resume", "--tracing", snapshot_id, "--dir", folder)
    assert resumed.exit_code == 0, resumed.output
    assert "execute_tool transfer" in _names(exporter) and not handrail.tracing.is_enabled()


def test_tracing_without_an_sdk_provider_says_the_spans_go_nowhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opentelemetry import trace

    # what a process that never set a provider has (another test of this process may have set the global one)
    monkeypatch.setattr(trace, "get_tracer_provider", trace.ProxyTracerProvider)
    result = cli("run", "--tracing", agent_file(tmp_path, CALC_THEN_ANSWER), "q")
    assert result.exit_code == 0, result.output
    assert "no OpenTelemetry SDK tracer provider is configured" in result.stderr


def test_tracing_without_opentelemetry_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.trace", None)  # import fails as if it were not installed
    result = cli("run", "--tracing", agent_file(tmp_path, CALC_THEN_ANSWER), "q")
    assert result.exit_code == 2, result.output
    assert "--tracing needs OpenTelemetry" in result.output and "handrail[tracing]" in result.output
    assert not handrail.tracing.is_enabled()


def test_log_json_time_is_utc_iso_with_milliseconds(tmp_path: Path) -> None:
    result = cli("run", "-v", "--log-json", agent_file(tmp_path, CALC_THEN_ANSWER), "q")
    assert result.exit_code == 0, result.output
    times = [json.loads(line)["time"] for line in result.stderr.splitlines()]
    assert times and all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", t) for t in times), times
