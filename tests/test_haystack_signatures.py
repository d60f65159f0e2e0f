"""handrail's constructors and methods accept the calls Haystack 2.19's accept (issue 20, item 1).

tests/fixtures/haystack_2_19_signatures.json holds the signatures of the Haystack names handrail mirrors
(written by tools/haystack_signatures.py under an interpreter with Haystack installed). For every one of them,
every Haystack parameter must exist in handrail with the same name, be positional where Haystack's is (in the
same order) and have the same default. handrail may add parameters, keyword-only ones with a default only, so
that every call a Haystack user writes still binds the same way.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
from pathlib import Path
from typing import Any

import pytest

FIXTURE = Path(__file__).parent / "fixtures" / "haystack_2_19_signatures.json"
SIGNATURES: dict[str, dict[str, Any]] = json.loads(FIXTURE.read_text(encoding="utf-8"))["signatures"]

# Deliberate differences, each keyed (Haystack name, method, parameter or "*" for the whole method), with the
# reason. A key that no longer matches a difference fails test_allowlist_has_no_stale_entries.
H = "haystack_experimental.components.agents.human_in_the_loop."
S = "haystack_experimental.chat_message_stores.InMemoryChatMessageStore"
ALLOWED: dict[tuple[str, str, str], str] = {
    # Deliberate differences.
    ("haystack.components.tools.ToolInvoker", "__init__", "max_workers"): "DESIGN 3.7: 8 concurrent tools by default",
    ("haystack.dataclasses.ChatMessage", "__init__", "*"): (
        "Haystack's fields are private (_role, ...) and its docs build messages through from_*; handrail's are public"
    ),
    ("haystack_experimental.dataclasses.breakpoints.AgentSnapshot", "__init__", "*"): (
        "handrail's snapshot is the encoded RunState (DESIGN 2), not Haystack's component_inputs layout"
    ),
    (S, "*", "*"): "handrail's chat stores hold many conversations, keyed by chat_history_id",
    ("haystack.utils.Secret", "from_dict", "*"): "a parameter named dict would shadow the builtin; passed positionally",
    ("haystack.components.generators.chat.OpenAIChatGenerator", "__init__", "api_key"): (
        "the same default, Secret.from_env_var('OPENAI_API_KEY'); only the reprs differ"
    ),
    ("haystack.tools.Toolset", "__init__", "tools"): "None means an empty toolset, as Haystack's empty-list factory",
    # Haystack requires these; handrail gives a default, so every Haystack call still binds.
    ("haystack.components.agents.State", "__init__", "schema"): "optional in handrail (an empty schema)",
    ("haystack.tools.Tool", "__init__", "function"): "optional in handrail: a Tool may have only async_function",
    ("haystack.dataclasses.StreamingChunk", "__init__", "content"): "optional in handrail (empty text)",
    ("haystack.dataclasses.breakpoints.Breakpoint", "__init__", "component_name"): "defaults to the Agent's",
    ("haystack.dataclasses.breakpoints.ToolBreakpoint", "__init__", "component_name"): "defaults to 'tool_invoker'",
    (H + "BreakpointConfirmationStrategy", "__init__", "snapshot_file_path"): "optional: the Agent's snapshot store",
    ("haystack.dataclasses.ToolCall", "__init__", "extra"): (
        "a fourth field after Haystack's three, so every Haystack call binds; handrail passes it positionally"
    ),
    (H + "RichConsoleUI", "get_user_confirmation", "injected_params"): (
        "a fourth, optional parameter after Haystack's three; strategies pass it by keyword and only when a tool "
        "reads State, so a UI written for Haystack keeps working"
    ),
    (H + "SimpleConsoleUI", "get_user_confirmation", "injected_params"): "as for RichConsoleUI",
    (H + "SimpleConsoleUI", "__init__", "args"): "Haystack ignores *args/**kwargs; accepting anything would hide typos",
    (
        H + "SimpleConsoleUI",
        "__init__",
        "kwargs",
    ): "Haystack ignores *args/**kwargs; accepting anything would hide typos",
}

_POSITIONAL = {"POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD"}


def _resolve(dotted: str) -> Any:
    """The object a dotted handrail name ends in, or None when handrail does not have it (yet)."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            obj = getattr(obj, attribute, None)
            if obj is None:
                return None
        return obj
    return None


def _own_parameters(function: Any) -> list[inspect.Parameter]:
    parameters = list(inspect.signature(function).parameters.values())
    if parameters and parameters[0].name in {"self", "cls"} and not isinstance(function, staticmethod):
        parameters = parameters[1:]
    return parameters


def _same_default(haystack_repr: str | None, ours: inspect.Parameter) -> bool:
    if haystack_repr is None:
        return ours.default is inspect.Parameter.empty
    if ours.default is inspect.Parameter.empty:
        return False
    try:
        return bool(ast.literal_eval(haystack_repr) == ours.default)
    except (ValueError, SyntaxError):
        return repr(ours.default) == haystack_repr


def _differences(haystack: list[dict[str, Any]], ours: list[inspect.Parameter]) -> dict[str, str]:
    """Each difference as {parameter name: what differs}; an empty dict when handrail's binds every Haystack call."""
    found: dict[str, str] = {}
    by_name = {parameter.name: parameter for parameter in ours}
    haystack_positional = [p["name"] for p in haystack if p["kind"] in _POSITIONAL]
    our_positional = [p.name for p in ours if p.kind.name in _POSITIONAL]
    if our_positional[: len(haystack_positional)] != haystack_positional:
        found["*"] = f"positional order {our_positional} is not Haystack's {haystack_positional}"
    for extra in our_positional[len(haystack_positional) :]:
        found[extra] = "extra positional parameter (must be keyword-only)"
    for theirs in haystack:
        name, kind = theirs["name"], theirs["kind"]
        if kind in {"VAR_POSITIONAL", "VAR_KEYWORD"}:
            if not any(p.kind.name == kind for p in ours):
                found[name] = f"no {kind} parameter"
            continue
        mine = by_name.get(name)
        if mine is None:
            found[name] = "missing"
        elif (kind in _POSITIONAL) != (mine.kind.name in _POSITIONAL):
            found[name] = f"kind {mine.kind.name}, Haystack's {kind}"
        elif not _same_default(theirs["default"], mine):
            ours_default = "none" if mine.default is inspect.Parameter.empty else repr(mine.default)
            found[name] = f"default {ours_default}, Haystack's {theirs['default'] or 'none'}"
    names = {p["name"] for p in haystack}
    for mine in ours:
        if mine.name in names or mine.kind.name in _POSITIONAL or mine.kind.name.startswith("VAR_"):
            continue
        if mine.default is inspect.Parameter.empty:
            found[mine.name] = "extra keyword-only parameter without a default"
    return found


def _all_differences() -> dict[tuple[str, str, str], str]:
    found: dict[tuple[str, str, str], str] = {}
    for haystack_name, entry in SIGNATURES.items():
        ours = _resolve(entry["handrail"])
        if ours is None:
            found[(haystack_name, "*", "*")] = f"handrail has no {entry['handrail']}"
            continue
        for method, parameters in entry["methods"].items():
            target = ours if method == "__call__" else inspect.getattr_static(ours, method, None)
            if target is None:
                found[(haystack_name, method, "*")] = "handrail has no such method"
                continue
            if isinstance(target, (staticmethod, classmethod)):
                target = getattr(ours, method)
            for parameter, what in _differences(parameters, _own_parameters(target)).items():
                found[(haystack_name, method, parameter)] = what
    return found


DIFFERENCES = _all_differences()


def test_blocking_strategy_takes_policy_and_ui_positionally() -> None:
    from handrail.human_in_the_loop import AlwaysAskPolicy, BlockingConfirmationStrategy, SimpleConsoleUI

    strategy = BlockingConfirmationStrategy(AlwaysAskPolicy(), SimpleConsoleUI())
    assert isinstance(strategy.confirmation_policy, AlwaysAskPolicy)
    assert isinstance(strategy.confirmation_ui, SimpleConsoleUI)


def test_the_fixture_covers_the_mirrored_names() -> None:
    assert "haystack_experimental.components.agents.human_in_the_loop.BlockingConfirmationStrategy" in SIGNATURES
    assert SIGNATURES["haystack.Pipeline"]["methods"].keys() == {"__init__", "run", "add_component", "connect"}


@pytest.mark.parametrize("key", sorted(DIFFERENCES), ids=lambda key: ".".join(key))
def test_every_difference_is_allowed(key: tuple[str, str, str]) -> None:
    if not any(_covers(allowed, key) for allowed in ALLOWED):
        pytest.fail(f"{'.'.join(key)}: {DIFFERENCES[key]}")


def test_allowlist_has_no_stale_entries() -> None:
    stale = [key for key in ALLOWED if not any(_covers(key, found) for found in DIFFERENCES)]
    assert stale == []


def _covers(allowed: tuple[str, str, str], found: tuple[str, str, str]) -> bool:
    return all(a in {b, "*"} for a, b in zip(allowed, found, strict=True))
