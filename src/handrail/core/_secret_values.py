"""The values of the secrets this process knows, and masking them out of any text.

Every :class:`~handrail.core.secret.TokenSecret` registers its value when it is built, every env-var
secret the value it resolved to, and the embedded model's server its random key. Text that may hold
what a server, a tool or an exception echoed goes through :func:`mask_secrets` before it is shown,
stored or sent: error messages (every :class:`~handrail.errors.HandrailError`), tool result text, what
the CLI prints. A masked part becomes ``***``:

- the whole value (and its JSON-escaped form);
- for a key-like value (no whitespace, ``:`` or ``@``, so not a DSN): every run of
  :data:`RUN_LENGTH` or more of its characters (a key cut short by a server or a length limit), a
  starred echo that shows its ends, such as ``sk-abc1****wxyz``, and an echo cut short with dots or an
  ellipsis that shows :data:`MIN_REVEALED` or more of its characters beyond a public prefix such as ``sk-``
  or ``sk-proj-`` (``sk-proj-Zq81...``, ``...7890``, ``sk-proj…7890``).

Values shorter than :data:`MIN_LENGTH` characters (placeholders such as ``"none"``) are not masked. A secret
a tool hands out in pieces (``[token[:10], token[10:]]``) cannot be recognised in general: each piece is
masked only when it is a form above.

Masking costs nearly nothing when no secret is known, and little otherwise: a text that holds none of the
pieces every masked form contains (:data:`_pieces`, checked with ``in``) is returned at once.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

from handrail import errors

__all__ = [
    "MASK",
    "MIN_LENGTH",
    "MIN_REVEALED",
    "RUN_LENGTH",
    "holds_secret",
    "holds_secret_value",
    "mask_data",
    "mask_secrets",
    "may_hold_secret",
    "register_secret_value",
    "secrets_known",
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
MIN_REVEALED = 4
"""An echo cut short with dots or an ellipsis is masked when it shows this many characters of a key beyond its
public prefix (or this many of its last characters)."""
_STARS = re.compile(r"[*•]{3,}")
_DOTS = re.compile(r"\.{3,}|…+")
_TOKEN_EDGE = re.compile(r"""[\s'"`(<\[{=,;:]""")
_PUBLIC_PREFIX = re.compile(r"(?:[a-z]{1,5}[-_]){0,2}")  # sk-, sk-proj-, ghp_, xoxb-: the same in every key
_MIN_STARRED_END = 3  # a starred echo is masked when it shows at least this many characters of one end

_lock = threading.Lock()
_exact: tuple[str, ...] = ()
"""Every registered value and its escaped forms, longest first."""
_keys: tuple[str, ...] = ()
"""The key-like registered values (their runs and starred echoes are masked too)."""
_runs: re.Pattern[str] = re.compile("(?!)")
"""Runs of :data:`RUN_LENGTH` or more characters that the keys at least :data:`RUN_LENGTH` long are made of."""
_pieces: tuple[str, ...] = ()
"""Every masked form holds one of these: an exact form, an aligned block of a long key, a key's first or last
:data:`_MIN_STARRED_END` characters."""
_longest = 0
_order: list[str] = []


def _install() -> None:
    if mask_secrets not in errors.MESSAGE_FILTERS:
        errors.MESSAGE_FILTERS.append(mask_secrets)


def register_secret_value(value: object) -> None:
    """Remember ``value`` as a secret, so :func:`mask_secrets` masks it from now on (in every thread).

    Non-strings and values shorter than :data:`MIN_LENGTH` are ignored.
    """
    global _exact, _keys, _runs, _pieces, _longest
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
        _longest = max(len(v) for v in _order)
        _pieces = tuple(sorted(set(_exact) | {piece for key in _keys for piece in _key_pieces(key)}))


def _key_pieces(key: str) -> set[str]:
    """The pieces of ``key`` that each of its masked forms holds (see :data:`_pieces`)."""
    blocks = {key[start : start + _BLOCK] for start in range(0, len(key) - _BLOCK + 1, _BLOCK)}
    return blocks | {key[:_MIN_STARRED_END], key[-_MIN_STARRED_END:]}


def may_hold_secret(text: str) -> bool:
    """Whether ``text`` holds a piece that every masked form holds (False: nothing to mask; one ``in`` per piece)."""
    return any(piece in text for piece in _pieces)


def secrets_known() -> bool:
    """Whether any secret value is known (when none is, :func:`mask_secrets` returns every text as it is)."""
    return bool(_exact)


def holds_secret(text: str) -> bool:
    """Whether ``text`` holds a part of a known secret that :func:`mask_secrets` would mask."""
    return bool(_exact) and mask_secrets(text) != text


def holds_secret_value(text: str) -> bool:
    """Whether ``text`` holds the whole value of a known secret (or its JSON-escaped form): a quick check."""
    return any(value in text for value in _exact)


def mask_secrets(text: str) -> str:
    """``text`` with every part of a known secret value replaced by ``***`` (see the module docstring).

    Only forms that show a key's run, its ends or its start beyond the public prefix are recognised: a secret handed
    out in short pieces (a tool returning ``[token[:10], token[10:]]``) is not caught.

    Examples:
        >>> register_secret_value("sk-doctest-0123456789abcdefghij")
        >>> mask_secrets("Incorrect API key provided: sk-doctest-0123456789abcdefghij.")
        'Incorrect API key provided: ***.'
        >>> mask_secrets("Incorrect API key provided: sk-docte**************ghij.")
        'Incorrect API key provided: ***.'
    """
    exact, keys = _exact, _keys
    if not exact or not isinstance(text, str) or not may_hold_secret(text):
        return text
    for value in exact:
        if value in text:
            text = text.replace(value, MASK)
    if keys:
        text = _mask_runs(text, keys)
    shown = _shown_keys(text, keys) if keys else ()
    if shown and ("***" in text or "•••" in text):
        text = _mask_starred(text, shown)
    if shown and ("..." in text or "…" in text):
        text = _mask_cut(text, shown)
    return text


def mask_data(value: Any) -> Any:
    """``value`` (JSON-like data: dicts, lists, tuples, strings) with known secret values masked in every string.

    Returns ``value`` itself when nothing was masked, so callers can tell by identity.
    """
    if isinstance(value, str):
        return mask_secrets(value)
    if isinstance(value, dict):
        items = [(mask_data(k), mask_data(v)) for k, v in value.items()]
        if all(k is a and v is b for (k, v), (a, b) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    if isinstance(value, list | tuple):
        masked = [mask_data(item) for item in value]
        if all(a is b for a, b in zip(masked, value, strict=True)):
            return value
        return masked if isinstance(value, list) else tuple(masked)
    return value


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
        edge, head, after = _around(text, stars)
        for key in keys:
            shown_head = len(head) >= _MIN_STARRED_END and key.startswith(head)
            tail = _tail(after, key)
            if shown_head or tail >= _MIN_STARRED_END:  # keys sharing a prefix (sk-proj-) add their spans up
                spans.append((edge if shown_head else stars.start(), stars.end() + tail))
    return _replace(text, spans)


def _mask_cut(text: str, keys: tuple[str, ...]) -> str:
    """Mask echoes cut short with dots or an ellipsis: ``sk-proj-Zq81...``, ``...7890``, ``sk-proj…7890``.

    The start shown counts beyond the key's public prefix (``sk-proj-`` reveals nothing); the end shown counts
    only when the key's end is the end of a word of the text.
    """
    spans: list[tuple[int, int]] = []
    for dots in _DOTS.finditer(text):
        edge, head, after = _around(text, dots)
        for key in keys:
            shown_head = len(head) if len(head) >= _MIN_STARRED_END and key.startswith(head) else 0
            revealed = shown_head - len(_PUBLIC_PREFIX.match(key)[0])  # type: ignore[index]
            tail = _tail(after, key)
            if tail and tail < len(after) and after[tail].isalnum():
                tail = 0  # ...7890abc: a word that goes on is not the key's end
            if revealed >= MIN_REVEALED or tail >= MIN_REVEALED or (shown_head and tail >= _MIN_STARRED_END):
                spans.append((edge if shown_head else dots.start(), dots.end() + tail))
    return _replace(text, spans)


def _around(text: str, mark: re.Match[str]) -> tuple[int, str, str]:
    """Where the word before ``mark`` starts, that word, and the text after ``mark`` (as much as a key is long)."""
    start = max(0, mark.start() - _longest)
    edge = max((m.end() for m in _TOKEN_EDGE.finditer(text, start, mark.start())), default=start)
    return edge, text[edge : mark.start()], text[mark.end() : mark.end() + _longest]


def _tail(after: str, key: str) -> int:
    """How many of the first characters of ``after`` are the end of ``key`` (the most that are)."""
    last = key[-1]
    at = after.rfind(last, 0, len(key))
    while at >= 0:  # only where the key's last character is can the key's end end
        if key.endswith(after[: at + 1]):
            return at + 1
        at = after.rfind(last, 0, at)
    return 0


def _shown_keys(text: str, keys: tuple[str, ...]) -> tuple[str, ...]:
    """The keys whose start or end :data:`_MIN_STARRED_END` characters are in ``text`` (only they can be echoed)."""
    return tuple(key for key in keys if key[:_MIN_STARRED_END] in text or key[-_MIN_STARRED_END:] in text)


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
