"""The project's maps stay true: the table of ``scripts/experiments/README.md`` (every script,
the chapters that quote it, its records and the tests that re-derive them) and README.md's
table of the package's stages (every stage folder and root module, each folder's modules,
and the ranks of ``tests/test_package_layout.py``)."""

from __future__ import annotations

import re
from pathlib import Path

from test_package_layout import RANK

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "transformer_lab"
ASSETS = PACKAGE / "assets"
EXPERIMENTS = ROOT / "scripts" / "experiments"
CODE = re.compile(r"`([^`]+)`")
MODULE_NAME = re.compile(r"[a-z_][a-z0-9_]*(?:/[a-z_][a-z0-9_]*)*")  # a subfolder's: folder/name
CHAPTER_MODULE = re.compile(r"ch\d\d_[a-z0-9_]+")
LINKED = ("book/", "tests/", "transformer_lab/", "scripts/")


def table(path: Path, header: str) -> list[list[str]]:
    """The cells of each row of the Markdown table in ``path`` whose header row begins with
    ``header``."""
    lines = path.read_text().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(header)]
    assert len(starts) == 1, f"{path.name}: {len(starts)} tables begin with {header!r}"
    rows = []
    for line in lines[starts[0] + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    assert rows, f"{path.name}: the table {header!r} has no rows"
    return rows


def code(cell: str) -> list[str]:
    return CODE.findall(cell)


# --- scripts/experiments/README.md ---------------------------------------------------------

EXPERIMENT_COLUMNS = ["script", "measures", "chapters", "records", "tests", "command", "cost"]


def experiment_rows() -> dict[str, dict[str, str]]:
    rows = {}
    for cells in table(EXPERIMENTS / "README.md", "| script |"):
        row = dict(zip(EXPERIMENT_COLUMNS, cells, strict=True))
        (script,) = code(row["script"])
        assert script not in rows, f"{script} has two rows"
        rows[script] = row
    return rows


def test_every_experiment_script_has_a_row():
    scripts = {p.name for p in EXPERIMENTS.glob("*.py")}
    named = set(experiment_rows())
    assert not scripts - named, f"scripts with no row: {sorted(scripts - named)}"
    assert not named - scripts, f"rows of no script: {sorted(named - scripts)}"


def test_every_path_the_experiments_table_names_exists():
    for script, row in experiment_rows().items():
        for column in ("chapters", "records", "tests", "command"):
            for path in code(row[column]):
                if path.startswith(LINKED):
                    assert (ROOT / path).exists(), f"{script}: {column} names {path}"
        chapters = code(row["chapters"])
        assert chapters, f"{script}: no chapter"
        assert all(re.fullmatch(r"book/\d\d_\w+\.md", c) for c in chapters), chapters
        tests = code(row["tests"])
        assert tests and all(t.startswith("tests/") for t in tests), f"{script}: {tests}"
        assert f"scripts/experiments/{script}" in row["command"], f"{script}: {row['command']}"
        records = [r for r in code(row["records"]) if r.startswith("transformer_lab/assets/")]
        assert records or row["records"].startswith("none"), f"{script}: {row['records']}"


def test_every_named_test_reads_its_script():
    for script, row in experiment_rows().items():
        for test in code(row["tests"]):
            path = ROOT / test
            assert path.is_file(), f"{script}: no test {test}"
            assert Path(script).stem in path.read_text(), f"{test} never names {script}"


def written_by_a_script(record: Path) -> bool:
    """A JSON file of the assets whose name a script writes, or that names its script."""
    scripts = "\n".join(p.read_text() for p in EXPERIMENTS.glob("*.py"))
    return record.name in scripts or "scripts/experiments/" in record.read_text()


def test_every_record_in_the_assets_is_named():
    named = [p for row in experiment_rows().values() for p in code(row["records"])]
    records = [p for p in sorted(ASSETS.rglob("*.json")) if written_by_a_script(p)]
    assert records, "no record found in transformer_lab/assets"
    unnamed = []
    for record in records:
        path = f"transformer_lab/assets/{record.relative_to(ASSETS).as_posix()}"
        if not any(path == n or (n.endswith("/") and path.startswith(n)) for n in named):
            unnamed.append(path)
    assert not unnamed, f"records named by no row of scripts/experiments/README.md: {unnamed}"


# --- README.md: where each stage lives -----------------------------------------------------


def stage_rows() -> list[tuple[int, str, str]]:
    """(rank, stage, what is there) for each row of README's stage table, in its order."""
    rows = []
    for rank, stage, contents in table(ROOT / "README.md", "| rank | stage |"):
        (path,) = code(stage)
        assert path.startswith("transformer_lab/"), path
        name = path.removeprefix("transformer_lab/").removesuffix("/").removesuffix(".py")
        rows.append((int(rank), name, contents))
        kind = "folder" if path.endswith("/") else "module"
        exists = (
            (PACKAGE / name).is_dir() if kind == "folder" else (PACKAGE / f"{name}.py").is_file()
        )
        assert exists, f"README's stage table names the {kind} {path}, which does not exist"
    return rows


def package_stages() -> dict[str, set[str]]:
    """{stage: its modules} for every folder of the package that holds code (the modules by
    path inside it) and every module at its root (no modules of its own)."""
    stages = {}
    for path in sorted(PACKAGE.iterdir()):
        if path.suffix == ".py" and path.name != "__init__.py":
            stages[path.stem] = set()
        elif path.is_dir() and any(path.rglob("*.py")):
            stages[path.name] = {
                p.relative_to(path).with_suffix("").as_posix()
                for p in path.rglob("*.py")
                if p.name != "__init__.py"
            }
    return stages


def test_readme_names_every_stage_once():
    named = [name for _, name, _ in stage_rows()]
    stages = package_stages()
    assert len(named) == len(set(named)), (
        f"named twice: {sorted(n for n in named if named.count(n) > 1)}"
    )
    assert not set(stages) - set(named), (
        f"stages missing from README: {sorted(set(stages) - set(named))}"
    )
    assert not set(named) - set(stages), (
        f"README names no stage: {sorted(set(named) - set(stages))}"
    )


def test_readme_ranks_are_the_layout_tests():
    rows = stage_rows()
    for rank, name, _ in rows:
        assert rank == RANK[name], (
            f"README ranks {name} {rank}, tests/test_package_layout.py {RANK[name]}"
        )
    ranks = [rank for rank, _, _ in rows]
    assert ranks == sorted(ranks, reverse=True), f"imports point down the table: {ranks}"


def test_readme_names_every_module_of_each_stage_folder():
    stages = package_stages()
    for _, name, contents in stage_rows():
        if not (PACKAGE / name).is_dir():
            continue
        named = {c for c in code(contents) if MODULE_NAME.fullmatch(c)}
        if "chNN_topic" in code(contents):  # exercises: one module per chapter, by pattern
            named |= {m for m in stages[name] if CHAPTER_MODULE.fullmatch(m)}
        missing, extra = stages[name] - named, named - stages[name]
        assert not missing, (
            f"transformer_lab/{name}/: modules missing from README: {sorted(missing)}"
        )
        assert not extra, f"transformer_lab/{name}/: README names no such module: {sorted(extra)}"
