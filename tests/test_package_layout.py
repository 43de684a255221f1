"""The package's folders are its stages, and imports only point down: a piece knows no model,
a model knows no training loop or data set, nothing below ``viz`` knows a picture, and
``viz``'s figure machinery knows none of the pictures drawn for a chapter (``viz.chapters``).
Modules meet at named seams: none imports a private name of another, no imports go round in a
circle, and an idea shared by several stages (the ignore label) has one home."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from script_loader import load_script

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


# --- seams between modules: no private name crosses one, no import circle -------------------


def module_name(path: Path) -> str:
    """``transformer_lab.viz.layout`` for ``viz/layout.py``, the package for an ``__init__``."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


ALL_MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_from_package(path: Path) -> list[tuple[str, str]]:
    """``(module, name)`` for every ``from module import name`` of a package module in
    ``path`` (relative imports resolved, lazy imports inside functions included), and
    ``(module, "")`` for every ``import module``."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([module] if module else []))
            if module.split(".")[0] == "transformer_lab":
                found += [(module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(a.name, "") for a in node.names if a.name.split(".")[0] == "transformer_lab"]
    return found


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_imports() -> set[tuple[str, str, str]]:
    return {
        (importer, module, name)
        for importer, path in ALL_MODULES.items()
        for module, name in imports_from_package(path)
        if is_private(name)
    }


def test_no_module_imports_a_private_name_of_another():
    """A name with a leading underscore belongs to its module; what another module needs
    is a public name of its home (outside ``__all__`` when chapters do not call it)."""
    new = sorted(private_imports())
    assert not new, f"(importer, module, private name): {new}"


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (``from pkg import module`` counts as an
    import of the module, ``from module import name`` as one of ``module``)."""
    graph = {}
    for importer, path in ALL_MODULES.items():
        targets = set()
        for module, name in imports_from_package(path):
            full = f"{module}.{name}"
            target = full if full in ALL_MODULES else module
            if target in ALL_MODULES and target != importer:
                targets.add(target)
        graph[importer] = targets
    return graph


def circles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, as
    scripts/bench/package_report.py counts them)."""
    return {frozenset(c) for c in load_script("bench/package_report").circles(graph)}


def test_circles_are_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert circles(graph) == {frozenset("abc")}
    assert circles({"a": {"b"}, "b": set()}) == set()


def test_no_import_circle():
    """No module imports, directly or through others, a module that imports it."""
    new = sorted(sorted(c) for c in circles(import_graph()))
    assert not new, f"import circles: {new}"


def test_the_ignore_label_has_one_home():
    defined = set()
    for name, path in ALL_MODULES.items():
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, ast.Assign):
                continue
            value = node.value
            if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub):
                value = value.operand
                if isinstance(value, ast.Constant) and value.value == 100:
                    defined |= {(name, t.id) for t in node.targets if isinstance(t, ast.Name)}
    assert defined == {("transformer_lab.checks", "IGNORE_INDEX")}


# --- viz: the figure machinery and the chapters' pictures ----------------------------------

VIZ_CHAPTERS = "transformer_lab.viz.chapters"


def viz_chapters_imports(imports: list[tuple[str, str]]) -> list[str]:
    """Those of ``imports`` (``(module, name)`` pairs, as :func:`imports_from_package`
    gives them) that reach into ``viz.chapters``."""
    return [
        f"{module}.{name}" if name else module
        for module, name in imports
        if module == VIZ_CHAPTERS
        or module.startswith(VIZ_CHAPTERS + ".")
        or (module == "transformer_lab.viz" and name == "chapters")
    ]


def test_viz_machinery_imports_no_chapter_picture():
    """The pictures drawn for a chapter (``viz/chapters/``) may use ``viz``'s machinery
    (heatmaps, explorations, figures, listings); no module of the machinery imports them,
    lazy imports inside functions included."""
    chapters = PACKAGE / "viz" / "chapters"
    machinery = [p for p in sorted((PACKAGE / "viz").rglob("*.py")) if chapters not in p.parents]
    assert PACKAGE / "viz" / "__init__.py" in machinery and len(machinery) > 1
    found = {
        str(p.relative_to(PACKAGE)): viz_chapters_imports(imports_from_package(p))
        for p in machinery
    }
    assert not {k: v for k, v in found.items() if v}, found


def test_the_viz_chapters_check_sees_every_form_of_import():
    imports = [
        ("transformer_lab.viz", "chapters"),
        ("transformer_lab.viz.chapters.pictures", ""),
        ("transformer_lab.viz.chapters.architecture", "boxes"),
        ("transformer_lab.viz", "heatmaps"),
        ("transformer_lab.viz.heatmaps", "svg_heatmap"),
        ("transformer_lab.viz.chapters_elsewhere", "x"),
    ]
    assert viz_chapters_imports(imports) == [
        "transformer_lab.viz.chapters",
        "transformer_lab.viz.chapters.pictures",
        "transformer_lab.viz.chapters.architecture.boxes",
    ]
