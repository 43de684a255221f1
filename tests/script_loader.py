"""How the tests load the project's scripts: ``load_script("site/references")`` imports
``scripts/site/references.py`` and returns it as a module.

The scripts are programs grouped by kind (``site/``, ``bench/``, ``experiments/``), not a
package; the scripts of one kind import each other by their file names (``sync_notebooks``
imports ``book_markup``). So the script's folder goes on ``sys.path`` and the script is
imported under its file name, as it imports its neighbours: a test and the scripts share
one module per script.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def load_script(name: str) -> ModuleType:
    """The module of ``scripts/<name>.py``, e.g. ``load_script("experiments/finetune_sweep")``."""
    path = SCRIPTS / f"{name}.py"
    if not path.is_file():
        kinds = sorted(p.name for p in SCRIPTS.iterdir() if p.is_dir())
        raise FileNotFoundError(f"no script scripts/{name}.py (the kinds are {kinds})")
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    module = importlib.import_module(path.stem)
    if Path(module.__file__).resolve() != path.resolve():
        raise ImportError(f"{path.stem!r} was imported from {module.__file__}, not from {path}")
    return module
