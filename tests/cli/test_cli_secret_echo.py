"""``handrail run --openai-base-url`` against a server that echoes the key: the key is not printed anywhere."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from handrail.cli import main
from tests.cli.test_cli import agent_file
from tests.components.generators._echo_server import ECHOES, REVEALED, base_url, echo_server, new_key


def _assert_not_shown(key: str, *texts: str) -> None:
    for fragment in (key, key[:16], key[-16:], key[8:24], key[:8] + "*" * 10):
        assert all(fragment not in text for text in texts)


@pytest.mark.parametrize("echo", list(ECHOES))
@pytest.mark.parametrize("output", [[], ["--json"]])
def test_the_cli_never_prints_an_echoed_key(echo: str, output: list[str], tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    key = new_key()
    monkeypatch.setenv("OPENAI_API_KEY", key)
    with echo_server(echo) as server:
        args = ["run", *output, "--openai-base-url", base_url(server), str(agent_file(tmp_path, [])), "hello"]
        result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    assert "answered HTTP 401" in result.output
    assert "Traceback" not in result.output
    _assert_not_shown(key, result.output, result.stderr, result.stdout)
    assert REVEALED[echo](key) not in result.output


def test_a_fresh_process_masks_the_key_it_prints(tmp_path: Path) -> None:
    key = new_key()
    with echo_server() as server:
        command = [sys.executable, "-c", "from handrail.cli import main; main()", "run", "--openai-base-url",
                   base_url(server), str(agent_file(tmp_path, [])), "hello"]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path,
                              env={**os.environ, "OPENAI_API_KEY": key})  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "answered HTTP 401: Incorrect API key provided: ***." in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    _assert_not_shown(key, done.stderr, done.stdout)
