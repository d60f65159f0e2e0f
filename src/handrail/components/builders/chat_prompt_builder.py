"""``ChatPromptBuilder``: render a chat template into a list of ChatMessage.

A template is either a list of ChatMessage (the text of each user and system message is a Jinja2 template;
assistant and tool messages pass through as they are) or a string of ``{% message role="..." %}`` blocks, one
per message (see :mod:`handrail.components.builders._chat_template`). Rendering happens in the sandbox
ConditionalRouter uses; a variable that is not given renders as an empty string.

Examples:
    >>> from handrail.dataclasses import ChatMessage
    >>> builder = ChatPromptBuilder(
    ...     [ChatMessage.from_system("Answer in {{ language }}."), ChatMessage.from_user("{{ question }}")],
    ...     required_variables=["question"],
    ... )
    >>> [m.text for m in builder.run(language="Italian", question="Why is the sky blue?")["prompt"]]
    ['Answer in Italian.', 'Why is the sky blue?']
    >>> text = '{% message role="user" name="ada" %}Hello {{ who }}{% endmessage %}'
    >>> message = ChatPromptBuilder(text, required_variables="*").run(who="world")["prompt"][0]
    >>> message.text, message.name
    ('Hello world', 'ada')
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from handrail.components.builders._chat_template import (
    ChatMessageExtension,
    messages_from_rendered,
    templatize_part,
)
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
from handrail.core.serialization import default_to_dict, init_parameters
from handrail.dataclasses.chat_message import ChatMessage, ChatRole, TextContent
from handrail.errors import ComponentError, ConfigurationError, ConfigurationTypeError

__all__ = ["ChatPromptBuilder"]

logger = logging.getLogger(__name__)

_OWNER = "ChatPromptBuilder"
_FILTER_REFUSED = (
    "The templatize_part filter cannot be used with a template containing a list of ChatMessage objects. Use a "
    "string template or remove the templatize_part filter from the template."
)

ChatTemplate = list[ChatMessage] | str


@component
class ChatPromptBuilder:
    """Render a chat template (a list of ChatMessage, or a string of message blocks); the output ``prompt``.

    The template's variables (those of its user and system messages, for a list) become input sockets, optional
    (default ``""``) unless required.

    Args:
        template: A list of ChatMessage, or a string of ``{% message role=... %}`` blocks; None to give the
            template at run time (then declare the variables with ``variables``).
        required_variables: Variables that must be given, or ``"*"`` for all; None makes them all optional (and
            logs a warning, as Haystack does, when there are variables).
        variables: The input variables, instead of those read from ``template``.

    Raises:
        ComponentError: When a template does not parse ("Invalid template ..."), a user or system message has no
            text, or uses the ``templatize_part`` filter.
        ConfigurationTypeError: When ``template`` is neither a list, a string nor None.
        ConfigurationError: When the list holds something other than ChatMessage.
    """

    def __init__(
        self,
        template: ChatTemplate | None = None,
        required_variables: RequiredVariables = None,
        variables: list[str] | None = None,
    ) -> None:
        _check_template(template, "ChatPromptBuilder")
        self.template: ChatTemplate | None = template
        """The init template."""
        self._required_variables = check_required(required_variables, _OWNER)
        self._variables = check_variables(variables, _OWNER)
        self._env = make_builder_environment([ChatMessageExtension])
        self._env.filters["templatize_part"] = templatize_part
        found = self._variables_of(template) if template and not self._variables else set()
        self.variables: list[str] = self._variables or sorted(found)
        """The input variables."""
        self.required_variables: list[str] | str = self._required_variables or []
        """The required variables, or ``"*"``."""
        declare_inputs(self, self.variables, self._required_variables, logger, _OWNER)

    def _variables_of(self, template: ChatTemplate) -> set[str]:
        if isinstance(template, str):
            return variables_of(self._env, template, _OWNER)
        found: set[str] = set()
        for message in template:
            if message.role in (ChatRole.USER, ChatRole.SYSTEM):
                found |= variables_of(self._env, _template_text(message), _OWNER)
        return found

    @component.output_types(prompt=list[ChatMessage])
    def run(
        self,
        template: ChatTemplate | None = None,
        template_variables: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Render the chat prompt.

        Args:
            template: A template for this run only (a list of ChatMessage or a string), instead of the init one.
            template_variables: Values that win over the inputs of the same name.
            **kwargs: The template variables (the input sockets).

        Returns:
            ``{"prompt": list[ChatMessage]}``: new messages; the template's own are not changed.

        Raises:
            ConfigurationError: When there is no template (neither at init nor at run time), the required
                variables are missing ("Missing required input variables in ChatPromptBuilder: ..."), or a
                message block renders to parts its role cannot hold (all ValueErrors).
            ComponentError: When a template does not parse.
            ConfigurationTypeError: When ``template`` or ``template_variables`` has the wrong type.
        """
        if template_variables is not None and not isinstance(template_variables, dict):
            raise ConfigurationTypeError(
                f"ChatPromptBuilder.run: template_variables must be a dict, got {type(template_variables).__name__}."
            )
        values = {**kwargs, **(template_variables or {})}
        chosen = self.template if template is None else template
        _check_template(chosen, "ChatPromptBuilder.run")
        if not chosen:
            raise ConfigurationError(
                "The ChatPromptBuilder requires a non-empty list of ChatMessage instances (or a string template). "
                "Please provide a valid list of ChatMessage instances to render the prompt."
            )
        missing_required(self.variables, self._required_variables, set(values), _OWNER)
        if isinstance(chosen, str):
            return {"prompt": messages_from_rendered(render(compile_template(self._env, chosen, _OWNER), values))}
        return {"prompt": [self._render_message(message, values) for message in chosen]}

    def _render_message(self, message: ChatMessage, values: dict[str, Any]) -> ChatMessage:
        if message.role not in (ChatRole.USER, ChatRole.SYSTEM):
            return message
        text = render(compile_template(self._env, _template_text(message), _OWNER), values)
        rendered = copy.deepcopy(message)
        rendered._content = [TextContent(text)]
        return rendered

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"type", "init_parameters": {"template", "variables", "required_variables"}}``.

        A list template is written as ChatMessage dicts, a string as itself.
        """
        template: list[dict[str, Any]] | str | None = self.template if isinstance(self.template, str) else None
        if isinstance(self.template, list):
            template = [message.to_dict() for message in self.template]
        return default_to_dict(
            self, template=template, variables=self._variables, required_variables=self._required_variables
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChatPromptBuilder:
        """Rebuild a builder from :meth:`to_dict` output (``data`` is not modified).

        Raises:
            SerializationError: For a malformed envelope or message dict.
        """
        params = dict(init_parameters(data, cls))
        template = params.get("template")
        if isinstance(template, list):
            params["template"] = [ChatMessage.from_dict(item) for item in template]
        return cls(**params)


def _check_template(template: Any, where: str) -> None:
    if template is None or isinstance(template, str):
        return
    if not isinstance(template, list):
        raise ConfigurationTypeError(
            f"{where}: template must be a list of ChatMessage or a string, got {type(template).__name__}."
        )
    for index, item in enumerate(template):
        if not isinstance(item, ChatMessage):
            raise ConfigurationError(
                f"The ChatPromptBuilder expects a list containing only ChatMessage instances; template[{index}] "
                f"is a {type(item).__name__}."
            )


def _template_text(message: ChatMessage) -> str:
    text = message.text
    if text is None:
        raise ComponentError(
            f"ChatMessages from {message.role.value} role must contain text. Received ChatMessage with no text: "
            f"{message!r:.200}"
        )
    if "templatize_part" in text:
        raise ComponentError(_FILTER_REFUSED)
    return text
