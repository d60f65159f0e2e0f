"""One safe way to read YAML: ``yaml.safe_load`` with duplicate keys and alias bombs refused.

Agent files (:mod:`handrail.specs`) and pipeline YAML (``Pipeline.loads``) both read through
:func:`safe_load_yaml`, so the rules are written once:

* A mapping that gives the same key twice is refused (``yaml.safe_load`` would keep the last value
  silently, so a hand-edited file could be read two ways). Keys brought in by a merge (``<<: *base``) may
  still be overridden: that is what merging is for.
* A document whose aliases expand it far beyond what was written ("billion laughs": nested anchors, each
  repeating the previous one ten times) is refused before anything is built from it. The expanded size is
  counted on the composed nodes, each distinct node once (linear in the document's size). A recursive
  alias (a node that contains itself) never ends and is refused too.
* An integer Python will not build from its digits (more than ``sys.get_int_max_str_digits()`` of them,
  4,300 by default) is refused at its line, not raised as a bare ``ValueError``; so is one written in hex,
  octal, binary or sexagesimal that JSON could not write (:func:`handrail.core.json_data.int_problem`).

Otherwise the semantics are ``yaml.safe_load``'s: standard tags only, no Python objects.

This module imports PyYAML, so import it where it is used (``import handrail`` stays fast).
"""

from __future__ import annotations

from typing import Any

import yaml

from handrail.core.json_data import int_problem

__all__ = ["MAX_ALIAS_NODES", "YamlRefusedError", "describe_yaml_error", "safe_load_yaml"]

MAX_ALIAS_NODES = 100_000
"""How many nodes aliases may add to a document, beyond those written out in it."""


class YamlRefusedError(yaml.MarkedYAMLError):
    """A YAML document that parses but is refused: a duplicate key, or aliases that expand it too far.

    ``problem`` says what was wrong and ``problem_mark`` (when known) where; ``problem_mark.line`` is 0-based.
    """


class _Loader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that notes the first alias and refuses duplicate mapping keys."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.first_alias: yaml.Mark | None = None
        self._checked: set[int] = set()

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.first_alias is None and self.check_event(yaml.AliasEvent):
            self.first_alias = self.peek_event().start_mark  # type: ignore[no-untyped-call]
        return super().compose_node(parent, index)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        try:
            value: int = super().construct_yaml_int(node)
        except ValueError as exc:  # "Exceeds the limit (4300 digits) for integer string conversion"
            raise YamlRefusedError(
                problem=f"an integer of {len(node.value):,} characters is refused ({exc})",
                problem_mark=node.start_mark,
            ) from None
        # Hex, octal, binary and sexagesimal digits build any size: the value must still be writable as JSON.
        problem = int_problem(value)
        if problem is not None:
            raise YamlRefusedError(
                problem=f"an integer of {len(node.value):,} characters is refused ({problem})",
                problem_mark=node.start_mark,
            )
        return value

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        # Every mapping passes through here before its pairs are used (and before merging rewrites
        # node.value), both when it is constructed and when it is merged into another one.
        if id(node) not in self._checked:
            self._checked.add(id(node))
            self._refuse_duplicate_keys(node)
        super().flatten_mapping(node)

    def _refuse_duplicate_keys(self, node: yaml.MappingNode) -> None:
        seen: dict[Any, yaml.Node] = {}
        merge: yaml.Node | None = None
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                if merge is not None:  # two '<<' keys: one of them would be dropped silently
                    raise YamlRefusedError(
                        problem=f"the merge key '<<' appears twice in one mapping (first on line "
                        f"{merge.start_mark.line + 1}); merge several with '<<: [*a, *b]'",
                        problem_mark=key_node.start_mark,
                    )
                merge = key_node
                continue
            if key_node.tag == "tag:yaml.org,2002:value":
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                continue  # a list or mapping as a key: SafeLoader refuses it (unhashable) itself
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:
                continue
            if first is not key_node:
                raise YamlRefusedError(
                    problem=f"the key {key!r} appears twice in one mapping (first on line {first.start_mark.line + 1})",
                    problem_mark=key_node.start_mark,
                )


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _expanded_size(root: yaml.Node) -> tuple[int, int] | None:
    """Return ``(expanded, distinct)`` node counts, or None when an alias makes the document recursive.

    Each distinct node is visited once (its expanded size memoized), without recursion.
    """
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            on_path.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
            continue
        if key in sizes:
            continue
        if key in on_path:
            return None  # the node is inside itself
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)
    return sizes[id(root)], len(sizes)


def safe_load_yaml(text: str, *, max_alias_nodes: int = MAX_ALIAS_NODES) -> tuple[Any, yaml.Node | None]:
    """Parse one YAML document like ``yaml.safe_load``, refusing duplicate keys and alias bombs.

    Args:
        text: The YAML text.
        max_alias_nodes: How many nodes aliases may add to the document beyond those written in it.

    Returns:
        ``(data, root)``: the Python value and the composed document (for line numbers), both None for an
        empty document. Merge keys (``<<``) are applied to ``root`` in place, as ``yaml.safe_load`` does:
        a merged mapping lists the merged pairs first, so of two equal keys the later one is in effect.

    Raises:
        YamlRefusedError: A mapping gives a key (or ``<<``) twice, the document is nested past the
            recursion limit, an integer has more digits than Python converts, or aliases expand the
            document by more than ``max_alias_nodes`` nodes (or into itself); ``problem_mark`` is the duplicate
            key, the integer or the first alias.
        yaml.YAMLError: The text is not valid YAML, or uses a tag ``yaml.safe_load`` refuses.
    """
    loader = _Loader(text)
    try:
        try:
            root = loader.get_single_node()
        except RecursionError:  # PyYAML's scanner and composer recurse once per nesting level
            mark = loader.get_mark()
            raise YamlRefusedError(problem="the document is nested too deeply", problem_mark=mark) from None
        if root is None:
            return None, None
        if loader.first_alias is not None:
            sizes = _expanded_size(root)
            if sizes is None:
                problem = "YAML aliases expand this document without end (an alias refers to a node that contains it)"
            elif sizes[0] - sizes[1] > max_alias_nodes:
                problem = (
                    f"YAML aliases expand this document to more than {sizes[1] + max_alias_nodes:,} nodes "
                    f"({sizes[1]:,} written; aliases may add at most {max_alias_nodes:,})"
                )
            else:
                problem = ""
            if problem:
                raise YamlRefusedError(problem=problem, problem_mark=loader.first_alias)
        try:
            return loader.construct_document(root), root
        except RecursionError:
            raise YamlRefusedError(problem="the document is nested too deeply", problem_mark=root.start_mark) from None
    finally:
        loader.dispose()


def describe_yaml_error(exc: yaml.YAMLError) -> tuple[int | None, str]:
    """Return the 1-based line (when known) and the problem of a YAML error, for messages that name them.

    Args:
        exc: As raised by :func:`safe_load_yaml`.

    Returns:
        ``(line, problem)``.
    """
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    return (mark.line + 1 if mark is not None else None), str(problem or exc)
