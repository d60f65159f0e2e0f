"""The values of the secrets this process knows, and masking them out of any text.

Every :class:`~handrail.core.secret.TokenSecret` registers its value when it is built, every env-var
secret the value it resolved to, and the embedded model's server its random key. Text that may hold
what a server, a tool or an exception echoed goes through :func:`mask_secrets` before it is shown,
stored or sent: error messages (every :class:`~handrail.errors.HandrailError`), tool result text, what
the CLI prints. A masked part becomes ``***``:

- the whole value (and its JSON-escaped form);
- for a key-like value (no whitespace, ``:`` or ``@``, so not a DSN): every run of
  :data:`RUN_LENGTH` or more of its characters (a key cut short by a server or a length limit), and a
  starred echo that shows its ends, such as ``sk-abc1****wxyz``.

Values shorter than :data:`MIN_LENGTH` characters (placeholders such as ``"none"``) are not masked.
"""

from __future__ import annotations

import json
import re
import threading

from handrail import errors

__all__ = [
    "MASK",
    "MIN_LENGTH",
    "RUN_LENGTH",
    "holds_secret",
    "holds_secret_value",
    "mask_secrets",
    "register_secret_value",
]

MASK = "***"
"""What a masked part of a text becomes."""
MIN_LENGTH = 8
"""Shorter values are not registered."""
RUN_LENGTH = 16
"""The shortest run of a key-like value's characters that is masked when it appears alone."""
_BLOCK = (RUN_LENGTH + 1) // 2  # every run of 2 * _BLOCK - 1 <= RUN_LENGTH characters holds an aligned block
_MAX_VALUES = 256  # beyond that, the oldest values are forgotten (a process building a token per request)
_KEY_LIKE = re.compile(r"[^\s:@]+")
_STARS = re.compile(r"[*•]{3,}")
_TOKEN_EDGE = re.compile(r"""[\s'"`(<\[{=,;]""")
_MIN_STARRED_END = 3  # a starred echo is masked when it shows at least this many characters of one end

_lock = threading.Lock()
_exact: tuple[str, ...] = ()
"""Every registered value and its escaped forms, longest first."""
_keys: tuple[str, ...] = ()
"""The key-like registered values (their runs and starred echoes are masked too)."""
_runs: re.Pattern[str] = re.compile("(?!)")
"""Runs of :data:`RUN_LENGTH` or more characters that the keys at least :data:`RUN_LENGTH` long are made of."""
_order: list[str] = []


def _install() -> None:
    if mask_secrets not in errors.MESSAGE_FILTERS:
        errors.MESSAGE_FILTERS.append(mask_secrets)


def register_secret_value(value: object) -> None:
    """Remember ``value`` as a secret, so :func:`mask_secrets` masks it from now on (in every thread).

    Non-strings and values shorter than :data:`MIN_LENGTH` are ignored.
    """
    global _exact, _keys, _runs
    if not isinstance(value, str) or len(value) < MIN_LENGTH or value in _order:
        return
    with _lock:
        if value in _order:
            return
        _order.append(value)
        del _order[:-_MAX_VALUES]
        forms = {form for v in _order for form in (v, json.dumps(v)[1:-1], json.dumps(v, ensure_ascii=False)[1:-1])}
        _exact = tuple(sorted(forms, key=len, reverse=True))
        _keys = tuple(v for v in _order if _KEY_LIKE.fullmatch(v))
        alphabet = "".join(sorted({c for key in _keys if len(key) >= RUN_LENGTH for c in key}))
        _runs = re.compile(f"[{re.escape(alphabet)}]{{{RUN_LENGTH},}}") if alphabet else re.compile("(?!)")


def holds_secret(text: str) -> bool:
    """Whether ``text`` holds a part of a known secret that :func:`mask_secrets` would mask."""
    return bool(_exact) and mask_secrets(text) != text


def holds_secret_value(text: str) -> bool:
    """Whether ``text`` holds the whole value of a known secret (or its JSON-escaped form): a quick check."""
    return any(value in text for value in _exact)


def mask_secrets(text: str) -> str:
    """``text`` with every part of a known secret value replaced by ``***`` (see the module docstring).

    Example:
        >>> register_secret_value("sk-doctest-0123456789abcdefghij")
        >>> mask_secrets("Incorrect API key provided: sk-doctest-0123456789abcdefghij.")
        'Incorrect API key provided: ***.'
        >>> mask_secrets("Incorrect API key provided: sk-docte**************ghij.")
        'Incorrect API key provided: ***.'
    """
    exact, keys = _exact, _keys
    if not exact or not isinstance(text, str):
        return text
    for value in exact:
        if value in text:
            text = text.replace(value, MASK)
    if keys:
        text = _mask_runs(text, keys)
    if keys and ("***" in text or "•••" in text):
        text = _mask_starred(text, keys)
    return text


def _mask_runs(text: str, keys: tuple[str, ...]) -> str:
    """Mask every run of :data:`RUN_LENGTH` or more characters of a key in ``text``.

    Such a run lies inside a run of characters that keys are made of (:data:`_runs`), which ordinary text
    rarely has; only those are searched, block by block.
    """
    spans: list[tuple[int, int]] = []
    long_keys = [key for key in keys if len(key) >= RUN_LENGTH]
    for word in _runs.finditer(text):
        for key in long_keys:
            spans += _key_runs(text, key, word.start(), word.end())
    return _replace(text, spans)


def _key_runs(text: str, key: str, begin: int, end: int) -> list[tuple[int, int]]:
    """The runs of ``key`` of :data:`RUN_LENGTH` or more characters in ``text[begin:end]``."""
    spans: list[tuple[int, int]] = []
    for start in range(0, len(key) - _BLOCK + 1, _BLOCK):
        block = key[start : start + _BLOCK]
        found = text.find(block, begin, end)
        while found >= 0:
            span = _extend(text, key, found, start)
            if span[1] - span[0] >= RUN_LENGTH:
                spans.append(span)
            found = text.find(block, found + 1, end)
    return spans


def _extend(text: str, key: str, at: int, start: int) -> tuple[int, int]:
    """The span of ``text`` around ``at`` that matches ``key`` around ``start`` (where they agree on a block)."""
    left, k = at, start
    while left > 0 and k > 0 and text[left - 1] == key[k - 1]:
        left, k = left - 1, k - 1
    right, k = at + _BLOCK, start + _BLOCK
    while right < len(text) and k < len(key) and text[right] == key[k]:
        right, k = right + 1, k + 1
    return left, right


def _mask_starred(text: str, keys: tuple[str, ...]) -> str:
    """Mask echoes such as ``sk-abc1****wxyz``: stars between a start and an end of one key."""
    spans: list[tuple[int, int]] = []
    for stars in _STARS.finditer(text):
        edge = max((m.end() for m in _TOKEN_EDGE.finditer(text, 0, stars.start())), default=0)
        head = text[edge : stars.start()]
        after = text[stars.end() :]
        for key in keys:
            shown_head = len(head) >= _MIN_STARRED_END and key.startswith(head)
            tail = next((n for n in range(min(len(after), len(key)), 0, -1) if key.endswith(after[:n])), 0)
            if shown_head or tail >= _MIN_STARRED_END:  # keys sharing a prefix (sk-proj-) add their spans up
                spans.append((edge if shown_head else stars.start(), stars.end() + tail))
    return _replace(text, spans)


def _replace(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with the (possibly overlapping) ``spans`` each replaced by :data:`MASK`."""
    if not spans:
        return text
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    pieces: list[str] = []
    position = 0
    for start, end in merged:
        pieces += [text[position:start], MASK]
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


_install()  # every HandrailError's message is masked from now on
