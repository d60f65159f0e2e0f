"""The words logs, spans and metrics share for a run: a decision's kind, the model's name, a masked error text.

Plain rules, no OpenTelemetry: :mod:`handrail.components._run_logging` and :mod:`handrail.tracing` both use them,
so a log record and a span of the same run say the same thing (``edited``, ``scripted-model``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from handrail.core._secret_values import mask_secrets
from handrail.human_in_the_loop.templates import is_expiry_rejection

if TYPE_CHECKING:
    from handrail.dataclasses.decisions import ToolExecutionDecision
    from handrail.hooks.redaction import RedactionHook

__all__ = ["POLICY", "DecisionKind", "KNOWN_GENERATORS", "decision_kind", "mask_text", "model_name"]

DecisionKind = Literal["approved", "rejected", "edited", "expired", "auto"]
"""approved: run as proposed; rejected: not run; edited: run with other arguments; expired: nobody decided in time
(the approval service's expiry); auto: a policy let it run without asking anybody."""

POLICY = "policy"  # the decided_by of a decision a confirmation policy made (no person was asked)

KNOWN_GENERATORS: dict[str, tuple[str, str | None, bool]] = {
    "handrail.components.generators.chat.openai.OpenAIChatGenerator": ("openai", None, False),
    "handrail.components.generators.chat.llama_cpp.LlamaCppChatGenerator": ("llama_cpp", None, True),
    "handrail.testing.scripted.ScriptedChatGenerator": ("handrail.testing", "scripted-model", False),
    "handrail.testing.function_generator.FunctionChatGenerator": ("handrail.testing", "function-model", False),
}
"""handrail's own generators, by qualified class name: (gen_ai.provider.name, model when it has none, in process)."""


def decision_kind(decision: ToolExecutionDecision, proposed: Mapping[str, Any] | None = None) -> DecisionKind:
    """What ``decision`` does to a call whose proposed arguments are ``proposed`` (None: not known).

    The rule the run applies (``_confirm._apply``): ``execute=False`` rejects (``expired`` when the approval service's
    expiry wrote it), ``final_tool_params`` None or equal to the proposed arguments confirms, other params edit (a
    key the model did not give is a State-injected value the person was shown, not an edit). A confirmation decided
    by ``"policy"`` is ``auto``.

    Examples:
        >>> from handrail.dataclasses.decisions import ToolExecutionDecision
        >>> decision_kind(ToolExecutionDecision("pay", True, "c1", final_tool_params={"amount": 5}), {"amount": 5})
        'approved'
        >>> decision_kind(ToolExecutionDecision("pay", True, "c1", final_tool_params={"amount": 1}), {"amount": 5})
        'edited'
        >>> decision_kind(ToolExecutionDecision("pay", True, "c1", final_tool_params={"amount": 5, "user": "ann"}),
        ...               {"amount": 5})
        'approved'
        >>> decision_kind(ToolExecutionDecision("pay", False, "c1", feedback="no"))
        'rejected'
    """
    if not decision.execute:
        return "expired" if is_expiry_rejection(decision) else "rejected"
    params = decision.final_tool_params
    if params is not None and proposed is not None and _changes(params, proposed):
        return "edited"
    if decision.decided_by == POLICY:
        return "auto"
    return "approved"


def _changes(params: Mapping[str, Any], proposed: Mapping[str, Any]) -> bool:
    """Whether ``params`` drop or change a proposed argument (keys only in ``params`` are injected values)."""
    return any(key not in params or params[key] != value for key, value in proposed.items())


def model_name(generator: Any) -> str | None:
    """The model a run's generator names (``gen_ai.request.model``), or None.

    Its ``model_name`` or ``model`` (a str), else a known generator's default (``scripted-model``). Never calls it.
    """
    for name in ("model_name", "model"):
        try:
            value = getattr(generator, name, None)
        except Exception:  # a property that cannot answer (a model not configured yet)
            value = None
        if isinstance(value, str) and value:
            return value
    kind = type(generator)
    known = KNOWN_GENERATORS.get(f"{kind.__module__}.{kind.__qualname__}")
    return known[1] if known is not None else None


@functools.cache
def _default_redaction() -> RedactionHook:
    from handrail.hooks.redaction import RedactionHook

    return RedactionHook()


def mask_text(text: str, redact: Callable[[str], str] | None = None) -> str:
    """``text`` masked as log records and span errors are.

    The known secret values masked, then ``redact`` (a run's own redaction hooks) applied, then
    :class:`~handrail.hooks.RedactionHook`'s default patterns (an ``sk-…`` key, a bearer token) masked.

    What error texts go through before a log record or a span holds them (the ``-vv`` preview too).

    Examples:
        >>> mask_text("auth failed for key sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ012345")
        'auth failed for key [REDACTED]'
    """
    text = mask_secrets(text)
    if redact is not None:
        text = redact(text)
    return _default_redaction().redact(text)
