"""What PromptBuilder and ChatPromptBuilder share: the sandbox, the variables a template reads, their checks."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from handrail.core.component import component
from handrail.errors import ComponentError, ConfigurationError, ConfigurationTypeError

if TYPE_CHECKING:
    from jinja2 import Template
    from jinja2.ext import Extension
    from jinja2.sandbox import SandboxedEnvironment

__all__ = [
    "RequiredVariables",
    "check_required",
    "check_variables",
    "compile_template",
    "declare_inputs",
    "make_builder_environment",
    "missing_required",
    "render",
    "variables_of",
]

RequiredVariables = list[str] | Literal["*"] | None


def make_builder_environment(extensions: Iterable[type[Extension]] = ()) -> SandboxedEnvironment:
    """The sandbox the builders render in: ConditionalRouter's limits, undefined values rendering as ``""``."""
    from handrail.core._sandbox import LimitedSandboxedEnvironment

    return LimitedSandboxedEnvironment(extensions=list(extensions))


def compile_template(environment: SandboxedEnvironment, source: str, owner: str) -> Template:
    """Compile ``source``, naming the builder and the template when it does not parse.

    Raises:
        ComponentError: ``"Invalid template for <owner>: ..."`` (a ValueError).
    """
    from jinja2 import TemplateSyntaxError

    try:
        return environment.from_string(source)
    except TemplateSyntaxError as exc:
        raise ComponentError(f"Invalid template for {owner}: {exc} (line {exc.lineno}) in {source!r:.200}") from exc


def variables_of(environment: SandboxedEnvironment, source: str, owner: str) -> set[str]:
    """The variables ``source`` reads (Jinja2 globals such as ``range`` left out).

    Raises:
        ComponentError: When the template does not parse.
    """
    from jinja2 import TemplateSyntaxError

    from handrail.core._sandbox import template_variables

    try:
        return template_variables(environment, source)
    except TemplateSyntaxError as exc:
        raise ComponentError(f"Invalid template for {owner}: {exc} (line {exc.lineno}) in {source!r:.200}") from exc


def check_required(value: Any, owner: str) -> RequiredVariables:
    """``required_variables`` as given: None, ``"*"`` or a list of names.

    Raises:
        ConfigurationTypeError: For anything else.
    """
    if value is None or value == "*":
        return value  # type: ignore[no-any-return]
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ConfigurationTypeError(
        f"{owner}: required_variables must be a list of variable names, '*' (every variable) or None, "
        f"got {value!r:.80}."
    )


def check_variables(value: Any, owner: str) -> list[str] | None:
    """``variables`` as given: None or a list of names.

    Raises:
        ConfigurationTypeError: For anything else.
    """
    if value is None:
        return None
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ConfigurationTypeError(f"{owner}: variables must be a list of variable names or None, got {value!r:.80}.")


def declare_inputs(
    instance: Any, variables: list[str], required: RequiredVariables, logger: logging.Logger, owner: str
) -> None:
    """Make each variable an input socket: mandatory when required, else optional with ``""`` as default.

    Logs a warning (as Haystack does) when there are variables but ``required_variables`` was not given.

    Raises:
        ComponentError: When a variable is named like one of ``run``'s own parameters.
    """
    clash = sorted({"template", "template_variables"} & set(variables))
    if clash:
        raise ComponentError(
            f"{owner}: the template variable(s) {clash} have the names of run() parameters; rename them."
        )
    if variables and required is None:
        logger.warning(
            "%s has %d prompt variables, but `required_variables` is not set. By default, all prompt variables are "
            "treated as optional, which may lead to unintended behavior in multi-branch pipelines. To avoid "
            "unexpected execution, ensure that variables intended to be required are explicitly set in "
            "`required_variables`.",
            owner,
            len(variables),
        )
    for name in variables:
        if required == "*" or (required is not None and name in required):
            component.set_input_type(instance, name, Any)
        else:
            component.set_input_type(instance, name, Any, "")


def missing_required(variables: list[str], required: RequiredVariables, provided: set[str], owner: str) -> None:
    """Check every required variable was given.

    Raises:
        ConfigurationError: ``"Missing required input variables in <owner>: a, b. ..."`` (a ValueError).
    """
    names = sorted(variables) if required == "*" else list(required or [])
    missing = [name for name in names if name not in provided]
    if missing:
        raise ConfigurationError(
            f"Missing required input variables in {owner}: {', '.join(missing)}. Required variables: {names}. "
            f"Provided variables: {sorted(provided)}."
        )


def render(template: Template, values: dict[str, Any]) -> str:
    """Render within one render's limits (the ``range`` budget)."""
    from handrail.core._sandbox_limits import rendering

    with rendering():
        return template.render(values)
