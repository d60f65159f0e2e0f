"""Module-level tools of the end-to-end cases, importable by dotted path (``tests.cases._tools``)."""

from __future__ import annotations

from handrail.tools import tool

CALLS: list[tuple[str, str]] = []
"""Side-effect log: ``(tool name, argument)`` per call; tests clear it first."""


@tool
def get_weather(location: str) -> str:
    """Get the weather for a location."""
    CALLS.append(("get_weather", location))
    return f"Sunny in {location}"


@tool(name="forecast", description="Tomorrow's weather.")
async def get_forecast(location: str) -> str:
    CALLS.append(("forecast", location))
    return f"Rain in {location}"
