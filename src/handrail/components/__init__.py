"""Components: the Agent, the ToolInvoker, chat generators."""

__all__: list[str] = []  # each kind of component is imported from its own package
