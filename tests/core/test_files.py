from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from handrail.core import _files as files
from handrail.core._files import FileLock, atomic_write, lock_path_for
from handrail.errors import ConfigurationError


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_exports() -> None:
    assert files.__all__ == ["FileLock", "atomic_write", "check_directory_path", "fsync_directory", "lock_path_for"]


# ---- atomic_write ----------------------------------------------------------------------------------------


def test_atomic_write_creates_the_file_with_mode_0600(tmp_path: Path) -> None:
    target = tmp_path / "snap.json"
    atomic_write(target, b'{"a": 1}')
    assert target.read_bytes() == b'{"a": 1}'
    assert mode(target) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snap.json"]  # no temp file left behind


def test_atomic_write_replaces_an_existing_file_and_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "snap.json"
    target.write_bytes(b"old content that is longer")
    target.chmod(0o644)
    atomic_write(str(target), b"new")
    assert target.read_bytes() == b"new"
    assert mode(target) == 0o600


def test_the_temp_file_is_a_hidden_tmp_file_next_to_the_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, int]] = []
    real_replace = os.replace

    def spy(src: str, dst: str) -> None:
        seen.append((src, mode(Path(src))))
        real_replace(src, dst)

    monkeypatch.setattr(files.os, "replace", spy)
    atomic_write(tmp_path / "a.json", b"x")
    [(temp, temp_mode)] = seen
    assert Path(temp).parent == tmp_path
    assert Path(temp).name.startswith(".a.json.")
    assert temp.endswith(".tmp")
    assert temp_mode == 0o600  # private from creation, not chmod-ed afterwards


@pytest.mark.parametrize("failing", ["fsync", "replace"])
def test_a_failed_write_leaves_the_old_file_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    target = tmp_path / "snap.json"
    target.write_bytes(b"old")

    def boom(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(files.os, failing, boom)
    with pytest.raises(OSError, match="disk full"):
        atomic_write(target, b"new")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snap.json"]


def test_a_missing_directory_raises_and_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        atomic_write(tmp_path / "missing" / "snap.json", b"x")
    assert list(tmp_path.iterdir()) == []


def test_a_directory_that_cannot_be_fsynced_is_fine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_fsync = os.fsync
    calls: list[int] = []

    def fsync(fd: int) -> None:
        calls.append(fd)
        if len(calls) > 1:  # the file's fsync succeeds, the directory's fails
            raise OSError("not supported")
        real_fsync(fd)

    monkeypatch.setattr(files.os, "fsync", fsync)
    atomic_write(tmp_path / "a", b"data")
    assert (tmp_path / "a").read_bytes() == b"data"
    assert len(calls) == 2


# ---- locks -----------------------------------------------------------------------------------------------


def test_lock_path_for_is_a_hidden_sidecar_in_the_same_directory() -> None:
    assert lock_path_for("/runs/a.json") == Path("/runs/.a.json.lock")
    assert lock_path_for(Path("rel/b")) == Path("rel/.b.lock")


def test_two_locks_on_one_file_exclude_each_other_in_one_process(tmp_path: Path) -> None:
    path = tmp_path / ".s.lock"
    first, second = FileLock(path), FileLock(path)
    assert first.acquire() is True
    assert first.locked
    assert second.acquire() is False
    assert not second.locked
    first.release()
    assert not first.locked
    assert second.acquire() is True
    second.release()


def test_the_lock_file_is_private_and_stays(tmp_path: Path) -> None:
    path = tmp_path / ".s.lock"
    with FileLock(path):
        assert mode(path) == 0o600
    assert path.exists()


def test_enter_raises_timeout_error_naming_the_path(tmp_path: Path) -> None:
    path = tmp_path / ".s.lock"
    with FileLock(path), pytest.raises(TimeoutError, match=str(path)), FileLock(path):
        pass


def test_a_positive_timeout_gives_up_while_the_lock_stays_held(tmp_path: Path) -> None:
    path = tmp_path / ".s.lock"
    with FileLock(path):
        assert FileLock(path, timeout=0.05).acquire() is False
        with pytest.raises(TimeoutError, match=r"within 0\.05 s"), FileLock(path, timeout=0.05):
            pass


def test_a_waiting_lock_gets_it_once_released(tmp_path: Path) -> None:
    path = tmp_path / ".s.lock"
    holder = FileLock(path)
    holder.acquire()
    results: list[bool] = []
    started = threading.Event()

    def wait() -> None:
        started.set()
        results.append(FileLock(path, timeout=None).acquire())

    thread = threading.Thread(target=wait)
    thread.start()
    started.wait()
    holder.release()
    thread.join(timeout=30)
    assert results == [True]


def test_a_polling_lock_gets_it_once_released(tmp_path: Path) -> None:
    path = tmp_path / ".s.lock"
    holder = FileLock(path)
    holder.acquire()
    waiter = FileLock(path, timeout=60)
    results: list[bool] = []
    thread = threading.Thread(target=lambda: results.append(waiter.acquire()))
    thread.start()
    holder.release()
    thread.join(timeout=30)
    assert results == [True]
    waiter.release()


def test_locks_exclude_other_processes(tmp_path: Path) -> None:
    path = tmp_path / ".s.lock"
    script = textwrap.dedent(
        f"""
        import sys
        from handrail.core._files import FileLock
        lock = FileLock({str(path)!r})
        assert lock.acquire()
        print("locked", flush=True)
        sys.stdin.readline()
        """
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline().strip() == "locked"
        assert FileLock(path).acquire() is False
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.wait(timeout=30) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stdin is not None:
            child.stdin.close()
        if child.stdout is not None:
            child.stdout.close()
    lock = FileLock(path)
    assert lock.acquire() is True  # the lock died with the process
    lock.release()


def test_acquiring_twice_with_one_object_is_a_mistake(tmp_path: Path) -> None:
    lock = FileLock(tmp_path / ".s.lock")
    with lock, pytest.raises(ConfigurationError, match="already held"):
        lock.acquire()


def test_releasing_a_lock_that_is_not_held_does_nothing(tmp_path: Path) -> None:
    lock = FileLock(tmp_path / ".s.lock")
    lock.release()
    assert lock.acquire()
    lock.release()
    lock.release()


@pytest.mark.parametrize("timeout", [-1, True, "5", float("nan")])
def test_bad_timeouts_are_refused(tmp_path: Path, timeout: object) -> None:
    with pytest.raises(ConfigurationError, match="timeout"):
        FileLock(tmp_path / ".s.lock", timeout=timeout)  # type: ignore[arg-type]


def test_a_lock_in_a_missing_directory_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        FileLock(tmp_path / "missing" / ".s.lock").acquire()


# ---- check_directory_path --------------------------------------------------------------------------------


def test_check_directory_path_accepts_a_directory_a_missing_one_and_a_link_to_one(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    for path in (tmp_path, tmp_path / "missing" / "deeper", tmp_path / "link", tmp_path / "link" / "new"):
        files.check_directory_path(path, "snapshot_file_path")


def test_check_directory_path_refuses_a_file_and_a_path_inside_one(tmp_path: Path) -> None:
    file = tmp_path / "f.json"
    file.write_text("{}")
    with pytest.raises(ConfigurationError, match=rf"^Breakpoint snapshot_file_path '{file}' is an existing file: it"):
        files.check_directory_path(file, "Breakpoint snapshot_file_path")
    with pytest.raises(ConfigurationError, match=rf"'{file}/a/b' is inside '{file}', which is a file: it must be a"):
        files.check_directory_path(file / "a" / "b", "snapshot_file_path")
