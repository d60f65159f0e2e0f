"""Count function parameters annotated exactly ``Any`` (or ``Any | None``, ``Optional[Any]``).

Containers that hold ``Any`` (``dict[str, Any]``, ``list[Any]``) do not count: only a parameter whose
whole annotation is ``Any``, optionally unioned with ``None``. ``*args``/``**kwargs`` count separately
(``--no-variadic`` leaves them out of the total). String annotations are parsed like code.

Usage::

    python tools/count_any.py                 # total over src/handrail, then per file
    python tools/count_any.py --list          # every parameter, as path:line function(param)
    python tools/count_any.py src/handrail/stores --no-variadic
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from pathlib import Path

_NONE_NAMES = {"None", "NoneType"}


def _is_any(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id == "Any"
    if isinstance(node, ast.Attribute):
        return node.attr == "Any" and isinstance(node.value, ast.Name) and node.value.id in {"typing", "t"}
    return False


def _is_none(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return node.value is None
    return isinstance(node, ast.Name) and node.id in _NONE_NAMES


def _union_members(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union_members(node.left) + _union_members(node.right)
    if isinstance(node, ast.Subscript):
        base = node.value
        name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else ""
        if name == "Optional":
            return [node.slice, ast.Constant(None)]
        if name == "Union":
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return [m for item in items for m in _union_members(item)]
    return [node]


def is_any_annotation(annotation: ast.expr | None) -> bool:
    """True when the annotation is exactly ``Any``, or ``Any`` unioned only with ``None``."""
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return False
    members = _union_members(annotation)
    rest = [m for m in members if not _is_none(m)]
    return len(rest) == 1 and _is_any(rest[0])


def any_parameters(tree: ast.AST) -> Iterator[tuple[int, str, str, bool]]:
    """Yield ``(line, function, parameter, variadic)`` for each parameter annotated ``Any``."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        args = node.args
        plain = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        for arg in plain:
            if is_any_annotation(arg.annotation):
                yield arg.lineno, node.name, arg.arg, False
        for arg in (args.vararg, args.kwarg):
            if arg is not None and is_any_annotation(arg.annotation):
                yield arg.lineno, node.name, arg.arg, True


def main(argv: list[str] | None = None) -> int:
    """Print the total, then the count per file (or every parameter with ``--list``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=["src/handrail"])
    parser.add_argument("--list", action="store_true", help="print every parameter found")
    parser.add_argument("--no-variadic", action="store_true", help="leave *args/**kwargs out")
    options = parser.parse_args(argv)
    files = sorted(p for root in map(Path, options.paths) for p in ([root] if root.is_file() else root.rglob("*.py")))
    total = variadic = 0
    per_file: list[tuple[int, Path]] = []
    for path in files:
        found = list(any_parameters(ast.parse(path.read_text(encoding="utf-8"), str(path))))
        kept = [f for f in found if not (options.no_variadic and f[3])]
        total += len(kept)
        variadic += sum(1 for f in found if f[3])
        if kept:
            per_file.append((len(kept), path))
        if options.list:
            for line, function, param, is_var in kept:
                print(f"{path}:{line} {function}({'**' if is_var else ''}{param})")
    scope = "*args/**kwargs excluded" if options.no_variadic else f"{variadic} of them *args/**kwargs"
    print(f"Any parameters: {total} ({scope})")
    if not options.list:
        for count, path in sorted(per_file, key=lambda item: (-item[0], str(item[1]))):
            print(f"{count:5d}  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
