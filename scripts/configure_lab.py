"""Make JupyterLab in this project's virtual environment open ``.md`` chapters as notebooks.

The setting goes into the environment's own ``share/jupyter/lab/settings/overrides.json``
(JupyterLab's application-level overrides), so the reader's global Jupyter settings in
``~/.jupyter`` are left untouched. Jupytext's contents manager is enabled by the package
itself when it is installed into the environment.

The environment's ``python3`` kernel is also given the display name the chapters' headers
carry ("Python 3"): JupyterLab writes the running kernel's name into the notebook, and
with ipykernel's default ("Python 3 (ipykernel)") saving a chapter would rewrite its header.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

VIEWERS = {"markdown": "Jupytext Notebook", "myst": "Jupytext Notebook"}
PLUGIN = "@jupyterlab/docmanager-extension:plugin"


def configure(venv: Path) -> Path:
    path = venv / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    settings = json.loads(path.read_text()) if path.exists() else {}
    settings.setdefault(PLUGIN, {}).setdefault("defaultViewers", {}).update(VIEWERS)
    path.write_text(json.dumps(settings, indent=2) + "\n")
    return path


def install_kernel(venv: Path) -> str:
    from ipykernel.kernelspec import install

    return install(kernel_name="python3", display_name="Python 3", prefix=str(venv))


if __name__ == "__main__":
    venv = Path(sys.argv[1] if len(sys.argv) > 1 else sys.prefix)
    print(f"JupyterLab opens .md chapters as notebooks: {configure(venv)}")
    print(f"kernel 'python3' (Python 3): {install_kernel(venv)}")
