"""An unreachable PostgreSQL server: every store fails at once with an error naming it, the password hidden.

No server is needed: nothing listens on port 1 of the loopback address.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from handrail.errors import StoreError
from handrail.stores import PostgresChatMessageStore, PostgresMemoryStore, PostgresSnapshotStore

DSN = "postgresql://nobody:s3cret@127.0.0.1:1/x"


@pytest.mark.parametrize(
    ("make", "use"),
    [
        (PostgresChatMessageStore, lambda s: s.retrieve_messages("h")),
        (PostgresMemoryStore, lambda s: s.search_memories(query="q")),
        (PostgresSnapshotStore, lambda s: s.list_pending()),
    ],
)
def test_an_unreachable_server_is_named_with_the_reason_and_no_password(
    make: Callable[[str], Any], use: Callable[[Any], Any]
) -> None:
    store = make(DSN)
    with pytest.raises(StoreError) as info:
        use(store)
    message = str(info.value)
    assert f"{type(store).__name__}: cannot reach PostgreSQL at postgresql://nobody:***@127.0.0.1:1/x" in message
    assert "refused" in message.lower()
    assert "s3cret" not in message


def test_the_cli_reports_an_unreachable_store_once_without_the_pools_warnings() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "handrail.cli", "approvals", "list", "--store", DSN],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "cannot reach PostgreSQL at postgresql://nobody:***@127.0.0.1:1/x" in done.stderr + done.stdout
    assert "pool-1" not in done.stderr and "Traceback" not in done.stderr
    assert "s3cret" not in done.stderr + done.stdout
