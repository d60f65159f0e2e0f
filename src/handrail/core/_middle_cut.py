r"""Cutting a long text in the middle: its head and tail around a marker naming how much was left out.

One rule for every place a result is shortened for the model (``ToolResultTruncationHook``, an MCP toolset's
``max_result_chars``): the marker is ``"\n[... N characters cut ...]\n"`` (with an optional note before the
closing dots), the kept text plus the marker is exactly ``max_chars`` characters when the marker fits, and the
head gets the odd character.
"""

from __future__ import annotations

__all__ = ["cut_marker", "cut_middle", "head_tail"]


def cut_marker(cut: int, note: str = "") -> str:
    """The marker standing for ``cut`` characters left out; ``note`` goes after the count (``"; see x"``)."""
    return f"\n[... {cut} characters cut{note} ...]\n"


def head_tail(length: int, max_chars: int, note: str = "") -> tuple[int, int]:
    """How many characters of a text of ``length`` (over ``max_chars``) to keep before and after the marker.

    Examples:
        >>> head_tail(100, 60)
        (16, 15)
    """
    # The marker for `length` characters cut is at least as long as the real one: start there,
    # then keep one more character while the (possibly shorter) marker still leaves room.
    kept = max(max_chars - len(cut_marker(length, note)), 0)
    while kept + 1 + len(cut_marker(length - kept - 1, note)) <= max_chars:
        kept += 1
    tail = kept // 2
    return kept - tail, tail


def cut_middle(text: str, max_chars: int, note: str = "") -> str:
    """``text`` itself when it fits in ``max_chars``, else its head + marker + tail.

    Examples:
        >>> cut = cut_middle("a" * 300 + "b" * 300, 100)
        >>> len(cut), "[... 530 characters cut ...]" in cut
        (100, True)
    """
    length = len(text)
    if length <= max_chars:
        return text
    head, tail = head_tail(length, max_chars, note)
    return text[:head] + cut_marker(length - head - tail, note) + text[length - tail :]
