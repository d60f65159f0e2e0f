"""A first handrail agent: one tool, a scripted model, the whole history printed.

The scripted model replays two fixed replies, so this example needs no model and runs in an
instant: python examples/quickstart.py. For an agent on the embedded local model, run
``handrail run examples/assistant.yaml "..."`` (see that file; ``pip install 'handrail[local]'``).
"""

from __future__ import annotations

from typing import Annotated

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.testing import ScriptedChatGenerator
from handrail.tools import tool


@tool
def get_weather(city: Annotated[str, "The city to look up"]) -> dict[str, str]:
    """Return the current weather of a city."""
    return {"city": city, "temp": "21°C", "sky": "clear"}


def main() -> None:
    model = ScriptedChatGenerator(
        [
            ChatMessage.from_assistant(tool_calls=[ToolCall("get_weather", {"city": "Lisboa"}, id="call_1")]),
            ChatMessage.from_assistant("It is 21°C and clear in Lisboa."),
        ]
    )
    agent = Agent(chat_generator=model, tools=[get_weather], system_prompt="You answer weather questions.")
    result = agent.run([ChatMessage.from_user("What's the weather in Lisboa?")])
    for message in result["messages"]:
        parts = message.texts + [f"call {c.tool_name}({c.arguments})" for c in message.tool_calls]
        parts += [f"result {r.result}" for r in message.tool_call_results]
        print(f"{message.role.value:>9}: {' | '.join(parts)}")
    print(f"exit_reason={result['exit_reason']} steps={result['step_count']} tools={result['tool_call_counts']}")


if __name__ == "__main__":
    main()
