"""Which store a resume goes through: a missing SQLite file is refused (never created); schemes round-trip."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import handrail
from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.errors import ConfigurationError, SnapshotError
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.stores import (
    FileSnapshotStore,
    SnapshotStore,
    SQLiteSnapshotStore,
    open_snapshot_store,
    register_snapshot_store,
)
from handrail.stores import _snapshot_locations as locations
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function
from tests.common_tools import SENT, transfer

APPROVE = ToolExecutionDecision("transfer", execute=True, tool_call_id="c1")


def _agent(replies: list[ChatMessage], store: Any) -> Agent:
    return Agent(
        chat_generator=ScriptedChatGenerator(replies),
        tools=[create_tool_from_function(transfer)],
        confirmation_strategies={"transfer": BreakpointConfirmationStrategy(snapshot_store=store)},
    )


def _pay(amount: int = 5) -> ChatMessage:
    return ChatMessage.from_assistant(tool_calls=[ToolCall("transfer", {"amount": amount}, "c1")])


@pytest.fixture(autouse=True)
def _sent() -> None:
    SENT.clear()


def test_a_missing_sqlite_file_is_refused_by_every_read_and_nothing_is_created(tmp_path: Path) -> None:
    path = tmp_path / "typo" / "approvals.db"
    url = f"sqlite:///{path}"
    store = open_snapshot_store(url)
    assert isinstance(store, SQLiteSnapshotStore)
    agent = _agent([ChatMessage.from_assistant("done")], store)
    attempts: dict[str, Callable[[], object]] = {
        "handrail.resume": lambda: handrail.resume("x1", store=url, agent=agent),
        "resume through the object": lambda: handrail.resume("x1", store=store, agent=agent),
        "load": lambda: store.load("x1"),
        "record_decision": lambda: store.record_decision("x1", APPROVE, decided_by="ana"),
        "claim": lambda: store.claim("x1"),
        "mark_done": lambda: store.mark_done("x1"),
    }
    for name, attempt in attempts.items():
        with pytest.raises(SnapshotError, match=r"No snapshot 'x1' in .*: no such database file") as refused:
            attempt()
        assert str(path) in str(refused.value), name
    assert store.list_pending() == [] and not store.exists("x1")  # listing a missing file, as a missing directory
    assert not (tmp_path / "typo").exists()  # no database, no lock folder, no parent folder
    assert SENT == []


def test_a_run_pausing_into_a_new_sqlite_file_creates_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/new/approvals.db"
    with pytest.raises(HITLBreakpointException) as paused:
        _agent([_pay()], url).run([ChatMessage.from_user("pay")])
    assert (tmp_path / "new" / "approvals.db").is_file()
    assert paused.value.snapshot is not None
    snapshot_id = paused.value.snapshot.snapshot_id
    assert snapshot_id is not None
    result = handrail.resume(snapshot_id, store=url, agent=_agent([ChatMessage.from_assistant("ok")], url),
                             decisions=[APPROVE])  # fmt: skip
    assert result["last_message"].text == "ok" and SENT == [5]


@pytest.mark.parametrize("path", ["", "  "])
def test_an_empty_sqlite_path_is_refused(path: str) -> None:
    with pytest.raises(ConfigurationError, match="needs a database file path"):
        SQLiteSnapshotStore(path)


class AuditedStore(FileSnapshotStore):
    """A directory store that notes every claim (docs/resume.md's example)."""

    def __init__(self, directory: str, **options: Any) -> None:
        super().__init__(directory, **options)
        self.claims: list[str] = []
        CLAIMS.append(self.claims)

    def claim(self, snapshot_id: str) -> Any:
        self.claims.append(snapshot_id)
        return super().claim(snapshot_id)


CLAIMS: list[list[str]] = []


def _audited(url: str, *, allowed_modules: tuple[str, ...], lock_timeout: float) -> SnapshotStore:
    directory = url.partition(":")[2].removeprefix("//")
    return AuditedStore(directory, allowed_modules=allowed_modules, lock_timeout=lock_timeout)


@pytest.fixture
def registry() -> Iterator[None]:
    """Leave the scheme registry as it was."""
    saved = dict(locations._FACTORIES)
    CLAIMS.clear()
    yield
    locations._FACTORIES.clear()
    locations._FACTORIES.update(saved)


@pytest.mark.parametrize("form", ["audited://{}", "audited:{}"])
def test_a_snapshot_object_resumes_through_the_registered_scheme(tmp_path: Path, registry: None, form: str) -> None:
    register_snapshot_store("audited", _audited)
    url = form.format(tmp_path / "approvals")
    store = open_snapshot_store(url)
    assert isinstance(store, AuditedStore) and store.directory == tmp_path / "approvals"
    with pytest.raises(HITLBreakpointException) as paused:
        _agent([_pay(4)], store).run([ChatMessage.from_user("pay")])
    snapshot = paused.value.snapshot
    assert snapshot is not None and snapshot.snapshot_id is not None
    assert snapshot.location == f"{url}#{snapshot.snapshot_id}"  # the location names the scheme, not the file
    store.record_decision(snapshot.snapshot_id, APPROVE, decided_by="ana")
    loaded = store.load(snapshot.snapshot_id)
    assert loaded.location == snapshot.location and loaded.snapshot_id == snapshot.snapshot_id
    CLAIMS.clear()
    result = _agent([ChatMessage.from_assistant("ok")], store).run(messages=[], snapshot=loaded)
    assert result["last_message"].text == "ok" and SENT == [4]
    assert [snapshot.snapshot_id] in CLAIMS  # the run claimed it through a store the scheme's factory built


def test_a_built_in_store_keeps_its_own_locations(tmp_path: Path) -> None:
    store = open_snapshot_store(f"sqlite:///{tmp_path}/a.db")
    assert store.locator("s1") == f"sqlite:///{tmp_path}/a.db#s1"
    assert open_snapshot_store(tmp_path).locator("s1") == str(tmp_path / "s1.json")


@pytest.mark.parametrize("directory", ["", "   "])
def test_an_empty_directory_is_refused_not_taken_for_the_current_one(directory: str) -> None:
    with pytest.raises(ConfigurationError, match="needs a directory"):
        FileSnapshotStore(directory)


def test_a_factory_that_cuts_the_url_wrongly_is_refused(registry: None) -> None:
    def broken(url: str, *, allowed_modules: tuple[str, ...], lock_timeout: float) -> SnapshotStore:
        return FileSnapshotStore(url.partition("://")[2])  # "audited:/x" has no "://": the directory is ""

    register_snapshot_store("audited", broken)
    with pytest.raises(ConfigurationError, match="needs a directory"):
        open_snapshot_store("audited:/tmp/x")


def test_a_failing_factory_is_a_configuration_error_naming_it(registry: None) -> None:
    def failing(url: str, *, allowed_modules: tuple[str, ...], lock_timeout: float) -> SnapshotStore:
        raise RuntimeError("bucket unreachable")

    register_snapshot_store("failing", failing)
    with pytest.raises(ConfigurationError, match=r"failing.*scheme 'failing'.*RuntimeError: bucket unreachable") as e:
        open_snapshot_store("failing://bucket")
    assert isinstance(e.value.__cause__, RuntimeError)


def test_a_factory_of_the_wrong_signature_is_refused_when_registered(registry: None) -> None:
    def one_argument(url: str) -> SnapshotStore:
        return FileSnapshotStore(url)

    with pytest.raises(ConfigurationError, match=r"one_argument.*scheme 'narrow'.*cannot be called") as e:
        register_snapshot_store("narrow", one_argument)  # type: ignore[arg-type]
    assert isinstance(e.value.__cause__, TypeError)
    with pytest.raises(ConfigurationError, match="Unknown snapshot store"):
        open_snapshot_store("narrow://x")  # nothing was registered


def test_a_factory_whose_call_fails_with_a_type_error_is_reported(registry: None) -> None:
    class Factory:
        """A callable without a readable signature for the call it gets."""

        def __call__(self, *args: Any, **kwargs: Any) -> SnapshotStore:
            raise TypeError("unexpected keyword argument 'lock_timeout'")

    register_snapshot_store("typed", Factory())
    with pytest.raises(ConfigurationError, match=r"Factory.*scheme 'typed'.*TypeError") as e:
        open_snapshot_store("typed://x")
    assert isinstance(e.value.__cause__, TypeError)
