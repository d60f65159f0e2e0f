"""OpenAIChatGenerator takes Haystack 2.19's init parameters (names, order, defaults) and reads its saved form."""

from __future__ import annotations

import asyncio
import inspect
import json
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest

from handrail.components.generators.chat import OpenAIChatGenerator
from handrail.core import Secret
from handrail.core.serialization import object_from_dict
from handrail.dataclasses import ChatMessage
from handrail.errors import ConfigurationError, GenerationError
from tests.components.generators._openai_server import FIXTURES, RecordedServer, recorded

HAYSTACK = Path(__file__).parents[2] / "fixtures" / "haystack"

# Haystack 2.19's OpenAIChatGenerator.__init__, in order, with its defaults (the api_key default is a Secret).
HAYSTACK_PARAMETERS = [
    ("api_key", ...),
    ("model", "gpt-4o-mini"),
    ("streaming_callback", None),
    ("api_base_url", None),
    ("organization", None),
    ("generation_kwargs", None),
    ("timeout", None),
    ("max_retries", None),
    ("tools", None),
    ("tools_strict", False),
    ("http_client_kwargs", None),
]


def test_positional_parameters_are_haystacks_in_order_with_its_defaults() -> None:
    params = list(inspect.signature(OpenAIChatGenerator).parameters.values())
    positional = [p for p in params if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    assert [p.name for p in positional] == [name for name, _ in HAYSTACK_PARAMETERS]
    for p, (_, default) in zip(positional, HAYSTACK_PARAMETERS, strict=True):
        if default is not ...:
            assert p.default == default, p.name
    assert positional[0].default == Secret.from_env_var("OPENAI_API_KEY")
    extras = [p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]
    assert extras == ["http_client", "async_http_client"]


def test_every_parameter_can_be_passed_positionally() -> None:
    gen = OpenAIChatGenerator(
        Secret.from_token("sk-1"), "gpt-4o", None, "http://x.test/v1", "org-1", {"temperature": 0.1}, 9.0, 1,
        None, True, {"timeout": 3.0},
    )  # fmt: skip
    assert (gen.model, gen.organization, gen.timeout, gen.max_retries) == ("gpt-4o", "org-1", 9.0, 1)
    assert gen.tools_strict is True and gen.http_client_kwargs == {"timeout": 3.0}


def _completion(request: httpx2.Request) -> httpx2.Response:
    return httpx2.Response(200, json=json.loads((FIXTURES / "completion_text.json").read_text()))


def test_http_client_kwargs_build_the_clients_the_sdk_uses() -> None:
    seen: list[Any] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return _completion(request)

    gen = OpenAIChatGenerator(
        api_key=Secret.from_token("sk-1"),
        api_base_url="http://llm.test:8000/v1",
        http_client_kwargs={"transport": httpx2.MockTransport(handler), "headers": {"x-proxy": "p1"}},
    )
    assert gen.run([ChatMessage.from_user("hi")])["replies"][0].text == "The capital of Norway is Oslo."
    reply = asyncio.run(gen.run_async([ChatMessage.from_user("hi")]))["replies"][0]
    assert reply.text == "The capital of Norway is Oslo."
    assert [r.headers["x-proxy"] for r in seen] == ["p1", "p1"]


def test_http_client_kwargs_are_checked() -> None:
    with pytest.raises(TypeError, match="http_client_kwargs must be a dict"):
        OpenAIChatGenerator(http_client_kwargs=["proxy"])  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="either http_client_kwargs or http_client"):
        OpenAIChatGenerator(http_client_kwargs={"verify": False}, http_client=httpx.Client())
    gen = OpenAIChatGenerator(api_key=Secret.from_token("sk-1"), http_client_kwargs={"no_such_option": 1})
    with pytest.raises(TypeError, match=r"http_client_kwargs were refused by httpx.*no_such_option"):
        gen.run([ChatMessage.from_user("hi")])


def test_timeout_and_retries_default_as_haystacks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_TIMEOUT", raising=False)
    monkeypatch.delenv("OPENAI_MAX_RETRIES", raising=False)
    server = RecordedServer(recorded("completion_text.json"))
    server.generator().run([ChatMessage.from_user("hi")])
    assert server.requests[0].extensions["timeout"]["read"] == 30.0

    monkeypatch.setenv("OPENAI_TIMEOUT", "4.5")
    monkeypatch.setenv("OPENAI_MAX_RETRIES", "0")
    server = RecordedServer(recorded("error_401.json", status=503), recorded("completion_text.json"))
    with pytest.raises(GenerationError, match="503"):
        server.generator().run([ChatMessage.from_user("hi")])
    assert len(server.requests) == 1  # OPENAI_MAX_RETRIES=0: no retry
    assert server.requests[0].extensions["timeout"]["read"] == 4.5

    monkeypatch.setenv("OPENAI_TIMEOUT", "soon")
    with pytest.raises(ConfigurationError, match="OPENAI_TIMEOUT='soon' is not a number"):
        RecordedServer().generator().run([ChatMessage.from_user("hi")])


def test_haystacks_serialized_generator_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(HAYSTACK))  # the user's tool module the file names (hs_user_tools)
    data = json.loads((HAYSTACK / "tools.json").read_text(encoding="utf-8"))["generator"]
    gen = object_from_dict(data)
    assert isinstance(gen, OpenAIChatGenerator)
    assert (gen.model, gen.organization, gen.timeout, gen.max_retries) == ("gpt-4o", "org-1", 12.5, 1)
    assert gen.generation_kwargs == {"temperature": 0.2} and gen.tools_strict is True
    assert gen.http_client_kwargs == {"timeout": 7.0}
    assert gen.api_key == Secret.from_env_var("OPENAI_API_KEY", strict=False)
    assert [t.name for t in gen.tools or []] == ["weather"]  # type: ignore[union-attr]
    again = OpenAIChatGenerator.from_dict(gen.to_dict()).to_dict()
    assert again == gen.to_dict() and again["init_parameters"]["http_client_kwargs"] == {"timeout": 7.0}
