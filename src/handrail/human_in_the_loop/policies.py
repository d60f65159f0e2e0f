"""Confirmation policies: should a person be asked before this tool call runs?

Three ready-made policies follow Haystack 2.x: :class:`AlwaysAskPolicy`,
:class:`NeverAskPolicy` and :class:`AskOncePolicy`; :class:`AskWhenPolicy` asks only when a rule over the
call's arguments holds (``AskWhenPolicy("amount > 100")``). Any object with ``should_ask``,
``update_after_confirmation`` and ``to_dict`` works as a policy
(:class:`~handrail.human_in_the_loop.types.ConfirmationPolicy`).
"""

from __future__ import annotations

import copy
import hashlib
import re
import threading
import warnings
from collections.abc import Mapping
from typing import Any, Self

from handrail.core.serialization import default_from_dict, default_to_dict
from handrail.dataclasses.decisions import ConfirmationUIResult
from handrail.errors import SerializationError
from handrail.human_in_the_loop._nested import encode_json

__all__ = ["AlwaysAskPolicy", "AskOncePolicy", "AskWhenPolicy", "NeverAskPolicy", "params_digest"]

_DIGEST = re.compile(r"[0-9a-f]{64}")


def params_digest(tool_params: Mapping[str, Any]) -> str:
    """Return a canonical digest of an argument set, independent of key order.

    Args:
        tool_params: The arguments of one call.

    Returns:
        The hex SHA-256 (64 characters) of
        ``json.dumps(params, sort_keys=True, ensure_ascii=False, default=str)`` (the same text is
        built without recursion for arguments nested deeper than the recursion limit).

    Examples:
        >>> params_digest({"a": 1, "b": 2}) == params_digest({"b": 2, "a": 1})
        True
    """
    text = encode_json(dict(tool_params), sort_keys=True)  # the same text at any depth of nesting
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class _StatelessPolicy:
    """Shared plumbing of the policies that learn nothing."""

    def update_after_confirmation(
        self,
        tool_name: str,
        tool_description: str,
        tool_params: dict[str, Any],
        confirmation_result: ConfirmationUIResult,
    ) -> None:
        """Do nothing: this policy does not learn from answers.

        Args:
            tool_name: The tool.
            tool_description: Its description.
            tool_params: The arguments the person was asked about.
            confirmation_result: The person's answer.
        """

    def to_dict(self) -> dict[str, Any]:
        """Serialize to ``{"type": <class path>, "init_parameters": {}}``."""
        return default_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Rebuild from :meth:`to_dict` output.

        Raises:
            SerializationError: When ``init_parameters`` is missing or ``type`` names another class.
        """
        policy: Self = default_from_dict(cls, data)
        return policy

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class AlwaysAskPolicy(_StatelessPolicy):
    """Ask a person before every call.

    Examples:
        >>> AlwaysAskPolicy().should_ask("delete_file", "Deletes a file.", {"path": "a.txt"})
        True
    """

    def should_ask(self, tool_name: str, tool_description: str, tool_params: dict[str, Any]) -> bool:
        """Return True: always ask.

        Args:
            tool_name: The tool.
            tool_description: Its description.
            tool_params: The arguments of the call.

        Returns:
            True.
        """
        return True


class NeverAskPolicy(_StatelessPolicy):
    """Never ask: every call runs as proposed (decided by "policy").

    Examples:
        >>> NeverAskPolicy().should_ask("get_weather", "Weather.", {"city": "Oslo"})
        False
    """

    def should_ask(self, tool_name: str, tool_description: str, tool_params: dict[str, Any]) -> bool:
        """Return False: never ask.

        Args:
            tool_name: The tool.
            tool_description: Its description.
            tool_params: The arguments of the call.

        Returns:
            False.
        """
        return False


class AskWhenPolicy(_StatelessPolicy):
    """Ask a person only when a rule over the call's arguments holds: ``AskWhenPolicy("amount > 100")``.

    The rule is an expression in the sandbox ConditionalRouter uses (:mod:`handrail.core._rules`): the call's
    arguments are its variables (those a tool reads from State included); comparisons, ``and`` / ``or`` /
    ``not``, arithmetic, ``in``, item access, tests (``memo is defined``) and a few filters (``lines | length``);
    no calls. A rule that does not parse, or holds a construct a rule may not hold, is refused here; one that reads
    a name the tool does not take is refused when the Agent is built. A rule that fails on a call's arguments (an
    argument missing, a wrong type, a result that is not true or false) asks, and warns: never a silently open
    gate.

    Args:
        rule: The rule, e.g. ``"amount > 100"`` or ``"amount > 100 or currency != 'EUR'"``.

    Raises:
        ConfigurationError: The rule is empty, does not parse or holds a construct a rule may not hold.
        ConfigurationTypeError: The rule is not a str.

    Examples:
        >>> policy = AskWhenPolicy("amount > 100")
        >>> [policy.should_ask("transfer", "Send money.", {"amount": a}) for a in (50, 500)]
        [False, True]
    """

    def __init__(self, rule: str) -> None:
        from handrail.core._rules import compile_rule

        self._rule = compile_rule(rule, what="AskWhenPolicy rule")
        self.rule: str = self._rule.source
        """The rule, as given (stripped)."""

    @property
    def variables(self) -> frozenset[str]:
        """The argument names the rule reads."""
        return self._rule.variables

    def should_ask(self, tool_name: str, tool_description: str, tool_params: dict[str, Any]) -> bool:
        """Return whether the rule holds for ``tool_params``; True (ask) when it cannot be evaluated on them.

        Args:
            tool_name: The tool.
            tool_description: Its description.
            tool_params: The arguments of the call (with the values it reads from State).

        Returns:
            True to ask a person.
        """
        from handrail.core._rules import RuleFailed

        try:
            return self._rule.holds(tool_params)
        except RuleFailed as exc:
            warnings.warn(
                f"AskWhenPolicy for {tool_name!r}: {exc}; a person is asked (a rule that cannot judge a call never "
                "lets it run unasked).",
                RuntimeWarning,
                stacklevel=2,
            )
            return True

    def to_dict(self) -> dict[str, Any]:
        """Serialize to ``{"type": <class path>, "init_parameters": {"rule": str}}``."""
        return default_to_dict(self, rule=self.rule)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AskWhenPolicy) and type(self) is type(other) and self.rule == other.rule

    def __hash__(self) -> int:
        return hash((type(self), self.rule))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.rule!r})"


class AskOncePolicy:
    """Ask once per tool and argument set; a confirmed argument set is not asked about again.

    Every confirmed argument set of every tool is remembered (not only the last one), compared
    by :func:`params_digest` (so key order does not matter). Only a ``"confirm"`` answer is
    recorded; a reject or a modify records nothing, so the next identical call is asked again.
    Divergence from Haystack 2.x, which remembered only the last confirmed set per tool.

    The memory belongs to this instance and is never part of :meth:`to_dict` (which holds
    configuration only); move it with :meth:`export_memory` / :meth:`load_memory`. Methods are
    thread-safe. ``copy.copy`` / ``copy.deepcopy`` give an independent policy with a copy of the
    memory.

    Examples:
        >>> from handrail.dataclasses.decisions import ConfirmationUIResult
        >>> policy = AskOncePolicy()
        >>> policy.should_ask("get_weather", "Weather.", {"city": "Oslo"})
        True
        >>> policy.update_after_confirmation("get_weather", "Weather.", {"city": "Oslo"},
        ...                                  ConfirmationUIResult("confirm"))
        >>> policy.should_ask("get_weather", "Weather.", {"city": "Oslo"})
        False
        >>> policy.should_ask("get_weather", "Weather.", {"city": "Bergen"})
        True
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._memory: dict[str, set[str]] = {}

    def should_ask(self, tool_name: str, tool_description: str, tool_params: dict[str, Any]) -> bool:
        """Return False when this exact argument set of this tool was confirmed before.

        Args:
            tool_name: The tool.
            tool_description: Its description (not used).
            tool_params: The arguments of the call.

        Returns:
            True to ask a person, False when the set was confirmed before.
        """
        digest = params_digest(tool_params)
        with self._lock:
            return digest not in self._memory.get(tool_name, ())

    def update_after_confirmation(
        self,
        tool_name: str,
        tool_description: str,
        tool_params: dict[str, Any],
        confirmation_result: ConfirmationUIResult,
    ) -> None:
        """Remember ``tool_params`` for ``tool_name`` when the answer was ``"confirm"``.

        Args:
            tool_name: The tool.
            tool_description: Its description (not used).
            tool_params: The arguments the person was asked about.
            confirmation_result: The answer; reject and modify record nothing.
        """
        if confirmation_result.action != "confirm":
            return
        digest = params_digest(tool_params)
        with self._lock:
            self._memory.setdefault(tool_name, set()).add(digest)

    def forget(self, tool_name: str | None = None) -> None:
        """Forget the confirmed argument sets of one tool, or of every tool.

        Args:
            tool_name: The tool to forget; None forgets everything.
        """
        with self._lock:
            if tool_name is None:
                self._memory.clear()
            else:
                self._memory.pop(tool_name, None)

    def export_memory(self) -> dict[str, list[str]]:
        """Return the remembered decisions in a JSON-compatible form.

        Returns:
            ``{tool_name: [digest, ...]}``: for each tool, the sorted hex digests
            (:func:`params_digest`) of its confirmed argument sets.
        """
        with self._lock:
            return {name: sorted(digests) for name, digests in self._memory.items()}

    def load_memory(self, data: Mapping[str, Any]) -> None:
        """Replace the remembered decisions with ones from :meth:`export_memory`.

        The data is checked completely before anything changes.

        Args:
            data: ``{tool_name: [digest, ...]}`` with 64-character lowercase hex digests.

        Raises:
            SerializationError: When ``data`` does not have that shape (the message says where).
        """
        memory = _parse_memory(data)
        with self._lock:
            self._memory = memory

    def to_dict(self) -> dict[str, Any]:
        """Serialize the configuration (there is none); the memory is not included.

        Returns:
            ``{"type": "handrail.human_in_the_loop.policies.AskOncePolicy", "init_parameters": {}}``.
        """
        return default_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AskOncePolicy:
        """Rebuild from :meth:`to_dict` output, with an empty memory.

        Raises:
            SerializationError: When ``init_parameters`` is missing or ``type`` names another class.
        """
        policy: AskOncePolicy = default_from_dict(cls, data)
        return policy

    def __copy__(self) -> AskOncePolicy:
        clone = type(self)()
        with self._lock:
            clone._memory = {name: set(digests) for name, digests in self._memory.items()}
        return clone

    def __deepcopy__(self, memo: dict[int, Any]) -> AskOncePolicy:
        return copy.copy(self)

    def __repr__(self) -> str:
        with self._lock:
            count = sum(len(d) for d in self._memory.values())
        return f"AskOncePolicy(<{count} confirmed argument set(s)>)"


def _parse_memory(data: Mapping[str, Any]) -> dict[str, set[str]]:
    if not isinstance(data, Mapping):
        raise SerializationError(
            f"AskOncePolicy memory must be a dict {{tool_name: [digest, ...]}}, got {type(data).__name__}."
        )
    memory: dict[str, set[str]] = {}
    for name, digests in data.items():
        if not isinstance(name, str):
            raise SerializationError(f"AskOncePolicy memory: tool names must be str, got {name!r}.")
        if not isinstance(digests, list):
            raise SerializationError(
                f"AskOncePolicy memory for tool {name!r} must be a list of digests, got {type(digests).__name__}."
            )
        for digest in digests:
            if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
                raise SerializationError(
                    f"AskOncePolicy memory for tool {name!r} holds {digest!r}, which is not a 64-character "
                    f"lowercase hex SHA-256 digest (see params_digest)."
                )
        memory[name] = set(digests)
    return memory
