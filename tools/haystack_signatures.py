"""Dump the signatures of the Haystack names handrail mirrors: ``python tools/haystack_signatures.py [OUT]``.

Run it under an interpreter that has Haystack 2.19 and haystack-experimental 0.14 installed (never under
handrail's own environment: handrail does not depend on Haystack). It writes
``tests/fixtures/haystack_2_19_signatures.json`` (or OUT): for each mirrored class or function, the
constructor and the public methods, and for every parameter its name, kind and default's ``repr``.
tests/test_haystack_signatures.py reads that file and checks handrail's signatures against it.

Each entry of :data:`TARGETS` pairs handrail's dotted name with Haystack's; the optional third item limits
which methods are recorded (None: the constructor and every public method).
"""

from __future__ import annotations

import importlib
import inspect
import json
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "tests" / "fixtures" / "haystack_2_19_signatures.json"

_HITL = "haystack_experimental.components.agents.human_in_the_loop"

# (handrail name, Haystack name, methods to record or None for all public ones)
TARGETS: list[tuple[str, str, tuple[str, ...] | None]] = [
    ("handrail.components.agents.Agent", "haystack_experimental.components.agents.Agent", None),
    ("handrail.components.tools.ToolInvoker", "haystack.components.tools.ToolInvoker", None),
    ("handrail.tools.Tool", "haystack.tools.Tool", None),
    ("handrail.tools.Toolset", "haystack.tools.Toolset", None),
    ("handrail.tools.tool", "haystack.tools.tool", None),
    ("handrail.tools.create_tool_from_function", "haystack.tools.create_tool_from_function", None),
    ("handrail.tools.ComponentTool", "haystack.tools.ComponentTool", None),
    ("handrail.dataclasses.ChatMessage", "haystack.dataclasses.ChatMessage", None),
    ("handrail.dataclasses.ToolCall", "haystack.dataclasses.ToolCall", None),
    ("handrail.dataclasses.ToolCallResult", "haystack.dataclasses.ToolCallResult", None),
    ("handrail.dataclasses.TextContent", "haystack.dataclasses.TextContent", None),
    ("handrail.dataclasses.StreamingChunk", "haystack.dataclasses.StreamingChunk", None),
    ("handrail.dataclasses.State", "haystack.components.agents.State", None),
    ("handrail.components.routers.ConditionalRouter", "haystack.components.routers.ConditionalRouter", None),
    ("handrail.core.pipeline.Pipeline", "haystack.Pipeline", ("__init__", "run", "add_component", "connect")),
    ("handrail.core.async_pipeline.AsyncPipeline", "haystack.AsyncPipeline", ("__init__", "run", "run_async")),
    ("handrail.core.component.component", "haystack.component", ()),
    ("handrail.core.Secret", "haystack.utils.Secret", None),
    ("handrail.dataclasses.Breakpoint", "haystack.dataclasses.breakpoints.Breakpoint", None),
    ("handrail.dataclasses.AgentBreakpoint", "haystack.dataclasses.breakpoints.AgentBreakpoint", None),
    ("handrail.dataclasses.ToolBreakpoint", "haystack.dataclasses.breakpoints.ToolBreakpoint", None),
    ("handrail.dataclasses.AgentSnapshot", "haystack_experimental.dataclasses.breakpoints.AgentSnapshot", None),
    (
        "handrail.components.generators.chat.OpenAIChatGenerator",
        "haystack.components.generators.chat.OpenAIChatGenerator",
        ("__init__", "run", "run_async"),
    ),
    ("handrail.components.builders.PromptBuilder", "haystack.components.builders.PromptBuilder", None),
    ("handrail.components.builders.ChatPromptBuilder", "haystack.components.builders.ChatPromptBuilder", None),
    ("handrail.human_in_the_loop.AlwaysAskPolicy", f"{_HITL}.AlwaysAskPolicy", None),
    ("handrail.human_in_the_loop.NeverAskPolicy", f"{_HITL}.NeverAskPolicy", None),
    ("handrail.human_in_the_loop.AskOncePolicy", f"{_HITL}.AskOncePolicy", None),
    ("handrail.human_in_the_loop.SimpleConsoleUI", f"{_HITL}.SimpleConsoleUI", None),
    ("handrail.human_in_the_loop.RichConsoleUI", f"{_HITL}.RichConsoleUI", None),
    ("handrail.human_in_the_loop.BlockingConfirmationStrategy", f"{_HITL}.BlockingConfirmationStrategy", None),
    ("handrail.human_in_the_loop.BreakpointConfirmationStrategy", f"{_HITL}.BreakpointConfirmationStrategy", None),
    ("handrail.human_in_the_loop.ConfirmationUIResult", f"{_HITL}.ConfirmationUIResult", None),
    ("handrail.human_in_the_loop.ToolExecutionDecision", f"{_HITL}.ToolExecutionDecision", None),
    (
        "handrail.human_in_the_loop.get_tool_calls_and_descriptions_from_snapshot",
        f"{_HITL}.breakpoint.get_tool_calls_and_descriptions_from_snapshot",
        None,
    ),
    (
        "handrail.stores.InMemoryChatMessageStore",
        "haystack_experimental.chat_message_stores.InMemoryChatMessageStore",
        None,
    ),
]


def _resolve(dotted: str) -> Any:
    """The object a dotted name ends in: the longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            obj = getattr(obj, attribute)
        return obj
    raise ImportError(dotted)


def _parameters(function: Any) -> list[dict[str, Any]]:
    """Each parameter of ``function`` but ``self``/``cls``: name, kind and the default's repr (None: no default)."""
    out = []
    for index, parameter in enumerate(inspect.signature(function).parameters.values()):
        if index == 0 and parameter.name in {"self", "cls"}:
            continue
        default = None if parameter.default is inspect.Parameter.empty else repr(parameter.default)
        out.append({"name": parameter.name, "kind": parameter.kind.name, "default": default})
    return out


def _public_methods(cls: type) -> list[str]:
    """The constructor and the public methods (functions, class and static methods) of ``cls``, sorted."""
    names = ["__init__"]
    for name in sorted(dir(cls)):
        if name.startswith("_"):
            continue
        raw = inspect.getattr_static(cls, name)
        if isinstance(raw, (staticmethod, classmethod)) or inspect.isfunction(raw):
            names.append(name)
    return names


def _entry(handrail_name: str, haystack_name: str, methods: tuple[str, ...] | None) -> dict[str, Any]:
    obj = _resolve(haystack_name)
    if not inspect.isclass(obj):
        return {"handrail": handrail_name, "kind": "function", "methods": {"__call__": _parameters(obj)}}
    chosen = _public_methods(obj) if methods is None else list(methods)
    return {
        "handrail": handrail_name,
        "kind": "class",
        "methods": {name: _parameters(getattr(obj, name)) for name in chosen},
    }


def _alias_httpx() -> None:
    """Some environments ship the HTTP client as ``httpx2`` only; Haystack's OpenAI module imports ``httpx``."""
    try:
        importlib.import_module("httpx")
    except ImportError:
        sys.modules["httpx"] = importlib.import_module("httpx2")


def main(argv: list[str]) -> int:
    """Write the fixture; print where."""
    _alias_httpx()
    out = Path(argv[1]) if len(argv) > 1 else DEFAULT_OUT
    data = {
        "haystack-ai": metadata.version("haystack-ai"),
        "haystack-experimental": metadata.version("haystack-experimental"),
        "signatures": {haystack: _entry(handrail, haystack, methods) for handrail, haystack, methods in TARGETS},
    }
    out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
