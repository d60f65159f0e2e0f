"""What of a model is on disk, and pruning its part packages: fake part distributions, an injected pip."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from handrail.components.generators.chat._gguf_inventory import checked_for_prune, model_status, prune_parts, run_pip
from handrail.components.generators.chat._gguf_parts import ensure_model_file
from handrail.errors import ModelFilesError
from tests.fake_model_parts import PART_BYTES, WHOLE, install_fake_parts, tiny_spec

SPEC = tiny_spec()


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty site directory on sys.path, for fake part distributions."""
    path = tmp_path / "site"
    path.mkdir()
    monkeypatch.syspath_prepend(str(path))
    return path


class FakePip:
    """Stands in for ``python -m pip uninstall -y ...``: records the command, removes the fake distributions."""

    def __init__(self, site: Path, code: int = 0, keep: Sequence[str] = ()) -> None:
        self.site, self.code, self.keep = site, code, set(keep)
        self.commands: list[list[str]] = []

    def __call__(self, command: Sequence[str]) -> int:
        self.commands.append(list(command))
        for name in (arg for arg in command[4:] if not arg.startswith("-")):
            if name not in self.keep:
                module = name.replace("-", "_")
                shutil.rmtree(self.site / module)
                shutil.rmtree(self.site / f"{module}-{SPEC.version}.dist-info")
        return self.code


def test_nothing_installed(tmp_path: Path, site: Path) -> None:
    status = model_status(SPEC, cache_dir=tmp_path / "cache")
    assert (status.state, status.file_bytes, status.parts, status.parts_bytes) == ("not installed", None, (), 0)
    assert status.missing_parts == ("tiny-model-part1", "tiny-model-part2", "tiny-model-part3")
    assert status.path == tmp_path / "cache" / "tiny.gguf"


def test_installed_parts_are_listed_with_their_size_and_publisher_without_being_imported(
    tmp_path: Path, site: Path
) -> None:
    install_fake_parts(site, SPEC, PART_BYTES, numbers=[1, 3])
    status = model_status(SPEC, cache_dir=tmp_path / "cache")
    assert status.state == "incomplete" and status.missing_parts == ("tiny-model-part2",)
    assert [(p.name, p.version, p.author) for p in status.parts] == [
        ("tiny-model-part1", "1.2.3", "someone <someone@example.com>"),
        ("tiny-model-part3", "1.2.3", "someone <someone@example.com>"),
    ]
    files = [f for f in site.rglob("*") if f.is_file() and ("part1" in str(f) or "part3" in str(f))]
    assert status.parts_bytes == sum(f.stat().st_size for f in files) > len(PART_BYTES[0]) + len(PART_BYTES[2])
    assert not any(name.startswith("tiny_model_part") for name in sys.modules)
    install_fake_parts(site, SPEC, PART_BYTES, numbers=[2])
    assert model_status(SPEC, cache_dir=tmp_path / "cache").state == "parts installed"


def test_a_ready_model_and_a_file_whose_stamp_does_not_match(tmp_path: Path, site: Path) -> None:
    install_fake_parts(site, SPEC, PART_BYTES)
    path = ensure_model_file(SPEC, cache_dir=tmp_path)
    status = model_status(SPEC, cache_dir=tmp_path)
    assert (status.state, status.file_bytes, status.verified, status.hashed_now) == ("ready", len(WHOLE), True, False)
    (tmp_path / "tiny.gguf.verified").unlink()
    assert model_status(SPEC, cache_dir=tmp_path).state == "not verified"  # listing does not hash by default
    assert model_status(SPEC, cache_dir=tmp_path, hash_now=True).state == "ready"  # hashing writes the stamp again
    assert model_status(SPEC, cache_dir=tmp_path).state == "ready"
    path.write_bytes(b"Z" * len(WHOLE))
    damaged = model_status(SPEC, cache_dir=tmp_path, hash_now=True)
    assert (damaged.state, damaged.verified, damaged.hashed_now) == ("damaged", False, True)
    json = damaged.to_json()
    assert json["state"] == "damaged" and json["sha256"] == SPEC.sha256
    assert json["provenance"] == {"upstream": "Example/tiny-GGUF/tiny.gguf", "license": "Apache-2.0"}
    assert json["parts"]["publisher"] == ["someone <someone@example.com>"]  # type: ignore[index]


def test_prune_uninstalls_exactly_the_installed_parts_and_loading_still_works(tmp_path: Path, site: Path) -> None:
    install_fake_parts(site, SPEC, PART_BYTES)
    ensure_model_file(SPEC, cache_dir=tmp_path)
    pip = FakePip(site)
    after = prune_parts(checked_for_prune(SPEC, cache_dir=tmp_path), run=pip)
    assert pip.commands == [
        [
            sys.executable,
            "-m",
            "pip",
            "uninstall",
            "-y",
            "-q",
            "tiny-model-part1",
            "tiny-model-part2",
            "tiny-model-part3",
        ]
    ]
    assert (after.state, after.parts) == ("ready", ())
    assert ensure_model_file(SPEC, cache_dir=tmp_path).read_bytes() == WHOLE  # the parts are not needed any more
    (tmp_path / "tiny.gguf.verified").unlink()
    assert ensure_model_file(SPEC, cache_dir=tmp_path).read_bytes() == WHOLE  # nor to verify it again
    assert (
        prune_parts(checked_for_prune(SPEC, cache_dir=tmp_path), run=pip).parts == () and len(pip.commands) == 1
    )  # nothing to do


def test_prune_names_only_the_parts_still_installed(tmp_path: Path, site: Path) -> None:
    install_fake_parts(site, SPEC, PART_BYTES)
    ensure_model_file(SPEC, cache_dir=tmp_path)
    FakePip(site)([sys.executable, "-m", "pip", "uninstall", "-y", "tiny-model-part2"])
    pip = FakePip(site)
    prune_parts(checked_for_prune(SPEC, cache_dir=tmp_path), run=pip)
    assert pip.commands[0][6:] == ["tiny-model-part1", "tiny-model-part3"]


def test_prune_refuses_without_the_assembled_file(tmp_path: Path, site: Path) -> None:
    install_fake_parts(site, SPEC, PART_BYTES)
    pip = FakePip(site)
    with pytest.raises(ModelFilesError, match=r"not assembled yet .*nothing was removed.*handrail models prepare tiny"):
        prune_parts(checked_for_prune(SPEC, cache_dir=tmp_path), run=pip)
    assert pip.commands == []


def test_prune_hashes_the_file_even_with_a_matching_stamp_and_refuses_a_bad_one(tmp_path: Path, site: Path) -> None:
    install_fake_parts(site, SPEC, PART_BYTES)
    path = ensure_model_file(SPEC, cache_dir=tmp_path)
    stamp = (tmp_path / "tiny.gguf.verified").read_text()
    mtime = path.stat().st_mtime_ns
    with path.open("r+b") as f:  # a flipped byte, size and mtime kept: the stamp still matches
        f.seek(10)
        f.write(b"!")
    os.utime(path, ns=(mtime, mtime))
    assert (tmp_path / "tiny.gguf.verified").read_text() == stamp
    assert model_status(SPEC, cache_dir=tmp_path).state == "ready"  # by its stamp
    pip = FakePip(site)
    with pytest.raises(ModelFilesError, match=r"fails its sha256 check .*nothing was removed"):
        prune_parts(checked_for_prune(SPEC, cache_dir=tmp_path), run=pip)
    assert pip.commands == [] and len(model_status(SPEC, cache_dir=tmp_path).parts) == 3


@pytest.mark.parametrize("code", [0, 1])
def test_a_part_left_installed_is_an_error_whatever_pip_says(tmp_path: Path, site: Path, code: int) -> None:
    install_fake_parts(site, SPEC, PART_BYTES)
    ensure_model_file(SPEC, cache_dir=tmp_path)
    with pytest.raises(
        ModelFilesError, match=rf"exited with code {code}; part packages still installed: tiny-model-part2\."
    ):
        prune_parts(
            checked_for_prune(SPEC, cache_dir=tmp_path), run=FakePip(site, code=code, keep=["tiny-model-part2"])
        )


def test_a_pip_that_fails_after_removing_every_part_is_not_an_error(tmp_path: Path, site: Path) -> None:
    install_fake_parts(site, SPEC, PART_BYTES)
    ensure_model_file(SPEC, cache_dir=tmp_path)
    assert prune_parts(checked_for_prune(SPEC, cache_dir=tmp_path), run=FakePip(site, code=1)).parts == ()


def test_without_pip_the_error_gives_another_installers_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelFilesError, match=r"pip is not installed .*uv pip uninstall --python \S+ a-part1 a-part2"):
        run_pip([sys.executable, "-m", "pip", "uninstall", "-y", "a-part1", "a-part2"])


def test_run_pip_returns_the_exit_code() -> None:
    assert run_pip([sys.executable, "-c", "raise SystemExit(3)"]) == 3


def test_prune_refuses_a_status_that_was_not_hashed_just_now(tmp_path: Path, site: Path) -> None:
    install_fake_parts(site, SPEC, PART_BYTES)
    ensure_model_file(SPEC, cache_dir=tmp_path)
    pip = FakePip(site)
    with pytest.raises(ModelFilesError, match="not hashed just now: nothing was removed"):
        prune_parts(model_status(SPEC, cache_dir=tmp_path), run=pip)  # verified by its stamp only
    assert pip.commands == []
