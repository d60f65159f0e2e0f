# Haystack 2.19's ChatPromptBuilder pipeline ("ChatPromptBuilder" docs page, "In a pipeline"), with only its
# imports changed from `haystack` to `handrail`. From the Haystack documentation, (c) deepset GmbH, Apache-2.0.
# Run it against OpenAI (OPENAI_API_KEY) or any OpenAI-compatible server (OPENAI_BASE_URL as well).
from handrail.components.builders import ChatPromptBuilder
from handrail.components.generators.chat import OpenAIChatGenerator
from handrail.dataclasses import ChatMessage
from handrail import Pipeline
from handrail.utils import Secret

## no parameter init, we don't use any runtime template variables
prompt_builder = ChatPromptBuilder()
llm = OpenAIChatGenerator()

pipe = Pipeline()
pipe.add_component("prompt_builder", prompt_builder)
pipe.add_component("llm", llm)
pipe.connect("prompt_builder.prompt", "llm.messages")

location = "Berlin"
language = "English"
system_message = ChatMessage.from_system("You are an assistant giving information to tourists in {{language}}")
messages = [system_message, ChatMessage.from_user("Tell me about {{location}}")]

res = pipe.run(
    data={"prompt_builder": {"template_variables": {"location": location, "language": language}, "template": messages}},
)
print(res)
