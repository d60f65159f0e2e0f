"""``PromptBuilder``: render a Jinja2 template into one prompt string.

Templates render in the sandbox ConditionalRouter uses (no access to Python internals, limits on the size of
what a template builds and on its loops). A variable that is not given renders as an empty string.

Examples:
    >>> builder = PromptBuilder("Translate to {{ language }}: {{ text }}", required_variables=["text"])
    >>> builder.run(language="Italian", text="Good morning")
    {'prompt': 'Translate to Italian: Good morning'}
    >>> builder.run(text="Hi", template_variables={"language": "French"})["prompt"]
    'Translate to French: Hi'
"""

from __future__ import annotations

import logging
from typing import Any

from handrail.components.builders._variables import (
    RequiredVariables,
    check_required,
    check_variables,
    compile_template,
    declare_inputs,
    make_builder_environment,
    missing_required,
    render,
    variables_of,
)
from handrail.core.component import component
from handrail.core.serialization import default_to_dict
from handrail.errors import ConfigurationTypeError

__all__ = ["PromptBuilder"]

logger = logging.getLogger(__name__)


@component
class PromptBuilder:
    """Render a Jinja2 template with the variables it is given; the output ``prompt`` is the text.

    The template's variables become input sockets, optional (default ``""``) unless they are required.

    Args:
        template: The Jinja2 template text.
        required_variables: Variables that must be given (a mandatory input each), or ``"*"`` for every variable
            of the template; None makes them all optional (and logs a warning, as Haystack does, when the
            template has variables).
        variables: The input variables, instead of those read from ``template`` (say, to give a run-time
            template variables the init one does not have).

    Raises:
        ComponentError: When the template does not parse ("Invalid template ..."), or a variable is named
            ``template`` or ``template_variables``.
        ConfigurationTypeError: When ``template`` is not a string, or the variable lists are not lists of names.
    """

    def __init__(
        self,
        template: str,
        required_variables: RequiredVariables = None,
        variables: list[str] | None = None,
    ) -> None:
        if not isinstance(template, str):
            raise ConfigurationTypeError(f"PromptBuilder needs a str template, got {type(template).__name__}.")
        self._template_string = template
        self._required_variables = check_required(required_variables, "PromptBuilder")
        self._variables = check_variables(variables, "PromptBuilder")
        self._env = make_builder_environment()
        self.template = compile_template(self._env, template, "PromptBuilder")
        self.variables: list[str] = self._variables or sorted(variables_of(self._env, template, "PromptBuilder"))
        """The input variables."""
        self.required_variables: list[str] | str = self._required_variables or []
        """The required variables, or ``"*"``."""
        declare_inputs(self, self.variables, self._required_variables, logger, "PromptBuilder")

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"type", "init_parameters": {"template", "variables", "required_variables"}}``."""
        return default_to_dict(
            self,
            template=self._template_string,
            variables=self._variables,
            required_variables=self._required_variables,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PromptBuilder:
        """Rebuild a builder from :meth:`to_dict` output.

        Raises:
            SerializationError: For a malformed envelope.
        """
        from handrail.core.serialization import default_from_dict

        builder: PromptBuilder = default_from_dict(cls, data)
        return builder

    @component.output_types(prompt=str)
    def run(
        self, template: str | None = None, template_variables: dict[str, Any] | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        """Render the prompt.

        Args:
            template: A template for this run only, instead of the init one.
            template_variables: Values that win over the inputs of the same name (and may name variables that
                are no input).
            **kwargs: The template variables (the input sockets).

        Returns:
            ``{"prompt": str}``.

        Raises:
            ConfigurationError: ``"Missing required input variables in PromptBuilder: ..."`` (a ValueError).
            ComponentError: When the run-time template does not parse.
            ConfigurationTypeError: When ``template`` or ``template_variables`` has the wrong type.
        """
        if template is not None and not isinstance(template, str):
            raise ConfigurationTypeError(f"PromptBuilder.run: template must be a str, got {type(template).__name__}.")
        if template_variables is not None and not isinstance(template_variables, dict):
            raise ConfigurationTypeError(
                f"PromptBuilder.run: template_variables must be a dict, got {type(template_variables).__name__}."
            )
        values = {**kwargs, **(template_variables or {})}
        missing_required(self.variables, self._required_variables, set(values), "PromptBuilder")
        compiled = self.template if template is None else compile_template(self._env, template, "PromptBuilder")
        return {"prompt": render(compiled, values)}
