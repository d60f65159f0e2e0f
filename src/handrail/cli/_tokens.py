"""``handrail tokens add|list|revoke``: the bearer tokens of the approval service, kept hashed in the store."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from handrail.cli._common import echo_json, errors_as_exit_codes, fail_usage, printable
from handrail.cli._stores import Where, opened

__all__ = ["tokens"]

_STORE = click.option(
    "--store", "store_url", required=True, metavar="URL",
    help="The store the service uses: sqlite:///PATH, postgresql://..., or a directory.",
)  # fmt: skip


def _consoles() -> tuple[Any, Any]:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True), Console(stderr=True, highlight=False, soft_wrap=True)


def _service_store(out: Any, where: Any) -> Any:
    from handrail.stores.service import ServiceStore

    if not isinstance(where.store, ServiceStore):
        fail_usage(out, f"--store {where.label}: this store keeps no tokens ({type(where.store).__name__}).")
    return where.store


def _new_store(where: Where) -> bool:
    """Whether the store's directory (or SQLite file) does not exist yet: its first write creates it."""
    from handrail.stores.snapshot_sqlite import SQLiteSnapshotStore

    if where.files:
        return not Path(where.value).exists()
    if isinstance(where.store, SQLiteSnapshotStore):
        return not Path(where.store.path).exists()
    return False  # a PostgreSQL database exists already (the store makes its tables on first use)


def _token_json(token: Any) -> dict[str, Any]:
    return {
        "token_id": token.token_id, "name": token.name, "role": token.role, "tools": list(token.tools),
        "created_at": token.created_at.isoformat(),
        "revoked_at": None if token.revoked_at is None else token.revoked_at.isoformat(),
    }  # fmt: skip


@click.group()
def tokens() -> None:
    """Manage the bearer tokens of 'handrail serve' (kept hashed in the store, shared by every server).

    Roles: viewer (reads approvals, runs and events), approver (also decides; --tool limits which tools),
    admin (decides every tool, exports the audit log).
    """


@tokens.command("add")
@click.argument("name")
@click.option("--role", required=True, type=click.Choice(["viewer", "approver", "admin"]), help="What it may do.")
@click.option("--tool", "tool_patterns", multiple=True, metavar="PATTERN",
              help="For an approver: a tool-name pattern it may decide (shell style, e.g. 'read_*'; repeatable; "
                   "default every tool).")  # fmt: skip
@_STORE
def add_command(name: str, role: str, tool_patterns: tuple[str, ...], store_url: str) -> None:
    """Add a token for principal NAME and print it once (stdout); only its hash is kept.

    A directory or SQLite file that does not exist yet is created (the first token of a deployment), and stderr
    says so: a mistyped --store would otherwise hold a token no server reads.
    """
    _, err = _consoles()
    if tool_patterns and role != "approver":
        fail_usage(err, f"--tool limits an approver; a {role} token takes no --tool.")
    with opened(err, None, store_url, create=True) as where, errors_as_exit_codes(err):
        store = _service_store(err, where)
        new = _new_store(where)
        info, text = store.add_token(name, role, tools=tool_patterns or ("*",), at=datetime.now(UTC))
    if new:  # a first token legitimately makes the store; a mistyped URL would make one no server reads
        err.print(f"Created a new store at {where.label} (nothing was there): give this --store to 'handrail serve'.",
                  markup=False)  # fmt: skip
    click.echo(text)
    limits = f", tools {', '.join(info.tools)}" if info.role == "approver" else ""
    err.print(f"Token {info.token_id} for {printable(info.name)} ({info.role}{limits}). It is not shown again: "
              "keep it now ('handrail tokens revoke NAME' ends it).", markup=False)  # fmt: skip


@tokens.command("list")
@_STORE
@click.option("--all", "include_revoked", is_flag=True, help="Include revoked tokens.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def list_command(store_url: str, include_revoked: bool, as_json: bool) -> None:
    """List the tokens (names, roles, ids; never a token itself), oldest first."""
    out, err = _consoles()
    with opened(err, None, store_url) as where, errors_as_exit_codes(err):
        found = _service_store(err, where).list_tokens(include_revoked=include_revoked)
    if as_json:
        echo_json({"tokens": [_token_json(t) for t in found]})
        return
    if not found:
        out.print("No tokens. Add one: handrail tokens add NAME --role admin --store URL", markup=False)
        return
    for token in found:
        tools = f" tools {', '.join(token.tools)}" if token.role == "approver" else ""
        revoked = f" revoked {token.revoked_at.isoformat(timespec='seconds')}" if token.revoked_at else ""
        out.print(f"{token.token_id}  {printable(token.name)}  {token.role}{tools}  created "
                  f"{token.created_at.isoformat(timespec='seconds')}{revoked}", markup=False)  # fmt: skip


@tokens.command("revoke")
@click.argument("name_or_id")
@_STORE
def revoke_command(name_or_id: str, store_url: str) -> None:
    """Revoke the token of NAME (or with this token id): every server refuses it, and its sessions, at once."""
    out, err = _consoles()
    with opened(err, None, store_url) as where, errors_as_exit_codes(err):
        revoked = _service_store(err, where).revoke_token(name_or_id, at=datetime.now(UTC))
    out.print(f"Revoked {revoked.token_id} ({printable(revoked.name)}, {revoked.role}).", markup=False)
