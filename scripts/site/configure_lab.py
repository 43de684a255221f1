"""Set up JupyterLab in this project's virtual environment as a reader's desk.

Everything goes into the environment itself, so the reader's own Jupyter settings in
``~/.jupyter`` are left untouched:

- ``share/jupyter/lab/settings/overrides.json`` (JupyterLab's application-level
  overrides): Markdown files open as documents (``Markdown Preview``, rendered by
  ``jupyterlab-myst``), so ``index.md``, ``how_to_use.md`` and ``notation.md`` read as
  pages; no news pop-up.
- ``etc/jupyter/jupyter_server_config.json``: the chapters' ``.md``
  sources are left out of the file browser, so each chapter is listed once, as the
  notebook (``NN_name.ipynb``) a reader opens. Jupytext pairs that notebook with its
  ``.md`` (``jupytext.toml``): saving writes both.

The environment's ``python3`` kernel is also given the display name the chapters' headers
carry ("Python 3"): JupyterLab writes the running kernel's name into the notebook, and
with ipykernel's default ("Python 3 (ipykernel)") saving a chapter would rewrite its header.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

VIEWERS = {"markdown": "Markdown Preview"}
DOCMANAGER = "@jupyterlab/docmanager-extension:plugin"
NEWS = "@jupyterlab/apputils-extension:notification"
# jupyter_server's defaults, and the chapter sources (01_words_to_vectors.md, ...)
HIDE_GLOBS = ["__pycache__", "*.pyc", "*.pyo", ".DS_Store", "*~", "[0-9][0-9]_*.md"]


def configure(venv: Path) -> Path:
    path = venv / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    settings = json.loads(path.read_text()) if path.exists() else {}
    viewers = settings.setdefault(DOCMANAGER, {}).setdefault("defaultViewers", {})
    viewers.pop("myst", None)
    viewers.update(VIEWERS)
    settings.setdefault(NEWS, {}).update({"fetchNews": "false", "checkForUpdates": False})
    path.write_text(json.dumps(settings, indent=2) + "\n")
    return path


def configure_server(venv: Path) -> Path:
    # the environment's own jupyter_server_config.json: a file in jupyter_server_config.d
    # is read too, but its ContentsManager settings do not reach the contents manager that
    # jupytext's server extension puts in place
    path = venv / "etc" / "jupyter" / "jupyter_server_config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    config = json.loads(path.read_text()) if path.exists() else {}
    config.setdefault("ContentsManager", {})["hide_globs"] = HIDE_GLOBS
    path.write_text(json.dumps(config, indent=2) + "\n")
    (path.parent / "jupyter_server_config.d" / "transformer_lab.json").unlink(missing_ok=True)
    return path


def install_kernel(venv: Path) -> str:
    from ipykernel.kernelspec import install

    return install(kernel_name="python3", display_name="Python 3", prefix=str(venv))


if __name__ == "__main__":
    venv = Path(sys.argv[1] if len(sys.argv) > 1 else sys.prefix)
    print(f"JupyterLab opens Markdown as documents: {configure(venv)}")
    print(f"the file browser lists each chapter once: {configure_server(venv)}")
    print(f"kernel 'python3' (Python 3): {install_kernel(venv)}")
