"""Wrong-type providers and settings are refused at the call, naming the parameter and what was given."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import handrail.tracing
from handrail import Agent
from handrail.errors import ConfigurationTypeError
from handrail.testing import ScriptedChatGenerator


@pytest.fixture(autouse=True)
def _off() -> Any:
    yield
    handrail.tracing.disable()


@pytest.mark.parametrize("given", ["x", 5, object()])
def test_agent_refuses_a_tracer_provider_without_get_tracer(given: Any) -> None:
    with pytest.raises(ConfigurationTypeError, match=r"tracer_provider.*got"):
        Agent(chat_generator=ScriptedChatGenerator([]), tools=[], tracer_provider=given)
    agent = Agent(chat_generator=ScriptedChatGenerator([]), tools=[])
    with pytest.raises(ConfigurationTypeError, match="tracer_provider"):
        agent.tracer_provider = given
    assert agent.tracer_provider is None


CALLS: list[tuple[Callable[..., Any], dict[str, Any], str]] = [
    (handrail.tracing.enable, {"tracer_provider": "x"}, r"enable\(tracer_provider=\).*'x'"),
    (handrail.tracing.enable, {"meter_provider": 5}, r"enable\(meter_provider=\).*5"),
    (handrail.tracing.enable, {"capture_content": "yes"}, r"capture_content.*'yes'"),
    (handrail.tracing.enable, {"max_content_chars": "10"}, r"max_content_chars.*str"),
    (handrail.tracing.observer_for, {"tracer_provider": "x"}, r"observer_for\(tracer_provider=\).*'x'"),
    (handrail.tracing.observer_for, {"capture_content": 1}, r"capture_content.*1"),
    (handrail.tracing.metrics_observer_for, {"meter_provider": "x"}, r"meter_provider.*'x'"),
]


@pytest.mark.parametrize(("function", "kwargs", "message"), CALLS)
def test_tracing_calls_refuse_wrong_types(function: Callable[..., Any], kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationTypeError, match=message):
        function(**kwargs)
    assert not handrail.tracing.is_enabled()  # a refused enable() turns nothing on


def test_providers_of_the_sdk_are_accepted() -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import TracerProvider

    provider = TracerProvider()
    agent = Agent(chat_generator=ScriptedChatGenerator([]), tools=[], tracer_provider=provider)
    assert agent.tracer_provider is provider
    handrail.tracing.enable(provider, meter_provider=MeterProvider(), capture_content=False)
    assert handrail.tracing.is_enabled()
