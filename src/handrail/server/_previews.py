"""Tool previews in the approval service: a call's preview, computed in a worker thread under a time limit.

:meth:`Previewer.answer` (``GET /api/v1/approvals/{id}/preview``) gives, for an approval:

1. the answer kept for its ``(id, version)``, when one was computed (an edit makes a new version, so a new one);
2. else the preview already being computed for it (a slow one asked for before) is waited for again;
3. else, when fewer than ``max_running`` previews run in this process, a new thread finds the tool (the approval's
   agent through the service's :class:`~handrail.server.AgentRegistry`, as the resumer finds it: the factory of
   its name or the agent file its snapshot records; the registry builds each agent once) and calls the tool's
   preview function on a copy of the approval's arguments (the effective ones, as stored); beyond that, the
   answer is "busy".

The request waits at most ``timeout`` seconds. A thread that overruns is abandoned, not killed (Python cannot):
it keeps its slot until the function returns, so a hanging preview can hold at most ``max_running`` threads, and
what it returns then is kept for the next request. Nothing here blocks a decision: the route awaits the thread
without holding a server thread, and a preview never touches the approval.

Every answer has exactly one of ``preview`` and ``unavailable``, a sentence for a person. A preview function's
error is reported by its type only (its message may hold model-made argument values), and logged at warning
level with the tool, the approval and where it was raised, never with the arguments.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import threading
import traceback
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from handrail.errors import ConfigurationError, SnapshotError, UnknownAgentError
from handrail.tools.preview import Preview, as_preview

if TYPE_CHECKING:
    from handrail.components.agents.agent import Agent
    from handrail.dataclasses.approval import Approval
    from handrail.server._registry import AgentRegistry
    from handrail.tools.tool import Tool

__all__ = ["PreviewAnswer", "Previewer"]

_LOG = logging.getLogger("handrail.server")
_Key = tuple[str, int]


@dataclass(frozen=True, slots=True)
class PreviewAnswer:
    """What ``GET /api/v1/approvals/{id}/preview`` answers: exactly one of the two fields is set."""

    preview: Preview | None = None
    """The tool's preview of the call."""
    unavailable: str | None = None
    """Why there is none, for a person (``"this tool has no preview"``, ``"preview unavailable: ..."``)."""

    def to_dict(self) -> dict[str, Any]:
        """``{"preview": {"kind", "content", "title"} | None, "unavailable": str | None}``."""
        return {"preview": None if self.preview is None else self.preview.to_dict(), "unavailable": self.unavailable}


def _unavailable(why: str) -> PreviewAnswer:
    return PreviewAnswer(unavailable=why)


NO_PREVIEW = _unavailable("this tool has no preview")
BUSY = _unavailable("preview unavailable: the server is busy computing other previews; try again in a moment")


class Previewer:
    """Computes the previews of one app's approvals (see the module docstring).

    Args:
        store: The service's store (the snapshots that name each approval's agent).
        registry: The agents (shared with the resumer, so each agent is built once).
        timeout: Seconds a request waits for a preview.
        max_running: Previews computed at once in this process (each in a thread of its own).
        cache_size: Answers kept, by approval id and version (the oldest used goes first).

    Raises:
        ConfigurationError: ``timeout`` is not a positive number of seconds, ``max_running`` or ``cache_size`` not
            a positive int.
    """

    def __init__(
        self, store: Any, registry: AgentRegistry, *, timeout: float = 2.0, max_running: int = 4, cache_size: int = 512
    ) -> None:
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < 3600:
            raise ConfigurationError(f"preview_timeout must be a number of seconds in (0, 3600), got {timeout!r:.40}.")
        for name, value in (("max_running", max_running), ("cache_size", cache_size)):
            if type(value) is not int or value < 1:
                raise ConfigurationError(f"{name} must be an int >= 1, got {value!r:.40}.")
        self.store = store
        self.registry = registry
        self.timeout = float(timeout)
        """Seconds a request waits for a preview."""
        self._slots = threading.BoundedSemaphore(max_running)
        self._lock = threading.Lock()
        self._cache: OrderedDict[_Key, PreviewAnswer] = OrderedDict()
        self._cache_size = cache_size
        self._running: dict[_Key, Future[PreviewAnswer]] = {}

    async def answer(self, approval: Approval) -> PreviewAnswer:
        """The preview of ``approval``'s call, or why there is none; waits at most :attr:`timeout` seconds."""
        found = self._start(approval)
        if isinstance(found, PreviewAnswer):
            return found
        try:
            return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(found)), self.timeout)
        except TimeoutError:
            return _unavailable(f"preview unavailable: it took longer than {self.timeout:g} s")

    def _start(self, approval: Approval) -> PreviewAnswer | Future[PreviewAnswer]:
        key = (approval.id, approval.version)
        with self._lock:
            kept = self._cache.get(key)
            if kept is not None:
                self._cache.move_to_end(key)
                return kept
            running = self._running.get(key)
            if running is not None:
                return running
            if not self._slots.acquire(blocking=False):
                return BUSY
            future: Future[PreviewAnswer] = Future()
            future.set_running_or_notify_cancel()  # a running future cannot be cancelled by a request that gave up
            self._running[key] = future
        worker = threading.Thread(target=self._work, args=(key, approval, future), name="handrail-preview",
                                  daemon=True)  # fmt: skip
        try:
            worker.start()
        except RuntimeError:  # no thread to be had
            self._finish(key, future, BUSY, keep=False)
        return future

    def _work(self, key: _Key, approval: Approval, future: Future[PreviewAnswer]) -> None:
        answer = self._compute(approval)
        self._finish(key, future, answer, keep=True)

    def _finish(self, key: _Key, future: Future[PreviewAnswer], answer: PreviewAnswer, *, keep: bool) -> None:
        with self._lock:
            self._running.pop(key, None)
            if keep:
                self._cache[key] = answer
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        self._slots.release()
        future.set_result(answer)

    def _compute(self, approval: Approval) -> PreviewAnswer:
        """The answer for ``approval`` (in the worker thread): find the tool, run its preview."""
        try:
            found = self._tool(approval)
        except UnknownAgentError:
            return _unavailable(f"preview unavailable: the agent {approval.agent_name!r} is not known to this server")
        except Exception as exc:  # an agent file that cannot be built here: the decision goes on without a preview
            _log_failure("finding the tool of", approval, exc)
            return _unavailable(
                f"preview unavailable: the agent {approval.agent_name!r} could not be found or built here "
                f"({type(exc).__name__})"
            )
        if isinstance(found, PreviewAnswer):
            return found
        assert found.preview is not None
        try:
            value = found.preview(copy.deepcopy(dict(approval.arguments)))
        except Exception as exc:  # the tool's code, fed model-made arguments: its message is not shown
            _log_failure("the preview of", approval, exc)
            return _unavailable(f"preview unavailable: it failed ({type(exc).__name__})")
        if not isinstance(value, Preview | str):
            _LOG.warning("the preview of tool %s for approval %s returned %s, not a Preview or a str",
                         approval.tool_name, approval.id, type(value).__name__)  # fmt: skip
            return _unavailable(
                f"preview unavailable: the tool's preview returned {type(value).__name__}, not a Preview or a str"
            )
        return PreviewAnswer(preview=as_preview(value))

    def _tool(self, approval: Approval) -> Tool | PreviewAnswer:
        """The approval's tool in its agent (a PreviewAnswer: why there is no preview to run)."""
        agent = self._agent(approval)
        tool = _find_tool(agent, approval.tool_name)
        if tool is None:
            return _unavailable(
                f"preview unavailable: the agent {approval.agent_name!r} has no tool {approval.tool_name!r} on this "
                f"server"
            )
        return tool if tool.preview is not None else NO_PREVIEW

    def _agent(self, approval: Approval) -> Agent:
        """The agent that paused the call, found as the resumer finds it (by its snapshot; else by its name)."""
        try:
            snapshot = self.store.load(approval.snapshot_id)
        except (SnapshotError, FileNotFoundError):
            snapshot = None
        if snapshot is not None:
            return self.registry.agent_for(snapshot)
        return self.registry.agent_named(approval.agent_name)[0]


def _find_tool(agent: Agent, name: str) -> Tool | None:
    """The tool called ``name`` among the agent's tools; toolsets are warmed up first if it is not found."""
    from handrail.tools.toolset import Toolset
    from handrail.tools.utils import flatten_tools

    for attempt in range(2):
        found = next((t for t in flatten_tools(agent.tools) if t.name == name), None)
        if found is not None or attempt:
            return found
        items = agent.tools if isinstance(agent.tools, list | tuple) else [agent.tools]
        toolsets = [item for item in items if isinstance(item, Toolset)]
        if not toolsets:
            return None
        for toolset in toolsets:  # a dynamic toolset's tools appear once it is warmed up (connected)
            toolset.warm_up()
    return None  # pragma: no cover - the loop returns


def _log_failure(what: str, approval: Approval, exc: Exception) -> None:
    """Log a failure with the place it was raised (file, line, function), never its message or the arguments."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name}" if frames else ""
    _LOG.warning("%s tool %s for approval %s failed: %s%s", what, approval.tool_name, approval.id,
                 type(exc).__name__, where)  # fmt: skip
