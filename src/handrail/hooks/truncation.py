"""ToolResultTruncationHook: shorten long tool results, keeping their head and tail."""

from __future__ import annotations

from typing import Any, ClassVar

from handrail.dataclasses.state import State
from handrail.hooks._base import ReadyMadeHook, check_int
from handrail.hooks._messages import replace_result, step_results
from handrail.hooks.types import HookPoint

__all__ = ["ToolResultTruncationHook"]


def _marker(cut: int) -> str:
    return f"\n[... {cut} characters cut ...]\n"


class ToolResultTruncationHook(ReadyMadeHook):
    r"""Shorten every result of a tool step that is longer than ``max_chars`` characters.

    An ``after_tool`` hook. A long result keeps its head and its tail around the marker
    ``"\n[... N characters cut ...]\n"``, where N is how many characters of the original were
    left out. The shortened text, marker included, is exactly ``max_chars`` characters long
    (the head gets the odd character). Results of ``max_chars`` characters or fewer, and every
    other message, are left alone; the error flag and the call a result answers are kept.
    Characters are Python ``str`` characters (code points).

    Args:
        max_chars: The longest result kept whole, in characters (at least :attr:`MIN_MAX_CHARS`,
            so that the marker always fits).

    Raises:
        ConfigurationTypeError: When ``max_chars`` is not an int.
        ConfigurationError: When it is below :attr:`MIN_MAX_CHARS`.

    Examples:
        >>> from handrail.dataclasses import ChatMessage, ToolCall
        >>> call = ToolCall(tool_name="read_file", arguments={"path": "log.txt"}, id="call_1")
        >>> state = State()
        >>> state.data["messages"] = [
        ...     ChatMessage.from_assistant(tool_calls=[call]),
        ...     ChatMessage.from_tool("a" * 50 + "b" * 50, call),
        ... ]
        >>> ToolResultTruncationHook(max_chars=60).run(state)
        >>> text = state.data["messages"][-1].tool_call_result.result
        >>> print(text)
        aaaaaaaaaaaaaaaa
        [... 69 characters cut ...]
        bbbbbbbbbbbbbbb
        >>> len(text)
        60
    """

    allowed_hook_points: ClassVar[tuple[HookPoint, ...]] = ("after_tool",)
    MIN_MAX_CHARS: ClassVar[int] = 40
    """The smallest ``max_chars`` accepted."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = check_int("ToolResultTruncationHook", "max_chars", max_chars, self.MIN_MAX_CHARS)
        """The longest result kept whole, in characters."""

    def truncate(self, text: str) -> str:
        """Return ``text`` itself when it fits, else its head + marker + tail in exactly ``max_chars`` characters.

        Args:
            text: A result text.

        Returns:
            The text as the model will read it.
        """
        length = len(text)
        if length <= self.max_chars:
            return text
        # The marker for `length` characters cut is at least as long as the real one: start there,
        # then keep one more character while the (possibly shorter) marker still leaves room.
        kept = self.max_chars - len(_marker(length))
        while kept + 1 + len(_marker(length - kept - 1)) <= self.max_chars:
            kept += 1
        tail = kept // 2
        return text[: kept - tail] + _marker(length - kept) + text[length - tail :]

    def run(self, state: State) -> None:
        """Shorten the long results of the current tool step.

        Args:
            state: The run's live State; its ``messages`` end with the step's results.
        """
        messages = state.data["messages"]
        start, results = step_results(messages)
        rewritten = list(messages)
        changed = False
        for offset, message in enumerate(results):
            result = message.tool_call_result
            if result is not None and len(result.result) > self.max_chars:
                rewritten[start + offset] = replace_result(message, self.truncate(result.result))
                changed = True
        if changed:
            state.data["messages"] = rewritten

    def _init_parameters(self) -> dict[str, Any]:
        return {"max_chars": self.max_chars}
