"""Small agent-style tools and the 10-prompt set used to measure the embedded model's tool calling.

Each prompt names what a right first reply is: the tool to call and a check of its arguments.
The tools are module-level so they serialize by dotted path.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from handrail.tools import Tool

_OPERATORS: dict[type, Callable[..., Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def evaluate(expression: str) -> float:
    """Evaluate arithmetic (numbers, + - * / // % ** and parentheses) without eval()."""

    def walk(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return float(_OPERATORS[type(node.op)](walk(node.left), walk(node.right)))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
            return float(_OPERATORS[type(node.op)](walk(node.operand)))
        raise ValueError(f"unsupported expression: {expression!r}")

    return walk(ast.parse(expression.replace("^", "**").replace("×", "*"), mode="eval"))


def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression."""
    value = evaluate(expression)
    return str(int(value)) if value == int(value) else str(value)


def web_search(query: str, max_results: int = 3) -> list[dict[str, str]]:
    """Search the web (canned results)."""
    return [{"title": f"Result {i} for {query}", "url": f"https://example.org/{i}"} for i in range(1, max_results + 1)]


def get_weather(city: str, unit: str = "celsius") -> dict[str, Any]:
    """Current weather for a city (canned)."""
    return {"city": city, "temperature": 21 if unit == "celsius" else 70, "unit": unit, "sky": "clear"}


CALCULATOR = Tool(
    name="calculator",
    description="Evaluate an arithmetic expression such as '2 * (3 + 4)' and return the number.",
    parameters={
        "type": "object",
        "properties": {"expression": {"type": "string", "description": "The arithmetic expression."}},
        "required": ["expression"],
    },
    function=calculator,
)
WEB_SEARCH = Tool(
    name="web_search",
    description="Search the web and return the titles and URLs of matching pages.",
    parameters={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to search for."},
            "max_results": {"type": "integer", "minimum": 1, "maximum": 10, "description": "How many results."},
        },
        "required": ["query"],
    },
    function=web_search,
)
GET_WEATHER = Tool(
    name="get_weather",
    description="Get the current weather in a city.",
    parameters={
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city name."},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature unit."},
        },
        "required": ["city"],
    },
    function=get_weather,
)
TOOLS = [CALCULATOR, WEB_SEARCH, GET_WEATHER]


def _computes(expected: float) -> Callable[[dict[str, Any]], bool]:
    def check(arguments: dict[str, Any]) -> bool:
        try:
            return abs(evaluate(str(arguments.get("expression", ""))) - expected) < 1e-9
        except (ValueError, SyntaxError, ZeroDivisionError):
            return False

    return check


def _searches(*words: str, max_results: int | None = None) -> Callable[[dict[str, Any]], bool]:
    def check(arguments: dict[str, Any]) -> bool:
        query = str(arguments.get("query", "")).lower()
        if max_results is not None and arguments.get("max_results") != max_results:
            return False
        return all(word in query for word in words)

    return check


def _weather(city: str, unit: str | None) -> Callable[[dict[str, Any]], bool]:
    def check(arguments: dict[str, Any]) -> bool:
        if str(arguments.get("city", "")).lower() != city:
            return False
        return unit is None or arguments.get("unit") == unit

    return check


@dataclass(frozen=True)
class Case:
    """One prompt and what a right first reply is."""

    prompt: str
    tool: str
    arguments_ok: Callable[[dict[str, Any]], bool]


CASES = [
    Case("Use the calculator to compute 17 * 23.", "calculator", _computes(391)),
    Case("What is 128 times 47?", "calculator", _computes(6016)),
    Case("How much is (3 + 5) * 12 - 7?", "calculator", _computes(89)),
    Case("I bought 3 books at 12.50 each and a pen for 4. What did I spend in total?", "calculator", _computes(41.5)),
    Case("Search the web for the release notes of Python 3.13.", "web_search", _searches("python", "3.13")),
    Case("Find news about the James Webb Space Telescope.", "web_search", _searches("webb")),
    Case(
        "Look up recipes for vegan lasagna; I only want the top 5 results.",
        "web_search",
        _searches("lasagna", max_results=5),
    ),
    Case("What's the weather like in Oslo right now?", "get_weather", _weather("oslo", None)),
    Case(
        "Is it warm in Tokyo today? Give me the temperature in fahrenheit.",
        "get_weather",
        _weather("tokyo", "fahrenheit"),
    ),
    Case("Tell me the current weather in Paris in celsius.", "get_weather", _weather("paris", "celsius")),
]
