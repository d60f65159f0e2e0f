"""Issue 20, item 8: where Haystack 2.19 raises ValueError, handrail's error is a ValueError too."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.components.routers import ConditionalRouter
from handrail.dataclasses import ChatMessage
from handrail.errors import HandrailError
from handrail.testing import ScriptedChatGenerator
from handrail.tools import ComponentTool, Tool


async def _async_callback(chunk: Any) -> None:
    return None


def _tool(**kwargs: Any) -> Tool:
    return Tool(
        name="t", description="d", parameters={"type": "object", "properties": {}}, function=lambda: 1, **kwargs
    )


def _agent(**kwargs: Any) -> Agent:
    return Agent(chat_generator=ScriptedChatGenerator([ChatMessage.from_assistant("hi")]), **kwargs)


CASES: dict[str, Callable[[], object]] = {
    "a route that is not a dict": lambda: ConditionalRouter(["not a route"]),  # type: ignore[list-item]
    "a route without its keys": lambda: ConditionalRouter([{"condition": "{{ True }}"}]),
    "ComponentTool of a non-component": lambda: ComponentTool(object()),
    "outputs_to_state that is not a dict": lambda: _tool(outputs_to_state={"k": "source"}),
    "outputs_to_state with a handler that is not callable": lambda: _tool(outputs_to_state={"k": {"handler": 3}}),
    "an async init callback in a sync run": lambda: _agent(streaming_callback=_async_callback).run(
        [ChatMessage.from_user("x")]
    ),
    "an async run-time callback in a sync run": lambda: _agent().run(
        [ChatMessage.from_user("x")], streaming_callback=_async_callback
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_haystack_s_value_errors_are_value_errors(case: str) -> None:
    with pytest.raises(ValueError) as caught:
        CASES[case]()
    assert isinstance(caught.value, HandrailError)  # and handrail's own, with a message naming the problem
    assert str(caught.value)


def test_router_output_of_the_wrong_type_is_a_value_error_when_checked() -> None:
    router = ConditionalRouter(
        [{"condition": "{{ True }}", "output": "{{ 'text' }}", "output_name": "o", "output_type": int}],
        validate_output_type=True,
    )
    with pytest.raises(ValueError, match="o"):
        router.run()
