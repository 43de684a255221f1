"""Fixtures for the reader's-path tests in headless Chromium (``make browser``).

See ``browser_support.py`` for what is allowed to load and how a missing browser is handled.
"""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_support import (
    ARTIFACTS,
    CHROMIUM_FLAGS,
    HTML,
    QuietHandler,
    RequestLog,
    chromium_path,
    is_local,
    missing,
)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if Path(str(item.fspath)).parent == Path(__file__).parent:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def playwright_api():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing(
            "the browser tests need the playwright Python package: "
            "pip install playwright (it comes with `pip install -e .[test]`)"
        )
    executable = chromium_path()
    if executable is None:
        missing(
            "the browser tests need Chromium at /usr/bin/chromium: "
            "apt-get install chromium (Debian/Ubuntu), or set TRANSFORMER_LAB_CHROMIUM"
        )
    manager = sync_playwright().start()
    try:
        yield manager, executable
    finally:
        manager.stop()


@pytest.fixture(scope="module")
def browser_context(playwright_api, tmp_path_factory):
    """A Chromium context with a fresh user-data-dir that records and blocks remote requests."""
    manager, executable = playwright_api
    profile = tmp_path_factory.mktemp("chromium-profile")
    context = manager.chromium.launch_persistent_context(
        str(profile),
        executable_path=executable,
        headless=True,
        args=CHROMIUM_FLAGS,
        viewport={"width": 1280, "height": 900},
        service_workers="block",
    )
    log = RequestLog()
    context.on("request", lambda request: log.urls.append(request.url))

    def route(route_):
        if is_local(route_.request.url):
            route_.continue_()
        else:
            route_.abort()

    context.route("**/*", route)
    context.request_log = log
    try:
        yield context
    finally:
        context.close()


@pytest.fixture(scope="session")
def site_url() -> Iterator[str]:
    """``_build/html`` served on 127.0.0.1 at a free port."""
    if not (HTML / "index.html").exists():
        missing(f"no built site in {HTML}: run `make book` first")
    handler = functools.partial(QuietHandler, directory=str(HTML))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
