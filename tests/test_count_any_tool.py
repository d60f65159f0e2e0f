"""tools/count_any.py: which annotations count as an ``Any`` parameter (the measure of issue 15's typing work)."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

TOOL = Path(__file__).resolve().parents[1] / "tools" / "count_any.py"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_count_any", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SOURCE = """
import typing
from typing import Any, Optional, Union

def counted(a: Any, b: Any | None, c: Optional[Any], d: typing.Any, e: "Any", f: Union[Any, None], g: None | Any): ...
def not_counted(a: dict[str, Any], b: list[Any], c: Any | int, d: object, e, f: "Mapping[str, Any]"): ...
def variadic(*args: Any, **kwargs: Any): ...
class C:
    async def method(self, x: Any = None, *, y: Any): ...
"""


def test_exact_any_and_any_or_none_count_containers_and_other_unions_do_not() -> None:
    found = list(_tool().any_parameters(ast.parse(SOURCE)))
    names = sorted((function, param) for _, function, param, _ in found)
    expected = [("counted", p) for p in "abcdefg"] + [("variadic", "args"), ("variadic", "kwargs")]
    assert names == sorted([*expected, ("method", "x"), ("method", "y")])
    assert sorted(param for _, _, param, variadic in found if variadic) == ["args", "kwargs"]


def test_the_command_prints_the_total_with_or_without_variadic_parameters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "m.py").write_text(SOURCE, encoding="utf-8")
    tool = _tool()
    assert tool.main([str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "Any parameters: 11 (2 of them *args/**kwargs)"
    assert tool.main([str(tmp_path), "--no-variadic"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "Any parameters: 9 (*args/**kwargs excluded)"
