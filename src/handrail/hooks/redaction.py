"""RedactionHook: mask secrets (API keys, bearer tokens) before the model or the history keeps them."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from handrail.core.serialization import check_pattern_from_file
from handrail.dataclasses.state import State
from handrail.errors import ConfigurationError, ConfigurationTypeError
from handrail.hooks._base import ReadyMadeHook
from handrail.hooks._messages import map_texts
from handrail.hooks.types import HookPoint

__all__ = ["RedactionHook"]

MASK = "[REDACTED]"


def _mask_match(match: re.Match[str]) -> str:
    whole = match.group(0)
    if not whole:  # a pattern that can match nothing must not insert masks between characters
        return whole
    if "secret" in match.re.groupindex and match.group("secret") is not None:
        base = match.start()
        start, end = match.span("secret")
        return whole[: start - base] + MASK + whole[end - base :]
    return MASK


class RedactionHook(ReadyMadeHook):
    """Replace secrets in the history with ``[REDACTED]``.

    An ``after_tool`` and ``before_llm`` hook. At either point it rewrites every message of
    ``messages`` whose text matches a pattern: user, system and assistant texts and tool results
    (at ``after_tool`` that covers the step's fresh results, so the run's output and any snapshot
    hold them masked; at ``before_llm`` it covers the whole model input). Tool call arguments are
    not changed. Messages are replaced by rewritten copies, never changed in place.

    A pattern with a group named ``secret`` masks only that group (so ``api_key="abc…"`` becomes
    ``api_key="[REDACTED]"``); any other pattern masks its whole match. Patterns apply in order.

    Args:
        patterns: Regular expressions (Python syntax; inline flags such as ``(?i)`` allowed),
            compiled once. ``None`` uses :attr:`DEFAULT_PATTERNS`; to add your own, pass
            ``[*RedactionHook.DEFAULT_PATTERNS, r"..."]``.

    Raises:
        ConfigurationTypeError: When ``patterns`` is not a list of strings.
        ConfigurationError: When it is empty, a pattern is the empty string (named by its index), or a
            pattern does not compile (the message names it).

    Examples:
        >>> from handrail.dataclasses import ChatMessage
        >>> state = State()
        >>> state.data["messages"] = [ChatMessage.from_user("My key is sk-abcdefghijklmnopqrstuv, use it.")]
        >>> RedactionHook().run(state)
        >>> state.data["messages"][0].text
        'My key is [REDACTED], use it.'
        >>> RedactionHook().redact("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc")
        'Authorization: Bearer [REDACTED]'
    """

    allowed_hook_points: ClassVar[tuple[HookPoint, ...]] = ("after_tool", "before_llm")
    DEFAULT_PATTERNS: ClassVar[tuple[str, ...]] = (
        r"\bsk-[A-Za-z0-9_-]{16,}",  # OpenAI / Anthropic style keys (sk-..., sk-proj-..., sk-ant-...)
        r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/=-]{8,})",  # Authorization: Bearer <token>
        r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",  # AWS access key ids
        r"\bgh[pousr]_[A-Za-z0-9]{30,}",  # GitHub tokens
        r"\bgithub_pat_[A-Za-z0-9_]{22,}",  # GitHub fine-grained tokens
        r"\bxox[abprs]-[A-Za-z0-9-]{10,}",  # Slack tokens
        r"(?i)api[_-]?key[\"']?\s*[:=]\s*[\"']?(?P<secret>[A-Za-z0-9._~+/=-]{8,})",  # api_key=..., "apiKey": "..."
    )
    """The patterns used when none are given."""

    def __init__(self, patterns: list[str] | None = None) -> None:
        if patterns is not None:
            if not isinstance(patterns, list | tuple) or not all(isinstance(p, str) for p in patterns):
                raise ConfigurationTypeError(f"RedactionHook: patterns must be a list of strings, got {patterns!r}.")
            if not patterns:
                raise ConfigurationError(
                    "RedactionHook: patterns is empty, so nothing would be masked; pass None for the defaults."
                )
            empty = [i for i, p in enumerate(patterns) if not p]
            if empty:
                raise ConfigurationError(
                    f"RedactionHook: patterns[{empty[0]}] is empty; an empty pattern matches only empty text, so "
                    f"nothing would be masked by it. Remove it."
                )
        for i, pattern in enumerate(patterns or ()):
            check_pattern_from_file(pattern, f"RedactionHook: patterns[{i}]")  # only while a file is being read
        self.patterns: list[str] | None = list(patterns) if patterns is not None else None
        """The patterns given (None: the defaults)."""
        self._compiled = [self._compile(p) for p in (self.patterns or self.DEFAULT_PATTERNS)]

    @staticmethod
    def _compile(pattern: str) -> re.Pattern[str]:
        try:
            return re.compile(pattern)
        except re.error as exc:
            raise ConfigurationError(f"RedactionHook: the pattern {pattern!r} does not compile: {exc}.") from exc

    def redact(self, text: str) -> str:
        """Return ``text`` with every match masked.

        Args:
            text: Any text.

        Returns:
            The masked text (``text`` itself when nothing matched).
        """
        for pattern in self._compiled:
            text = pattern.sub(_mask_match, text)
        return text

    def run(self, state: State) -> None:
        """Mask the texts of every message in ``messages``.

        Args:
            state: The run's live State; ``messages`` is replaced by a new list when a message changed.
        """
        messages = state.data["messages"]
        masked = [map_texts(m, self.redact) for m in messages]
        if any(new is not old for new, old in zip(masked, messages, strict=True)):
            state.data["messages"] = masked

    def _init_parameters(self) -> dict[str, Any]:
        return {"patterns": list(self.patterns) if self.patterns is not None else None}


def redaction_of(hooks: Iterable[object]) -> Callable[[str], str] | None:
    """The masking of the :class:`RedactionHook` instances among ``hooks``, each once, in their order.

    What an observer (tracing, logging, a recording) applies to text it keeps, so it masks what the run's own
    hooks mask. None when there is none.
    """
    found: list[RedactionHook] = []
    for hook in hooks:
        if isinstance(hook, RedactionHook) and all(hook is not f for f in found):
            found.append(hook)
    if not found:
        return None

    def redact(text: str) -> str:
        for hook in found:
            text = hook.redact(text)
        return text

    return redact
