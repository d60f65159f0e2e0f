"""handrail.resume / resume_async: a paused run goes on through the store object it is given (or a URL's store)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

import handrail
from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.snapshot import AgentSnapshot, LedgerEntry, MessageCache
from handrail.errors import ConfigurationError, ConfigurationTypeError, SnapshotUnavailableError
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.specs import build_agent, load_agent_spec
from handrail.stores import FileSnapshotStore, SnapshotStore, open_snapshot_store, register_snapshot_store
from handrail.stores import _snapshot_locations as locations
from handrail.stores.types import Lease
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function
from tests.common_tools import SENT, lookup, transfer
from tests.specs.test_agent_spec import scripted_generator_yaml


class RecordingStore(FileSnapshotStore):
    """A directory store whose overrides note each call, by phase ("pause" or "resume")."""

    phase = "pause"

    def __init__(self, directory: str | Path, **options: Any) -> None:
        super().__init__(directory, **options)
        self.calls: list[tuple[str, str]] = []

    def _note(self, name: str) -> None:
        self.calls.append((self.phase, name))

    def load(self, snapshot_id: str) -> AgentSnapshot:
        self._note("load")
        return super().load(snapshot_id)

    def claim(self, snapshot_id: str) -> Any:
        self._note("claim")
        return super().claim(snapshot_id)

    def create(self, snapshot: AgentSnapshot, name: str) -> Any:
        self._note("create")
        return super().create(snapshot, name)

    def replace(self, snapshot_id: str, snapshot: AgentSnapshot, cache: MessageCache | None = None) -> None:
        self._note("replace")
        super().replace(snapshot_id, snapshot, cache)

    def append_entries(
        self, snapshot_id: str, entries: Mapping[str, LedgerEntry], cache: MessageCache | None = None
    ) -> None:
        self._note("append_entries")
        super().append_entries(snapshot_id, entries, cache)

    def continue_in(
        self, snapshot_id: str, snapshot: AgentSnapshot, name: str, cache: MessageCache | None = None
    ) -> str:
        self._note("continue_in")
        return super().continue_in(snapshot_id, snapshot, name, cache)

    def close(self) -> None:
        self._note("close")
        super().close()

    def in_phase(self, phase: str) -> set[str]:
        return {name for p, name in self.calls if p == phase}


def _asst(*calls: tuple[str, str, dict[str, Any]], text: str = "") -> ChatMessage:
    if not calls:
        return ChatMessage.from_assistant(text)
    return ChatMessage.from_assistant(text, tool_calls=[ToolCall(name, args, cid) for cid, name, args in calls])


def _agent(replies: list[ChatMessage], store: Any) -> Agent:
    return Agent(
        chat_generator=ScriptedChatGenerator(replies),
        tools=[create_tool_from_function(transfer), create_tool_from_function(lookup)],
        confirmation_strategies={"transfer": BreakpointConfirmationStrategy(snapshot_store=store)},
    )


def _approve(call_id: str) -> ToolExecutionDecision:
    return ToolExecutionDecision("transfer", execute=True, tool_call_id=call_id)


@pytest.fixture(autouse=True)
def _sent() -> None:
    SENT.clear()


@pytest.fixture
def registry() -> Iterator[None]:
    """Leave the scheme registry as it was."""
    saved = dict(locations._FACTORIES)
    yield
    locations._FACTORIES.clear()
    locations._FACTORIES.update(saved)


def test_a_store_subclass_is_used_on_pause_and_on_resume(tmp_path: Path) -> None:
    store = RecordingStore(tmp_path / "approvals")
    with pytest.raises(HITLBreakpointException) as first:
        _agent([_asst(("c0", "lookup", {"q": "rent"}), ("c1", "transfer", {"amount": 5}))], store).run(
            [ChatMessage.from_user("pay")]
        )
    assert {"create", "replace"} <= store.in_phase("pause")

    store.phase = "resume"
    first_id = first.value.snapshot.snapshot_id
    assert first_id is not None
    agent = _agent([_asst(("c2", "transfer", {"amount": 7})), _asst(text="paid")], store)
    with pytest.raises(HITLBreakpointException) as second:  # c2 waits: the run pauses again into the same object
        handrail.resume(first_id, store=store, agent=agent, decisions=[_approve("c1")])
    assert SENT == [5]
    resumed = store.in_phase("resume")
    assert {"load", "claim", "replace", "append_entries", "continue_in"} <= resumed, resumed
    assert "close" not in resumed  # a store object given to resume is the caller's: left open

    second_id = second.value.snapshot.snapshot_id
    assert second_id is not None and second_id != first_id
    assert store.load(first_id).status == "resumed" and store.load(first_id).continued_in == second_id
    result = handrail.resume(second_id, store=store, agent=agent, decisions=[_approve("c2")])
    assert result["last_message"].text == "paid" and SENT == [5, 7]
    assert store.load(second_id).status == "done"
    with pytest.raises(SnapshotUnavailableError, match=second_id):
        handrail.resume(second_id, store=store, agent=agent)
    assert SENT == [5, 7]


def test_resume_opens_a_url_and_closes_the_store_it_opened(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/approvals.db"
    with pytest.raises(HITLBreakpointException) as paused:
        _agent([_asst(("c1", "transfer", {"amount": 3}))], url).run([ChatMessage.from_user("pay")])
    snapshot_id = paused.value.snapshot.snapshot_id
    assert snapshot_id is not None
    result = handrail.resume(snapshot_id, store=url, agent=_agent([_asst(text="ok")], url),
                             decisions=[_approve("c1")])  # fmt: skip
    assert result["last_message"].text == "ok" and SENT == [3]
    reader = open_snapshot_store(url)
    assert reader.load(snapshot_id).status == "done"


def test_resume_async_is_the_twin(tmp_path: Path) -> None:
    store = RecordingStore(tmp_path / "approvals")
    with pytest.raises(HITLBreakpointException) as paused:
        _agent([_asst(("c1", "transfer", {"amount": 9}))], store).run([ChatMessage.from_user("pay")])
    snapshot_id = paused.value.snapshot.snapshot_id
    assert snapshot_id is not None
    store.phase = "resume"
    agent = _agent([_asst(text="done")], store)
    result = asyncio.run(handrail.resume_async(snapshot_id, store=store, agent=agent, decisions=[_approve("c1")]))
    assert result["last_message"].text == "done" and SENT == [9]
    assert {"load", "claim"} <= store.in_phase("resume")


def test_a_registered_scheme_opens_the_store_on_pause_and_on_resume(tmp_path: Path, registry: None) -> None:
    opened: list[RecordingStore] = []

    def factory(url: str, *, allowed_modules: tuple[str, ...], lock_timeout: float) -> SnapshotStore:
        store = RecordingStore(url.partition("://")[2], allowed_modules=allowed_modules, lock_timeout=lock_timeout)
        opened.append(store)
        return store

    register_snapshot_store("Recorded", factory)
    url = f"recorded://{tmp_path}/approvals"
    with pytest.raises(HITLBreakpointException) as paused:
        _agent([_asst(("c1", "transfer", {"amount": 2}))], url).run([ChatMessage.from_user("pay")])
    assert len(opened) == 1 and "create" in opened[0].in_phase("pause")
    snapshot_id = paused.value.snapshot.snapshot_id
    assert snapshot_id is not None
    result = handrail.resume(snapshot_id, store=url, agent=_agent([_asst(text="ok")], url), decisions=[_approve("c1")])
    assert result["last_message"].text == "ok" and SENT == [2]
    assert {"load", "claim", "replace", "close"} <= opened[1].in_phase("pause")  # the store resume opened, closed
    assert isinstance(open_snapshot_store(url), RecordingStore)


@pytest.mark.parametrize(
    ("scheme", "error", "fragment"),
    [
        ("sqlite", ConfigurationError, "built-in scheme"),
        ("c", ConfigurationError, "Invalid snapshot store scheme"),
        ("my://x", ConfigurationError, "Invalid snapshot store scheme"),
        ("", ConfigurationError, "Invalid snapshot store scheme"),
        (7, ConfigurationTypeError, "is a str"),
    ],
)
def test_bad_registrations_are_refused(scheme: Any, error: type[Exception], fragment: str, registry: None) -> None:
    with pytest.raises(error, match=fragment):
        register_snapshot_store(scheme, FileSnapshotStore)  # type: ignore[arg-type]


def test_a_scheme_is_registered_once_unless_replaced(tmp_path: Path, registry: None) -> None:
    def first(url: str, *, allowed_modules: tuple[str, ...], lock_timeout: float) -> SnapshotStore:
        return FileSnapshotStore(tmp_path / "one")

    def second(url: str, *, allowed_modules: tuple[str, ...], lock_timeout: float) -> SnapshotStore:
        return FileSnapshotStore(tmp_path / "two")

    register_snapshot_store("twice", first)
    with pytest.raises(ConfigurationError, match="registered already"):
        register_snapshot_store("twice", second)
    register_snapshot_store("twice", second, replace=True)
    store = open_snapshot_store("twice://anything")
    assert isinstance(store, FileSnapshotStore) and store.directory == tmp_path / "two"
    with pytest.raises(ConfigurationTypeError, match="callable"):
        register_snapshot_store("other", "not a factory")  # type: ignore[arg-type]


def test_a_factory_must_return_a_snapshot_store(registry: None) -> None:
    register_snapshot_store("nothing", lambda url, **options: object())
    with pytest.raises(ConfigurationTypeError, match="not a SnapshotStore"):
        open_snapshot_store("nothing://x")
    with pytest.raises(ConfigurationError, match=r"registered scheme \(nothing\)"):
        open_snapshot_store("ftp://x")


def _agent_file(path: Path, replies: list[ChatMessage]) -> Path:
    path.write_text(
        scripted_generator_yaml(replies) + "\ntools: [tests.common_tools.transfer]\nallowed_modules: "
        "[tests.common_tools]\nconfirmation:\n  transfer: always\n",
        encoding="utf-8",
    )
    return path


def test_without_an_agent_the_recorded_agent_file_is_built(tmp_path: Path) -> None:
    store = FileSnapshotStore(tmp_path / "approvals")
    file = _agent_file(tmp_path / "agent.yaml", [_asst(("c1", "transfer", {"amount": 4}))])
    agent = build_agent(load_agent_spec(file), base_dir=tmp_path, approve="pause", snapshot_store=store,
                        snapshot_metadata={"agent_file": str(file)})  # fmt: skip
    with pytest.raises(HITLBreakpointException) as paused:
        agent.run([ChatMessage.from_user("pay")])
    snapshot_id = paused.value.snapshot.snapshot_id
    assert snapshot_id is not None
    _agent_file(file, [_asst(text="paid from the file")])  # the script restarts: give it the replies to come
    result = handrail.resume(snapshot_id, store=store, decisions=[_approve("c1")])
    assert result["last_message"].text == "paid from the file" and SENT == [4]


def test_without_an_agent_a_snapshot_that_names_no_agent_file_is_refused(tmp_path: Path) -> None:
    store = FileSnapshotStore(tmp_path / "approvals")
    with pytest.raises(HITLBreakpointException) as paused:
        _agent([_asst(("c1", "transfer", {"amount": 1}))], store).run([ChatMessage.from_user("pay")])
    snapshot_id = paused.value.snapshot.snapshot_id
    assert snapshot_id is not None
    with pytest.raises(ConfigurationError, match=r"does not record its agent file.*pass agent="):
        handrail.resume(snapshot_id, store=store)
    store.replace(snapshot_id, _with_metadata(store.load(snapshot_id), {"agent_file": str(tmp_path / "gone.yaml")}))
    with pytest.raises(ConfigurationError, match=r"is gone .*gone\.yaml"):
        handrail.resume(snapshot_id, store=store)
    assert SENT == [] and store.load(snapshot_id).status == "paused"


def _with_metadata(snapshot: AgentSnapshot, metadata: dict[str, Any]) -> AgentSnapshot:
    import dataclasses

    return dataclasses.replace(snapshot, metadata=metadata)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"store": 42}, "store must be a SnapshotStore"),
        ({"agent": "agent.yaml"}, "agent must be an Agent"),
        ({"decisions": _approve("c1")}, "decisions must be a list"),
        ({"decisions": ["approve"]}, "must be a list of ToolExecutionDecision"),
    ],
)
def test_bad_arguments_are_refused_before_anything_runs(tmp_path: Path, kwargs: dict[str, Any], fragment: str) -> None:
    store = FileSnapshotStore(tmp_path / "approvals")
    with pytest.raises(HITLBreakpointException) as paused:
        _agent([_asst(("c1", "transfer", {"amount": 1}))], store).run([ChatMessage.from_user("pay")])
    snapshot_id = paused.value.snapshot.snapshot_id
    assert snapshot_id is not None
    with pytest.raises(ConfigurationTypeError, match=fragment):
        handrail.resume(snapshot_id, **{"store": store, "agent": _agent([], store), **kwargs})
    assert SENT == [] and store.load(snapshot_id).status == "paused"


def test_the_protocol_continue_in_takes_the_cache_the_agent_passes() -> None:
    parameters = inspect.signature(SnapshotStore.continue_in).parameters
    assert list(parameters) == ["self", "snapshot_id", "snapshot", "name", "cache"]
    assert parameters["cache"].default is None
    assert isinstance(Lease, type)


def test_a_resume_tells_the_observers_given(tmp_path: Path) -> None:
    seen: list[str] = []

    class Kinds:
        def started(self, event: object) -> None:
            pass

        def ended(self, event: object, ended: object) -> None:
            seen.append(type(event).__name__)

    store = FileSnapshotStore(tmp_path / "s")
    with pytest.raises(HITLBreakpointException) as paused:
        _agent([_asst(("t1", "transfer", {"amount": 2}))], store).run([ChatMessage.from_user("pay")])
    snapshot_id = paused.value.snapshot.snapshot_id
    assert snapshot_id is not None
    agent = _agent([_asst(text="ok")], store)
    handrail.resume(snapshot_id, store=store, agent=agent, decisions=[_approve("t1")], observers=[Kinds()])
    assert "RunTools" in seen and seen[-1] == "Finish"
