"""The character GPT of chapter 13 that the package ships: preset ``"book-cpu"`` trained on
Shakespeare's plays with the chapter's recipe and seed 0 by
``scripts/experiments/train_book_gpt.py``, saved in ``assets/`` and loaded here.

:func:`save_book_gpt` writes the weights (safetensors) and a JSON with the config, the
characters of the tokenizer in id order, the recipe, the seed and the held-out loss;
:func:`load_book_gpt` gives back the model and the chapter's
:class:`~transformer_lab.data.tokenizers.CharTokenizer`. The site's live models are exported
from this checkpoint (:mod:`transformer_lab.export`).
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import torch

from transformer_lab.checks import instance_of, require
from transformer_lab.data.cache import cache_dir, write_atomically
from transformer_lab.data.tokenizers import CharTokenizer
from transformer_lab.device import check_device
from transformer_lab.models.gpt import GPT, GPTConfig

__all__ = ["save_book_gpt", "book_gpt_info", "load_book_gpt", "quantize_rows", "STORAGES"]

DATA_DIR = Path(__file__).parent.parent / "assets"
WEIGHTS, INFO = "gpt_book_cpu.safetensors", "gpt_book_cpu.json"


def _config_fields(config: GPTConfig) -> dict:
    """The config's constructor arguments (its derived fields left out)."""
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config) if f.init}


STORAGES = ("as-is", "int8")
_SCALE = ".row_scale"  # suffix of the per-row scales of a matrix stored in int8


def quantize_rows(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric int8 with one float32 scale per row: ``(q, scale)`` with
    ``weight ~= q * scale[:, None]`` and ``|q| <= 127`` (an all-zero row gets scale 1)."""
    instance_of(weight, torch.Tensor, "weight", "a tensor")
    if weight.dim() != 2 or not weight.is_floating_point():
        raise ValueError(
            f"weight must be a 2-d float tensor, got {weight.dtype} {tuple(weight.shape)}"
        )
    w = weight.detach().float().cpu()
    scale = w.abs().amax(1) / 127
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    return torch.round(w / scale[:, None]).clamp(-127, 127).to(torch.int8), scale


def save_book_gpt(
    model: GPT,
    tokenizer: CharTokenizer,
    info: dict,
    directory: str | os.PathLike | None = None,
    storage: str = "as-is",
) -> Path:
    """Write ``model``'s weights and a JSON of its config, ``tokenizer``'s characters and
    ``info`` (recipe, seed, held-out loss ...) to ``directory`` (default: ``book_gpt`` in the
    cache folder; :data:`DATA_DIR` replaces the shipped files) and return the folder.

    ``storage="as-is"`` keeps each tensor's dtype (call ``model.half()`` first for float16);
    ``"int8"`` stores every matrix as int8 with one float32 scale per row
    (:func:`quantize_rows`) and the vectors in float16, about a quarter of float32's bytes.
    :func:`load_book_gpt` reads either back into float32."""
    instance_of(model, GPT, "model")
    instance_of(tokenizer, CharTokenizer, "tokenizer")
    instance_of(info, dict, "info", "a dict (written as JSON)")
    if storage not in STORAGES:
        raise ValueError(f"storage must be one of {STORAGES}, got {storage!r}")
    reserved = sorted(set(info) & {"config", "vocab", "storage"})
    if reserved:
        raise ValueError(
            f"info may not hold {reserved}: the saver writes them from the model and the "
            "tokenizer, and a copy in info would replace them"
        )
    if tokenizer.vocab_size != model.config.d_vocab:
        raise ValueError(
            f"the tokenizer has {tokenizer.vocab_size} characters but the model "
            f"d_vocab={model.config.d_vocab}"
        )
    safetensors_torch = require("safetensors.torch", "safetensors")
    record = {"config": _config_fields(model.config), "vocab": list(tokenizer.itos), **info}
    if storage != "as-is":
        record["storage"] = storage
    try:
        text = json.dumps(record, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    except ValueError as err:  # NaN or infinity, which a browser's JSON.parse refuses
        raise ValueError(
            f"info must hold only finite numbers (a NaN or inf was found): {err}"
        ) from err
    except TypeError as err:
        raise TypeError(f"info must hold only values JSON can write: {err}") from err
    weights = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    if storage == "int8":
        stored = {}
        for name, t in weights.items():
            if t.dim() == 2 and t.is_floating_point():
                stored[name], stored[name + _SCALE] = quantize_rows(t)
            else:
                stored[name] = t.half() if t.is_floating_point() else t
        weights = stored
    data = safetensors_torch.save(weights)
    directory = cache_dir() / "book_gpt" if directory is None else Path(directory)
    write_atomically(directory / WEIGHTS, lambda file: file.write(data))
    write_atomically(directory / INFO, lambda file: file.write(text.encode()))
    return directory


_GOOD_COPY = (
    "reinstall the package for the shipped files, or save the model again with save_book_gpt"
)


def load_failure(err: BaseException) -> str:
    """The line of a loader's error that says what is wrong: below torch's heading
    "Error(s) in loading state_dict for GPT:" when there is one, else its first line."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    heading = len(lines) > 1 and lines[0].endswith(":")
    return lines[heading] if lines else type(err).__name__


def weights_mismatch(path, info: str, n_layers: int, missing, unexpected, good_copy: str):
    """The ValueError for weights at ``path`` that do not fit the model the JSON ``info``
    describes: how many of the model's tensors are missing and how many are not the model's,
    with two names of each, and the layer count the JSON gives."""
    odd = [f"{len(missing)} of the model's tensors are missing, e.g. {sorted(missing)[:2]}"]
    odd = odd if missing else []
    if unexpected:
        odd += [f"{len(unexpected)} tensors are not the model's, e.g. {sorted(unexpected)[:2]}"]
    return ValueError(
        f"{path} does not hold the model its {info} describes (n_layers={n_layers}): "
        f"{' and '.join(odd)}; {good_copy}"
    )


def _load_weights(model: GPT, path: str, storage: str, safetensors_torch):
    """Read ``path`` into ``model``: as stored, or int8 matrices times their row scales;
    return the names of the model's tensors the file lacks and of the file's it has not."""
    if storage == "int8":
        stored = safetensors_torch.load_file(path)
        state = {
            k: (v.float() * stored[k + _SCALE][:, None]) if k + _SCALE in stored else v.float()
            for k, v in stored.items()
            if not k.endswith(_SCALE)
        }
        return model.load_state_dict(state, strict=False)
    if storage == "as-is":
        return safetensors_torch.load_model(model, path, strict=False)
    raise ValueError(f"unknown storage {storage!r}; expected one of {STORAGES}")


def book_gpt_info(directory: str | os.PathLike = DATA_DIR) -> dict:
    """The JSON written beside the shipped checkpoint: config, vocab, recipe, seed, loss."""
    instance_of(directory, (str, os.PathLike), "directory", "a folder path")
    path = Path(directory) / INFO
    if not path.is_file():
        raise ValueError(f"no {INFO} in {directory}; run scripts/experiments/train_book_gpt.py")
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise ValueError(f"{path} is damaged (not JSON: {err}); {_GOOD_COPY}") from err
    if not isinstance(info, dict) or not {"config", "vocab"} <= set(info):
        raise ValueError(f"{path} is damaged: it lacks 'config' or 'vocab'; {_GOOD_COPY}")
    return info


def load_book_gpt(
    device: torch.device | str | None = None, directory: str | os.PathLike = DATA_DIR
) -> tuple[GPT, CharTokenizer]:
    """The shipped chapter-13 GPT, in eval mode, and its character tokenizer:
    ``(model, tokenizer)``. The tokenizer has the chapter's ids (the characters of all
    plays, sorted) and refuses a character outside them, as the chapter's does."""
    safetensors_torch = require("safetensors.torch", "safetensors")
    device = None if device is None else check_device(device)
    info = book_gpt_info(directory)
    where = Path(directory) / INFO
    try:
        config = GPTConfig(**info["config"])
    except (TypeError, ValueError) as err:
        raise ValueError(f"{where} holds a config GPTConfig refuses ({err}); {_GOOD_COPY}") from err
    if len(info["vocab"]) != config.d_vocab:
        raise ValueError(
            f"{where} lists {len(info['vocab'])} characters for a model of d_vocab="
            f"{config.d_vocab}: every id would shift; {_GOOD_COPY}"
        )
    model = GPT(config)
    path = str(Path(directory) / WEIGHTS)
    try:
        missing, unexpected = _load_weights(
            model, path, info.get("storage", "as-is"), safetensors_torch
        )
    except Exception as err:  # safetensors, torch and the format each fail in their own way
        raise ValueError(
            f"{path} could not be loaded into the model its {INFO} describes "
            f"({load_failure(err)}); {_GOOD_COPY}"
        ) from err
    if missing or unexpected:  # e.g. weights of another number of layers
        raise weights_mismatch(path, INFO, config.n_layers, missing, unexpected, _GOOD_COPY)
    tokenizer = CharTokenizer("".join(info["vocab"]))
    if tokenizer.itos != list(info["vocab"]):
        raise ValueError(f"{INFO} lists its characters out of order or twice")
    return model.to(device or "cpu").eval(), tokenizer
