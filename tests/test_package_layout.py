"""The package's folders are its stages, and imports only point down: a piece knows no model,
a model knows no training loop or data set, nothing below ``viz`` knows a picture."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "transformer_lab"

# A stage may import the stages of lower rank (and itself), never one of the same or higher.
RANK = {
    "checks": 0,
    "hooks": 1,
    "device": 1,
    "nn": 2,
    "data": 2,
    "models": 3,
    "generation": 3,
    "pretrained": 4,
    "training": 5,
    "analysis": 6,
    "export": 6,
    "viz": 7,
    "exercises": 8,
}


def stage_of(path: Path) -> str:
    return path.relative_to(PACKAGE).with_suffix("").parts[0]


def imported_stages(path: Path) -> set[str]:
    """The stages a module imports from, lazy imports inside functions included."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            parts = node.module.split(".")
            if parts[0] != "transformer_lab":
                continue
            found.update(parts[1:2] or [a.name for a in node.names])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "transformer_lab" and len(parts) > 1:
                    found.add(parts[1])
    return found


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.parent != PACKAGE or p.name != "__init__.py")


def test_every_folder_and_top_level_module_is_a_known_stage():
    stages = {stage_of(p) for p in MODULES}
    assert stages == set(RANK), stages ^ set(RANK)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_down(path):
    stage = stage_of(path)
    upward = {s for s in imported_stages(path) - {stage} if RANK[s] >= RANK[stage]}
    assert not upward, f"{path.relative_to(PACKAGE)} ({stage}) imports {sorted(upward)}"


def test_models_know_no_training_loop_and_no_data():
    for path in (PACKAGE / "models").glob("*.py"):
        assert not imported_stages(path) & {"training", "data", "generation", "pretrained"}, path


def test_no_module_is_much_over_400_lines():
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in MODULES
        if (n := len(p.read_text().splitlines())) > 480
    }
    assert not long, long
