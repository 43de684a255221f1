"""The book's list of references, written from ``book/references.bib``.

Citations in the chapters are plain Markdown links,
``[Vaswani et al., 2017](references.md#vaswani2017attention)``, so that they read the same
in JupyterLab and on the site; each entry of ``book/references.md`` carries its key as an
anchor. ``python scripts/site/references.py`` rewrites that page; ``--check`` reports (exit 1)
when it is out of date. :func:`label` gives the text a citation of a key must read
("Vaswani et al., 2017"), which ``tests/test_book.py`` holds every citation to.
"""

from __future__ import annotations

import re
import sys
from functools import cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
ROOT = Path(__file__).resolve().parents[2]
BIB = ROOT / "book" / "references.bib"
PAGE = ROOT / "book" / "references.md"

HEADER = """# References

The papers, books and articles cited in the chapters. Citations in the text link here.
This page is written from `references.bib` by `scripts/site/references.py`.
"""


def _plain(text: str) -> str:
    """BibTeX text as plain text: braces and the usual accents removed."""
    from pybtex.richtext import Text
    from site_extension import drop_catch_all_codecs

    drop_catch_all_codecs()  # pybtex needs latexcodec's "ulatex" codec
    return Text.from_latex(text).render_as("text").strip()


@cache
def entries() -> dict:
    from pybtex.database import parse_file

    return dict(parse_file(str(BIB)).entries)


def _surname(person) -> str:
    return _plain(" ".join(person.prelast_names + person.last_names))


def _authors_short(entry) -> str:
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [_surname(p) for p in people]
    if not names:
        return _plain(entry.fields.get("organization", entry.fields.get("title", "Anon.")))
    if len(names) == 1:
        return names[0]
    if len(names) == 2:
        return f"{names[0]} and {names[1]}"
    return f"{names[0]} et al."


@cache
def _labels() -> dict[str, tuple[str, str]]:
    """key -> (authors, year with a/b when two entries would read the same)."""
    base = {key: (_authors_short(e), e.fields.get("year", "n.d.")) for key, e in entries().items()}
    out = {}
    for key, (who, year) in base.items():
        same = [k for k, v in base.items() if v == (who, year)]
        suffix = "abcdefghij"[same.index(key)] if len(same) > 1 else ""
        out[key] = (who, year + suffix)
    return out


def label(key: str, textual: bool = False) -> str:
    """ "Vaswani et al., 2017", or "Vaswani et al. (2017)" when ``textual``."""
    if key not in entries():
        raise KeyError(f"{key!r} is not in {BIB.name}")
    who, year = _labels()[key]
    return f"{who} ({year})" if textual else f"{who}, {year}"


def citation(keys: list[str], textual: bool = False) -> str:
    """The Markdown of a citation of ``keys``: in parentheses, or as part of a sentence."""
    links = [f"[{label(k, textual)}](references.md#{k})" for k in keys]
    if textual:
        return links[0] if len(links) == 1 else ", ".join(links[:-1]) + " and " + links[-1]
    return "(" + "; ".join(links) + ")"


def _full_authors(entry) -> str:
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    names = []
    for p in people:
        first = " ".join(_plain(n) for n in p.first_names + p.middle_names)
        names.append(f"{_surname(p)}, {first}".strip(", "))
    if not names:
        return ""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _entry_markdown(key: str, entry) -> str:
    f = entry.fields
    who, year = _labels()[key]
    title = _plain(f.get("title", ""))
    where = _plain(f.get("booktitle") or f.get("journal") or f.get("publisher") or "")
    parts = [f"{_full_authors(entry)} ({year}). {title}."]
    if where:
        parts.append(f"*{where}*" + (f", {f['volume']}" if "volume" in f else "") + ".")
    if "pages" in f:
        parts.append(f"Pages {_plain(f['pages'])}.")
    if "doi" in f:
        parts.append(f"[doi:{f['doi']}](https://doi.org/{f['doi']})")
    if f.get("archiveprefix", f.get("archivePrefix", "")).lower() == "arxiv" and "eprint" in f:
        parts.append(f"[arXiv:{f['eprint']}](https://arxiv.org/abs/{f['eprint']})")
    elif "url" in f:
        parts.append(f"<{f['url']}>")
    return f"({key})=\n**{who}, {year}.** " + " ".join(parts)


def page() -> str:
    def order(item):
        key, _ = item
        who, year = _labels()[key]
        return (who.lower(), year)

    body = "\n\n".join(_entry_markdown(k, e) for k, e in sorted(entries().items(), key=order))
    return f"{HEADER}\n{body}\n"


CITATION = re.compile(r"\[([^\]]+)\]\(references\.md#([A-Za-z0-9_:-]+)\)")


def citations(text: str) -> list[tuple[str, str]]:
    """Every ``(link text, key)`` citation link in ``text``."""
    return CITATION.findall(text)


if __name__ == "__main__":
    if "--check" in sys.argv[1:]:
        if PAGE.read_text() != page():
            print(f"{PAGE.relative_to(ROOT)} is out of date: run python scripts/site/references.py")
            sys.exit(1)
        sys.exit(0)
    PAGE.write_text(page())
    print(f"wrote {PAGE.relative_to(ROOT)} ({len(entries())} entries)")
