"""The tiny BERT the book ships: pretrained on Shakespeare by ``training.bert_pretraining``,
saved in ``assets/`` and loaded here.

:func:`save_tiny_bert` writes the weights, the tokenizer and the JSON together: all three
are first written in full beside their targets, then moved into place, so a failure (a
value JSON cannot hold, a full disk) leaves the folder as it was and no temporary file.
It writes into the package's ``assets/`` only when given that folder (:data:`DATA_DIR`,
as ``scripts/experiments/pretrain_tiny_bert.py`` does); by default it writes into the
cache folder."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import torch

from transformer_lab.checks import instance_of, require
from transformer_lab.data.cache import cache_dir, disk_error, temporary_name, write_atomically
from transformer_lab.data.wordpiece import WordPieceTokenizer
from transformer_lab.device import check_device
from transformer_lab.models.bert import BertConfig, BertForPreTraining
from transformer_lab.pretrained.book_gpt import load_failure, weights_mismatch

__all__ = ["save_tiny_bert", "tiny_bert_info", "load_tiny_bert"]

DATA_DIR = Path(__file__).parent.parent / "assets"
WEIGHTS, TOKENIZER, INFO = "tiny_bert.safetensors", "tiny_bert_tokenizer.json", "tiny_bert.json"


def save_tiny_bert(
    model: BertForPreTraining,
    tokenizer: WordPieceTokenizer,
    info: dict,
    directory: str | os.PathLike | None = None,
) -> Path:
    """Write the weights (safetensors), the tokenizer and ``info`` (JSON) to ``directory``
    (default: ``tiny_bert`` in the cache folder; pass :data:`DATA_DIR` to replace the
    shipped files) and return the folder. All three are written before any replaces its
    old version, so a failure leaves the folder as it was."""
    instance_of(model, BertForPreTraining, "model")
    instance_of(tokenizer, WordPieceTokenizer, "tokenizer")
    instance_of(info, dict, "info", "a dict (written as JSON)")
    if directory is not None:
        instance_of(directory, (str, os.PathLike), "directory", "a folder path")
    try:
        text = json.dumps({"config": dataclasses.asdict(model.config), **info}, indent=1)
    except (TypeError, ValueError) as err:
        raise TypeError(f"info must hold only values JSON can write: {err}") from err
    files = {
        WEIGHTS: _weights(model),
        TOKENIZER: tokenizer.backend.to_str(pretty=True).encode(),
        INFO: (text + "\n").encode(),
    }
    directory = cache_dir() / "tiny_bert" if directory is None else Path(directory)
    staged, target = {}, directory
    try:
        for name, data in files.items():  # every file in full, under a temporary name
            target = directory / name
            staged[name] = write_atomically(temporary_name(target), _put(data))
        for name, tmp in staged.items():
            target = directory / name
            os.replace(tmp, target)
    except OSError as err:
        raise disk_error(err, target) from err
    finally:
        for tmp in staged.values():
            tmp.unlink(missing_ok=True)
    return directory


def _put(data: bytes):
    return lambda file: file.write(data)


def _weights(model: BertForPreTraining) -> bytes:
    """The model's weights as safetensors bytes; a tensor shared under several names is
    stored once (``safetensors.torch.load_model`` restores the sharing)."""
    safetensors_torch = require("safetensors.torch", "safetensors")
    tensors, seen = {}, set()
    for name, t in model.state_dict().items():
        key = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape))
        if key not in seen:
            seen.add(key)
            tensors[name] = t.detach().cpu().contiguous()
    return safetensors_torch.save(tensors)


_GOOD_COPY = (
    "reinstall the package for the shipped files, or save the model again with save_tiny_bert"
)


def tiny_bert_info(directory: str | Path = DATA_DIR) -> dict:
    """The JSON written beside the shipped checkpoint: config, recipe, held-out numbers."""
    instance_of(directory, (str, os.PathLike), "directory", "a folder path")
    path = Path(directory) / INFO
    if not path.is_file():
        raise ValueError(f"no {INFO} in {directory}; run scripts/experiments/pretrain_tiny_bert.py")
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise ValueError(f"{path} is damaged (not JSON: {err}); {_GOOD_COPY}") from err
    if not isinstance(info, dict) or not isinstance(info.get("config"), dict):
        raise ValueError(f"{path} is damaged: it lacks a 'config' object; {_GOOD_COPY}")
    return info


def load_tiny_bert(
    device: torch.device | str | None = None, directory: str | Path = DATA_DIR
) -> tuple[BertForPreTraining, WordPieceTokenizer]:
    """The shipped tiny BERT, in eval mode, and its tokenizer: ``(model, tokenizer)``.

    ``model`` is a ``BertForPreTraining`` (masked-LM and next-sentence heads); its encoder
    alone is ``model.bert``, a ``BertModel`` whose ``pooler_output`` and
    ``last_hidden_state`` suit a classification head. Inputs hold at most
    ``model.config.max_pos`` tokens; the tokenizer truncates to that. A damaged file (cut
    short, not JSON, a config key the model does not know, weights of another size or number
    of layers) raises a ValueError that names it, says what is wrong and how to get a good copy.
    """
    safetensors_torch = require("safetensors.torch", "safetensors")
    device = None if device is None else check_device(device)
    info = tiny_bert_info(directory)
    where, path = Path(directory) / INFO, Path(directory) / WEIGHTS
    try:
        cfg = BertConfig(**info["config"])
    except (TypeError, ValueError) as err:
        raise ValueError(
            f"{where} holds a config BertConfig refuses ({err}); {_GOOD_COPY}"
        ) from err
    model = BertForPreTraining(cfg)
    try:  # safetensors, torch and the format each fail in their own way
        missing, unexpected = safetensors_torch.load_model(model, str(path), strict=False)
    except Exception as err:
        raise ValueError(
            f"{path} could not be loaded into the model its {INFO} describes "
            f"({load_failure(err)}); {_GOOD_COPY}"
        ) from err
    if missing or unexpected:  # e.g. weights of another number of layers
        raise weights_mismatch(path, INFO, cfg.n_layers, missing, unexpected, _GOOD_COPY)
    tok_path = Path(directory) / TOKENIZER
    try:
        tokenizer = WordPieceTokenizer.from_file(tok_path, max_length=cfg.max_pos)
    except ValueError as err:  # the reader's error, or the tokenizer's own check
        raise ValueError(
            f"{tok_path} could not be read as the model's tokenizer "
            f"({load_failure(err.__cause__ or err)}); {_GOOD_COPY}"
        ) from err
    return model.to(device or "cpu").eval(), tokenizer
