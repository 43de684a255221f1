"""Writes ``book/images/architecture.svg``, the Transformer drawn on the landing page.

The drawing is the package's own
(``transformer_lab.viz.chapters.architecture.architecture_svg``, the picture the chapters
show near their top), made standalone: the style rules the chapters'
HTML figure puts around the SVG are copied inside it, and it gets a width and a height, so
that it looks the same as an image in JupyterLab's Markdown preview and on the site. It
has no links (a picture shown with ``![...](...)`` cannot be clicked box by box).

Usage: ``.venv/bin/python scripts/site/make_architecture_svg.py`` rewrites the file;
``--check`` reports (exit 1) when it is out of date with the package.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from transformer_lab.viz.chapters.architecture import _CSS, architecture_svg  # noqa: E402

OUT = ROOT / "book" / "images" / "architecture.svg"
FONT = '.tl-arch-svg{font-family:system-ui,-apple-system,"Segoe UI",sans-serif}'


def svg() -> str:
    """The encoder-decoder Transformer as a standalone SVG document."""
    drawing = architecture_svg("encoder-decoder")
    # the rules for the drawing's parts (not those for the HTML figure, its link overlays
    # and the SVG's size inside it)
    rules = [FONT] + [r for r in _CSS.strip().splitlines() if r.startswith(".tl-arch-svg ")]
    start = drawing.index(">") + 1  # the end of the <svg ...> tag
    view = drawing[:start].split('viewBox="', 1)[1].split('"', 1)[0]
    width, height = (float(v) for v in view.split()[2:])
    tag = drawing[:start].replace("<svg ", f'<svg width="{width:g}" height="{height:g}" ', 1)
    # after the title and description (the first children, for screen readers): the style,
    # and a white ground like the figure's, so that the picture reads in a dark theme too
    after = drawing.index("</desc>") + len("</desc>")
    ground = '<rect width="100%" height="100%" rx="6" fill="#fff" style="stroke:none"/>'
    style = "<style>" + "\n".join(rules) + "</style>"
    head, body = drawing[start:after], drawing[after:]
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{tag}{head}{style}{ground}{body}\n'


def main() -> int:
    text = svg()
    if "--check" in sys.argv[1:]:
        if not OUT.exists() or OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT.relative_to(ROOT)} is out of date: run {Path(__file__).name}")
            return 1
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)} ({len(text.encode())} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
