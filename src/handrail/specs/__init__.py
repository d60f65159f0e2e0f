"""Agent definition files (YAML) and their JSON Schema."""

from handrail.specs.agent_spec import (
    AgentSpec,
    GeneratorSpec,
    MCPServerEntry,
    RejectingUI,
    SpecError,
    ToolEntry,
    agent_spec_json_schema,
    build_agent,
    build_generator,
    check_agent_spec,
    load_agent_spec,
    needs_a_person,
)

__all__ = [
    "AgentSpec",
    "GeneratorSpec",
    "MCPServerEntry",
    "RejectingUI",
    "SpecError",
    "ToolEntry",
    "agent_spec_json_schema",
    "build_agent",
    "build_generator",
    "check_agent_spec",
    "load_agent_spec",
    "needs_a_person",
]
