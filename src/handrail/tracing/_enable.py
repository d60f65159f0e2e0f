"""enable / disable / observer_for: which runs are traced, to which provider, with what content."""

from __future__ import annotations

import contextlib
import functools
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from handrail.tracing._content import DEFAULT_MAX_CONTENT_CHARS

__all__ = ["disable", "enable", "is_enabled", "observer_for"]

if TYPE_CHECKING:
    from handrail.components.drivers import RunObserver
    from handrail.tracing._spans import TracingObserver


@dataclass(frozen=True, slots=True)
class _Settings:
    """What :func:`enable` was given for the content of the spans."""

    capture_content: bool | None
    max_content_chars: int
    redact: Callable[[str], str] | None


_settings: _Settings | None = None
_lock = threading.Lock()
_factories: list[Callable[[], RunObserver | None]] = []
_tracers: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


@functools.cache
def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("handrail")
    except PackageNotFoundError:  # run from a source tree: the package's own string (it is imported: we are in it)
        import sys

        return str(sys.modules["handrail"].__version__)


def _tracer(provider: Any) -> Any:
    """The ``handrail`` tracer of ``provider`` (None: the global provider as it is now), made once per provider."""
    from handrail.tracing._conventions import SCOPE

    if provider is None:
        from opentelemetry import trace

        provider = trace.get_tracer_provider()
    try:
        tracer = _tracers.get(provider)
    except TypeError:  # not weakly referable: not cached
        return provider.get_tracer(SCOPE, _version())
    if tracer is None:
        tracer = provider.get_tracer(SCOPE, _version())
        with contextlib.suppress(TypeError):
            _tracers[provider] = tracer
    return tracer


def _checked(max_content_chars: Any, redact: Any, capture_content: Any = None, tracer_provider: Any = None,
             where: str = "observer_for") -> None:  # fmt: skip
    from handrail.components.agents._config import check_provider
    from handrail.errors import ConfigurationError, ConfigurationTypeError

    check_provider(tracer_provider, f"{where}(tracer_provider=)")
    if capture_content is not None and not isinstance(capture_content, bool):
        raise ConfigurationTypeError(
            f"{where}(capture_content=) must be True, False or None, got {capture_content!r}."[:300]
        )

    if not isinstance(max_content_chars, int) or isinstance(max_content_chars, bool):
        raise ConfigurationTypeError(f"max_content_chars must be an int, got {type(max_content_chars).__name__}.")
    if max_content_chars < 1:
        raise ConfigurationError(f"max_content_chars must be at least 1, got {max_content_chars}.")
    if redact is not None and not callable(redact):
        raise ConfigurationTypeError(f"redact must be a function of a str or None, got {type(redact).__name__}.")


def observer_for(
    tracer_provider: Any = None,
    *,
    capture_content: bool | None = None,
    max_content_chars: int | None = None,
    redact: Callable[[str], str] | None = None,
) -> TracingObserver:
    """A fresh observer that traces one run to ``tracer_provider`` (what ``Agent(tracer_provider=)`` uses).

    What is not given is taken from :func:`enable` when tracing is enabled (so an Agent with its own provider
    records content as every other run does), else from the defaults below.

    Args:
        tracer_provider: An OpenTelemetry ``TracerProvider``; None: the global one, as it is when called.
        capture_content: Record messages, tool definitions, arguments and results on the spans. None: only when
            the environment variable ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is ``true``.
        max_content_chars: The longest string kept in a content attribute (longer ones are cut and marked);
            None: 4096.
        redact: Masks each content string, after the run's own redaction hooks (None: only those and the
            known secret values are masked).

    Raises:
        ConfigurationError / ConfigurationTypeError: ``tracer_provider`` has no ``get_tracer``,
            ``capture_content`` is not a bool or None, ``max_content_chars`` is not a positive int, or ``redact``
            is not callable.
    """
    from handrail.tracing._content import capture_from_environment
    from handrail.tracing._spans import TracingObserver

    enabled = _settings
    if enabled is not None:
        capture_content = enabled.capture_content if capture_content is None else capture_content
        max_content_chars = enabled.max_content_chars if max_content_chars is None else max_content_chars
        redact = enabled.redact if redact is None else redact
    max_content_chars = DEFAULT_MAX_CONTENT_CHARS if max_content_chars is None else max_content_chars
    _checked(max_content_chars, redact, capture_content, tracer_provider)
    capture = capture_from_environment() if capture_content is None else bool(capture_content)
    return TracingObserver(_tracer(tracer_provider), capture_content=capture, max_content_chars=max_content_chars,
                           redact=redact)  # fmt: skip


def enable(
    tracer_provider: Any = None,
    *,
    capture_content: bool | None = None,
    max_content_chars: int = DEFAULT_MAX_CONTENT_CHARS,
    redact: Callable[[str], str] | None = None,
    metrics: bool = True,
    meter_provider: Any = None,
) -> None:
    """Trace every Agent run from now on (until :func:`disable`); calling it again replaces the settings.

    Each run gets its own observer (:func:`observer_for`). With ``tracer_provider`` None the global provider is
    looked up as each run starts, so one set later (``trace.set_tracer_provider``) is used. With ``metrics`` the
    runs' metrics are recorded too (:func:`handrail.tracing._metrics.metrics_observer_for`), to ``meter_provider``.

    Args:
        tracer_provider: An OpenTelemetry ``TracerProvider``, or None for the global one.
        capture_content: As :func:`observer_for` (None: the environment variable decides, at each run).
        max_content_chars: As :func:`observer_for`.
        redact: As :func:`observer_for`.
        metrics: Also record the GenAI and approval metrics of every run (when handrail's metrics module is there).
        meter_provider: An OpenTelemetry ``MeterProvider`` for the metrics, or None for the global one.

    Raises:
        ConfigurationError / ConfigurationTypeError: As :func:`observer_for`; also ``meter_provider`` without
            ``get_meter``.
        ImportError: OpenTelemetry is not installed (``pip install 'handrail[tracing]'``).
    """
    from handrail.components.agents._config import check_provider
    from handrail.components.drivers import add_observer_factory

    _checked(max_content_chars, redact, capture_content, tracer_provider, "enable")
    check_provider(meter_provider, "enable(meter_provider=)", "get_meter", "MeterProvider")
    import opentelemetry.trace  # noqa: F401  (fails here, not in a run, when the extra is missing)

    settings = _Settings(capture_content, max_content_chars, redact)

    def traced() -> RunObserver | None:
        return observer_for(tracer_provider, capture_content=settings.capture_content,
                            max_content_chars=settings.max_content_chars, redact=settings.redact)  # fmt: skip

    made: list[Callable[[], RunObserver | None]] = [traced]
    module = _metrics_module() if metrics else None
    if module is not None:
        made.append(functools.partial(module.metrics_observer_for, meter_provider))
    global _settings
    with _lock:
        _remove_all()
        _settings = settings
        for factory in made:
            add_observer_factory(factory)
            _factories.append(factory)


def _metrics_module() -> Any:
    """``handrail.tracing._metrics`` when it is there (it is optional to this module), else None."""
    import importlib

    try:
        return importlib.import_module("handrail.tracing._metrics")
    except ModuleNotFoundError as exc:
        if exc.name != "handrail.tracing._metrics":
            raise
        return None


def _remove_all() -> None:
    global _settings
    from handrail.components.drivers import remove_observer_factory

    _settings = None
    for factory in _factories:
        remove_observer_factory(factory)
    _factories.clear()


def disable() -> None:
    """Stop tracing new runs (what :func:`enable` turned on); runs under way finish their spans."""
    with _lock:
        _remove_all()


def is_enabled() -> bool:
    """Whether :func:`enable` is on (an Agent with its own ``tracer_provider`` is traced either way)."""
    return bool(_factories)
