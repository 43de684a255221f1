"""Helpers shared by the browser tests (fixtures are in conftest.py).

Chromium is Debian's (``/usr/bin/chromium``, or ``TRANSFORMER_LAB_CHROMIUM``), driven by the
``playwright`` Python package. Without either, every test here is skipped with a message
naming what to install, unless ``TRANSFORMER_LAB_REQUIRE_BROWSER=1`` (set by ``.ci/run``),
in which case they fail. Each browser runs with a fresh profile, and every request a page
makes is recorded: only 127.0.0.1, ``file:``, ``data:``, ``blob:`` and ``about:`` URLs are
allowed, anything else is aborted and recorded in a :class:`RequestLog`.
"""

from __future__ import annotations

import http.server
import os
import shutil
import socket
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"
ARTIFACTS = ROOT / "artifacts"
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
LOCAL_SCHEMES = {"file", "data", "blob", "about", "chrome-error"}
LOCAL_HOSTS = {"127.0.0.1"}

sys.path.insert(0, str(ROOT / "tests"))
from script_loader import load_script  # noqa: E402, F401  (the tests' one way to load a script)


def require_browser() -> bool:
    return os.environ.get("TRANSFORMER_LAB_REQUIRE_BROWSER", "") not in ("", "0")


def missing(reason: str):
    """Skip (a reader's laptop) or fail (CI, TRANSFORMER_LAB_REQUIRE_BROWSER=1)."""
    if require_browser():
        pytest.fail(f"{reason} (TRANSFORMER_LAB_REQUIRE_BROWSER is set)", pytrace=False)
    pytest.skip(reason)


def chromium_path() -> str | None:
    """Debian's Chromium, or the browser named by TRANSFORMER_LAB_CHROMIUM when it is set."""
    chosen = os.environ.get("TRANSFORMER_LAB_CHROMIUM")
    candidates = [chosen] if chosen else ["/usr/bin/chromium", shutil.which("chromium")]
    for candidate in candidates:
        if candidate and Path(candidate).exists():
            return candidate
    return None


def is_local(url: str) -> bool:
    parsed = urlparse(url)
    if parsed.scheme in LOCAL_SCHEMES:
        return True
    return parsed.scheme in ("http", "https", "ws", "wss") and parsed.hostname in LOCAL_HOSTS


class RequestLog:
    """Every URL the pages of one browser context asked for, in order."""

    def __init__(self):
        self.urls: list[str] = []

    def external(self) -> list[str]:
        return [url for url in self.urls if not is_local(url)]


class PageProblems:
    """Console errors and uncaught exceptions of one page."""

    def __init__(self, page):
        self.errors: list[str] = []
        page.on(
            "console",
            lambda msg: (
                self.errors.append(f"console.{msg.type}: {msg.text} @ {msg.location}")
                if msg.type == "error"
                else None
            ),
        )
        page.on("pageerror", lambda exc: self.errors.append(f"uncaught: {exc}"))


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_lab(url: str, process, log_path: Path, timeout_s: float = 180) -> None:
    """Wait until the JupyterLab started as ``process`` answers on ``url``; fail with the end
    of its log if it exits or stays silent for ``timeout_s``."""
    import time
    import urllib.request

    deadline = time.monotonic() + timeout_s
    while True:
        if process.poll() is not None:
            tail = log_path.read_text()[-4000:]
            pytest.fail(f"JupyterLab exited with {process.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(f"{url}/api/status", timeout=5) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            tail = log_path.read_text()[-4000:]
            pytest.fail(f"JupyterLab did not answer on {url} within {timeout_s:.0f} s:\n{tail}")
        time.sleep(1)


def lab_env(home: Path) -> dict[str, str]:
    """The environment of a test's own JupyterLab: settings, workspaces and runtime files
    under ``home``, so the reader's are not touched."""
    return {
        **os.environ,
        "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
    }


def lab_args(port: int) -> list[str]:
    """Command-line settings of a test's JupyterLab: 127.0.0.1 at ``port``, no token, no
    browser, no news or update checks."""
    return [
        "--no-browser",
        f"--port={port}",
        "--ServerApp.ip=127.0.0.1",
        "--ServerApp.port_retries=0",
        "--IdentityProvider.token=",
        "--ServerApp.password=",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
