"""ToolResultTruncationHook: shorten long tool results, keeping their head and tail."""

from __future__ import annotations

from typing import Any, ClassVar

from handrail.core._middle_cut import cut_marker, cut_middle, head_tail
from handrail.dataclasses.chat_message import ImageContent, TextContent, ToolCallResultContentT
from handrail.dataclasses.state import State
from handrail.hooks._base import ReadyMadeHook, check_int
from handrail.hooks._messages import replace_result, step_results
from handrail.hooks.types import HookPoint

__all__ = ["ToolResultTruncationHook"]


class ToolResultTruncationHook(ReadyMadeHook):
    r"""Shorten every result of a tool step that is longer than ``max_chars`` characters.

    An ``after_tool`` hook. A long result keeps its head and its tail around the marker
    ``"\n[... N characters cut ...]\n"``, where N is how many characters of the original were
    left out. The shortened text, marker included, is exactly ``max_chars`` characters long
    (the head gets the odd character). Results of ``max_chars`` characters or fewer, and every
    other message, are left alone; the error flag and the call a result answers are kept.
    Characters are Python ``str`` characters (code points).

    A result of content parts (text and images, from a tool with ``raw_result``) is measured by its text
    parts together; images count for nothing and are always kept, in their places. A long one is cut as if
    its text parts were one text: the head and the tail are kept, the marker goes where the head ends, the
    text parts wholly inside the cut are dropped, and the text parts then hold exactly ``max_chars``
    characters in all (:meth:`truncate_parts`).

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
        return cut_middle(text, self.max_chars)

    def truncate_parts(self, parts: list[TextContent | ImageContent]) -> list[TextContent | ImageContent]:
        """Return ``parts`` itself when its text parts fit in ``max_chars`` together, else them cut as one text.

        The text parts are read as one text (without separators) and cut as :meth:`truncate` cuts it: a part
        inside the head or the tail is kept, the part where the head ends is cut there and ends with the
        marker, the part where the tail starts keeps the end of its text, and a part wholly inside the cut is
        dropped. Images stay, in order. A list of one text part gives :meth:`truncate` of its text.

        Args:
            parts: A result's content parts.

        Returns:
            The parts as the model will read them; their texts hold exactly ``max_chars`` characters in all.
        """
        length = sum(len(p.text) for p in parts if isinstance(p, TextContent))
        if length <= self.max_chars:
            return parts
        head, tail = head_tail(length, self.max_chars)
        tail_start = length - tail
        out: list[TextContent | ImageContent] = []
        start = 0
        marked = False
        for part in parts:
            if not isinstance(part, TextContent):
                out.append(part)
                continue
            text, end = part.text, start + len(part.text)
            piece = text[: max(0, min(end, head) - start)]
            if not marked and end > head:  # the part where the head ends holds the marker
                piece += cut_marker(length - head - tail)
                marked = True
            piece += text[len(text) - max(0, end - max(start, tail_start)) :] if end > tail_start else ""
            if piece == text:
                out.append(part)
            elif piece:
                out.append(TextContent(piece))
            start = end
        return out

    def _shortened(self, result: ToolCallResultContentT) -> ToolCallResultContentT:
        return self.truncate(result) if isinstance(result, str) else self.truncate_parts(result)

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
            if result is None:
                continue
            shortened = self._shortened(result.result)
            if shortened is not result.result:
                rewritten[start + offset] = replace_result(message, shortened)
                changed = True
        if changed:
            state.data["messages"] = rewritten

    def _init_parameters(self) -> dict[str, Any]:
        return {"max_chars": self.max_chars}
