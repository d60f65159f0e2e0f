"""Line numbers for fields of a YAML document, so spec errors can name file, line and field."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

__all__ = ["line_of"]


def line_of(root: yaml.Node | None, location: Sequence[str | int]) -> int | None:
    """Return the 1-based line of the YAML node at ``location`` (the deepest one found).

    Args:
        root: The composed document (as :func:`handrail.core._yaml.safe_load_yaml` returns it).
        location: Keys and list indexes, as in a pydantic error's ``loc``.

    Returns:
        The line of the deepest node reached along ``location``, or None without a document.
    """
    node: Any = root
    line = None if node is None else node.start_mark.line + 1
    for key in location:
        nxt = None
        if isinstance(node, yaml.MappingNode):
            # The last pair with this key is the one in effect: merge keys (``<<: *base``) list the
            # merged pairs first, then the mapping's own pairs, which override them.
            for k, v in reversed(node.value):
                if getattr(k, "value", None) == key:
                    nxt = v
                    line = k.start_mark.line + 1
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and 0 <= key < len(node.value):
            nxt = node.value[key]
            line = nxt.start_mark.line + 1
        if nxt is None:
            break
        node = nxt
    return line
