"""Scenes drawn by code, with captions written from the same description (chapter 3).

A scene holds two objects, each a colour and a shape, in two different slots of a 3 x 3
grid on a small RGB canvas (8 x 8 pixels per slot, 24 x 24 in all)::

    scene = Scene(Thing("red", "circle", 0, 0), Thing("blue", "square", 0, 2))
    caption(scene)      # ['a', 'red', 'circle', 'left', 'of', 'a', 'blue', 'square']
    render(scene, gen)  # [3, 24, 24] float tensor in [0, 1]

The two objects stand in different columns, and the caption names the left one first,
so a caption is a function of the picture: which colour goes with which shape, and which
of the two objects stands further left (rows are free and not mentioned).

``load()`` enumerates every possible scene (27 pairs of slots in different columns, 12 x 11
ordered pairs of different objects: 3,564 scenes), shuffles them with a seed and holds
out a fraction: the
held-out scenes never occur in training (the same objects may, in other places or other
pairings). Every scene is drawn once, with its objects jittered by up to a pixel and a
little noise on every pixel.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from numbers import Real

import torch

from transformer_lab.checks import finite_number, instance_of, integer, is_int, one_of, seed_int
from transformer_lab.data.numbers import Batch
from transformer_lab.data.tokenizers import Vocab

__all__ = [
    "COLOURS",
    "SHAPES",
    "Thing",
    "Scene",
    "caption",
    "parse_caption",
    "render",
    "all_scenes",
    "SceneData",
    "load",
]

COLOURS = {
    "red": (0.9, 0.15, 0.1),
    "green": (0.1, 0.7, 0.15),
    "blue": (0.15, 0.3, 0.95),
    "yellow": (0.95, 0.85, 0.1),
}  # RGB in [0, 1]
SHAPES = ("circle", "square", "triangle")
GRID, SLOT = 3, 8  # a 3 x 3 grid of 8 x 8 pixel slots
CANVAS = GRID * SLOT  # 24 pixels a side


def _masks() -> dict[str, torch.Tensor]:
    """7 x 7 boolean stencils of the shapes, of roughly equal area."""
    y, x = torch.meshgrid(torch.arange(7) - 3.0, torch.arange(7) - 3.0, indexing="ij")
    return {
        "circle": x**2 + y**2 <= 3.3**2,
        "square": (x.abs() <= 3) & (y.abs() <= 3),
        "triangle": (y >= -3) & (x.abs() <= (y + 3) / 2 + 0.3),
    }


_MASKS = _masks()


@dataclass(frozen=True)
class Thing:
    colour: str  # one of COLOURS
    shape: str  # one of SHAPES
    row: int  # grid row, 0 at the top
    col: int  # grid column, 0 at the left

    def __post_init__(self):
        one_of(self.colour, sorted(COLOURS), "colour")
        one_of(self.shape, SHAPES, "shape")
        for name in ("row", "col"):
            value = getattr(self, name)
            if not is_int(value) or not 0 <= value < GRID:
                raise ValueError(f"{name} must be an int in 0..{GRID - 1}, got {value!r}")
            object.__setattr__(self, name, int(value))


@dataclass(frozen=True)
class Scene:
    first: Thing  # the object the caption names first: the left one
    second: Thing

    def __post_init__(self):
        a, b = self.first, self.second
        if not (isinstance(a, Thing) and isinstance(b, Thing)):
            raise TypeError(f"a Scene holds two Things, got {type(a).__name__}, {type(b).__name__}")
        if (a.colour, a.shape) == (b.colour, b.shape):
            raise ValueError(f"the two objects are both a {a.colour} {a.shape}")
        if not a.col < b.col:
            raise ValueError(
                f"first must stand in a column left of second's, got columns {a.col} and {b.col}"
            )


def caption(scene: Scene) -> list[str]:
    """The caption of ``scene``, e.g. ``a red circle left of a blue square``."""
    a, b = instance_of(scene, Scene, "scene").first, scene.second
    return ["a", a.colour, a.shape, "left", "of", "a", b.colour, b.shape]


def parse_caption(words) -> tuple[tuple[str, str], tuple[str, str]]:
    """``((colour, shape) on the left, (colour, shape) on the right)`` of a caption."""
    if isinstance(words, str) or not all(isinstance(w, str) for w in words):
        raise TypeError("parse_caption takes a list of words (str)")
    words = list(words)
    if (
        len(words) == 8
        and words[0] == words[5] == "a"
        and words[3:5] == ["left", "of"]
        and words[1] in COLOURS
        and words[6] in COLOURS
        and words[2] in SHAPES
        and words[7] in SHAPES
    ):
        return (words[1], words[2]), (words[6], words[7])
    raise ValueError(
        f"expected a caption 'a <colour> <shape> left of a <colour> <shape>', "
        f"got {' '.join(words)!r}"
    )


def render(
    scene: Scene, generator: torch.Generator | None = None, jitter: int = 1, noise: float = 0.05
) -> torch.Tensor:
    """The picture of ``scene``, ``[3, CANVAS, CANVAS]`` in [0, 1]: a dark background, each
    object's 7 x 7 stencil in its 8 x 8 slot, shifted by 0 to ``jitter`` pixels, Gaussian noise."""
    instance_of(scene, Scene, "scene")
    if generator is not None:
        instance_of(generator, torch.Generator, "generator", "a torch.Generator or None")
    if not is_int(jitter) or not 0 <= jitter <= 1:
        raise ValueError(f"jitter must be 0 or 1 pixel, got {jitter!r}")
    noise = finite_number(noise, "noise", at_least=0)
    image = torch.full((3, CANVAS, CANVAS), 0.1)
    for thing in (scene.first, scene.second):
        dy, dx = torch.randint(0, jitter + 1, (2,), generator=generator).tolist()
        top, left = thing.row * SLOT + dy, thing.col * SLOT + dx  # 7 x 7 inside 8 x 8
        patch = image[:, top : top + 7, left : left + 7]
        colour = torch.tensor(COLOURS[thing.colour])[:, None, None]
        image[:, top : top + 7, left : left + 7] = torch.where(_MASKS[thing.shape], colour, patch)
    image += noise * torch.randn(image.shape, generator=generator)
    return image.clamp(0.0, 1.0)


def all_scenes() -> list[Scene]:
    """Every scene: 27 pairs of slots in different columns times 12 x 11 ordered pairs of
    different objects."""
    slots = [(r, c) for c in range(GRID) for r in range(GRID)]
    kinds = list(itertools.product(COLOURS, SHAPES))
    return [
        Scene(Thing(*k1, *s1), Thing(*k2, *s2))
        for s1, s2 in itertools.product(slots, slots)
        if s1[1] < s2[1]
        for k1, k2 in itertools.permutations(kinds, 2)
    ]


class SceneData:
    """Pictures and captions of the train and test scenes (disjoint sets of scenes)."""

    def __init__(self, splits: dict[str, list[Scene]], seed: int):
        if not isinstance(splits, dict) or not splits.get("train"):
            raise ValueError(
                f"splits must be a dict with a non-empty 'train' list of scenes, "
                f"got {type(splits).__name__}"
            )
        for name, scenes in splits.items():
            ok = isinstance(scenes, (list, tuple)) and all(isinstance(s, Scene) for s in scenes)
            if not ok or not scenes:
                raise TypeError(f"splits[{name!r}] must be a non-empty list of Scenes")
        seed = seed_int(seed)
        tokens = [w for scene in splits["train"] for w in caption(scene)]
        self.vocab = Vocab(tokens)
        self.scenes = splits
        gen = torch.Generator().manual_seed(seed)
        self.images, self.captions = {}, {}
        for name, scenes in splits.items():
            self.images[name] = torch.stack([render(s, gen) for s in scenes])  # [n, 3, H, W]
            rows = [self.vocab.encode(caption(s), bos=True, eos=True) for s in scenes]
            width = max(len(r) for r in rows)
            self.captions[name] = torch.tensor(
                [r + [self.vocab.pad_id] * (width - len(r)) for r in rows]
            )  # [n, tgt_pos]

    def __repr__(self) -> str:
        sizes = ", ".join(f"{k} {len(v)}" for k, v in self.scenes.items())
        return f"SceneData({sizes} scenes of {CANVAS}x{CANVAS} pixels; {self.vocab})"

    def batch(self, split: str, index) -> Batch:
        """The pictures (as ``src``) and captions of the scenes ``index`` of ``split``."""
        split = one_of(split, sorted(self.scenes), "split")
        index = _row_index(index)
        n = len(self.scenes[split])
        if index.numel() == 0 or int(index.min()) < -n or int(index.max()) >= n:
            raise ValueError(
                f"index must pick rows of the {n} {split} scenes, got {index.tolist()}"
            )
        images, captions = self.images[split][index], self.captions[split][index]
        return Batch(images, captions, index, self.vocab.pad_id)

    def batches(self, split: str, batch_size: int, seed: int = 0):
        """Endless shuffled batches of ``split`` (a new permutation every epoch; the
        ``len % batch_size`` scenes left over in an epoch wait for the next one)."""
        split = one_of(split, sorted(self.scenes), "split")
        n = len(self.scenes[split])
        if integer(batch_size, "batch_size", minimum=1) > n:
            raise ValueError(f"batch_size={batch_size} is more than the {n} {split} scenes")
        gen = torch.Generator().manual_seed(seed_int(seed))

        def endless():  # a generator inside, so that the checks above run at the call
            while True:
                order = torch.randperm(n, generator=gen)
                for start in range(0, n - batch_size + 1, batch_size):
                    yield self.batch(split, order[start : start + batch_size])

        return endless()


def _row_index(index) -> torch.Tensor:
    """``index`` (an int, a sequence of ints or an integer tensor) as a 1-d long tensor."""
    if is_int(index):
        return torch.tensor([int(index)])
    if isinstance(index, torch.Tensor):
        ok = not index.is_floating_point() and not index.is_complex() and index.dtype != torch.bool
    else:
        ok = isinstance(index, (list, tuple, range)) and all(is_int(i) for i in index)
    if not ok:
        raise TypeError(f"index must be an int, a list of ints or an integer tensor, got {index!r}")
    return torch.as_tensor(index, dtype=torch.long).reshape(-1)


def load(seed: int = 0, test_fraction: float = 0.2) -> SceneData:
    """All scenes shuffled with ``seed``; ``test_fraction`` of them held out as "test"."""
    seed = seed_int(seed)
    if is_int(test_fraction) or not isinstance(test_fraction, Real) or not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be a float in (0, 1), got {test_fraction!r}")
    scenes = all_scenes()
    random.Random(seed).shuffle(scenes)
    n_test = round(test_fraction * len(scenes))
    if not 0 < n_test < len(scenes):
        raise ValueError(
            f"test_fraction={test_fraction} holds out {n_test} of {len(scenes)} scenes; "
            "both splits need at least one"
        )
    return SceneData({"train": scenes[n_test:], "test": scenes[:n_test]}, seed)
