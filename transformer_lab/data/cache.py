"""Where the data sets keep what takes time to build, so that it is built once, and how
every file of the package is written.

The number pairs of :mod:`.numbers` (written out by ``num2words``), the BPE tokenizer of
:mod:`.shakespeare` and the plays encoded with it are written to one folder,
:func:`cache_dir`, each data set naming its files after itself (``numbers_en_de_...json``,
``shakespeare_bpe_1024_...json``) with a hash of what went into them, so a change of
data or settings builds a new file. A missing file is built again, identically.

Every file the package writes (these caches, training checkpoints, the tiny BERT) goes
through :func:`write_atomically`: into a new file beside the target, which then replaces
the target in one step. A reader sees the old file or the whole new one, never half of
one; a failure (a full disk, a read-only folder) leaves no partial file behind and is
reported as an ``OSError`` that names the file and the cause in words.
:func:`check_writable` asks the same question before a long job starts.

Outside ``__all__``, for the other modules that write files: :func:`disk_error` (an
``OSError`` told plainly) and :func:`temporary_name` (the name a file is written under
before it replaces its target).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from transformer_lab.checks import instance_of

__all__ = ["cache_dir", "write_atomically", "check_writable", "folder_lock", "LOCK_NAME"]

CACHE_HINT = "; set TRANSFORMER_LAB_CACHE to a writable folder with free space"

_CAUSES = {
    errno.EACCES: "no permission to write there",
    errno.EPERM: "no permission to write there",
    errno.EROFS: "the file system is read-only",
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
}


def cache_dir() -> Path:
    """The cache folder, created if missing: ``$TRANSFORMER_LAB_CACHE`` when set, else
    ``artifacts/cache`` in a source checkout (git-ignored), else ``~/.cache/transformer_lab``."""
    checkout = Path(__file__).resolve().parents[2]
    if os.environ.get("TRANSFORMER_LAB_CACHE"):
        path = Path(os.environ["TRANSFORMER_LAB_CACHE"])
    elif (checkout / "pyproject.toml").exists():
        path = checkout / "artifacts" / "cache"
    else:
        path = Path.home() / ".cache" / "transformer_lab"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise disk_error(err, path, "create the cache folder", CACHE_HINT) from err
    return path


def disk_error(err: OSError, path, doing: str = "write", hint: str = "") -> OSError:
    """``err`` told plainly: what could not be done to which file, and why (an ``OSError``
    of the same kind: ``PermissionError`` for a read-only folder)."""
    if err.errno is None:
        return OSError(f"cannot {doing} {path}: {err}{hint}")
    cause = os.strerror(err.errno)
    if err.errno in _CAUSES:
        cause += f" ({_CAUSES[err.errno]})"
    return OSError(err.errno, f"cannot {doing} {path}: {cause}{hint}")


def _new_file(path: Path) -> int:
    """Create ``path``, which must not exist yet, for writing; return its descriptor."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)


def _open(fd: int) -> BinaryIO:
    return os.fdopen(fd, "wb")


def temporary_name(path: Path) -> Path:
    """A new name beside ``path`` for a file being written (``write_atomically``'s kind)."""
    return path.with_name(f"{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")


def write_atomically(
    path: str | os.PathLike, write: Callable[[BinaryIO], object], *, hint: str = ""
) -> Path:
    """Write the file ``path`` in one step and return it as a ``Path``.

    ``write(file)`` writes the contents into a new temporary file beside ``path`` (opened
    for bytes); once it has returned and the data are on the disk, the temporary file
    replaces ``path`` (``os.replace``). If anything fails, the temporary file is removed
    and ``path`` is left as it was; an ``OSError`` (read-only folder, full disk) is raised
    again naming ``path`` and the cause, followed by ``hint``.
    """
    instance_of(path, (str, os.PathLike), "path", "a file path")
    if not callable(write):
        raise TypeError(f"write must be a function file -> None, got {type(write).__name__}")
    instance_of(hint, str, "hint")
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"path {path} is a folder; give the path of a file inside it")
    tmp = temporary_name(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = _new_file(tmp)
    except OSError as err:
        raise disk_error(err, path, hint=hint) from err
    try:
        with _open(fd) as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        disk = _os_error_in(err)
        if disk is not None:
            raise disk_error(disk, path, hint=hint) from err
        raise
    return path


def _os_error_in(err: BaseException | None) -> OSError | None:
    """The ``OSError`` behind ``err``: itself, or one it was raised while handling (a
    writer such as ``torch.save`` may fail again as it cleans up after a full disk)."""
    seen = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, OSError):
            return err
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return None


def check_writable(folder: str | os.PathLike, *, hint: str = "") -> Path:
    """Make sure files can be written in ``folder`` (created if missing) before a long job
    that will write there starts: create and remove a small file. Returns the folder as a
    ``Path``; raises an ``OSError`` naming the folder and the cause, then ``hint``."""
    instance_of(folder, (str, os.PathLike), "folder", "a folder path")
    instance_of(hint, str, "hint")
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{folder} is a file, not a folder")
    probe = temporary_name(folder / ".write-test")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        os.close(_new_file(probe))
        probe.unlink()
    except OSError as err:
        raise disk_error(err, folder, "write in", hint) from err
    return folder


LOCK_NAME = ".run.lock"
_TMP = re.compile(r"\.(\d+)-[0-9a-f]{8}\.tmp$")  # the temporary names of write_atomically


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this machine (one we may not signal runs too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def folder_lock(folder: str | os.PathLike, what: str = "a training run") -> Iterator[Path]:
    """Hold ``folder`` for one job: a lock file (:data:`LOCK_NAME`) holding this process's
    id and host is created, or the job is refused with a ``RuntimeError`` naming the job that
    holds it. A lock left by a process that has ended on this machine is taken over, with a
    message, and the temporary files that process's interrupted writes left behind
    (:func:`write_atomically`) are removed. The lock is removed when the block ends. A lock
    from another host cannot be checked: it is refused, and the message says how to clear
    it if that job is over."""
    instance_of(folder, (str, os.PathLike), "folder", "a folder path")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    lock, host = folder / LOCK_NAME, socket.gethostname()
    mine = {"pid": os.getpid(), "host": host, "started": time.time(), "what": what}
    for _ in range(3):  # a stale lock is removed, then taken; a racing job may win it
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                other = json.loads(lock.read_text())
                pid, other_host = int(other["pid"]), str(other["host"])
            except (OSError, ValueError, KeyError, TypeError):
                other, pid, other_host = None, None, None
            if other is not None and pid is not None and (other_host != host or _alive(pid)):
                since = time.strftime("%H:%M:%S", time.localtime(other.get("started", 0)))
                clear = "" if other_host == host else f"; if that job is over, delete {lock}"
                raise RuntimeError(
                    f"{folder} is in use by {other.get('what', 'another job')} (process {pid} "
                    f"on {other_host}, since {since}): wait for it to end or choose another "
                    f"folder{clear}"
                ) from None
            print(
                f"{folder}: taking over the lock of a job that has ended "
                f"(process {pid} on {other_host})"
                if pid
                else f"{folder}: replacing a damaged lock",
                file=sys.stderr,
            )
            for leftover in folder.glob("*.tmp"):
                m = _TMP.search(leftover.name)
                if m and not _alive(int(m[1])):
                    leftover.unlink(missing_ok=True)
            lock.unlink(missing_ok=True)
            continue
        with os.fdopen(fd, "w") as file:
            json.dump(mine, file)
        break
    else:
        raise RuntimeError(f"{folder}: could not take the lock {lock}; another job keeps taking it")
    try:
        yield folder
    finally:
        try:
            if json.loads(lock.read_text()).get("pid") == os.getpid():
                lock.unlink()
        except (OSError, ValueError):
            pass
