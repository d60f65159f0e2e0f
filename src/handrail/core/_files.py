"""Durable files: atomic writes (temp file, fsync, rename) and advisory locks between processes (POSIX).

Examples:
    >>> import pathlib, tempfile
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "state.json"
    >>> atomic_write(target, b'{"ok": true}')
    >>> target.read_bytes()
    b'{"ok": true}'
    >>> with FileLock(lock_path_for(target)) as lock:
    ...     FileLock(lock_path_for(target)).acquire()  # a second lock on the same file is refused
    False
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
import uuid
from pathlib import Path
from types import TracebackType

from handrail.errors import ConfigurationError

__all__ = ["FileLock", "atomic_write", "check_directory_path", "fsync_directory", "lock_path_for"]

_POLL_SECONDS = 0.01


def check_directory_path(path: str | os.PathLike[str], what: str) -> None:
    """Refuse a path that cannot be (or become) a directory: an existing file, or a path inside a file.

    A directory that does not exist yet is fine: it is created when the first file is written into it.

    Args:
        path: The directory.
        what: What the path was given as, for the message (``"Breakpoint snapshot_file_path"``).

    Raises:
        ConfigurationError: Naming ``what``, the path and the file in the way.
    """
    given = os.fspath(path)
    target = Path(os.path.abspath(given))
    for candidate in (target, *target.parents):
        if not os.path.lexists(candidate):
            continue
        if os.path.isdir(candidate):
            return
        where = "is an existing file" if candidate == target else f"is inside {str(candidate)!r}, which is a file"
        raise ConfigurationError(
            f"{what} {given!r} {where}: it must be a directory, as snapshot files are written into it (a "
            f"missing directory is created)."
        )


def fsync_directory(directory: str | os.PathLike[str]) -> None:
    """Flush a directory entry change (a rename) to disk; ignored where the platform refuses."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace the file at ``path`` with ``data`` so that readers see the old file or the new one, never a mix.

    The data goes to a temp file in the same directory (``.<name>.<random>.tmp``, created with mode 0o600),
    which is flushed, fsynced and renamed onto ``path``; then the directory is fsynced (best effort). The
    file ends up with mode 0o600 whatever mode an earlier file at ``path`` had.

    Args:
        path: The file to write; its directory must exist.
        data: The complete new content.

    Raises:
        OSError: When the directory does not exist or the write, fsync or rename fails; the temp file is
            removed and the file at ``path`` is left as it was.
    """
    target = os.path.abspath(os.fspath(path))
    directory, name = os.path.split(target)
    temp = os.path.join(directory, f".{name}.{uuid.uuid4().hex[:12]}.tmp")
    fd = os.open(temp, os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        with open(fd, "wb", closefd=True) as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    fsync_directory(directory)


def lock_path_for(path: str | os.PathLike[str]) -> Path:
    """Return the sidecar lock file of ``path``: ``<dir>/.<file name>.lock``.

    Args:
        path: The file the lock protects (it need not exist).

    Returns:
        The lock file's path, in the same directory.

    Examples:
        >>> str(lock_path_for("/runs/a.json"))
        '/runs/.a.json.lock'
    """
    target = Path(path)
    return target.with_name(f".{target.name}.lock")


class FileLock:
    """An exclusive advisory lock (``fcntl.flock``) on a lock file, shared by processes and threads.

    The lock belongs to the open file description, so two ``FileLock`` objects on one file exclude each
    other even inside one process. The lock file is created (mode 0o600) when first acquired and is never
    deleted (deleting it would let two holders lock two different files). One ``FileLock`` object is meant
    for one thread at a time.

    Args:
        path: The lock file (see :func:`lock_path_for`); its directory must exist.
        timeout: Seconds to wait for the lock: ``0`` tries once, ``None`` waits for as long as it takes,
            a positive number polls until that many seconds have passed.

    Raises:
        ConfigurationError: For a negative or non-numeric timeout.
    """

    def __init__(self, path: str | os.PathLike[str], timeout: float | None = 0) -> None:
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout >= 0
        ):
            raise ConfigurationError(f"FileLock timeout must be None or a number of seconds >= 0, got {timeout!r}.")
        self.path = Path(path)
        """The lock file."""
        self.timeout = timeout
        """Seconds to wait in :meth:`acquire` (0: try once; None: wait forever)."""
        self._fd: int | None = None

    @property
    def locked(self) -> bool:
        """True while this object holds the lock."""
        return self._fd is not None

    def acquire(self) -> bool:
        """Take the lock, waiting as ``timeout`` says.

        Returns:
            True when the lock is now held by this object, False when another holder kept it past the timeout.

        Raises:
            ConfigurationError: When this object already holds the lock.
            OSError: When the lock file cannot be opened (e.g. its directory does not exist).
        """
        if self._fd is not None:
            raise ConfigurationError(f"The lock {self.path} is already held by this FileLock; release it first.")
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            acquired = self._lock(fd)
        except BaseException:
            os.close(fd)
            raise
        if not acquired:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def _lock(self, fd: int) -> bool:
        if self.timeout is None:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return True
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                time.sleep(min(_POLL_SECONDS, remaining))

    def release(self) -> None:
        """Release the lock (closing the lock file); does nothing when it is not held."""
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def __enter__(self) -> FileLock:
        """Acquire the lock.

        Raises:
            TimeoutError: Naming the lock file, when another holder kept it past the timeout.
        """
        if not self.acquire():
            waited = "" if not self.timeout else f" within {self.timeout:g} s"
            raise TimeoutError(f"Could not lock {self.path}{waited}: another process or FileLock holds it.")
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"FileLock({str(self.path)!r}, timeout={self.timeout!r}, locked={self.locked})"
