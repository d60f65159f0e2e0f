"""Resuming a paused run from Python: :func:`resume` and :func:`resume_async` (what ``handrail resume`` runs).

A run paused for approval (or at a breakpoint) into a snapshot store goes on with
``handrail.resume(snapshot_id, store=store)``: the snapshot is read from ``store``, the decisions given are
added to those recorded there, and the run continues through that very store object. It claims the record,
rewrites it around each tool call and, when calls still wait for a decision, pauses again into it (a new
snapshot id; the old record says where the run went).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.errors import ConfigurationError, ConfigurationTypeError

if TYPE_CHECKING:
    from handrail.components.agents.agent import Agent
    from handrail.components.drivers import RunObserver
    from handrail.dataclasses.snapshot import AgentSnapshot
    from handrail.dataclasses.streaming import StreamingCallback
    from handrail.stores.types import SnapshotStore

__all__ = ["model_generator", "resume", "resume_async"]

_MODEL_KEYS = ("model", "openai_base_url", "openai_model")


def model_generator(model: str | None = None, openai_base_url: str | None = None,
                    openai_model: str | None = None) -> Any:  # fmt: skip
    """The chat generator a model choice names (``handrail run --model`` / ``--openai-base-url``), or None.

    Args:
        model: ``small``, ``default`` or a ``.gguf`` file: the embedded model (``handrail[local]``).
        openai_base_url: An OpenAI-compatible server (key from ``OPENAI_API_KEY``, else a placeholder for local
            servers that need none).
        openai_model: The model name to ask that server for (default ``"default"``).

    Returns:
        The generator, or None when neither ``model`` nor ``openai_base_url`` is given (the agent file's own).
        ``model`` wins when both are given (the command line refuses that before).
    """
    if model is not None:
        from handrail.specs.agent_spec import GeneratorSpec, build_generator

        return build_generator(GeneratorSpec(type="llama_cpp", model=model))
    if openai_base_url is None:
        return None
    from handrail.components.generators.chat import OpenAIChatGenerator
    from handrail.core.secret import Secret

    key = (
        Secret.from_env_var("OPENAI_API_KEY")
        if os.environ.get("OPENAI_API_KEY")
        else Secret.from_token("no-key-needed-for-local-servers")
    )
    return OpenAIChatGenerator(api_key=key, model=openai_model or "default", api_base_url=openai_base_url)


def recorded_models(metadata: Mapping[str, Any]) -> dict[str, str]:
    """The model choice ``handrail run`` recorded in a snapshot's ``metadata["generator"]`` (text values only)."""
    recorded = metadata.get("generator")
    if not isinstance(recorded, dict):
        return {}
    return {k: v for k, v in recorded.items() if k in _MODEL_KEYS and isinstance(v, str)}


def _agent_from_file(snapshot: AgentSnapshot, store: SnapshotStore) -> Agent:
    """The Agent of the agent file recorded in ``snapshot`` (by ``handrail run``), pausing again into ``store``.

    As ``handrail resume`` builds it without options: the file's tools and generator (or the model the run
    was started with, as recorded), calls that need approval pausing into ``store``, the folder of a file that
    trusts modules (``allowed_modules``) put on ``sys.path`` so its tool modules import.

    Raises:
        ConfigurationError: The snapshot records no agent file, or the file is gone: pass ``agent=``.
        SpecError: The file cannot be built.
    """
    from handrail.specs.agent_spec import build_agent, load_agent_spec

    name = snapshot.snapshot_id
    recorded = snapshot.metadata.get("agent_file")
    if not isinstance(recorded, str) or not recorded:
        raise ConfigurationError(
            f"Snapshot {name} does not record its agent file (metadata['agent_file']: its run was paused from "
            f"Python, not by 'handrail run'); pass agent=<the Agent the run was started with>."
        )
    path = Path(recorded)
    if not path.is_file():
        raise ConfigurationError(
            f"The agent file recorded in snapshot {name} is gone ({path}); pass agent=<an Agent that defines the "
            f"same agent>."
        )
    spec = load_agent_spec(path)
    folder = str(path.resolve().parent)
    if spec.allowed_modules and folder not in sys.path:
        sys.path.insert(0, folder)  # the tool modules a file trusts may sit beside it, as for 'handrail run'
    models = recorded_models(snapshot.metadata)
    metadata: dict[str, Any] = {"agent_file": str(path.resolve())}
    if models:
        metadata["generator"] = models
    return build_agent(spec, base_dir=path.parent, generator=model_generator(**models), approve="pause",
                       snapshot_store=store, snapshot_metadata=metadata)  # fmt: skip


@contextlib.contextmanager
def _the_store(store: object) -> Iterator[SnapshotStore]:
    """``store`` itself (left open), or the store a URL or directory names (closed at the end)."""
    from handrail.stores._snapshot_locations import open_snapshot_store
    from handrail.stores.types import SnapshotStore

    if isinstance(store, str | os.PathLike):
        opened = open_snapshot_store(store)
        try:
            yield opened
        finally:
            close = getattr(opened, "close", None)
            if callable(close):
                close()
        return
    if not isinstance(store, SnapshotStore):
        raise ConfigurationTypeError(
            f"store must be a SnapshotStore (handrail.stores), a store URL or a directory, got {type(store).__name__}."
        )
    yield store


def _prepared(
    snapshot_id: object, store: SnapshotStore, agent: object, decisions: object
) -> tuple[AgentSnapshot, Agent]:
    """The snapshot to resume (read from ``store``, carrying the store and the decisions) and the Agent to run."""
    from handrail.components.agents._decision_checks import check_decision_types
    from handrail.components.agents.agent import Agent

    if not isinstance(snapshot_id, str):
        raise ConfigurationTypeError(f"snapshot_id must be a str, got {type(snapshot_id).__name__}.")
    if agent is not None and not isinstance(agent, Agent):
        raise ConfigurationTypeError(f"agent must be an Agent or None, got {type(agent).__name__}.")
    if isinstance(decisions, ToolExecutionDecision | str | bytes | Mapping) or not isinstance(decisions, Iterable):
        raise ConfigurationTypeError(
            f"decisions must be a list of ToolExecutionDecision, got {type(decisions).__name__} ({decisions!r:.80})."
        )
    given = list(decisions)
    check_decision_types(given, "decisions")
    loaded = store.load(snapshot_id)
    location = loaded.location or store.locator(snapshot_id)
    snapshot = dataclasses.replace(loaded, tool_execution_decisions=given, location=location, store=store)
    return snapshot, agent if agent is not None else _agent_from_file(snapshot, store)


def resume(
    snapshot_id: str,
    *,
    store: SnapshotStore | str | os.PathLike[str],
    agent: Agent | None = None,
    decisions: Iterable[ToolExecutionDecision] = (),
    unknown_outcome: str | None = None,
    allow_drift: bool = False,
    streaming_callback: StreamingCallback | None = None,
    observers: Sequence[RunObserver] = (),
) -> dict[str, Any]:
    """Continue the paused run ``snapshot_id`` of ``store``, as ``handrail resume`` does.

    Args:
        snapshot_id: The snapshot's id in the store (what ``handrail approvals list`` shows).
        store: A SnapshotStore object: the run reads, claims, rewrites and pauses again through this very object
            (a subclass's overrides run; it is left open). Or a URL or directory (:func:`~handrail.stores.
            open_snapshot_store`, with the schemes of :func:`~handrail.stores.register_snapshot_store`): opened
            with no extra ``allowed_modules`` and closed when the call returns.
        agent: The Agent to continue with (the one that paused, or one that defines the same agent: tools,
            prompts, exit conditions and state schema are checked against the snapshot). None: the agent file
            ``handrail run`` recorded in the snapshot, built as ``handrail resume`` builds it (its generator,
            or the model the run was started with; calls needing approval pause into ``store``); a snapshot
            paused from Python records none, and is refused.
        decisions: Decisions for the paused calls, by ``tool_call_id``, added to those recorded in the store (a
            decision differing from a recorded one is refused: see
            :meth:`~handrail.dataclasses.decisions.ToolExecutionDecision.find`).
        unknown_outcome: For a call found ``running`` (its process died mid-call): None refuses
            (UnknownOutcomeError), ``"retry"`` runs it again with the same call id, ``"fail"`` records it failed.
        allow_drift: Resume although the agent's definition changed since the pause.
        streaming_callback: Receives the resumed run's streamed chunks.
        observers: Told when each effect of the resumed run starts and ends (with the agent's own observers).

    Returns:
        The run's result, as :meth:`Agent.run` returns it.

    Raises:
        ConfigurationError: ``agent`` is None and the snapshot names no agent file that exists; or bad arguments.
        ConfigurationTypeError: A ``store``, ``agent`` or ``decisions`` of the wrong type.
        SnapshotError: No such snapshot in the store (a ``sqlite:`` file that does not exist is refused so, "no
            such database file", and is not created).
        SnapshotUnavailableError: The snapshot is being resumed elsewhere, was resumed, or its run finished.
        HITLBreakpointException: Calls still without a decision paused the run again (``.snapshot`` holds the
            new snapshot, in ``store``).
        SnapshotDriftError, UnknownOutcomeError, DecisionConflictError: As for :meth:`Agent.run`.
    """
    with _the_store(store) as opened:
        snapshot, runner = _prepared(snapshot_id, opened, agent, decisions)
        return runner.run(messages=[], snapshot=snapshot, streaming_callback=streaming_callback,
                          allow_drift=allow_drift, unknown_outcome=unknown_outcome, observers=observers)  # fmt: skip


async def resume_async(
    snapshot_id: str,
    *,
    store: SnapshotStore | str | os.PathLike[str],
    agent: Agent | None = None,
    decisions: Iterable[ToolExecutionDecision] = (),
    unknown_outcome: str | None = None,
    allow_drift: bool = False,
    streaming_callback: StreamingCallback | None = None,
    observers: Sequence[RunObserver] = (),
) -> dict[str, Any]:
    """Async twin of :func:`resume` (same arguments and result): the run goes on with :meth:`Agent.run_async`.

    Reading the snapshot, building an agent from its file and closing a store opened from a URL run in a worker
    thread, so the event loop is not blocked by their I/O. The callback may be sync or async.
    """
    from handrail.core._threads import to_thread

    stack = contextlib.ExitStack()
    opened = await to_thread(stack.enter_context, _the_store(store))
    try:
        snapshot, runner = await to_thread(_prepared, snapshot_id, opened, agent, decisions)
        return await runner.run_async(messages=[], snapshot=snapshot, streaming_callback=streaming_callback,
                                      allow_drift=allow_drift, unknown_outcome=unknown_outcome,
                                      observers=observers)  # fmt: skip
    finally:
        await to_thread(stack.close)
