"""Reference example E3: a Pipeline chat generator → ConditionalRouter → ToolInvoker, on the embedded model.

The model reads the question and either calls the weather tool or answers in text. The router looks at
its reply: tool calls go to the ToolInvoker, which runs them; a text answer leaves the pipeline as the
router's ``final_replies``. Run it with::

    pip install 'handrail[local]'                  # the embedded model (once)
    python examples/tool_invoker_pipeline.py       # the 1.5B model; --model small for the 0.5B one
    python examples/tool_invoker_pipeline.py "Is it humid in Lisbon right now?"
    python examples/tool_invoker_pipeline.py --scripted   # no model: a scripted reply (used by the tests)

``HANDRAIL_EXAMPLE_SCRIPTED=1`` in the environment does what ``--scripted`` does.
"""

# typing.List is part of the reference example (it is the same socket type as list).
# ruff: noqa: UP006, UP035
from __future__ import annotations

import argparse
import os
import time
from typing import Any, List

from handrail import Pipeline
from handrail.components.routers import ConditionalRouter
from handrail.components.tools import ToolInvoker
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.testing import ScriptedChatGenerator
from handrail.tools import Tool

QUESTION = "What is the weather in Berlin?"

_READINGS = {"berlin": ("14°C", "72%"), "lisbon": ("21°C", "58%"), "paris": ("17°C", "64%")}


def weather(location: str) -> dict[str, str]:
    """Return the current temperature and humidity of a location (canned readings, no network)."""
    temp, humidity = _READINGS.get(location.strip().lower(), ("19°C", "60%"))
    return {"location": location, "temp": temp, "humidity": humidity}


weather_tool = Tool(
    name="weather",
    description="Get the current temperature and humidity of a city.",
    function=weather,
    parameters={
        "type": "object",
        "properties": {"location": {"type": "string", "description": "The city, e.g. Berlin"}},
        "required": ["location"],
    },
)


def make_generator(model: str, scripted: bool) -> Any:
    """The embedded model (``default`` or ``small``) offered the weather tool, or a scripted stand-in."""
    if scripted:
        call = ToolCall(tool_name="weather", arguments={"location": "Berlin"}, id="call_1")
        return ScriptedChatGenerator([ChatMessage.from_assistant(tool_calls=[call])])
    from handrail.components.generators.chat import LlamaCppChatGenerator

    return LlamaCppChatGenerator(model=model, tools=[weather_tool], generation_kwargs={"max_tokens": 256})


def build_pipeline(chat_generator: Any) -> Pipeline:
    """Wire E3: generator.replies → router; router.there_are_tool_calls → tool_invoker.messages."""
    tool_invoker = ToolInvoker(tools=[weather_tool])
    routes = [
        {
            "condition": "{{replies[0].tool_calls | length > 0}}",
            "output": "{{replies}}",
            "output_name": "there_are_tool_calls",
            "output_type": List[ChatMessage],
        },
        {
            "condition": "{{replies[0].tool_calls | length == 0}}",
            "output": "{{replies}}",
            "output_name": "final_replies",
            "output_type": List[ChatMessage],
        },
    ]
    router = ConditionalRouter(routes, unsafe=True)

    pipeline = Pipeline()
    pipeline.add_component("generator", chat_generator)
    pipeline.add_component("router", router)
    pipeline.add_component("tool_invoker", tool_invoker)
    pipeline.connect("generator.replies", "router")
    pipeline.connect("router.there_are_tool_calls", "tool_invoker.messages")
    return pipeline


def report(result: dict[str, dict[str, Any]]) -> list[str]:
    """Describe what came out of the pipeline, one line per message."""
    lines = []
    for message in result.get("tool_invoker", {}).get("tool_messages", []):
        for item in message.tool_call_results:
            origin = item.origin
            lines.append(f"tool call : {origin.tool_name}({origin.arguments})")
            lines.append(f"result    : {item.result}" + ("  [error]" if item.error else ""))
    for message in result.get("router", {}).get("final_replies", []):
        lines.append(f"answer    : {message.text}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("question", nargs="?", default=QUESTION)
    parser.add_argument("--model", choices=["default", "small"], default="default", help="the embedded model")
    parser.add_argument("--scripted", action="store_true", help="use a scripted reply instead of a model")
    args = parser.parse_args(argv)
    scripted = args.scripted or os.environ.get("HANDRAIL_EXAMPLE_SCRIPTED") == "1"

    chat_generator = make_generator(args.model, scripted)
    pipeline = build_pipeline(chat_generator)
    started = time.perf_counter()
    try:
        result = pipeline.run({"messages": [ChatMessage.from_user(args.question)]})
    finally:
        close = getattr(chat_generator, "close", None)
        if callable(close):
            close()
    print(f"question  : {args.question}")
    print("\n".join(report(result)))
    print(
        f"route     : {'tools' if 'tool_invoker' in result else 'final_replies'} "
        f"({'scripted' if scripted else args.model} model, {time.perf_counter() - started:.1f} s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
