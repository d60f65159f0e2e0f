"""The exception tree of handrail.

Every exception handrail raises on purpose derives from :class:`HandrailError`.
Misuse errors (raised before any side effect) also derive from ``ValueError`` or
``TypeError`` so code written against Haystack's exceptions keeps working.

Each class carries the exit status of the ``handrail`` command in ``exit_code`` (the number after the name
below; the command reads it, see ``handrail --help``). A name in parentheses is a further base: ``ValueError`` and
``TypeError`` for misuse errors, and for a class that moved to its branch the base it had before, kept so that
every ``except`` clause written before the move still catches it (``except ConfigurationError`` still catches
SnapshotError, DecisionConflictError and CalculationError; ``except RunError`` still catches StoreError and
SnapshotUnavailableError). The one new catch: ``except RunError`` now also catches CalculationError (the model's
expression, refused while a run is under way). A test keeps this drawing equal to the classes::

    HandrailError                                  1  root of every exception handrail raises on purpose
    ├── ConfigurationError (ValueError)            2  bad argument or configuration, raised before anything runs
    │   ├── NotSupportedYetError                   2  a parameter whose feature is not built yet was given
    │   ├── SchemaGenerationError                  2  a JSON Schema could not be built from a function signature
    │   ├── StateError                             2  an unknown State key or an invalid state schema
    │   ├── SerializationError                     2  an object cannot be written to (or read from) a dict
    │   ├── ModelFilesError                        2  a local model's files are missing, damaged or not GGUF
    │   ├── ApprovalDecisionError                  2  a decision the approval refuses: not allowed, a bad edit
    │   │   └── IdempotencyKeyReusedError          2  an Idempotency-Key sent again with another decision
    │   ├── PermissionDeniedError                  2  the principal may not do this (HTTP 403): role, tool, initiator
    │   ├── ComponentError                         2  a bad component definition, or a bad pipeline connection
    │   │   ├── InvalidMappingTypeError            2  a SuperComponent mapping of the wrong type, or a type conflict
    │   │   └── InvalidMappingValueError           2  a SuperComponent mapping naming an unknown component or socket
    │   ├── UnknownAgentError                      2  the service has no agent of that name, or none for a snapshot
    │   ├── RunExistsError                         2  a Temporal run id was used before: a run id is used once
    │   ├── RunEndedError                          2  a decision for a Temporal run that has ended
    │   ├── DecisionRefused                        2  a Temporal run refused a decision (its validator's reason)
    │   ├── RecordingError                         2  a run recording cannot be read: names the file and the line
    │   └── SpecError                              2  a bad agent file: names file, line and field (handrail.specs)
    ├── ConfigurationTypeError (TypeError, ValueError)
    │                                              1  an argument of the wrong type
    ├── PersistenceError                           1  a snapshot, a recorded decision or a store cannot be used
    │   ├── SnapshotError (ConfigurationError)     2  a snapshot is truncated, invalid or of an unknown schema
    │   │   └── SnapshotDriftError                 2  resuming against an agent whose definition changed (a diff)
    │   ├── DecisionConflictError (ConfigurationError)
    │   │   │                                      2  a different decision is already recorded for a paused call
    │   │   └── ApprovalConflictError              2  an approval changed since it was read (a stale version)
    │   │       └── ApprovalClosedError            2  an approval is decided, expired or cancelled: no more decisions
    │   │           └── ApprovalExpiredError       2  an approval expired before it was decided (HTTP 410)
    │   ├── ApprovalNotFoundError (ConfigurationError)
    │   │                                          2  no approval with this id in the store
    │   ├── RunNotFoundError (ConfigurationError)  2  no service run with this id in the store
    │   ├── RunConflictError                       1  a service run changed since it was read, or has ended
    │   ├── SnapshotUnavailableError (RunError)    5  a snapshot is held by another run right now: try again later
    │   │   ├── SnapshotFinishedError              2  the snapshot's run finished: it is not run again
    │   │   ├── SnapshotResumedError               2  the snapshot was resumed already: its run went on elsewhere
    │   │   └── SnapshotInterruptedError           2  decisions for a snapshot whose run stopped while 'running'
    │   └── StoreError (RunError)                  1  a store is unreachable, holds a corrupt row, or is newer
    │       └── CorruptRecordError                 2  a stored row (message, memory, snapshot) cannot be read
    └── RunError                                   1  a failure while a run is under way
        ├── TemporalUnavailableError (ConnectionError)
        │                                          1  the Temporal server did not answer (address, TLS, network)
        ├── MCPConnectionError (ConnectionError)   1  an MCP server cannot be reached, or its connection was lost
        ├── MCPTimeoutError (TimeoutError)         1  an MCP request took longer than its timeout (asked to cancel)
        ├── MCPProtocolError                       1  an MCP server answered with a JSON-RPC error or a bad result
        ├── MCPToolError                           1  an MCP server's tool reported an error, or the server removed it
        ├── ToolNotFoundException                  1  the model called a tool that does not exist (raise mode)
        ├── ToolInvocationError                    1  a tool raised, or its arguments were invalid (raise mode)
        ├── ToolOutputMergeError                   1  a tool's outputs could not be merged into State
        ├── StringConversionError                  1  a tool's result could not be turned into text
        ├── CalculationError (ConfigurationError)  2  the calculator refused or could not evaluate an expression
        ├── ScriptExhaustedError                   1  a ScriptedChatGenerator was called more often than scripted
        ├── GenerationError                        1  a chat model (server or embedded) gave no usable reply
        ├── UnknownOutcomeError                    2  a resumed call was found running: its outcome is unknown
        ├── PipelineError                          1  a pipeline component failed (names the component)
        │   └── PipelineMaxComponentRuns           1  a pipeline component ran more often than allowed
        ├── ReplayDivergedError                    1  a replayed run did not do what its recording did (a diff)
        ├── NoRouteSelectedException               1  no route of a ConditionalRouter matched
        └── RouteConditionException                1  a route's condition failed to render (components.routers)

SnapshotUnavailableError exits with 5 ("try again later") while another process holds the snapshot. A snapshot
that will never be available again is not "later": its run finished (SnapshotFinishedError), it was resumed
already (SnapshotResumedError), or decisions were given for one whose run stopped mid-way (status 'running' with
no process holding its claim: SnapshotInterruptedError). Those exit with 2, with the wording the command prints,
and ``except SnapshotUnavailableError`` still catches them.

Control-flow signals (a breakpoint hit, an approval needed) are not errors and do
not derive from :class:`HandrailError`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

__all__ = [
    "ApprovalClosedError",
    "ApprovalConflictError",
    "ApprovalDecisionError",
    "ApprovalExpiredError",
    "ApprovalNotFoundError",
    "PermissionDeniedError",
    "RunConflictError",
    "RunNotFoundError",
    "RunEndedError",
    "RunExistsError",
    "DecisionRefused",
    "TemporalUnavailableError",
    "CalculationError",
    "ComponentError",
    "ConfigurationError",
    "ConfigurationTypeError",
    "CorruptRecordError",
    "DecisionConflictError",
    "GenerationError",
    "HandrailError",
    "IdempotencyKeyReusedError",
    "InvalidMappingTypeError",
    "InvalidMappingValueError",
    "MCPConnectionError",
    "MCPProtocolError",
    "MCPTimeoutError",
    "MCPToolError",
    "ModelFilesError",
    "NoRouteSelectedException",
    "NotSupportedYetError",
    "PersistenceError",
    "PipelineError",
    "PipelineMaxComponentRuns",
    "RecordingError",
    "ReplayDivergedError",
    "RunError",
    "ScriptExhaustedError",
    "SchemaGenerationError",
    "SerializationError",
    "SnapshotDriftError",
    "SnapshotError",
    "SnapshotFinishedError",
    "SnapshotInterruptedError",
    "SnapshotResumedError",
    "SnapshotUnavailableError",
    "StateError",
    "StoreError",
    "StringConversionError",
    "ToolInvocationError",
    "ToolNotFoundException",
    "ToolOutputMergeError",
    "UnknownAgentError",
    "UnknownOutcomeError",
]


MESSAGE_FILTERS: list[Callable[[str], str]] = []
"""Applied to the text arguments of every :class:`HandrailError` when it is built: ``handrail.core.secret``
adds the masking of known secret values, so no message holds a key a server or a tool echoed."""


class HandrailError(Exception):
    """Root of every exception handrail raises on purpose.

    Attributes:
        exit_code: The exit status of the ``handrail`` command when it stops on this error: 1 (a failure), 2 (bad
            usage or input) or 5 (the snapshot is in use). Each class states its own; the command reads it.
    """

    exit_code: ClassVar[int] = 1

    def __init__(self, *args: object) -> None:
        for apply in MESSAGE_FILTERS:
            args = tuple(apply(arg) if isinstance(arg, str) else arg for arg in args)
        super().__init__(*args)


class ConfigurationError(HandrailError, ValueError):
    """A bad argument or configuration; raised before any side effect."""

    exit_code: ClassVar[int] = 2


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


class SerializationError(ConfigurationError):
    """An object cannot be serialized to a dict, or a dict cannot be turned back into an object.

    Attributes:
        path: The field at fault inside the dict being read, as keys and list indexes
            (``("content", 0, "tool_call", "id")``), when the reader knows it; empty otherwise. An agent file's
            error uses it to name the field's line.
        field: The field of the object being built that the error was read at, as the message starts with it
            (``tools[0].function``), when a ``from_dict`` named it; None otherwise.
    """

    def __init__(self, *args: object, path: tuple[str | int, ...] = (), field: str | None = None) -> None:
        super().__init__(*args)
        self.path: tuple[str | int, ...] = tuple(path)
        self.field: str | None = field


class ModelFilesError(ConfigurationError):
    """A local model's files are missing, damaged (wrong size or sha256) or not a GGUF file.

    The message says what to install or remove to fix it.
    """


class ComponentError(ConfigurationError):
    """A bad component definition (no output types, a bad socket), or a bad pipeline connection.

    Raised when a class is decorated with ``@component``, when sockets are set on an instance, or when
    a pipeline is assembled; the message names the component and the socket.
    """


class InvalidMappingTypeError(ComponentError):
    """A SuperComponent's ``input_mapping``/``output_mapping`` is of the wrong type, or maps conflicting types.

    Importable from :mod:`handrail.core.super_component` too, where Haystack users look for it.
    """


class InvalidMappingValueError(ComponentError):
    """A SuperComponent mapping names a component or socket the pipeline lacks, a malformed path, or a name twice.

    Importable from :mod:`handrail.core.super_component` too, where Haystack users look for it.
    """


class UnknownAgentError(ConfigurationError):
    """The service has no agent of that name, or none it may use for a snapshot (``POST /api/v1/runs``: 404).

    Raised by :class:`~handrail.server.AgentRegistry`: no factory and no agent file of the name, or an agent file
    a snapshot records that is outside the service's agents directory or gone. A resumer leaves such a run as it
    is (another process may know its agent) instead of failing it.
    """

    exit_code: ClassVar[int] = 2


class ConfigurationTypeError(HandrailError, TypeError, ValueError):
    """An argument of the wrong type; raised before any side effect.

    It is a ``TypeError``, and a ``ValueError`` too: where Haystack raises ``ValueError`` for the same mistake (a
    route that is not a dict, an async callback in a sync run, ...), ``except ValueError`` written for Haystack
    still catches it.
    """


class RunError(HandrailError):
    """A failure while a run is under way."""

    exit_code: ClassVar[int] = 1


class PersistenceError(HandrailError):
    """A snapshot, a recorded decision or a store cannot be used: unreadable, conflicting, in use, unreachable.

    Catch it to handle every failure of what a run keeps (its snapshots and ledger, chat messages, memories).
    """

    exit_code: ClassVar[int] = 1


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


class CalculationError(RunError, ConfigurationError):
    """The calculator refused an expression or could not evaluate it.

    Refused: names other than the allowed constants, calls outside the allowlist, attribute
    access, results too large, nesting too deep, text too long. Not evaluable: division by
    zero, a math domain error (``sqrt(-1)``). The model chose the expression while a run was under way, so it is
    a RunError; it is still a ConfigurationError (and a ValueError), as before it moved.
    """

    exit_code: ClassVar[int] = 2


class ScriptExhaustedError(RunError):
    """A ScriptedChatGenerator was called more times than it has scripted replies."""


class RecordingError(ConfigurationError):
    """A run recording (JSON Lines, :mod:`handrail.tracing.recording`) cannot be read, or is not a recording.

    The message names the file and the line (a line that is not JSON, of an unknown kind, a missing header, another
    format version).
    """

    exit_code: ClassVar[int] = 2


class ReplayDivergedError(RunError):
    """A replayed run did not do what its recording did: a different model input, tool call or decision point.

    Attributes:
        divergence: The :class:`~handrail.testing.ReplayDivergence` report (where, what kind, a unified diff).
    """

    def __init__(self, message: str, divergence: object = None) -> None:
        super().__init__(message)
        self.divergence = divergence


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


class SnapshotError(PersistenceError, ConfigurationError):
    """A snapshot file (or dict) is truncated, not valid JSON, malformed, or of an unknown schema version.

    The message names the file (or key) and what was wrong; nothing has run when it is raised. Still a
    ConfigurationError (and a ValueError), as before it moved to the persistence branch.
    """

    exit_code: ClassVar[int] = 2


class SnapshotDriftError(SnapshotError):
    """The agent's definition changed since the snapshot was taken; the message holds a readable diff.

    Pass ``allow_drift=True`` to resume anyway.
    """


class DecisionConflictError(PersistenceError, ConfigurationError):
    """A different decision is already recorded for this tool call (the same decision again is a no-op).

    Still a ConfigurationError (and a ValueError), as before it moved to the persistence branch.
    """

    exit_code: ClassVar[int] = 2


class ApprovalConflictError(DecisionConflictError):
    """A compare-and-set on an approval's version was refused: it changed since it was read.

    The message names the current status, version, decider and time. The approval service maps it to HTTP 412
    (this class) or, for :class:`ApprovalClosedError`, to 409 / 410.

    Attributes:
        approval_id: The approval.
        current: The approval as it is now in the store (an :class:`~handrail.dataclasses.approval.Approval`).
        expected_version: The version the caller expected (None when it gave none).
    """

    def __init__(self, message: str, *, approval_id: str, current: object, expected_version: int | None) -> None:
        super().__init__(message)
        self.approval_id = approval_id
        self.current = current
        self.expected_version = expected_version


class ApprovalClosedError(ApprovalConflictError):
    """The approval's status is terminal (decided, expired or cancelled): it takes no decision; see ``current``."""


class ApprovalExpiredError(ApprovalClosedError):
    """The approval expired (``expires_at`` came) before it was decided: no decision is taken (HTTP 410)."""


class ApprovalDecisionError(ConfigurationError):
    """A decision the approval refuses, before anything is written (HTTP 422).

    The decision is not in its ``allowed_decisions``, an edit renames the tool, or the edited arguments fail the
    tool's argument schema (a key the tool does not declare, a wrong type, a missing required key).

    Attributes:
        approval_id: The approval.
        errors: One ``{"pointer": JSON Pointer into the arguments ("" for the whole), "message": str}`` per
            problem (empty when the problem is not with the arguments).
    """

    def __init__(self, message: str, *, approval_id: str, errors: tuple[dict[str, str], ...] = ()) -> None:
        super().__init__(message)
        self.approval_id = approval_id
        self.errors = errors


class IdempotencyKeyReusedError(ApprovalDecisionError):
    """The ``Idempotency-Key`` of the decision already recorded came with another decision, feedback or edit."""


class ApprovalNotFoundError(PersistenceError, ConfigurationError):
    """No approval with this id in the store (the message names the store and the id)."""

    exit_code: ClassVar[int] = 2


class RunNotFoundError(PersistenceError, ConfigurationError):
    """No run with this id: a service run in the store (HTTP 404), or a run on Temporal (the message names it)."""

    exit_code: ClassVar[int] = 2


class RunConflictError(PersistenceError):
    """A compare-and-set on a service run's version was refused: it changed since it was read, or it has ended.

    The store's ``update_run`` raises it for a stale ``expected_version`` and for a run that is ``finished`` or
    ``failed`` (terminal: it takes no more changes); the message says which. Not a ConfigurationError: the
    caller did nothing wrong, another process got there first (read the run again).

    Attributes:
        run_id: The run.
        current: The run record as it is now in the store (a :class:`~handrail.dataclasses.service.RunRecord`).
        expected_version: The version the caller expected.
    """

    def __init__(self, message: str, *, run_id: str, current: object, expected_version: int) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.current = current
        self.expected_version = expected_version


class PermissionDeniedError(ConfigurationError):
    """The principal may not do this (HTTP 403).

    A viewer deciding, an approver outside its tool patterns, a run's initiator approving it where the policy
    forbids that, a non-admin exporting the audit log or managing tokens.

    Attributes:
        principal: The principal's name.
    """

    def __init__(self, message: str, *, principal: str) -> None:
        super().__init__(message)
        self.principal = principal


class SnapshotUnavailableError(PersistenceError, RunError):
    """A snapshot cannot be used now: another run holds it (exit code 5, try again later), or, as a subclass, never.

    The message names the snapshot. Still a RunError, as before it moved to the persistence branch. The
    subclasses are the cases where waiting does not help (exit code 2): :class:`SnapshotFinishedError`,
    :class:`SnapshotResumedError`, :class:`SnapshotInterruptedError`.
    """

    exit_code: ClassVar[int] = 5


class SnapshotFinishedError(SnapshotUnavailableError):
    """The snapshot belongs to a run that finished: it is neither resumed nor decided again (names the exit reason)."""

    exit_code: ClassVar[int] = 2


class SnapshotResumedError(SnapshotUnavailableError):
    """The snapshot was resumed already: its run went on (the message names the snapshot it continued in)."""

    exit_code: ClassVar[int] = 2


class SnapshotInterruptedError(SnapshotUnavailableError):
    """Decisions for a snapshot whose run stopped mid-way: it says 'running' while no process holds its claim.

    It takes no more decisions; resume it (calls still without a decision pause the resumed run again, under a
    new snapshot id, where they are decided).
    """

    exit_code: ClassVar[int] = 2


class UnknownOutcomeError(RunError):
    """A call of a resumed run was found ``running``: the process died mid-call, so its outcome is unknown.

    Resume with ``unknown_outcome="retry"`` (run it again with the same ``ToolCallId``) or
    ``unknown_outcome="fail"`` (record an error result "outcome unknown" and continue). Exit code 2: the
    command needs ``--unknown-outcome``.
    """

    exit_code: ClassVar[int] = 2

    def __init__(self, message: str, tool_name: str, tool_call_id: str) -> None:
        super().__init__(message)
        self.tool_name = tool_name
        self.tool_call_id = tool_call_id


class StoreError(PersistenceError, RunError):
    """A store (chat messages, memories, snapshots) failed.

    Its database is unreachable, a row is corrupt, or its schema was written by a newer handrail. The message
    names the store and the key; nothing was half-written. Still a RunError, as before it moved to the
    persistence branch.
    """


class CorruptRecordError(StoreError):
    """A stored row cannot be read: not the JSON handrail wrote, not a message or snapshot, or of a newer format.

    Raised when the row is read; the store itself works, and the row is left as it is. The message names the
    store and the key. The CLI treats it like a corrupt snapshot file: bad input (exit status 2).
    """

    exit_code: ClassVar[int] = 2


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


class RunExistsError(ConfigurationError):
    """A Temporal run with this id was started before (running or closed): a run id is used once."""

    exit_code: ClassVar[int] = 2


class RunEndedError(ConfigurationError):
    """A decision for a Temporal run that has ended (answered, failed or terminated): nothing waits any more."""

    exit_code: ClassVar[int] = 2


class DecisionRefused(ConfigurationError):
    """A Temporal run refused a decision; nothing entered the run's history.

    An unknown call or question, a decision its policy does not allow, an invalid edit, or one that differs from the
    decision already taken (the message gives the run's reason).
    """

    exit_code: ClassVar[int] = 2


class TemporalUnavailableError(RunError, ConnectionError):
    """The Temporal server could not be reached (its address, TLS settings or the network)."""


class MCPConnectionError(RunError, ConnectionError):
    """An MCP server could not be connected to, or its connection was lost (handrail.tools.mcp).

    The message names the server and the cause: the connect failure (and the timeout, when it was one), a
    connection lost before or during a request, or the reconnects used up ("gave up after 3 reconnects; last
    error: ..."). A tool call whose connection was lost is never sent again: its outcome is unknown.

    Attributes:
        server: The server's label (its ``name``, the command's basename, or the URL's host:port).
    """

    def __init__(self, message: str, *, server: str) -> None:
        super().__init__(message)
        self.server = server


class MCPTimeoutError(RunError, TimeoutError):
    """An MCP request took longer than its timeout; the server was asked to cancel it (``notifications/cancelled``).

    The connection stays usable: the next request goes to the same server.

    Attributes:
        server: The server's label.
        tool: The tool whose call timed out; None for a request that is not a tool call (listing the tools).
        timeout: The timeout, in seconds.
    """

    def __init__(self, message: str, *, server: str, tool: str | None, timeout: float) -> None:
        super().__init__(message)
        self.server = server
        self.tool = tool
        self.timeout = timeout


class MCPProtocolError(RunError):
    """An MCP server answered a request with a JSON-RPC error, or with a result the protocol does not allow.

    The message names the server and holds the server's own message. A tool that failed is not this error: its
    failure comes back as a result with ``is_error`` set.

    Attributes:
        server: The server's label.
        code: The JSON-RPC error code (``-32601`` method not found, ...); None for a result that broke the
            protocol (structured content that does not match the tool's output schema, a malformed result).
    """

    def __init__(self, message: str, *, server: str, code: int | None) -> None:
        super().__init__(message)
        self.server = server
        self.code = code


class MCPToolError(RunError):
    """An MCP server's tool reported an error (a result marked ``is_error``), or the server no longer has the tool.

    Raised inside the tool's call, so the tool step turns it into an error result the model reads (the server's
    text is in the message).

    Attributes:
        server: The server's label.
        tool: The tool's name on the server.
    """

    def __init__(self, message: str, *, server: str, tool: str) -> None:
        super().__init__(message)
        self.server = server
        self.tool = tool
