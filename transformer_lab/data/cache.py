"""Where the data sets keep what takes time to build, so that it is built once.

The number pairs of :mod:`.numbers` (written out by ``num2words``), the BPE tokenizer of
:mod:`.shakespeare` and the plays encoded with it are written to one folder,
:func:`cache_dir`, each data set naming its files after itself (``numbers_en_de_...json``,
``shakespeare_bpe_1024_...json``) with a hash of what went into them, so a change of
data or settings builds a new file. A missing file is built again, identically.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir"]


def cache_dir() -> Path:
    """The cache folder, created if missing: ``$TRANSFORMER_LAB_CACHE`` when set, else
    ``artifacts/cache`` in a source checkout (git-ignored), else ``~/.cache/transformer_lab``."""
    checkout = Path(__file__).resolve().parents[2]
    if os.environ.get("TRANSFORMER_LAB_CACHE"):
        path = Path(os.environ["TRANSFORMER_LAB_CACHE"])
    elif (checkout / "pyproject.toml").exists():
        path = checkout / "artifacts" / "cache"
    else:
        path = Path.home() / ".cache" / "transformer_lab"
    path.mkdir(parents=True, exist_ok=True)
    return path
