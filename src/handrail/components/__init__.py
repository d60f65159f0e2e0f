"""Components: the Agent, the ToolInvoker, chat generators."""
