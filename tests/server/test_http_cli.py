"""``handrail tokens add|list|revoke`` and the checks ``handrail serve`` makes before it listens."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from handrail.cli import main
from handrail.stores import SQLiteSnapshotStore


def cli(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'service.db'}"


def test_tokens_add_prints_the_token_once_and_list_never_shows_it(url: str) -> None:
    added = cli("tokens", "add", "ann", "--role", "approver", "--tool", "read_*", "--tool", "list_*", "--store", url)
    assert added.exit_code == 0, added.output
    (token,) = added.stdout.split()
    assert token.startswith("tk_") and "not shown again" in added.stderr and token not in added.stderr
    store = SQLiteSnapshotStore(url.removeprefix("sqlite:///"))
    info = store.authenticate(token)
    assert info is not None and info.name == "ann" and info.tools == ("read_*", "list_*")
    store.close()
    listed = cli("tokens", "list", "--store", url)
    assert listed.exit_code == 0 and "ann" in listed.stdout and "read_*, list_*" in listed.stdout
    assert token not in listed.output and token.partition(".")[2] not in listed.output
    data = json.loads(cli("tokens", "list", "--store", url, "--json").stdout)
    assert [t["name"] for t in data["tokens"]] == ["ann"] and token.partition(".")[2] not in json.dumps(data)


def test_tokens_revoke_ends_a_token(url: str) -> None:
    token = cli("tokens", "add", "ann", "--role", "admin", "--store", url).stdout.strip()
    revoked = cli("tokens", "revoke", "ann", "--store", url)
    assert revoked.exit_code == 0 and "Revoked" in revoked.stdout
    store = SQLiteSnapshotStore(url.removeprefix("sqlite:///"))
    assert store.authenticate(token) is None
    store.close()
    assert "No tokens" in cli("tokens", "list", "--store", url).stdout
    assert "ann" in cli("tokens", "list", "--all", "--store", url).stdout
    again = cli("tokens", "revoke", "ann", "--store", url)
    assert again.exit_code == 2 and "No valid token" in again.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--role", "viewer", "--tool", "x*"], "--tool limits an approver"), (["--role", "boss"], "boss")],
)
def test_tokens_add_refuses_bad_options(url: str, args: list[str], message: str) -> None:
    result = cli("tokens", "add", "ann", *args, "--store", url)
    assert result.exit_code == 2 and message in result.output


def test_tokens_add_refuses_a_taken_name(url: str) -> None:
    cli("tokens", "add", "ann", "--role", "admin", "--store", url)
    again = cli("tokens", "add", "ann", "--role", "viewer", "--store", url)
    assert again.exit_code == 2 and "'ann'" in again.stderr and "Traceback" not in again.output


def test_serve_refuses_a_network_address_while_the_store_has_no_token(url: str) -> None:
    cli("tokens", "add", "ann", "--role", "admin", "--store", url)
    cli("tokens", "revoke", "ann", "--store", url)  # the database exists, without a valid token
    refused = cli("serve", "--store", url, "--host", "0.0.0.0", "--port", "0")
    assert refused.exit_code == 2 and "no token" in refused.stderr and "handrail tokens add" in refused.stderr


def test_serve_names_a_port_in_use(url: str) -> None:
    cli("tokens", "add", "ann", "--role", "admin", "--store", url)
    taken = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        port = taken.getsockname()[1]
        refused = cli("serve", "--store", url, "--port", str(port))
    finally:
        taken.close()
    assert refused.exit_code == 2 and f"Port {port} on 127.0.0.1 is in use" in refused.stderr


@pytest.mark.parametrize("store", ["nosuch://x", "sqlite:///{tmp}/missing.db", "{tmp}/not-a-dir.txt"])
def test_serve_names_a_bad_store(tmp_path: Path, store: str) -> None:
    (tmp_path / "not-a-dir.txt").write_text("x")
    refused = cli("serve", "--store", store.format(tmp=tmp_path), "--port", "0")
    assert refused.exit_code == 2 and "--store" in refused.stderr and "Traceback" not in refused.output


@pytest.mark.parametrize("store", ["sqlite:///{tmp}/new/service.db", "{tmp}/new/store"])
def test_tokens_add_on_a_store_that_does_not_exist_says_it_created_one(tmp_path: Path, store: str) -> None:
    given = store.format(tmp=tmp_path)
    added = cli("tokens", "add", "ann", "--role", "admin", "--store", given)
    assert added.exit_code == 0 and added.stdout.strip().startswith("tk_"), added.output
    said = " ".join(added.stderr.split())
    assert "Created a new store at" in said and str(tmp_path / "new") in said, added.stderr
    again = cli("tokens", "add", "bob", "--role", "viewer", "--store", given)
    assert again.exit_code == 0 and "Created a new store" not in again.stderr  # it exists now
