"""Write the site's live models into ``_build/web_assets/live`` (the site's ``_static/live``).

    .venv/bin/python scripts/site/build_live_models.py [--force]

exports the chapter-13 GPT the package ships (``gpt.onnx``, float32) and all-MiniLM-L6-v2
(``minilm.onnx``, weights stored as float16) with their JSON (``gpt.json``, ``minilm.json``)
by :func:`transformer_lab.export.live.write_live_models`, and copies the page's scripts
(``scripts/site/live/*.js``, ``*.css``) beside them. The export is skipped when every model
file is newer than everything it is made from (the export code, the model code, the
checkpoint and MiniLM's files). ``scripts/site/build_book.py`` runs it, so ``make book``
produces the files; the sizes are printed.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIVE = ROOT / "_build" / "web_assets" / "live"
PAGE_FILES = ROOT / "scripts" / "site" / "live"
PACKAGE = ROOT / "transformer_lab"
# the code and data the four model files are made from
SOURCES = (
    "export",
    "models",
    "nn",
    "hooks.py",
    "pretrained",
    "data/tokenizers.py",
    "data/wordpiece.py",
)
ASSETS = ("assets/gpt_book_cpu.safetensors", "assets/gpt_book_cpu.json")


def inputs() -> list[Path]:
    """Every file the exported models depend on."""
    from transformer_lab.pretrained.minilm import minilm_dir

    found = [PACKAGE / a for a in ASSETS]
    for name in SOURCES:
        path = PACKAGE / name
        found.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    found.extend(sorted(p for p in minilm_dir().iterdir() if p.is_file()))
    return found


def up_to_date(outputs: list[Path], sources: list[Path]) -> bool:
    """True when every output exists and is newer than every source."""
    if not all(p.is_file() for p in outputs):
        return False
    newest = max(p.stat().st_mtime for p in sources)
    return min(p.stat().st_mtime for p in outputs) > newest


def copy_page_files(folder: Path) -> list[Path]:
    """Copy ``scripts/site/live/*.js`` and ``*.css`` into ``folder`` when they changed."""
    copied = []
    for source in sorted(PAGE_FILES.iterdir()):
        if source.suffix not in (".js", ".css"):
            continue
        target = folder / source.name
        if not target.exists() or target.read_bytes() != source.read_bytes():
            shutil.copyfile(source, target)
        copied.append(target)
    return copied


def build(folder: Path = LIVE, force: bool = False) -> list[Path]:
    """The four model files and the page's files in ``folder``; returns their paths."""
    from transformer_lab.export.live import LIVE_FILES, write_live_models

    folder.mkdir(parents=True, exist_ok=True)
    models = [folder / name for name in LIVE_FILES]
    if force or not up_to_date(models, inputs()):
        import torch

        torch.set_num_threads(min(torch.get_num_threads(), 2))
        print(f"exporting the live models into {folder}", flush=True)
        write_live_models(folder)
    files = [*models, *copy_page_files(folder)]
    for path in files:
        print(f"  {path.name:14} {path.stat().st_size / 1e3:10,.1f} kB")
    total = sum(p.stat().st_size for p in files)
    print(f"live models ready in {folder}: {total / 1e6:.1f} MB in all")
    return files


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="export even when up to date")
    parser.add_argument("--out", type=Path, default=LIVE, help="folder to write into")
    args = parser.parse_args()
    build(args.out, args.force)
    sys.exit(0)
