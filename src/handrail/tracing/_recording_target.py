"""Where a Recorder writes: the checks made before a run starts, and a file that reports a write error once.

The checks: a path that can be written, and a file that is a recording (or empty) before it is appended to or
overwritten.
"""

from __future__ import annotations

import json
import os
import warnings
from typing import IO, Any

from handrail.errors import ConfigurationError, ConfigurationTypeError, RecordingError

__all__ = ["check_path", "check_recording", "Target"]


def check_path(path_or_file: Any) -> str | None:
    """The path of ``path_or_file`` (None for an open file), refused when it cannot be a recording's file."""
    if not isinstance(path_or_file, str | os.PathLike):
        if callable(getattr(path_or_file, "write", None)):
            return None
        raise ConfigurationTypeError(f"Recorder: path_or_file must be a path or an open text file, got "
                                     f"{type(path_or_file).__name__}.")  # fmt: skip
    path = os.fspath(path_or_file)
    if not isinstance(path, str) or not path:
        raise ConfigurationError("Recorder: the path is empty; give the path of a file.")
    if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise ConfigurationError(f"Recorder: the directory of {path!r} does not exist; create it first.")
    if os.path.isdir(path):
        raise ConfigurationError(f"Recorder: {path!r} is a directory; give the path of a file.")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise ConfigurationError(f"Recorder: {path!r} cannot be written (permission denied).")
    return path


def check_recording(path: str, *, overwrite: bool = False) -> None:
    """Refuse to append to (or overwrite) ``path`` unless it is empty, missing, or starts with a recording's header."""
    if not os.path.isfile(path):  # missing, or a device (/dev/null, /dev/full) or pipe: nothing to read
        return
    try:
        with open(path, encoding="utf-8") as stream:
            first = stream.readline(1 << 20)  # a header is short; a huge first line is no header
    except FileNotFoundError:
        return
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordingError(f"Recorder: {path!r} cannot be read to append to it ({exc}).") from None
    if not first.strip():
        return
    try:
        header = json.loads(first)
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("kind") != "header":
        done = "overwritten" if overwrite else "appended to"
        raise RecordingError(f"Recorder: {path!r} is not a handrail recording (its first line is no header); only "
                             f"a recording is {done}. Give another file, or remove it first.")  # fmt: skip


class Target:
    """A recording's file (a path opened for each line, or an open file) that warns once about a write error.

    The lines after a write error are dropped: the recording is incomplete, the run goes on.
    """

    def __init__(self, path: str | None, stream: IO[str] | None) -> None:
        self.path, self._stream, self.failed = path, stream, False

    def write(self, text: str, *, fresh: bool = False, strict: bool = False) -> None:
        """Write ``text`` (``fresh``: truncate the file first); ``strict``: raise a RecordingError on failure."""
        if self.failed:
            return
        try:
            if self.path is not None:
                with open(self.path, "w" if fresh else "a", encoding="utf-8") as stream:
                    stream.write(text)
            else:
                assert self._stream is not None
                self._stream.write(text)
                self._stream.flush()
        except OSError as exc:
            name = repr(self.path) if self.path is not None else "its file"
            if strict:
                raise RecordingError(f"Recorder: cannot write {name} ({exc.strerror or exc}).") from None
            self.failed = True
            warnings.warn(f"Recorder: writing {name} failed ({exc.strerror or exc}); the recording is incomplete "
                          f"from here (the run goes on).", RuntimeWarning, stacklevel=2)  # fmt: skip
