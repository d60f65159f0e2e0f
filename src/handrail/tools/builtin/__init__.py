"""Ready-made tools: ``calculator`` (safe arithmetic) and ``search`` (full-text search of local files).

Examples:
    >>> from handrail.tools.builtin import calculator, search
    >>> calculator.invoke(expression="17 * 23")
    '391'
    >>> print(search.invoke(query="Maplebrook population area").splitlines()[0])
    [maplebrook.md] Maplebrook > Population and area
"""

from handrail.tools.builtin.calculator import calculator, evaluate_expression
from handrail.tools.builtin.search import SearchTool, make_search_tool, search

__all__ = ["SearchTool", "calculator", "evaluate_expression", "make_search_tool", "search"]
