"""Draw the site's icon, ``_static/favicon.ico`` (``_config.yml`` names it as the favicon).

    .venv/bin/python scripts/site/make_favicon.py [--out PATH]

The icon is a causal attention pattern: a 4 x 4 grid whose diagonal is dark blue, whose cells
below it (the past) are light blue and whose cells above it (the future, masked) are grey, in
the colours of the live panels' heatmaps. It is written at 16 and 32 pixels as an ICO file
with uncompressed 32-bit images, by this script alone (no imaging library), so the same
bytes come out on every machine; the file is committed, and the script is run again only to
change the drawing.
"""

from __future__ import annotations

import argparse
import struct
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FAVICON = ROOT / "_static" / "favicon.ico"
SIZES = (16, 32)
GRID = 4
MASKED = (222, 226, 232)


def heat(weight: float) -> tuple[int, int, int]:
    """The live panels' heatmap colour of an attention weight in [0, 1] (``live.js``)."""
    return round(255 - 215 * weight), round(255 - 160 * weight), 255


def pixel(size: int, x: int, y: int) -> tuple[int, int, int, int]:
    """RGBA of pixel (x, y), y downwards, in an icon of ``size`` pixels."""
    cell = size // GRID
    row, col = y // cell, x // cell
    if x % cell == cell - 1 or y % cell == cell - 1:  # the gaps between cells
        return 0, 0, 0, 0
    if col > row:
        return (*MASKED, 255)
    return (*heat(1.0 if col == row else 0.45), 255)


def ico_image(size: int) -> bytes:
    """One image of the ICO: a BITMAPINFOHEADER, BGRA rows from the bottom up, and the
    all-zero AND mask (transparency comes from the alpha channel)."""
    header = struct.pack("<IiiHHIIiiII", 40, size, 2 * size, 1, 32, 0, 0, 0, 0, 0, 0)
    rows = bytearray()
    for y in reversed(range(size)):
        for x in range(size):
            r, g, b, a = pixel(size, x, y)
            rows += bytes((b, g, r, a))
    mask_row = ((size + 31) // 32) * 4
    return header + bytes(rows) + bytes(mask_row * size)


def favicon_bytes(sizes: tuple[int, ...] = SIZES) -> bytes:
    """The ICO file: its header, one directory entry per size, then the images."""
    images = [ico_image(size) for size in sizes]
    offset = 6 + 16 * len(sizes)
    entries = b""
    for size, image in zip(sizes, images, strict=True):
        entries += struct.pack("<BBBBHHII", size % 256, size % 256, 0, 0, 1, 32, len(image), offset)
        offset += len(image)
    return struct.pack("<HHH", 0, 1, len(sizes)) + entries + b"".join(images)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=FAVICON, help="file to write")
    out = parser.parse_args().out
    out.parent.mkdir(parents=True, exist_ok=True)
    data = favicon_bytes()
    out.write_bytes(data)
    print(f"wrote {out} ({len(data):,} bytes)")


if __name__ == "__main__":
    main()
