"""The approval service: ``handrail serve`` and ``handrail worker``.

``handrail serve`` is an HTTP API where people decide paused tool calls; ``handrail worker`` (and every server)
resumes runs by themselves once their calls are decided.

Everything lives in the snapshot store (approvals, tokens, events, runs), so any number of server and worker
processes sharing one store agree. The HTTP API needs the ``server`` extra (``pip install 'handrail[server]'``);
the resumer does not: :func:`create_app` and :func:`serve` import FastAPI and uvicorn only when called.

The HTTP API:

* :func:`create_app`: the FastAPI app over a store (approvals, decisions, audit, runs, events, login).
* :func:`serve`: that app on uvicorn, with the resumer in the same process.

Runs in the service (no HTTP needed):

* :class:`Resumer`: continues every paused run of a store once its calls are decided or expired, exactly once
  whatever the number of processes; sweeps expired approvals; takes over runs whose process died.
* :class:`RunLauncher`: starts runs of named agents durably (:meth:`RunLauncher.start_run`) and reads them back
  (:meth:`RunLauncher.get_run`).
* :class:`AgentRegistry`: the agents, from factories (``agents={name: factory}``, ``factory(store) -> Agent``) and
  agent files.
"""

import typing as _typing

from handrail.core._lazy import lazy_exports as _lazy_exports
from handrail.server._registry import AgentFactory, AgentRegistry, UnknownAgentError
from handrail.server._resumer import PassReport, Resumer
from handrail.server._runs import UNKNOWN_OUTCOMES, RunLauncher, RunView

__all__: list[str] = [
    "UNKNOWN_OUTCOMES",
    "AgentFactory",
    "AgentRegistry",
    "PassReport",
    "Resumer",
    "RunLauncher",
    "RunView",
    "UnknownAgentError",
    "create_app",
    "serve",
]

_EXPORTS: dict[str, str] = {
    "create_app": "handrail.server._app",
    "serve": "handrail.server._serve",
}

if _typing.TYPE_CHECKING:
    from handrail.server._app import create_app
    from handrail.server._serve import serve

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals(), __all__)
