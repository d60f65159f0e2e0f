"""A server that echoes the API key in its error body: the key is in no error text, traceback or log line.

The server is a real one on loopback (the SDK's own HTTP stack, nothing patched); it answers 401 with the
key it received in the ``Authorization`` header (``_echo_server.py``).
"""

from __future__ import annotations

import logging
import traceback

import pytest

from handrail.components.generators.chat import OpenAIChatGenerator
from handrail.core import Secret
from handrail.dataclasses import ChatMessage
from handrail.errors import GenerationError
from tests.components.generators._echo_server import ECHOES, REVEALED, base_url, echo_server, new_key


def _no_trace_of(key: str, exc: BaseException, caplog: pytest.LogCaptureFixture) -> None:
    shown = "".join(traceback.format_exception(exc))
    for fragment in (key, key[:16], key[-16:], key[8:24]):
        assert fragment not in shown
        assert fragment not in caplog.text
    assert key[:8] + "*" * 10 not in shown


@pytest.mark.parametrize("echo", list(ECHOES))
def test_the_key_a_server_echoes_is_masked_in_the_error(echo: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    key = new_key()
    with echo_server(echo) as server, pytest.raises(GenerationError, match=r"HTTP 401: .*provided: (\*\*\*|…)") as info:
        generator = OpenAIChatGenerator(api_key=Secret.from_token(key), api_base_url=base_url(server), model="m",
                                        max_retries=0)  # fmt: skip
        generator.run([ChatMessage.from_user("hi")])
    assert info.value.status_code == 401
    assert REVEALED[echo](key) not in "".join(traceback.format_exception(info.value))
    _no_trace_of(key, info.value, caplog)


async def test_the_echoed_key_is_masked_async_and_from_an_env_var(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.DEBUG)
    key = new_key()
    monkeypatch.setenv("HR_TEST_ECHOED_KEY", key)
    with echo_server() as server, pytest.raises(GenerationError, match="HTTP 401") as info:
        generator = OpenAIChatGenerator(api_key=Secret.from_env_var("HR_TEST_ECHOED_KEY"),
                                        api_base_url=base_url(server), model="m", max_retries=0)  # fmt: skip
        await generator.run_async([ChatMessage.from_user("hi")])
    _no_trace_of(key, info.value, caplog)


def test_a_password_in_the_base_url_is_left_out_of_the_error_and_masked_when_echoed() -> None:
    password = "pw-" + new_key()[8:30]
    with echo_server() as server, pytest.raises(GenerationError, match="HTTP 401") as info:
        url = base_url(server).replace("http://", f"http://bob:{password}@")
        generator = OpenAIChatGenerator(api_key=Secret.from_token(new_key()), api_base_url=url, model="m",
                                        max_retries=0)  # fmt: skip
        generator.run([ChatMessage.from_user("hi")])
    shown = "".join(traceback.format_exception(info.value))
    assert info.value.url == base_url(server).replace("http://", "http://bob@")
    assert password not in shown and password not in str(info.value.url)
    assert "provided: Basic ***." in shown  # the server echoed the Basic credentials the URL made
