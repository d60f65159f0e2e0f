"""The file work behind the embedded models: copying and hashing in one pass, progress, stamps, leftovers."""

from __future__ import annotations

import errno
import hashlib
import os
from pathlib import Path

import pytest

from handrail.components.generators.chat import _gguf_files, _gguf_parts
from handrail.components.generators.chat._gguf_files import clone_into, copy_and_hash, sha256_of, stamp_matches
from handrail.components.generators.chat._gguf_parts import ensure_model_file, leftover_files, verify_model_file
from handrail.errors import ModelFilesError
from tests.fake_model_parts import PART_BYTES, WHOLE, tiny_spec

BIG = [os.urandom(1200 << 10), os.urandom(2 << 20), b"", os.urandom(5)]  # blocks of 1 MiB, partly filled


def _sources(tmp_path: Path, contents: list[bytes]) -> list[Path]:
    paths = []
    for number, data in enumerate(contents):
        path = tmp_path / f"src{number}.bin"
        path.write_bytes(data)
        paths.append(path)
    return paths


def _copy(tmp_path: Path, contents: list[bytes]) -> tuple[str, bytes, list[tuple[int, int]]]:
    out = tmp_path / "out.bin"
    seen: list[tuple[int, int]] = []
    out_fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        digest = copy_and_hash(
            _sources(tmp_path, contents), out_fd, total=sum(map(len, contents)),
            progress=lambda done, total: seen.append((done, total)),
        )  # fmt: skip
    finally:
        os.close(out_fd)
    return digest, out.read_bytes(), seen


def test_the_output_is_the_concatenation_and_its_hash_is_returned(tmp_path: Path) -> None:
    digest, written, seen = _copy(tmp_path, BIG)
    whole = b"".join(BIG)
    assert written == whole
    assert digest == hashlib.sha256(whole).hexdigest()
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)  # progress only goes forward
    assert seen[-1] == (len(whole), len(whole))


def test_copying_ends_with_an_fsync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    monkeypatch.setattr(os, "fsync", synced.append)
    assert _copy(tmp_path, BIG)[1] == b"".join(BIG)
    assert len(synced) == 1


def test_an_unreadable_source_is_raised(tmp_path: Path) -> None:
    out_fd = os.open(tmp_path / "out.bin", os.O_WRONLY | os.O_CREAT, 0o600)
    with pytest.raises(FileNotFoundError):
        copy_and_hash([tmp_path / "missing.bin"], out_fd, total=1)
    os.close(out_fd)


def test_sha256_of_reports_progress(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(BIG[1])
    seen: list[int] = []
    assert sha256_of(path, progress=lambda done, total: seen.append(done)) == hashlib.sha256(BIG[1]).hexdigest()
    assert seen[-1] == len(BIG[1]) and len(seen) == 2  # 2 MiB in blocks of 1 MiB


def test_assembly_removes_the_temporary_files_of_dead_processes_only(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    dead = cache / ".tiny.gguf.999999999.abc.partial"  # no such pid
    live = cache / f".tiny.gguf.{os.getpid()}.xyz.partial"  # an assembly running now
    other = cache / ".other.gguf.999999999.abc.partial"
    for path in (dead, live, other):
        path.write_bytes(b"half")
    assert leftover_files(tiny_spec(), cache) == [dead]
    found = {f"tiny-model-part{n}": tmp_path / f"part{n:02d}.bin" for n in (1, 2, 3)}
    for path, data in zip(found.values(), PART_BYTES, strict=True):
        path.write_bytes(data)
    ensure_model_file(tiny_spec(), cache_dir=cache, locate=lambda dist, part: found[dist])
    assert sorted(p.name for p in cache.iterdir()) == sorted([live.name, other.name, "tiny.gguf", "tiny.gguf.verified"])


def test_a_damaged_file_without_parts_says_it_was_removed(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "tiny.gguf").write_bytes(b"X" * len(WHOLE))
    with pytest.raises(ModelFilesError, match=r"tiny\.gguf failed its sha256 check and was removed\. .*not installed"):
        ensure_model_file(tiny_spec(), cache_dir=cache, locate=lambda dist, part: None)
    assert not (cache / "tiny.gguf").exists()


def test_verify_model_file_rewrites_or_removes_the_stamp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "tiny.gguf"
    path.write_bytes(WHOLE)
    assert verify_model_file(tiny_spec(), path) and stamp_matches(path, tiny_spec().sha256)
    path.write_bytes(b"Y" * len(WHOLE))
    assert not verify_model_file(tiny_spec(), path)
    assert not (tmp_path / "tiny.gguf.verified").exists()
    hashed: list[Path] = []

    def hash_(p: Path, progress: object = None) -> str:
        hashed.append(p)
        return ""

    monkeypatch.setattr(_gguf_parts, "sha256_of", hash_)
    path.write_bytes(b"short")
    assert not verify_model_file(tiny_spec(), path) and hashed == []  # the wrong size is not read


def _fake_clone(corrupt: bool = False, fail_at: int | None = None) -> object:
    """A stand-in for FICLONERANGE: writes the source's bytes at the offset (or other bytes, or fails)."""
    calls: list[int] = []

    def clone(source_fd: int, out_fd: int, offset: int) -> None:
        calls.append(offset)
        if fail_at is not None and len(calls) == fail_at:
            raise OSError(errno.EOPNOTSUPP, "Operation not supported")
        data = os.pread(source_fd, 1 << 30, 0)
        os.pwrite(out_fd, b"Q" * len(data) if corrupt else data, offset)

    clone.calls = calls  # type: ignore[attr-defined]
    return clone


def _parts_locator(tmp_path: Path) -> dict[str, Path]:
    found = {f"tiny-model-part{n}": tmp_path / f"part{n:02d}.bin" for n in (1, 2, 3)}
    for path, data in zip(found.values(), PART_BYTES, strict=True):
        path.write_bytes(data)
    return found


def test_a_file_system_that_shares_blocks_gets_a_clone_then_a_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clone = _fake_clone()
    monkeypatch.setattr(_gguf_files, "_clone_range", clone)
    monkeypatch.setattr(_gguf_parts, "copy_and_hash", lambda *a, **k: pytest.fail("copied although cloned"))
    found = _parts_locator(tmp_path)
    path = ensure_model_file(tiny_spec(), cache_dir=tmp_path / "cache", locate=lambda dist, part: found[dist])
    assert path.read_bytes() == WHOLE
    assert clone.calls == [0, len(PART_BYTES[0]), len(PART_BYTES[0]) + len(PART_BYTES[1])]  # type: ignore[attr-defined]


def test_a_clone_is_hashed_from_the_file_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_gguf_files, "_clone_range", _fake_clone(corrupt=True))
    found = _parts_locator(tmp_path)
    with pytest.raises(ModelFilesError, match="has sha256"):
        ensure_model_file(tiny_spec(), cache_dir=tmp_path / "cache", locate=lambda dist, part: found[dist])
    assert list((tmp_path / "cache").iterdir()) == []


def test_a_refused_clone_leaves_an_empty_file_for_the_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_gguf_files, "_clone_range", _fake_clone(fail_at=2))  # the first part cloned, not the second
    found = _parts_locator(tmp_path)
    path = ensure_model_file(tiny_spec(), cache_dir=tmp_path / "cache", locate=lambda dist, part: found[dist])
    assert path.read_bytes() == WHOLE


def test_the_real_clone_is_refused_or_exact_here(tmp_path: Path) -> None:
    sources = _sources(tmp_path, [b"x" * 4096, b"tail"])
    out = tmp_path / "out.bin"
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        cloned = clone_into(sources, fd)
    finally:
        os.close(fd)
    assert out.read_bytes() == (b"x" * 4096 + b"tail" if cloned else b"")  # ext4 and tmpfs refuse; XFS clones
