"""One progress line per training run, in a terminal and in a notebook alike.

In a terminal the line is tqdm's, redrawn in place on stderr. In a notebook kernel the same
line is one display output that is updated in place (an IPython display handle), so an
executed notebook keeps exactly one line, the last one, and so does the static site built
from it; the stream of carriage-return redraws a plain tqdm bar leaves would otherwise
show every refresh as an output of its own.
"""

from __future__ import annotations

import sys
import time

__all__ = ["progress_bar"]


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    ip = get_ipython()
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


class Progress:
    """A progress line updated in place through an IPython display handle."""

    def __init__(self, total: int | None, desc: str, mininterval: float = 1.0):
        from IPython.display import display

        self.total, self.desc, self.n = total, desc, 0
        self.postfix: dict[str, object] = {}
        self.mininterval = mininterval
        self.start = time.perf_counter()
        self._last = -float("inf")
        self._handle = display({"text/plain": self._line()}, raw=True, display_id=True)

    def _line(self) -> str:
        from tqdm.std import tqdm

        elapsed = time.perf_counter() - self.start
        postfix = ", ".join(f"{k}={v}" for k, v in self.postfix.items()) or None
        return tqdm.format_meter(
            self.n, self.total, elapsed, ncols=80, prefix=self.desc, postfix=postfix
        )

    def _refresh(self, force: bool = False) -> None:
        now = time.perf_counter()
        if force or now - self._last >= self.mininterval:
            self._last = now
            self._handle.update({"text/plain": self._line()}, raw=True)

    def update(self, n: int = 1) -> None:
        self.n += n
        self._refresh()

    def set_postfix(self, refresh: bool = True, **values) -> None:
        self.postfix = dict(values)
        if refresh:
            self._refresh()

    def close(self) -> None:
        self._refresh(force=True)


def progress_bar(total: int | None, desc: str, mininterval: float = 1.0):
    """A notebook :class:`Progress` inside a kernel, tqdm on stderr anywhere else."""
    if total is not None and (isinstance(total, bool) or not isinstance(total, int) or total < 0):
        raise ValueError(f"total must be None or a non-negative int, got {total!r}")
    if not isinstance(desc, str):
        raise TypeError(f"desc must be a string, got {type(desc).__name__}")
    if _in_notebook():
        return Progress(total, desc, mininterval)
    from tqdm.std import tqdm

    return tqdm(total=total, desc=desc, file=sys.stderr, mininterval=mininterval, leave=True)
