"""The exception tree of handrail.

Every exception handrail raises on purpose derives from :class:`HandrailError`.
Misuse errors (raised before any side effect) also derive from ``ValueError`` or
``TypeError`` so code written against Haystack's exceptions keeps working::

    HandrailError
    ├── ConfigurationError (ValueError)      bad argument or configuration, raised before anything runs
    │   ├── NotSupportedYetError             a parameter whose feature is not built yet was given
    │   ├── SchemaGenerationError            a JSON Schema could not be built from a function signature
    │   ├── StateError                       an unknown State key or an invalid state schema
    │   ├── CalculationError                 the calculator refused or could not evaluate an expression
    │   ├── SerializationError               an object cannot be written to (or read from) a dict
    │   ├── SnapshotError                    a snapshot file is truncated, invalid or of an unknown schema version
    │   │   └── SnapshotDriftError           resuming against an agent whose definition changed (with a diff)
    │   ├── DecisionConflictError            a different decision is already recorded for a paused call
    │   ├── ModelFilesError                  a local model's files are missing, damaged or not GGUF
    │   └── ComponentError                   a bad component definition, or a bad pipeline connection
    ├── ConfigurationTypeError (TypeError)   an argument of the wrong type
    └── RunError                             a failure while a run is under way
        ├── ToolNotFoundException            the model called a tool that does not exist (raise mode)
        ├── ToolInvocationError              a tool raised, or its arguments were invalid (raise mode)
        ├── ToolOutputMergeError             a tool's outputs could not be merged into State
        ├── StringConversionError            a tool's result could not be turned into text
        ├── ScriptExhaustedError             a ScriptedChatGenerator was called more often than scripted
        ├── GenerationError                  a chat model (server or embedded) failed to give a usable reply
        ├── SnapshotUnavailableError         a snapshot is being resumed elsewhere, already resumed, or finished
        ├── StoreError                       a store is unreachable, holds a corrupt row, or has a newer schema
        │   └── CorruptRecordError           a stored row (message, memory, snapshot) cannot be read
        ├── UnknownOutcomeError              a resumed call was found running: its outcome is unknown
        ├── PipelineError                    a pipeline component failed (names the component)
        │   └── PipelineMaxComponentRuns     a pipeline component ran more often than allowed
        └── NoRouteSelectedException         no route of a ConditionalRouter matched

Control-flow signals (a breakpoint hit, an approval needed) are not errors and do
not derive from :class:`RunError`.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = [
    "CalculationError",
    "ComponentError",
    "ConfigurationError",
    "ConfigurationTypeError",
    "CorruptRecordError",
    "DecisionConflictError",
    "GenerationError",
    "HandrailError",
    "ModelFilesError",
    "NoRouteSelectedException",
    "NotSupportedYetError",
    "PipelineError",
    "PipelineMaxComponentRuns",
    "RunError",
    "ScriptExhaustedError",
    "SchemaGenerationError",
    "SerializationError",
    "SnapshotDriftError",
    "SnapshotError",
    "SnapshotUnavailableError",
    "StateError",
    "StoreError",
    "StringConversionError",
    "ToolInvocationError",
    "ToolNotFoundException",
    "ToolOutputMergeError",
    "UnknownOutcomeError",
]


MESSAGE_FILTERS: list[Callable[[str], str]] = []
"""Applied to the text arguments of every :class:`HandrailError` when it is built: ``handrail.core.secret``
adds the masking of known secret values, so no message holds a key a server or a tool echoed."""


class HandrailError(Exception):
    """Root of every exception handrail raises on purpose."""

    def __init__(self, *args: object) -> None:
        for apply in MESSAGE_FILTERS:
            args = tuple(apply(arg) if isinstance(arg, str) else arg for arg in args)
        super().__init__(*args)


class ConfigurationError(HandrailError, ValueError):
    """A bad argument or configuration; raised before any side effect."""


class NotSupportedYetError(ConfigurationError):
    """A parameter was given whose feature is not built yet; it is never silently ignored."""

    def __init__(self, parameter: str) -> None:
        super().__init__(
            f"'{parameter}' is not supported yet by this version of handrail; "
            f"leave it unset (None) until the feature lands."
        )
        self.parameter = parameter


class SchemaGenerationError(ConfigurationError):
    """A JSON Schema could not be generated from a function's signature."""


class StateError(ConfigurationError):
    """An invalid state schema, or a State key that is not in the schema."""


class CalculationError(ConfigurationError):
    """The calculator refused an expression or could not evaluate it.

    Refused: names other than the allowed constants, calls outside the allowlist, attribute
    access, results too large, nesting too deep, text too long. Not evaluable: division by
    zero, a math domain error (``sqrt(-1)``).
    """


class SerializationError(ConfigurationError):
    """An object cannot be serialized to a dict, or a dict cannot be turned back into an object.

    Attributes:
        path: The field at fault inside the dict being read, as keys and list indexes
            (``("content", 0, "tool_call", "id")``), when the reader knows it; empty otherwise. An agent file's
            error uses it to name the field's line.
    """

    def __init__(self, *args: object, path: tuple[str | int, ...] = ()) -> None:
        super().__init__(*args)
        self.path: tuple[str | int, ...] = tuple(path)


class ModelFilesError(ConfigurationError):
    """A local model's files are missing, damaged (wrong size or sha256) or not a GGUF file.

    The message says what to install or remove to fix it.
    """


class ComponentError(ConfigurationError):
    """A bad component definition (no output types, a bad socket), or a bad pipeline connection.

    Raised when a class is decorated with ``@component``, when sockets are set on an instance, or when
    a pipeline is assembled; the message names the component and the socket.
    """


class ConfigurationTypeError(HandrailError, TypeError):
    """An argument of the wrong type; raised before any side effect."""


class RunError(HandrailError):
    """A failure while a run is under way."""


class ToolNotFoundException(RunError):
    """The model called a tool that does not exist (only raised when the invoker raises on failure).

    Attributes:
        tool_name: The name the model used.
        available: The names of the tools that do exist.
    """

    def __init__(self, tool_name: str, available: list[str]) -> None:
        listed = ", ".join(available) if available else "(none)"
        super().__init__(f"Tool '{tool_name}' not found. Available tools: {listed}")
        self.tool_name = tool_name
        self.available = available


class ToolInvocationError(RunError):
    """A tool raised, or the model's arguments for it were invalid (raise mode only).

    Attributes:
        tool_name: The tool that failed.
        tool_call_id: The id of the failed call, when known.
    """

    def __init__(self, message: str, tool_name: str, tool_call_id: str | None = None) -> None:
        super().__init__(message)
        self.tool_name = tool_name
        self.tool_call_id = tool_call_id


class ToolOutputMergeError(RunError):
    """A tool's outputs could not be merged into State through ``outputs_to_state``."""


class StringConversionError(RunError):
    """A tool's result could not be converted to text through ``outputs_to_string``."""


class ScriptExhaustedError(RunError):
    """A ScriptedChatGenerator was called more times than it has scripted replies."""


class GenerationError(RunError):
    """A chat model failed: a server was unreachable or answered with an error, or the embedded model failed.

    The embedded model fails when its runtime reports an error, or when its reply breaks the
    constraint it was generated under so that no message can be made of it.

    For a server, the message is one line naming the server's URL (and the HTTP status when
    there was one); for the embedded model, ``url`` and ``status_code`` are None.

    Attributes:
        url: The base URL of the server, when known.
        status_code: The HTTP status of the error response; None when no response came.
    """

    def __init__(self, message: str, *, url: str | None = None, status_code: int | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.status_code = status_code


class SnapshotError(ConfigurationError):
    """A snapshot file (or dict) is truncated, not valid JSON, malformed, or of an unknown schema version.

    The message names the file (or key) and what was wrong; nothing has run when it is raised.
    """


class SnapshotDriftError(SnapshotError):
    """The agent's definition changed since the snapshot was taken; the message holds a readable diff.

    Pass ``allow_drift=True`` to resume anyway.
    """


class DecisionConflictError(ConfigurationError):
    """A different decision is already recorded for this tool call (the same decision again is a no-op)."""


class SnapshotUnavailableError(RunError):
    """A snapshot cannot be resumed: another process is resuming it, it was already resumed, or its run finished.

    The message names the snapshot (and the snapshot it continued in, when there is one).
    """


class UnknownOutcomeError(RunError):
    """A call of a resumed run was found ``running``: the process died mid-call, so its outcome is unknown.

    Resume with ``unknown_outcome="retry"`` (run it again with the same ``ToolCallId``) or
    ``unknown_outcome="fail"`` (record an error result "outcome unknown" and continue).
    """

    def __init__(self, message: str, tool_name: str, tool_call_id: str) -> None:
        super().__init__(message)
        self.tool_name = tool_name
        self.tool_call_id = tool_call_id


class StoreError(RunError):
    """A store (chat messages, memories, snapshots) failed.

    Its database is unreachable, a row is corrupt, or its schema was written by a newer handrail. The message
    names the store and the key; nothing was half-written.
    """


class CorruptRecordError(StoreError):
    """A stored row cannot be read: not the JSON handrail wrote, not a message or snapshot, or of a newer format.

    Raised when the row is read; the store itself works, and the row is left as it is. The message names the
    store and the key. The CLI treats it like a corrupt snapshot file: bad input (exit status 2).
    """


class PipelineError(RunError):
    """A component of a pipeline failed while the pipeline ran; the original exception is chained.

    Attributes:
        component_name: The name of the failing component in the pipeline, when known.
    """

    def __init__(self, message: str, component_name: str | None = None) -> None:
        super().__init__(message)
        self.component_name = component_name


class PipelineMaxComponentRuns(PipelineError):
    """A pipeline component ran more than ``max_runs_per_component`` times (a cycle that does not end)."""


class NoRouteSelectedException(RunError):
    """No route of a ConditionalRouter had a condition that rendered true; the message lists the routes."""
