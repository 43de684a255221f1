"""Disks that fail, for the tests of what the package writes: a read-only folder, and a
disk that fills up part-way through a file.

Every file the package writes goes through ``transformer_lab.data.cache`` (``_new_file``
creates it, ``_open`` writes it), which is where these faults are put. A read-only folder
is made with ``chmod``; where that does not stop this process (tests running as root),
creating a file in the folder is refused as the kernel would refuse it."""

from __future__ import annotations

import errno
import io
import os
from pathlib import Path

from transformer_lab.data import cache


def read_only(folder: Path, monkeypatch) -> None:
    """Make ``folder`` (created if missing) read-only for the rest of the test."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o555)
    probe = folder / ".probe"
    try:
        probe.touch()
    except PermissionError:
        return  # the permissions hold
    probe.unlink()
    real = cache._new_file

    def refuse(path):
        if Path(path).resolve().parent == folder.resolve():
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real(path)

    monkeypatch.setattr(cache, "_new_file", refuse)


def writable_again(folder: Path) -> None:
    folder.chmod(0o755)


def full_disk(monkeypatch, room: int) -> None:
    """Let every file the package writes hold ``room`` bytes: the write that would go past
    them writes what fits, then fails with ENOSPC, as a full disk does."""

    class Full(io.FileIO):
        def write(self, data):
            data = bytes(data)
            fits = max(0, room - self.tell())
            if len(data) > fits:
                super().write(data[:fits])
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return super().write(data)

    monkeypatch.setattr(cache, "_open", lambda fd: Full(fd, "wb"))


def leftovers(folder: Path) -> list[str]:
    """Temporary files left in ``folder``."""
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))
