"""Which catalog a workflow's agents come from: one per task queue in this worker process."""

from __future__ import annotations

from typing import TYPE_CHECKING

from handrail.errors import ConfigurationError

if TYPE_CHECKING:
    from handrail.temporal._catalog import AgentCatalog

__all__ = ["REPLAY", "catalog_for", "is_traced", "register", "set_traced", "unregister"]

REPLAY = "replay-"
"""Register a catalog under this name to replay saved histories with ``temporalio.worker.Replayer``."""

_CATALOGS: dict[str, AgentCatalog] = {}
_TRACED: set[str] = set()


def set_traced(task_queue: str, traced: bool) -> None:
    """Whether the workflows of ``task_queue`` in this process make their ``invoke_agent`` span (tracing is on)."""
    if traced:
        _TRACED.add(task_queue)
    else:
        _TRACED.discard(task_queue)


def is_traced(task_queue: str) -> bool:
    """What :func:`set_traced` said of ``task_queue``."""
    return task_queue in _TRACED


def register(task_queue: str, catalog: AgentCatalog) -> None:
    """Make ``catalog`` the agents of workflows on ``task_queue`` in this process."""
    _CATALOGS[task_queue] = catalog


def unregister(task_queue: str, catalog: AgentCatalog) -> None:
    """Forget ``catalog`` (when it is still the one registered)."""
    if _CATALOGS.get(task_queue) is catalog:
        del _CATALOGS[task_queue]


def catalog_for(task_queue: str) -> AgentCatalog:
    """The agents of ``task_queue``'s workflows (for a Replayer's made-up queue, the one registered as :data:`REPLAY`).

    Raises:
        ConfigurationError: No worker of this process serves that queue.
    """
    found = _CATALOGS.get(task_queue)
    if found is None and task_queue.startswith(REPLAY):
        found = _CATALOGS.get(REPLAY)  # temporalio's Replayer names no real queue: the catalog registered for replays
    if found is None:
        raise ConfigurationError(f"No handrail worker in this process serves task queue {task_queue!r}.")
    return found
