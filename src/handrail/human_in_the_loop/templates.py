"""The texts the model reads when a person rejects or edits a tool call.

A decision keeps the person's raw feedback; these templates are rendered only when the
decision is applied to the conversation. Templates use :meth:`str.format` placeholders:

- reject template: ``{tool_name}``;
- modify template: ``{tool_name}`` and ``{final_tool_params}``;
- user-feedback template: ``{feedback}``, appended after one space when there is feedback.

Divergence from Haystack 2.x: ``{final_tool_params}`` is rendered as JSON
(``json.dumps(..., ensure_ascii=False)``, e.g. ``{"x": 99}``), not with ``str()``
(``{'x': 99}``), matching how handrail renders every other value the model reads.
Values that JSON cannot encode fall back to ``str()``.

Examples:
    >>> render_reject("delete_file", "Not that one")
    "Tool execution for 'delete_file' was rejected by the user. With user feedback: Not that one"
    >>> print(render_modify("get_weather", {"city": "Zürich"}, None))
    The parameters for tool 'get_weather' were updated by the user to:
    {"city": "Zürich"}
"""

from __future__ import annotations

import json
import string
from collections.abc import Mapping
from typing import Any

from handrail.errors import ConfigurationError, ConfigurationTypeError

__all__ = [
    "DEFAULT_MODIFY_TEMPLATE",
    "DEFAULT_REJECT_TEMPLATE",
    "DEFAULT_USER_FEEDBACK_TEMPLATE",
    "EXPIRED_TEMPLATE",
    "check_template",
    "check_templates",
    "format_params",
    "is_expiry_rejection",
    "render_expired",
    "render_modify",
    "render_reject",
]

DEFAULT_REJECT_TEMPLATE = "Tool execution for '{tool_name}' was rejected by the user."
"""Tool-result text of a rejected call; placeholder ``{tool_name}``."""

DEFAULT_MODIFY_TEMPLATE = "The parameters for tool '{tool_name}' were updated by the user to:\n{final_tool_params}"
"""User-message text before an edited call; placeholders ``{tool_name}`` and ``{final_tool_params}``."""

DEFAULT_USER_FEEDBACK_TEMPLATE = "With user feedback: {feedback}"
"""Appended after one space to the reject / modify text when the person left feedback; placeholder ``{feedback}``."""

EXPIRED_TEMPLATE = (
    "Tool execution for '{tool_name}' was not approved: the approval request expired (no one decided in time)."
)
"""Tool-result text of a call whose approval expired with ``on_expiry="reject"``: nobody rejected it, so the
reject template (which says "rejected by the user") is not used; placeholder ``{tool_name}``."""

_REJECT_FIELDS: frozenset[str] = frozenset({"tool_name"})
_MODIFY_FIELDS: frozenset[str] = frozenset({"tool_name", "final_tool_params"})
_USER_FEEDBACK_FIELDS: frozenset[str] = frozenset({"feedback"})


def check_template(name: str, template: object, allowed: frozenset[str]) -> str:
    """Check that ``template`` is a str.format template using only ``allowed`` placeholders.

    Placeholders must be plain names (``{tool_name}``, optionally with a conversion or a
    format spec such as ``{tool_name!r}``); positional (``{}``, ``{0}``), attribute
    (``{tool_name.upper}``) and index (``{x[0]}``) fields are refused. A template may leave
    out any placeholder. Literal braces are written doubled (``{{`` / ``}}``).

    Args:
        name: The template's parameter name, used in the error (e.g. ``"reject_template"``).
        template: The template to check.
        allowed: The placeholder names the template may use.

    Returns:
        The template, unchanged.

    Raises:
        ConfigurationTypeError: When ``template`` is not a str.
        ConfigurationError: When the template is malformed or uses another placeholder; the
            message names the template and lists the allowed placeholders.
    """
    if not isinstance(template, str):
        raise ConfigurationTypeError(f"{name} must be a str, got {type(template).__name__}.")
    allowed_text = ", ".join("{" + f + "}" for f in sorted(allowed))
    try:
        fields = [field for _, field, _, _ in string.Formatter().parse(template) if field is not None]
        for field in fields:
            if field not in allowed:
                raise ConfigurationError(
                    f"{name} {template!r} uses the placeholder {{{field}}}; allowed placeholders: {allowed_text} "
                    f"(write literal braces as '{{{{' and '}}}}')."
                )
        template.format(**dict.fromkeys(allowed, ""))
    except (ValueError, KeyError, IndexError, AttributeError) as exc:
        if isinstance(exc, ConfigurationError):
            raise
        raise ConfigurationError(
            f"{name} {template!r} is not a valid str.format template ({exc}); allowed placeholders: {allowed_text}."
        ) from exc
    return template


def check_templates(*, reject_template: object, modify_template: object, user_feedback_template: object) -> None:
    """Check the three templates of a strategy at once (see :func:`check_template`).

    Args:
        reject_template: Must use only ``{tool_name}``.
        modify_template: Must use only ``{tool_name}`` and ``{final_tool_params}``.
        user_feedback_template: Must use only ``{feedback}``.

    Raises:
        ConfigurationTypeError: When a template is not a str.
        ConfigurationError: When a template is malformed or uses another placeholder (the message names it).
    """
    check_template("reject_template", reject_template, _REJECT_FIELDS)
    check_template("modify_template", modify_template, _MODIFY_FIELDS)
    check_template("user_feedback_template", user_feedback_template, _USER_FEEDBACK_FIELDS)


def _format(name: str, template: str, allowed: frozenset[str], **values: str) -> str:
    try:
        return template.format(**values)
    except (ValueError, KeyError, IndexError, AttributeError) as exc:
        check_template(name, template, allowed)  # raises a ConfigurationError that names the template
        raise ConfigurationError(f"{name} {template!r} could not be rendered: {exc}") from exc


def _with_feedback(text: str, feedback: str | None, user_feedback_template: str) -> str:
    if feedback is None or not feedback.strip():
        return text
    rendered = _format(
        "user_feedback_template", user_feedback_template, _USER_FEEDBACK_FIELDS, feedback=feedback.strip()
    )
    return f"{text} {rendered}"


def format_params(params: Mapping[str, Any]) -> str:
    """Render tool arguments the way the model reads them: one-line JSON, non-ASCII kept.

    Args:
        params: The arguments.

    Returns:
        ``json.dumps(dict(params), ensure_ascii=False, default=str)``, e.g. ``{"x": 99}``.
    """
    return json.dumps(dict(params), ensure_ascii=False, default=str)


def render_reject(
    tool_name: str,
    feedback: str | None,
    *,
    reject_template: str = DEFAULT_REJECT_TEMPLATE,
    user_feedback_template: str = DEFAULT_USER_FEEDBACK_TEMPLATE,
) -> str:
    """Render the tool-result text of a rejected call.

    Args:
        tool_name: The rejected tool.
        feedback: The person's raw feedback; None, empty or whitespace-only means none. It is
            stripped and appended after one space through ``user_feedback_template``.
        reject_template: The reject template (placeholder ``{tool_name}``).
        user_feedback_template: The feedback template (placeholder ``{feedback}``).

    Returns:
        The text, e.g. ``"Tool execution for 'x' was rejected by the user. With user feedback: no"``.

    Raises:
        ConfigurationError: When a template is invalid.
    """
    text = _format("reject_template", reject_template, _REJECT_FIELDS, tool_name=tool_name)
    return _with_feedback(text, feedback, user_feedback_template)


def render_modify(
    tool_name: str,
    final_tool_params: Mapping[str, Any],
    feedback: str | None,
    *,
    modify_template: str = DEFAULT_MODIFY_TEMPLATE,
    user_feedback_template: str = DEFAULT_USER_FEEDBACK_TEMPLATE,
) -> str:
    r"""Render the user-message text that explains an edited call to the model.

    Args:
        tool_name: The edited tool.
        final_tool_params: The arguments the call runs with; rendered by :func:`format_params`.
        feedback: The person's raw feedback; None, empty or whitespace-only means none.
        modify_template: The modify template (placeholders ``{tool_name}``, ``{final_tool_params}``).
        user_feedback_template: The feedback template (placeholder ``{feedback}``).

    Returns:
        The text, e.g. ``"The parameters for tool 'x' were updated by the user to:\n{\"a\": 1}"``.

    Raises:
        ConfigurationError: When a template is invalid.
    """
    text = _format(
        "modify_template",
        modify_template,
        _MODIFY_FIELDS,
        tool_name=tool_name,
        final_tool_params=format_params(final_tool_params),
    )
    return _with_feedback(text, feedback, user_feedback_template)


def is_expiry_rejection(decision: Any) -> bool:
    """Whether ``decision`` (a ToolExecutionDecision) is the rejection an expired approval wrote, not a person's.

    The approval service writes it decided by ``"expiry"`` with the feedback ``"Approval request expired"``.
    """
    from handrail.dataclasses._approval_fields import EXPIRED_FEEDBACK

    return (
        getattr(decision, "execute", True) is False
        and getattr(decision, "decided_by", None) == "expiry"
        and getattr(decision, "feedback", None) == EXPIRED_FEEDBACK
    )


def render_expired(tool_name: str) -> str:
    """The text the model reads for a call whose approval expired (:data:`EXPIRED_TEMPLATE`).

    Examples:
        >>> render_expired("transfer")
        "Tool execution for 'transfer' was not approved: the approval request expired (no one decided in time)."
    """
    return EXPIRED_TEMPLATE.format(tool_name=tool_name)
