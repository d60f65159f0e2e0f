"""Chat generators (model backends)."""

__all__: list[str] = []  # the built-in generators are in handrail.components.generators.chat
