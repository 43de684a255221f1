"""Gather the JavaScript the static site serves itself, so that no page loads from a CDN.

``python scripts/site/fetch_web_assets.py`` fills ``_build/web_assets`` (listed in
``html_static_path`` by ``_config.yml``, so Sphinx copies it into ``_build/html/_static``):

- ``plotly.min.js``, copied from the installed ``plotly`` Python package: the kernel-free
  explorations call ``Plotly.newPlot`` on the global it defines;
- ``widgets/require.js`` and ``widgets/embed-amd.js`` (with the icon fonts it loads), from
  the npm packages ``requirejs`` and ``@jupyter-widgets/html-manager`` at pinned versions,
  installed with ``npm install --prefix _build/web_assets_npm``: they display the
  ipywidgets state saved in executed chapters (myst-nb's ``nb_ipywidgets_js``);
- ``widgets/require-config.js``, loaded between the two, which points RequireJS at this
  copy of the HTML manager (so that its fonts load from the site, not from a CDN) and lets
  the manager's MathJax 2 calls reach the site's MathJax 3;
- ``ort/``: ONNX Runtime Web from the npm package ``onnxruntime-web`` (pinned), which runs
  the live models of chapters 12 and 13 in the reader's browser (``scripts/site/live/``):
  ``ort.min.js`` and the one WebAssembly build it loads (``ort-wasm-simd-threaded.jsep``),
  which serves both the WebAssembly backend and, in browsers with WebGPU, the WebGPU one.

MathJax is served the same way by the ``sphinx-mathjax-offline`` extension. npm is run only
when the pinned packages are not already in the cache folder.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "_build" / "web_assets"
NPM_PREFIX = ROOT / "_build" / "web_assets_npm"

# ipywidgets 8.1 speaks widget protocol 2, which html-manager 1.0.x renders.
NPM_PACKAGES = {
    "@jupyter-widgets/html-manager": "1.0.15",
    "requirejs": "2.3.7",
    "onnxruntime-web": "1.24.3",
}
# ort.min.js loads the JSEP build, whose one .wasm serves the "wasm" and "webgpu" backends
ORT_FILES = ("ort.min.js", "ort-wasm-simd-threaded.jsep.mjs", "ort-wasm-simd-threaded.jsep.wasm")
# the html-manager bundle refers to its icon fonts by file name, next to embed-amd.js
FONT_SUFFIXES = (".woff", ".woff2", ".ttf", ".eot", ".svg")


def installed_version(package: str) -> str | None:
    manifest = NPM_PREFIX / "node_modules" / package / "package.json"
    if not manifest.exists():
        return None
    return json.loads(manifest.read_text()).get("version")


def npm_install() -> None:
    missing = {p: v for p, v in NPM_PACKAGES.items() if installed_version(p) != v}
    if not missing:
        return
    npm = shutil.which("npm")
    if npm is None:
        sys.exit(
            "scripts/site/fetch_web_assets.py needs npm to fetch the ipywidgets scripts for the "
            "site: install Node.js and npm (Debian/Ubuntu: `apt-get install npm`) and run it again."
        )
    NPM_PREFIX.mkdir(parents=True, exist_ok=True)
    # all of them at once: an install of only the missing ones would prune the others
    specs = [f"{name}@{version}" for name, version in NPM_PACKAGES.items()]
    print(f"npm install {' '.join(specs)} into {NPM_PREFIX.relative_to(ROOT)}")
    subprocess.run(
        [
            npm,
            "install",
            "--prefix",
            str(NPM_PREFIX),
            "--no-save",
            "--no-package-lock",
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            *specs,
        ],
        check=True,
    )
    for name, version in NPM_PACKAGES.items():
        if installed_version(name) != version:
            sys.exit(f"npm did not install {name}@{version} into {NPM_PREFIX}")


# Sphinx writes the path from a page to the site root into <html data-content_root="...">
REQUIRE_CONFIG = """\
// Written by scripts/site/fetch_web_assets.py; loaded before the ipywidgets HTML manager.
(function () {
  // 1. RequireJS finds the HTML manager (and the fonts it loads relative to itself) in this
  //    site's _static/widgets folder, not on a CDN.
  var root = document.documentElement.dataset.content_root || "";
  require.config({paths: {"@jupyter-widgets/html-manager/dist": root + "_static/widgets"}});

  // 2. The HTML manager typesets widget labels with MathJax 2's MathJax.Hub.Queue; the site
  //    runs MathJax 3, which has typesetPromise instead. Give every MathJax object the page
  //    ends up with a Hub.Queue that forwards to it.
  function typeset(job) {
    var mj = window.MathJax;
    var element = Array.isArray(job) ? job[2] : null;
    if (!mj || !element) return;
    var run = function () {
      if (typeof mj.typesetPromise !== "function") return;
      mj.typesetPromise([element]).catch(function () {});
    };
    if (mj.startup && mj.startup.promise) mj.startup.promise.then(run); else run();
  }
  function shim(mj) {
    if (mj && typeof mj === "object" && !mj.Hub) mj.Hub = {Queue: typeset};
  }
  var current = window.MathJax;
  shim(current);
  Object.defineProperty(window, "MathJax", {
    configurable: true,
    get: function () { return current; },
    set: function (value) { current = value; shim(value); },
  });
})();
"""


def write_if_changed(text: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists() or target.read_text() != text:
        target.write_text(text)


def copy_if_changed(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() and target.read_bytes() == source.read_bytes():
        return
    shutil.copyfile(source, target)


def plotly_js() -> Path:
    import plotly

    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not path.exists():
        sys.exit(f"the installed plotly package has no {path}: reinstall plotly")
    return path


def fetch() -> list[Path]:
    """Put every asset in ``_build/web_assets`` and return the files written there."""
    npm_install()
    modules = NPM_PREFIX / "node_modules"
    dist = modules / "@jupyter-widgets" / "html-manager" / "dist"
    copies = {
        plotly_js(): ASSETS / "plotly.min.js",
        modules / "requirejs" / "require.js": ASSETS / "widgets" / "require.js",
        dist / "embed-amd.js": ASSETS / "widgets" / "embed-amd.js",
    }
    ort = modules / "onnxruntime-web"
    for name in ORT_FILES:
        copies[ort / "dist" / name] = ASSETS / "ort" / name
    for font in sorted(dist.iterdir()):
        if font.suffix in FONT_SUFFIXES:
            copies[font] = ASSETS / "widgets" / font.name
    for source, target in copies.items():
        copy_if_changed(source, target)
    config = ASSETS / "widgets" / "require-config.js"
    write_if_changed(REQUIRE_CONFIG, config)
    return sorted([*copies.values(), config])


if __name__ == "__main__":
    files = fetch()
    print(f"{len(files)} web assets ready in {ASSETS.relative_to(ROOT)}")
