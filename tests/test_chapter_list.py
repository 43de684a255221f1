"""One place knows the chapter list: ``_toc.yml``, read by ``scripts/site/chapters.py``.

- the list agrees with the chapter files in ``book/`` and numbers them 1, 2, 3, ... in order;
- the contents of ``book/index.md`` (what a reader opens in JupyterLab) follow it;
- every table keyed by chapter names chapters that exist;
- no other tracked file spells out a list of chapters: a file naming four or more chapters
  (by stem, ``13_gpt``, or by checker module, ``ch13_gpt``) is the source, a chapter's own
  cross-references, or a table in :data:`KEYED_BY_CHAPTER` whose keys are checked here.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

from script_loader import load_script

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
EXERCISES = ROOT / "transformer_lab" / "exercises"
chapter_list = load_script("site/chapters")

STEM = re.compile(r"\b\d\d_[a-z0-9_]+")
CHECKER_MODULE = re.compile(r"\bch(\d\d)_[a-z0-9_]+")
# a file naming this many chapters holds a list of them
LIST_SIZE = 4
# files allowed to name many chapters: why, and where their keys are checked
KEYED_BY_CHAPTER = {
    "_toc.yml": "the chapter list itself",
    "book/index.md": "the contents a JupyterLab reader sees (test_index_contents_...)",
    "conftest.py": "BUDGETS, the chapters with a bigger time budget (test_every_key_...)",
    "tests/test_prose_numbers.py": "ALLOWED and CHECKED_BY, by chapter (test_every_key_...)",
    "transformer_lab/viz/chapters/architecture.py": "the chapter that builds each box of the "
    "diagram, and the view each chapter shows (test_every_key_...)",
    "book/images/architecture.svg": "drawn from viz/chapters/architecture.py by "
    "scripts/site/make_architecture_svg.py",
    "scripts/experiments/README.md": "the chapters that quote each experiment "
    "(tests/test_docs_map.py: each path exists)",
}
TEXT_SUFFIXES = {".py", ".md", ".yml", ".yaml", ".toml", ".cfg", ".js", ".css", ".svg", ".txt"}
TEXT_SUFFIXES |= {".sh", ".html", ".json"}


def chapters_named(text: str, stems: set[str], modules: set[str]) -> set[int]:
    """The numbers of the chapters ``text`` names by stem or by checker module."""
    found = {int(s[:2]) for s in STEM.findall(text) if s in stems}
    found |= {int(m.group(1)) for m in CHECKER_MODULE.finditer(text) if m.group(0) in modules}
    return found


def tracked_text_files() -> list[str]:
    """The repository's text files (git's, where this is a git checkout), not chapters."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT, capture_output=True, text=True, check=True, timeout=60,
        ).stdout.splitlines()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        skip = {".git", ".venv", "_build", "node_modules"}
        listed = [
            p.relative_to(ROOT).as_posix()
            for p in ROOT.rglob("*")
            if p.is_file() and not skip & set(p.relative_to(ROOT).parts)
        ]
    out = []
    for name in listed:
        path = ROOT / name
        if path.suffix not in TEXT_SUFFIXES and path.suffix:
            continue
        if re.fullmatch(r"book/\d\d_[a-z0-9_]+\.(md|ipynb)", name):
            continue  # a chapter's links to other chapters are references, one each
        if path.is_file() and path.stat().st_size < 2_000_000:
            out.append(name)
    return out


def test_the_chapter_list_is_the_chapter_files_in_book_order():
    stems = chapter_list.chapters()
    on_disk = sorted(p.stem for p in BOOK.glob("[0-9][0-9]_*.md"))
    assert stems == on_disk, (
        f"_toc.yml lists {sorted(set(stems) - set(on_disk))} with no file in book/, and "
        f"book/ holds {sorted(set(on_disk) - set(stems))} that _toc.yml does not list"
    )
    assert [p.stem for p in chapter_list.chapter_sources()] == stems
    numbers = [chapter_list.number(stem) for stem in stems]
    assert numbers == list(range(1, len(stems) + 1)), f"chapters not numbered 1 to n: {numbers}"
    assert chapter_list.by_number() == dict(zip(numbers, stems, strict=True))


def heading(stem: str) -> str:
    return re.search(r"^# (.+)$", (BOOK / f"{stem}.md").read_text(), re.M).group(1)


def test_index_contents_follow_the_chapter_list():
    """book/index.md's contents: ``N. [the chapter's heading](NN_name.ipynb)`` per chapter."""
    entry = re.compile(r"^(\d+)\. \[(.+)\]\((\d\d_[a-z0-9_]+)\.ipynb\)$", re.M)
    index = (BOOK / "index.md").read_text()
    listed = [(int(n), title, stem) for n, title, stem in entry.findall(index)]
    wanted = [(chapter_list.number(s), heading(s), s) for s in chapter_list.chapters()]
    assert listed == wanted, "book/index.md's contents differ from _toc.yml's chapters"


def test_every_key_by_chapter_names_a_chapter():
    from test_prose_numbers import ALLOWED, CHECKED_BY

    from transformer_lab.viz.chapters import architecture

    stems = set(chapter_list.chapters())
    tree = ast.parse((ROOT / "conftest.py").read_text())
    (budgets,) = [
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "BUDGETS"
    ]
    tables = {
        "conftest.py BUDGETS": set(budgets),
        "tests/test_prose_numbers.py ALLOWED": {stem for stem, _ in ALLOWED},
        "tests/test_prose_numbers.py CHECKED_BY": {stem for stem, _ in CHECKED_BY},
        "viz/chapters/architecture.py PARTS": set(architecture.PARTS.values()),
        "viz/chapters/architecture.py CHAPTER_TITLES": set(architecture.CHAPTER_TITLES),
        "viz/chapters/architecture.py CHAPTER_VIEWS": set(architecture.CHAPTER_VIEWS),
        "viz/chapters/architecture.py boxes": {
            box.chapter for variant in architecture.VARIANTS for box in architecture.boxes(variant)
        },
    }
    stale = {table: sorted(keys - stems) for table, keys in tables.items() if keys - stems}
    assert not stale, f"keys that name no chapter of _toc.yml: {stale}"
    assert all(seconds > 60 for seconds in budgets.values()), "BUDGETS lists only bigger ones"


def test_no_other_file_lists_the_chapters():
    stems = set(chapter_list.chapters())
    modules = {p.stem for p in EXERCISES.glob("ch[0-9][0-9]_*.py")}
    files = tracked_text_files()
    assert "_toc.yml" in files and "README.md" in files
    lists = {}
    for name in files:
        try:
            text = (ROOT / name).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        named = chapters_named(text, stems, modules)
        if len(named) >= LIST_SIZE and name not in KEYED_BY_CHAPTER:
            lists[name] = sorted(named)
    assert not lists, (
        "files that spell out a list of chapters: derive it from scripts/site/chapters.py "
        f"(chapters(), by_number()) or add the file to KEYED_BY_CHAPTER with a check: {lists}"
    )
    gone = [name for name in KEYED_BY_CHAPTER if not (ROOT / name).is_file()]
    assert not gone, f"KEYED_BY_CHAPTER names files that no longer exist: {gone}"


def test_the_list_check_finds_a_list_and_passes_references():
    stems = {"01_words", "02_rnn", "03_seq", "04_self", "13_gpt"}
    modules = {"ch01_embeddings", "ch13_gpt"}
    listed = 'PAGES = ["01_words", "02_rnn", "03_seq"]\nMODULES = ("ch13_gpt",)\n'
    assert chapters_named(listed, stems, modules) == {1, 2, 3, 13}
    one = "the GPT of book/13_gpt.md and its checkers in ch13_gpt.py; test_exercises_ch01.py"
    assert chapters_named(one, stems, modules) == {13}
    assert chapters_named("99_unknown and ch99_other", stems, modules) == set()
