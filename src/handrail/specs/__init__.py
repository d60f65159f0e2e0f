"""Agent definition files (YAML) and their JSON Schema."""

from handrail.specs.agent_spec import (
    AgentSpec,
    GeneratorSpec,
    SpecError,
    ToolEntry,
    agent_spec_json_schema,
    build_agent,
    build_generator,
    load_agent_spec,
)

__all__ = [
    "AgentSpec",
    "GeneratorSpec",
    "SpecError",
    "ToolEntry",
    "agent_spec_json_schema",
    "build_agent",
    "build_generator",
    "load_agent_spec",
]
