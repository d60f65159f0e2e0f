"""The file work behind the embedded models: concatenate and hash, hash a file, the ``.verified`` stamp.

Assembling a model is one pass over its parts: each block is read into one reused 1 MiB buffer, hashed
and written, then the file is fsynced. Measured on the shared 2-core machines (docs/models.md), the pass
costs about 1.2 s of CPU for the 1.5B model, most of it sha256 (about 1.5 GB/s with SHA-NI: 0.7 s), plus
0.3-0.5 s of fsync; what was tried to cut it, and kept out:

* larger blocks: 2 MiB and more (past the 1 MiB L2 cache of a core) made the same pass 2-4 times slower;
  64 KiB to 1 MiB are alike;
* a kernel copy (``os.copy_file_range``) with the hash read back from the output: no faster with the
  parts in the page cache, slower without (the kernel copy loses the read-ahead that overlaps reading
  with hashing);
* a helper thread calling ``fdatasync`` every 64 MiB, so the disk writes while the CPU hashes: the final
  fsync shrank from ~0.4 s to ~0.02 s, but the whole pass was no faster, and slower with cold parts, whose
  reads then compete with the writes.

On a file system that shares blocks between files (XFS with reflink, btrfs), :func:`clone_into` makes
the output a reflink of the parts instead (``FICLONERANGE``): no byte is copied and no disk is used
twice even before the parts are pruned; the output is then hashed by reading it back. Measured on a
loop-mounted XFS: 0.01 s for the clone, 1.3 s with the hash, 0 bytes more on disk, where the copy took
12.5 s and 1.12 GB. Elsewhere (ext4, tmpfs, another OS) the clone is refused at once and the one pass
runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "Progress",
    "clone_into",
    "copy_and_hash",
    "sha256_of",
    "stamp_matches",
    "stamp_path",
    "sync_directory",
    "write_stamp",
]

Progress = Callable[[int, int], None]
"""``(bytes_done, bytes_total)``: called after each block is hashed."""

_BLOCK = 1 << 20
"""Bytes read, hashed and written at a time (1 MiB, one reused buffer that stays in a core's L2 cache)."""


_FICLONERANGE = 0x4020940D
"""Linux's ioctl that makes a range of one file share the blocks of a range of another (``_IOW(0x94, 13, 32)``)."""


def _clone_range(source_fd: int, out_fd: int, offset: int) -> None:
    import fcntl

    # struct file_clone_range {s64 src_fd; u64 src_offset; u64 src_length (0: to the end); u64 dest_offset}
    fcntl.ioctl(out_fd, _FICLONERANGE, struct.pack("=qQQQ", source_fd, 0, 0, offset))


def clone_into(sources: list[Path], out_fd: int) -> bool:
    """Make the empty file open as ``out_fd`` the concatenation of ``sources`` by sharing their blocks (a reflink).

    Returns:
        True when every source was cloned (the output still has to be fsynced and hashed); False, with the
        output truncated back to empty, when the file system or platform cannot (ext4, tmpfs, not Linux, two
        file systems, a part whose size is not a multiple of the block size except the last).
    """
    if not sys.platform.startswith("linux"):
        return False
    offset = 0
    try:
        for source in sources:
            with source.open("rb", buffering=0) as f:
                size = os.fstat(f.fileno()).st_size
                if size:
                    _clone_range(f.fileno(), out_fd, offset)
                offset += size
    except OSError:
        os.ftruncate(out_fd, 0)
        return False
    return True


def copy_and_hash(sources: list[Path], out_fd: int, *, total: int, progress: Progress | None = None) -> str:
    """Append ``sources`` in order to the file open as ``out_fd``, fsync it, and return the sha256 of what was written.

    Args:
        sources: The files to concatenate.
        out_fd: The output, open for writing (an empty temporary file).
        total: The expected size of the output, in bytes; passed to ``progress``.
        progress: Called with ``(bytes done, total)`` after each block.

    Returns:
        The hex sha256 of every byte written (hashed from the very buffer that was written).

    Raises:
        OSError: When a source cannot be read or the output cannot be written or fsynced.
    """
    digest = hashlib.sha256()
    buffer = memoryview(bytearray(_BLOCK))
    done = 0
    for source in sources:
        with source.open("rb", buffering=0) as f:
            while count := f.readinto(buffer):
                block = buffer[:count]
                digest.update(block)
                sent = 0
                while sent < count:
                    sent += os.write(out_fd, block[sent:])
                done += count
                if progress is not None:
                    progress(done, total)
    os.fsync(out_fd)
    return digest.hexdigest()


def sha256_of(path: Path, *, progress: Progress | None = None) -> str:
    """Return the hex sha256 of ``path``, read in 8 MiB blocks into one buffer; ``progress`` after each block."""
    digest = hashlib.sha256()
    buffer = memoryview(bytearray(_BLOCK))
    total, done = path.stat().st_size, 0
    with path.open("rb", buffering=0) as f:
        while count := f.readinto(buffer):
            digest.update(buffer[:count])
            done += count
            if progress is not None:
                progress(done, total)
    return digest.hexdigest()


def stamp_path(path: Path) -> Path:
    """Where the ``.verified`` stamp of ``path`` is: beside it, ``<name>.verified``."""
    return path.with_name(path.name + ".verified")


def stamp_matches(path: Path, sha256: str) -> bool:
    """Whether ``path``'s stamp records ``sha256`` with the file's current size and modification time."""
    try:
        stamp = json.loads(stamp_path(path).read_text(encoding="utf-8"))
        stat = path.stat()
    except (OSError, ValueError):
        return False
    return isinstance(stamp, dict) and stamp == {"sha256": sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def write_stamp(path: Path, sha256: str) -> None:
    """Record that ``path``, with its current size and modification time, was hashed to ``sha256``."""
    stat = path.stat()
    stamp = {"sha256": sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    tmp = path.with_name(f"{path.name}.verified.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(stamp), encoding="utf-8")
    os.replace(tmp, stamp_path(path))


def sync_directory(directory: Path) -> None:
    """Flush ``directory`` to disk (fsync): a rename into it survives a crash. A no-op where that is not possible."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # Windows
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
