from __future__ import annotations

import subprocess
import sys

import handrail.hooks
from handrail.hooks import function_hook, max_tool_calls, redaction, token_budget, truncation, types, validation

EXPECTED = [
    "HOOK_POINTS",
    "FunctionHook",
    "Hook",
    "HookPoint",
    "MaxToolCallsHook",
    "RedactionHook",
    "TokenBudgetHook",
    "ToolResultTruncationHook",
    "deserialize_hooks",
    "hook",
    "serialize_hooks",
    "validate_hooks",
]


def test_package_exports_exactly_all() -> None:
    assert handrail.hooks.__all__ == EXPECTED
    for name in EXPECTED:
        assert getattr(handrail.hooks, name) is getattr(sys.modules[handrail.hooks._EXPORTS[name]], name), name


def test_public_modules_have_sorted_all() -> None:
    for module in (function_hook, max_tool_calls, redaction, token_budget, truncation, types, validation):
        assert module.__all__ == sorted(module.__all__), module.__name__
        for name in module.__all__:
            assert hasattr(module, name), (module.__name__, name)


def test_unknown_attribute() -> None:
    try:
        handrail.hooks.NoSuchHook  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchHook" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("expected AttributeError")


def test_hooks_sit_below_components() -> None:
    code = (
        "import sys, handrail.hooks as h; [getattr(h, n) for n in h.__all__]; "
        "print(sorted(m for m in sys.modules if m.startswith(('handrail.components', 'handrail.human_in_the_loop'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
