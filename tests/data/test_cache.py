"""The data sets' cache folder, and how every file of the package is written: in one step,
leaving no partial file when the disk fails, and saying which file and why."""

import errno

import pytest
from disk_faults import full_disk, leftovers, read_only

from transformer_lab.data.cache import cache_dir, check_writable, write_atomically


def test_cache_dir_follows_the_environment_and_exists(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_LAB_CACHE", str(tmp_path / "new" / "cache"))
    path = cache_dir()
    assert path == tmp_path / "new" / "cache" and path.is_dir()
    monkeypatch.delenv("TRANSFORMER_LAB_CACHE")
    assert cache_dir().name in ("cache", "transformer_lab") and cache_dir().is_dir()


def test_cache_dir_that_cannot_be_made_names_it_and_the_way_out(tmp_path, monkeypatch):
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("TRANSFORMER_LAB_CACHE", str(tmp_path / "a-file" / "cache"))
    with pytest.raises(OSError, match="cannot create the cache folder .*a-file/cache") as info:
        cache_dir()
    assert "set TRANSFORMER_LAB_CACHE to a writable folder" in str(info.value)


def test_write_atomically_writes_the_whole_file(tmp_path):
    path = write_atomically(tmp_path / "sub" / "f.bin", lambda file: file.write(b"abc" * 1000))
    assert path.read_bytes() == b"abc" * 1000 and leftovers(path.parent) == []


def test_a_full_disk_keeps_the_old_file_and_leaves_no_partial_one(tmp_path, monkeypatch):
    path = tmp_path / "f.bin"
    path.write_bytes(b"old")
    full_disk(monkeypatch, room=100)
    with pytest.raises(OSError) as info:
        write_atomically(path, lambda file: file.write(b"x" * 1000), hint="; free some space")
    assert info.value.errno == errno.ENOSPC
    message = str(info.value)
    assert f"cannot write {path}: No space left on device (the disk is full)" in message
    assert message.endswith("; free some space")
    assert path.read_bytes() == b"old" and leftovers(tmp_path) == []


def test_a_failing_writer_leaves_no_partial_file(tmp_path):
    def half_then_fail(file):
        file.write(b"half")
        raise RuntimeError("the writer broke")

    with pytest.raises(RuntimeError, match="the writer broke"):
        write_atomically(tmp_path / "f.bin", half_then_fail)
    assert list(tmp_path.iterdir()) == []


def test_a_read_only_folder_is_named_with_its_cause(tmp_path, monkeypatch):
    folder = tmp_path / "ro"
    read_only(folder, monkeypatch)
    with pytest.raises(PermissionError) as info:
        write_atomically(folder / "f.json", lambda file: file.write(b"{}"))
    assert f"cannot write {folder / 'f.json'}: Permission denied" in str(info.value)
    with pytest.raises(PermissionError, match=f"cannot write in {folder}: Permission denied"):
        check_writable(folder)
    folder.chmod(0o755)
    assert leftovers(folder) == [] and not (folder / "f.json").exists()


def test_check_writable_makes_the_folder_and_leaves_nothing(tmp_path):
    folder = check_writable(tmp_path / "a" / "b")
    assert folder.is_dir() and list(folder.iterdir()) == []


def _ended_pid() -> int:
    """The id of a process that has just ended on this machine."""
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_folder_lock_refuses_a_second_job_and_is_removed_after(tmp_path):
    from transformer_lab.data.cache import LOCK_NAME, folder_lock

    with folder_lock(tmp_path, "job one"):
        assert (tmp_path / LOCK_NAME).is_file()
        refused = pytest.raises(RuntimeError, match=r"is in use by job one \(process \d+ on ")
        with refused, folder_lock(tmp_path, "job two"):
            pass
    assert not (tmp_path / LOCK_NAME).exists()


def test_a_stale_lock_is_taken_over_and_its_leftovers_removed(tmp_path, capsys):
    import json
    import socket

    from transformer_lab.data.cache import LOCK_NAME, folder_lock

    dead = _ended_pid()
    lock = tmp_path / LOCK_NAME
    lock.write_text(json.dumps({"pid": dead, "host": socket.gethostname(), "started": 0}))
    leftover = tmp_path / f"checkpoint.pt.{dead}-0123abcd.tmp"  # a killed save's temporary file
    leftover.write_bytes(b"partial")
    kept = tmp_path / "notes.tmp"  # not one of write_atomically's names: left alone
    kept.write_text("mine")
    with folder_lock(tmp_path):
        assert json.loads(lock.read_text())["pid"] != dead
    assert (
        f"taking over the lock of a job that has ended (process {dead}" in capsys.readouterr().err
    )
    assert not leftover.exists() and kept.exists()


def test_a_lock_from_another_host_is_refused_with_how_to_clear_it(tmp_path):
    import json

    from transformer_lab.data.cache import LOCK_NAME, folder_lock

    (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": 1, "host": "elsewhere", "started": 0}))
    refused = pytest.raises(
        RuntimeError, match=f"if that job is over, delete {tmp_path / LOCK_NAME}"
    )
    with refused, folder_lock(tmp_path):
        pass
