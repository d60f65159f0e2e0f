"""OpenTelemetry tracing of handrail runs, as observers of the drivers (needs ``handrail[tracing]``).

Off by default, and free when off: ``import handrail`` does not import OpenTelemetry. Turn it on for every run
with :func:`enable`, or for one Agent with ``Agent(tracer_provider=...)``. A run is one ``invoke_agent`` span,
with a ``chat`` span per model call, an ``execute_tool`` span per tool call (refused calls too) and handrail's own
spans for approvals, hooks and the durable record; names follow the OpenTelemetry GenAI semantic conventions
(semantic-conventions-genai v0.1.0, see ``handrail.tracing._conventions``). A pause ends the run's span; the run
that resumes the snapshot links to it, in the same trace. Messages, arguments and results are recorded only when
asked for (``capture_content``), masked by the run's redaction hooks and never holding a known secret value.
"""

import typing as _typing

from handrail.core._lazy import lazy_exports as _lazy_exports

_EXPORTS: dict[str, str] = {
    "TracingObserver": "handrail.tracing._spans",
    "disable": "handrail.tracing._enable",
    "enable": "handrail.tracing._enable",
    "is_enabled": "handrail.tracing._enable",
    "observer_for": "handrail.tracing._enable",
    "Recorder": "handrail.tracing.recording",
    "replay": "handrail.tracing.recording",
    "MetricsObserver": "handrail.tracing._metrics",
    "metrics_observer_for": "handrail.tracing._metrics",
}

__all__ = [
    "TracingObserver",
    "disable",
    "enable",
    "is_enabled",
    "observer_for",
    "Recorder",
    "replay",
    "MetricsObserver",
    "metrics_observer_for",
]

if _typing.TYPE_CHECKING:
    from handrail.tracing._enable import disable, enable, is_enabled, observer_for
    from handrail.tracing._metrics import MetricsObserver, metrics_observer_for
    from handrail.tracing._spans import TracingObserver
    from handrail.tracing.recording import Recorder, replay

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals(), __all__)
