from __future__ import annotations

import subprocess
import sys

import handrail.tools
from handrail.tools import from_function, preview, toolset, utils


def test_tools_package_exports_exactly_all() -> None:
    assert sorted(handrail.tools.__all__) == [
        "ComponentTool",
        "MCPTool",
        "MCPToolset",
        "PipelineTool",
        "Preview",
        "StdioServer",
        "StreamableHttpServer",
        "Tool",
        "ToolCallId",
        "Toolset",
        "create_tool_from_function",
        "flatten_tools",
        "set_tool_thread_limit",
        "tool",
        "tool_thread_limit",
    ]
    for name in handrail.tools.__all__:
        assert getattr(handrail.tools, name) is not None


def test_public_modules_have_all() -> None:
    for module in (from_function, preview, toolset, utils):
        for name in module.__all__:
            assert hasattr(module, name), (module.__name__, name)


def test_tool_decorator_does_not_break_the_tool_module_path() -> None:
    from handrail.core.serialization import import_object
    from handrail.tools.tool import Tool

    assert callable(handrail.tools.tool)
    assert import_object("handrail.tools.tool.Tool") is Tool


def test_importing_tools_does_not_import_pydantic_or_jsonschema() -> None:
    code = (
        "import sys, handrail.tools; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'jsonschema')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
