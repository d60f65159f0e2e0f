"""The conventions module pinned: every span, attribute and metric name handrail traces with (TR-13).

A change here is a change of what dashboards and alerts read: make it on purpose, with the convention it follows.
"""

from __future__ import annotations

from handrail.tracing import _conventions

PINNED = {
    "OP_INVOKE_AGENT": "invoke_agent",
    "OP_CHAT": "chat",
    "OP_EXECUTE_TOOL": "execute_tool",
    "SPAN_AWAIT_APPROVAL": "handrail.await_approval",
    "SPAN_HOOK": "handrail.hook",
    "SPAN_PERSIST": "handrail.persist",
    "SPAN_LOAD_STORES": "handrail.load_stores",
    "SPAN_FINISH": "handrail.finish",
    "SPAN_PAUSE": "handrail.pause",
    "SPAN_APPROVAL_DECIDE": "handrail.approval.decide",
    "GEN_AI_OPERATION_NAME": "gen_ai.operation.name",
    "GEN_AI_PROVIDER_NAME": "gen_ai.provider.name",
    "GEN_AI_AGENT_NAME": "gen_ai.agent.name",
    "GEN_AI_AGENT_DESCRIPTION": "gen_ai.agent.description",
    "GEN_AI_CONVERSATION_ID": "gen_ai.conversation.id",
    "GEN_AI_REQUEST_MODEL": "gen_ai.request.model",
    "GEN_AI_REQUEST_TEMPERATURE": "gen_ai.request.temperature",
    "GEN_AI_REQUEST_MAX_TOKENS": "gen_ai.request.max_tokens",
    "GEN_AI_REQUEST_STREAM": "gen_ai.request.stream",
    "GEN_AI_RESPONSE_MODEL": "gen_ai.response.model",
    "GEN_AI_RESPONSE_ID": "gen_ai.response.id",
    "GEN_AI_RESPONSE_FINISH_REASONS": "gen_ai.response.finish_reasons",
    "GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK": "gen_ai.response.time_to_first_chunk",
    "GEN_AI_USAGE_INPUT_TOKENS": "gen_ai.usage.input_tokens",
    "GEN_AI_USAGE_OUTPUT_TOKENS": "gen_ai.usage.output_tokens",
    "GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS": "gen_ai.usage.cache_read.input_tokens",
    "GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS": "gen_ai.usage.cache_creation.input_tokens",
    "GEN_AI_USAGE_REASONING_OUTPUT_TOKENS": "gen_ai.usage.reasoning.output_tokens",
    "GEN_AI_TOOL_NAME": "gen_ai.tool.name",
    "GEN_AI_TOOL_CALL_ID": "gen_ai.tool.call.id",
    "GEN_AI_TOOL_DESCRIPTION": "gen_ai.tool.description",
    "GEN_AI_TOOL_TYPE": "gen_ai.tool.type",
    "GEN_AI_SYSTEM_INSTRUCTIONS": "gen_ai.system_instructions",
    "GEN_AI_INPUT_MESSAGES": "gen_ai.input.messages",
    "GEN_AI_OUTPUT_MESSAGES": "gen_ai.output.messages",
    "GEN_AI_TOOL_DEFINITIONS": "gen_ai.tool.definitions",
    "GEN_AI_TOOL_CALL_ARGUMENTS": "gen_ai.tool.call.arguments",
    "GEN_AI_TOOL_CALL_RESULT": "gen_ai.tool.call.result",
    "ERROR_TYPE": "error.type",
    "ERROR_TYPE_OTHER": "_OTHER",
    "ERROR_TYPE_TOOL_ERROR": "tool_error",
    "EVENT_EXCEPTION": "exception",
    "EXCEPTION_TYPE": "exception.type",
    "EXCEPTION_MESSAGE": "exception.message",
    "EXCEPTION_STACKTRACE": "exception.stacktrace",
    "SERVER_ADDRESS": "server.address",
    "SERVER_PORT": "server.port",
    "HANDRAIL_RUN_ID": "handrail.run.id",
    "HANDRAIL_RUN_STATUS": "handrail.run.status",
    "HANDRAIL_RUN_EXIT_REASON": "handrail.run.exit_reason",
    "HANDRAIL_RUN_STEPS": "handrail.run.steps",
    "HANDRAIL_RUN_RESUMED_FROM": "handrail.run.resumed_from",
    "HANDRAIL_SNAPSHOT_ID": "handrail.snapshot.id",
    "HANDRAIL_PENDING_CALL_IDS": "handrail.pending.call_ids",
    "HANDRAIL_STEP": "handrail.step",
    "HANDRAIL_USAGE_INPUT_TOKENS": "handrail.usage.input_tokens",
    "HANDRAIL_USAGE_OUTPUT_TOKENS": "handrail.usage.output_tokens",
    "HANDRAIL_HOOK_POINT": "handrail.hook.point",
    "HANDRAIL_APPROVAL_REQUIRED": "handrail.approval.required",
    "HANDRAIL_APPROVAL_DECISION": "handrail.approval.decision",
    "HANDRAIL_APPROVAL_DECIDED_BY": "handrail.approval.decided_by",
    "HANDRAIL_APPROVAL_WAIT_MS": "handrail.approval.wait_ms",
    "HANDRAIL_APPROVAL_ID": "handrail.approval.id",
    "HANDRAIL_APPROVAL_STATUS": "handrail.approval.status",
    "HANDRAIL_APPROVAL_REPLAYED": "handrail.approval.replayed",
    "HANDRAIL_APPROVAL_ARGS_DIGEST": "handrail.approval.args_digest",
    "HANDRAIL_TOOL_EXECUTED": "handrail.tool.executed",
    "CARRY_TRACE": "trace",
    "METRIC_OPERATION_DURATION": "gen_ai.client.operation.duration",
    "METRIC_TOKEN_USAGE": "gen_ai.client.token.usage",
    "METRIC_EXECUTE_TOOL_DURATION": "gen_ai.execute_tool.duration",
    "METRIC_INVOKE_AGENT_DURATION": "gen_ai.invoke_agent.duration",
    "GEN_AI_TOKEN_TYPE": "gen_ai.token.type",
    "METRIC_APPROVALS_PENDING": "handrail.approvals.pending",
    "METRIC_APPROVAL_WAIT": "handrail.approval.wait",
    "METRIC_APPROVAL_DECISIONS": "handrail.approval.decisions",
    "METRIC_TOOL_EXECUTIONS": "handrail.tool.executions",
    "HANDRAIL_TOOL_OUTCOME": "handrail.tool.outcome",
    "DURATION_BUCKETS": (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92),
    "TOKEN_BUCKETS": (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864),
    "SCOPE": "handrail",
}


def test_every_name_is_pinned_and_none_is_left_out() -> None:
    own = {k: v for k, v in vars(_conventions).items() if k.isupper()}
    assert own == PINNED


def test_gen_ai_names_are_in_the_gen_ai_namespace_and_handrail_names_in_handrail() -> None:
    for key, value in PINNED.items():
        if key.startswith("GEN_AI_"):
            assert isinstance(value, str) and value.startswith("gen_ai."), key
        if key.startswith("HANDRAIL_") or key.startswith("SPAN_"):
            assert isinstance(value, str) and value.startswith("handrail."), key


def test_names_are_unique() -> None:
    names = [v for k, v in PINNED.items() if isinstance(v, str) and k not in ("SCOPE", "CARRY_TRACE")]
    assert len(names) == len(set(names))
