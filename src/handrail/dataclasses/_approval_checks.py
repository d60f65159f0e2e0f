"""Field checks shared by the approval records: each refusal names the record and the field.

A :class:`Checker` raises ConfigurationError / ConfigurationTypeError when a record is built in Python, and
SerializationError (whose ``path`` is the field) when it is read from a dict, so ``from_dict`` and the
constructor refuse the same things with the same words.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any, NoReturn

from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError

__all__ = ["Checker", "canonical_json", "iso", "sha256_of"]


def canonical_json(value: Any) -> bytes:
    """``value`` as canonical JSON: sorted keys, no spaces, UTF-8 (not escaped), no NaN or infinity.

    Raises:
        TypeError: A value that is not JSON data (a set, a datetime, an object).
        ValueError: NaN or infinity, or nesting deeper than the interpreter's recursion limit.
    """
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except RecursionError as exc:
        raise ValueError("nested too deeply") from exc
    return text.encode("utf-8")


def sha256_of(value: Any) -> str:
    """``"sha256:<64 hex>"`` of :func:`canonical_json` of ``value``."""
    return "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()


class Checker:
    """Checks the fields of one record kind (``owner``), building a record (``reading`` False) or reading one."""

    def __init__(self, owner: str, *, reading: bool) -> None:
        self.owner = owner
        self.reading = reading

    def fail(self, field: str, problem: str, *, wrong_type: bool = False) -> NoReturn:
        message = f"{self.owner}.{field} {problem}"
        if self.reading:
            raise SerializationError(f"Cannot read the {self.owner}: {message}", path=(field,))
        if wrong_type:
            raise ConfigurationTypeError(message + ".")
        raise ConfigurationError(message + ".")

    def text(self, field: str, value: object, *, optional: bool = False, empty: bool = False, limit: int = 0) -> None:
        if value is None and optional:
            return
        if not isinstance(value, str):
            expected = "a str or None" if optional else "a str"
            self.fail(field, f"must be {expected}, got {type(value).__name__} ({value!r:.80})", wrong_type=True)
        if not empty and not value.strip():
            self.fail(field, "must not be empty or blank")
        if limit and len(value) > limit:
            self.fail(field, f"is longer than {limit} characters ({len(value)})")

    def integer(self, field: str, value: object, *, minimum: int) -> None:
        if type(value) is not int:
            self.fail(field, f"must be an int, got {type(value).__name__} ({value!r:.80})", wrong_type=True)
        if value < minimum:
            self.fail(field, f"must be >= {minimum}, got {value}")

    def number(self, field: str, value: object, *, optional: bool = False) -> None:
        if value is None and optional:
            return
        if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
            self.fail(field, f"must be a number >= 0, got {value!r:.80}", wrong_type=not isinstance(value, int | float))

    def choice(self, field: str, value: object, choices: tuple[str, ...], *, optional: bool = False) -> None:
        if value is None and optional:
            return
        if not isinstance(value, str) or value not in choices:
            self.fail(field, f"must be one of {', '.join(choices)}{' or None' if optional else ''}, got {value!r:.80}")

    def moment(self, field: str, value: object, *, optional: bool = False) -> datetime | None:
        """A timezone-aware datetime (a str in ISO 8601 when reading), returned in UTC."""
        if value is None and optional:
            return None
        if self.reading and isinstance(value, str):
            try:
                value = datetime.fromisoformat(value)
            except ValueError:
                self.fail(field, f"is not an ISO 8601 time: {value!r:.80}")
        if not isinstance(value, datetime):
            expected = "a datetime" + (" or None" if optional else "")
            self.fail(field, f"must be {expected}, got {type(value).__name__} ({value!r:.80})", wrong_type=True)
        if value.tzinfo is None or value.utcoffset() is None:
            self.fail(field, f"must be timezone-aware (UTC), got the naive time {value.isoformat()}")
        try:
            return value.astimezone(UTC)
        except OverflowError:  # 9999-12-31T23:00-14:00 is in the year 10000 in UTC
            self.fail(field, f"is {value.isoformat()}, which is outside the years 1 to 9999 in UTC")

    def json_data(self, field: str, value: object, *, kind: type = dict) -> Any:
        """A copy of JSON data (a dict by default), as canonical JSON reads it back."""
        if not isinstance(value, kind):
            self.fail(field, f"must be a JSON {kind.__name__}, got {type(value).__name__}", wrong_type=True)
        try:
            return json.loads(canonical_json(value))
        except (TypeError, ValueError) as exc:
            self.fail(field, f"must hold JSON data only: {exc}")

    def strings(self, field: str, value: object, *, limit: int, each: int) -> tuple[str, ...]:
        """A list or tuple of distinct non-empty strings (at most ``limit``, each at most ``each`` characters)."""
        if not isinstance(value, list | tuple):
            self.fail(field, f"must be a list of str, got {type(value).__name__}", wrong_type=True)
        if len(value) > limit:
            self.fail(field, f"holds {len(value)} items; at most {limit} are allowed")
        for index, item in enumerate(value):
            self.text(f"{field}[{index}]", item, limit=each)
        if len(set(value)) != len(value):
            self.fail(field, f"holds duplicates: {list(value)!r:.120}")
        return tuple(value)

    def digest(self, field: str, value: object, *, optional: bool = False) -> None:
        if value is None and optional:
            return
        if not (isinstance(value, str) and value.startswith("sha256:") and len(value) == 71):
            self.fail(field, f'must be "sha256:" and 64 hex digits, got {value!r:.80}')
        if any(c not in "0123456789abcdef" for c in value[7:]):
            self.fail(field, f'must be "sha256:" and 64 lowercase hex digits, got {value!r:.80}')


def iso(moment: datetime | None) -> str | None:
    """A UTC time as ISO 8601 (``2025-01-02T03:04:05.000006+00:00``), or None."""
    return None if moment is None else moment.astimezone(UTC).isoformat(timespec="microseconds")
