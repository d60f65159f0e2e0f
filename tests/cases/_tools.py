"""Module-level tools of the end-to-end cases, importable by dotted path (``tests.cases._tools``)."""

from __future__ import annotations

from handrail.tools import tool
from tests.common_tools import CALLS, get_weather

__all__ = ["CALLS", "get_forecast", "get_weather"]


@tool(name="forecast", description="Tomorrow's weather.")
async def get_forecast(location: str) -> str:
    CALLS.append(("forecast", location))
    return f"Rain in {location}"
