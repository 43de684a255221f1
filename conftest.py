"""Project-wide pytest hooks: print how long each chapter notebook took to execute."""

from __future__ import annotations

from collections import defaultdict

_chapter_seconds: dict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report):
    if report.nodeid.split("::")[0].endswith(".ipynb"):
        _chapter_seconds[report.nodeid.split("::")[0]] += report.duration


def pytest_terminal_summary(terminalreporter):
    if not _chapter_seconds:
        return
    terminalreporter.section("chapter execution time (s)")
    for name, seconds in _chapter_seconds.items():
        terminalreporter.write_line(f"{seconds:7.1f}  {name}")
    terminalreporter.write_line(f"{sum(_chapter_seconds.values()):7.1f}  total")
