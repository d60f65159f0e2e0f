"""Every span, attribute and metric name handrail's tracing uses, in one place (TR-13).

The ``gen_ai.*`` names follow the OpenTelemetry GenAI semantic conventions as of semantic-conventions-genai v0.1.0
(which depends on semantic-conventions v1.45.0; the Python package ``opentelemetry-semantic-conventions 0.66b2``
marks its own gen_ai constants deprecated, so handrail keeps its own). Every ``gen_ai.*`` name is Development
stability there. The ``handrail.*`` names are handrail's own: the conventions have nothing for human approval,
hooks, persistence or pauses. ``tests/tracing/test_conventions.py`` pins them all.
"""

from __future__ import annotations

# -- spans and operations (GenAI v0.1.0, "gen-ai-spans.md" and "gen-ai-agent-spans.md")
OP_INVOKE_AGENT = "invoke_agent"  # gen_ai.operation.name of the agent span; span name "invoke_agent {agent}"
OP_CHAT = "chat"  # gen_ai.operation.name of a model call; span name "chat {gen_ai.request.model}"
OP_EXECUTE_TOOL = "execute_tool"  # gen_ai.operation.name of a tool call; span name "execute_tool {tool}"

# -- handrail's own spans (no convention covers them)
SPAN_AWAIT_APPROVAL = "handrail.await_approval"  # a person's decision awaited in-process: "… {tool}"
SPAN_HOOK = "handrail.hook"  # the hooks of one hook point: "handrail.hook {point}"
SPAN_PERSIST = "handrail.persist"  # a durable write of the run's record (the execution ledger)
SPAN_LOAD_STORES = "handrail.load_stores"  # chat history and memories loaded into a fresh run
SPAN_FINISH = "handrail.finish"  # the record marked done, chat / memory stores written
SPAN_PAUSE = "handrail.pause"  # the pause snapshot written
SPAN_APPROVAL_DECIDE = "handrail.approval.decide"  # a decision given to the approval service

# -- GenAI attributes (v0.1.0 "gen-ai-spans.md", "registry/attributes/gen-ai.md")
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"  # v1.37+: replaces gen_ai.system
GEN_AI_AGENT_NAME = "gen_ai.agent.name"
GEN_AI_AGENT_DESCRIPTION = "gen_ai.agent.description"
GEN_AI_CONVERSATION_ID = "gen_ai.conversation.id"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_REQUEST_TEMPERATURE = "gen_ai.request.temperature"
GEN_AI_REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
GEN_AI_REQUEST_STREAM = "gen_ai.request.stream"  # v0.1.0
GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
GEN_AI_RESPONSE_ID = "gen_ai.response.id"
GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK = "gen_ai.response.time_to_first_chunk"  # v0.1.0, seconds
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
GEN_AI_USAGE_REASONING_OUTPUT_TOKENS = "gen_ai.usage.reasoning.output_tokens"
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
GEN_AI_TOOL_DESCRIPTION = "gen_ai.tool.description"
GEN_AI_TOOL_TYPE = "gen_ai.tool.type"  # "function" | "extension" | "datastore"
# Content: opt-in, JSON strings following the GenAI input/output message schemas.
GEN_AI_SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
GEN_AI_INPUT_MESSAGES = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages"
GEN_AI_TOOL_DEFINITIONS = "gen_ai.tool.definitions"
GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT = "gen_ai.tool.call.result"

# -- general attributes (semantic-conventions v1.45.0 "registry/attributes/error.md", "server.md")
ERROR_TYPE = "error.type"
ERROR_TYPE_OTHER = "_OTHER"  # the conventions' fallback value
ERROR_TYPE_TOOL_ERROR = "tool_error"  # an MCP result with isError (GenAI v0.1.0 "mcp.md")
# The span event of an exception (semantic conventions "exceptions/exceptions-spans.md"): its name and attributes
EVENT_EXCEPTION = "exception"
EXCEPTION_TYPE = "exception.type"
EXCEPTION_MESSAGE = "exception.message"
EXCEPTION_STACKTRACE = "exception.stacktrace"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"

# -- handrail's own attributes
HANDRAIL_RUN_ID = "handrail.run.id"
HANDRAIL_RUN_STATUS = "handrail.run.status"  # done | paused | failed | closed
HANDRAIL_RUN_EXIT_REASON = "handrail.run.exit_reason"
HANDRAIL_RUN_STEPS = "handrail.run.steps"
HANDRAIL_RUN_RESUMED_FROM = "handrail.run.resumed_from"  # the snapshot id a resumed run starts from
HANDRAIL_SNAPSHOT_ID = "handrail.snapshot.id"  # the pause snapshot's id
HANDRAIL_PENDING_CALL_IDS = "handrail.pending.call_ids"  # the calls held for a decision at a pause
HANDRAIL_STEP = "handrail.step"  # the model call's step number (1-based)
HANDRAIL_USAGE_INPUT_TOKENS = "handrail.usage.input_tokens"  # run totals: not gen_ai.usage.* (no double count)
HANDRAIL_USAGE_OUTPUT_TOKENS = "handrail.usage.output_tokens"
HANDRAIL_HOOK_POINT = "handrail.hook.point"
HANDRAIL_APPROVAL_REQUIRED = "handrail.approval.required"
HANDRAIL_APPROVAL_DECISION = "handrail.approval.decision"  # approved | rejected | edited | expired | auto
HANDRAIL_APPROVAL_DECIDED_BY = "handrail.approval.decided_by"
HANDRAIL_APPROVAL_WAIT_MS = "handrail.approval.wait_ms"
HANDRAIL_APPROVAL_ID = "handrail.approval.id"  # the approval record's id (ap_…), on handrail.approval.decide
HANDRAIL_APPROVAL_STATUS = "handrail.approval.status"  # the record's status after a decision (a quorum vote: pending)
HANDRAIL_APPROVAL_REPLAYED = "handrail.approval.replayed"  # true: an identical retry answered with the stored result
HANDRAIL_APPROVAL_ARGS_DIGEST = "handrail.approval.args_digest"  # sha256 of the canonical JSON arguments
HANDRAIL_TOOL_EXECUTED = "handrail.tool.executed"  # false for a call that was refused and never ran

# -- what a paused run carries in its snapshot for the run that resumes it (RunInfo.carry / carried_in)
CARRY_TRACE = "trace"  # {"traceparent": "00-…", "tracestate": "…"}: W3C trace context of the paused run's span

# -- metrics (GenAI v0.1.0 "gen-ai-metrics.md"; handrail.* are handrail's own)
METRIC_OPERATION_DURATION = "gen_ai.client.operation.duration"  # histogram, s
METRIC_TOKEN_USAGE = "gen_ai.client.token.usage"  # histogram, {token}, attribute gen_ai.token.type
METRIC_EXECUTE_TOOL_DURATION = "gen_ai.execute_tool.duration"  # histogram, s
METRIC_INVOKE_AGENT_DURATION = "gen_ai.invoke_agent.duration"  # histogram, s
GEN_AI_TOKEN_TYPE = "gen_ai.token.type"  # "input" | "output"
METRIC_APPROVALS_PENDING = "handrail.approvals.pending"  # up-down counter, {approval}
METRIC_APPROVAL_WAIT = "handrail.approval.wait"  # histogram, s
METRIC_APPROVAL_DECISIONS = "handrail.approval.decisions"  # counter, {decision}, by handrail.approval.decision
METRIC_TOOL_EXECUTIONS = "handrail.tool.executions"  # counter, {execution}, by handrail.tool.outcome
HANDRAIL_TOOL_OUTCOME = "handrail.tool.outcome"  # ok | error | refused | unknown (outcome unknown: a lost result)
# Bucket advice of the GenAI metrics (seconds; tokens).
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)

SCOPE = "handrail"  # the instrumentation scope of every tracer and meter (with the package version)
