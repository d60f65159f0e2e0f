from __future__ import annotations

import handrail.tools.builtin as builtin


def test_builtin_exports_exactly_all() -> None:
    assert sorted(builtin.__all__) == ["SearchTool", "calculator", "evaluate_expression", "make_search_tool", "search"]
    assert {name for name in vars(builtin) if not name.startswith("_")} == set(builtin.__all__)
    for name in builtin.__all__:
        assert getattr(builtin, name) is not None


def test_the_builtin_tools_are_not_imported_by_handrail_tools() -> None:
    import subprocess
    import sys

    code = "import sys, handrail.tools; print('handrail.tools.builtin' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
