"""Reading a store's row of ``handrail_schema``, shared by the SQLite and PostgreSQL plumbing.

A store's version row is the only record of which migrations ran. A value that is not a whole number from 0 to
the versions this handrail knows, or a missing row while the store's tables exist, means the database was
damaged (edited by hand, or restored in part): running the migrations again would fail on the existing tables
or, worse, change them, so the store refuses to open and says what it found.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from handrail.errors import CorruptRecordError, StoreError

__all__ = ["check_version", "damaged_without_version", "tables_created_by"]

_CREATE_TABLE = re.compile(r"\bCREATE\s+(?:VIRTUAL\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", re.IGNORECASE)


def check_version(row: Sequence[object] | None, *, store: str, where: str, known: int) -> int:
    """The schema version recorded in ``row`` (0 when there is no row).

    Args:
        row: The store's row of ``handrail_schema`` (its ``version`` column), or None.
        store: The store's name, for the message.
        where: The database (a file path, or a redacted DSN), for the message.
        known: How many migrations this handrail has.

    Raises:
        CorruptRecordError: The value is not an int from 0 up (the store is damaged: bad input, CLI exit 2).
        StoreError: A larger int than ``known``: written by a newer handrail.
    """
    if row is None:
        return 0
    version = row[0]
    if type(version) is not int or version < 0:
        raise CorruptRecordError(
            f"{store}: {where} is damaged: handrail_schema records the schema version {version!r} for this store, "
            f"which is not a version number (0 to {known}). Restore the database from a backup or use another one."
        )
    if version > known:
        raise StoreError(
            f"{store}: {where} holds schema version {version}, written by a newer handrail "
            f"(this one knows up to {known}). Upgrade handrail or use another database."
        )
    return version


def tables_created_by(migrations: Sequence[str]) -> tuple[str, ...]:
    """The names of the tables the migration scripts create (constant SQL of this package)."""
    return tuple(dict.fromkeys(name for script in migrations for name in _CREATE_TABLE.findall(script)))


def damaged_without_version(*, store: str, where: str, row_missing: bool, tables: Sequence[str]) -> CorruptRecordError:
    """The error for a store whose tables exist while its version row is missing (or records version 0)."""
    found = "has no version row for this store" if row_missing else "records version 0 for this store"
    return CorruptRecordError(
        f"{store}: {where} is damaged: handrail_schema {found}, yet its tables exist ({', '.join(tables)}). "
        "Restore the database from a backup or use another one."
    )
