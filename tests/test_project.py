"""The project's setup files agree with each other: dependencies, the two README
commands, CI, notebook pairing and lint configuration."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    from pip._vendor import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def as_specs(lines) -> dict[str, str]:
    """{normalised name: specifier set as a canonical string} for requirement lines."""
    specs = {}
    for line in lines:
        req = Requirement(line)
        name = canonicalize_name(req.name)
        assert name not in specs, f"{name} is listed twice"
        specs[name] = ",".join(sorted(str(s) for s in req.specifier))
    return specs


def makefile_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    targets = set()
    for match in re.finditer(r"^([A-Za-z0-9_.\- ]+):(?!=)", text, flags=re.MULTILINE):
        targets.update(match.group(1).split())
    return targets


def test_layout():
    for path in [
        "book", "transformer_lab", "tests", "environment.yml", "_config.yml", "_toc.yml",
        "README.md", "pyproject.toml", "jupytext.toml", "LICENSE", ".ci/run",
    ]:  # fmt: skip
        assert (ROOT / path).exists(), f"{path} is missing"
    assert "MIT License" in (ROOT / "LICENSE").read_text()


def test_environment_yml_matches_pyproject():
    project = pyproject()["project"]
    expected = as_specs(project["dependencies"] + project["optional-dependencies"]["test"])
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_sections = [d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(pip_sections) == 1, "environment.yml needs exactly one pip: section"
    pip_lines = [line for line in pip_sections[0] if not line.startswith("-e")]
    assert "-e ." in pip_sections[0], "environment.yml must install the package itself (-e .)"
    got = as_specs(pip_lines)
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    assert not missing, f"in pyproject.toml but not environment.yml: {missing}"
    assert not extra, f"in environment.yml but not pyproject.toml: {extra}"
    differ = {n: (expected[n], got[n]) for n in expected if expected[n] != got[n]}
    assert not differ, f"specs differ (pyproject, environment.yml): {differ}"
    # every dependency has a version range, and the python version agrees
    assert all(expected.values()), [n for n, s in expected.items() if not s]
    python = [d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python")]
    assert python == ["python" + project["requires-python"]]


def test_readme_opens_with_the_two_commands():
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```[a-z]*\n(.*?)```", readme, flags=re.DOTALL)
    assert blocks, "README has no code block"
    first = blocks[0]
    commands = [line.split("#")[0].strip() for line in first.splitlines()]
    assert "make lab" in commands and "make test" in commands, first
    targets = makefile_targets()
    assert {"lab", "test", "bench"} <= targets, sorted(targets)


def test_ci_runs_the_test_command():
    lines = (ROOT / ".ci/run").read_text().splitlines()
    code = [line.split("#")[0] for line in lines if not line.lstrip().startswith("#")]
    assert any(re.search(r"\bmake test\b", line) for line in code)
    assert (ROOT / ".ci/run").stat().st_mode & 0o111, ".ci/run must be executable"


def test_jupytext_pairs_ipynb_with_myst():
    config = tomllib.loads((ROOT / "jupytext.toml").read_text())
    formats = config["formats"].split(",")
    assert sorted(formats) == ["ipynb", "md:myst"]


def test_ruff_is_configured():
    tool = pyproject()["tool"]
    assert tool["ruff"]["line-length"] == 100
    assert {"E", "F", "I"} <= set(tool["ruff"]["lint"]["select"])
    makefile = (ROOT / "Makefile").read_text()
    assert "ruff check" in makefile and "ruff format --check" in makefile
    # the test command runs the lint (ruff) and the unit tests
    test_rule = re.search(r"^test:(.*)$", makefile, flags=re.MULTILINE)
    assert test_rule, "Makefile has no test target"
    assert {"lint", "unit"} <= set(test_rule.group(1).split())
