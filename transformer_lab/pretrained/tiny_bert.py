"""The tiny BERT the book ships: pretrained on Shakespeare by ``training.tiny_bert``,
saved in ``assets/`` and loaded here."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import torch

from transformer_lab.checks import instance_of
from transformer_lab.device import check_device
from transformer_lab.models.bert import BertConfig, BertForPreTraining
from transformer_lab.pretrained.tokenizers import WordPieceTokenizer, _require

__all__ = ["save_tiny_bert", "tiny_bert_info", "load_tiny_bert"]

DATA_DIR = Path(__file__).parent.parent / "assets"
WEIGHTS, TOKENIZER, INFO = "tiny_bert.safetensors", "tiny_bert_tokenizer.json", "tiny_bert.json"


def save_tiny_bert(
    model: BertForPreTraining,
    tokenizer: WordPieceTokenizer,
    info: dict,
    directory: str | Path = DATA_DIR,
) -> Path:
    """Write the weights (safetensors), the tokenizer and ``info`` (JSON) to ``directory``."""
    instance_of(model, BertForPreTraining, "model")
    instance_of(info, dict, "info", "a dict (written as JSON)")
    safetensors_torch = _require("safetensors.torch", "safetensors")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    safetensors_torch.save_model(model.cpu(), str(directory / WEIGHTS))
    tokenizer.backend.save(str(directory / TOKENIZER))
    config = dataclasses.asdict(model.config)
    (directory / INFO).write_text(json.dumps({"config": config, **info}, indent=1) + "\n")
    return directory


def tiny_bert_info(directory: str | Path = DATA_DIR) -> dict:
    """The JSON written beside the shipped checkpoint: config, recipe, held-out numbers."""
    path = Path(directory) / INFO
    if not path.is_file():
        raise ValueError(f"no {INFO} in {directory}; run scripts/experiments/pretrain_tiny_bert.py")
    return json.loads(path.read_text())


def load_tiny_bert(
    device: torch.device | str | None = None, directory: str | Path = DATA_DIR
) -> tuple[BertForPreTraining, WordPieceTokenizer]:
    """The shipped tiny BERT, in eval mode, and its tokenizer: ``(model, tokenizer)``.

    ``model`` is a ``BertForPreTraining`` (masked-LM and next-sentence heads); its encoder
    alone is ``model.bert``, a ``BertModel`` whose ``pooler_output`` and
    ``last_hidden_state`` suit a classification head. Inputs hold at most
    ``model.config.max_pos`` tokens; the tokenizer truncates to that.
    """
    safetensors_torch = _require("safetensors.torch", "safetensors")
    device = None if device is None else check_device(device)
    info = tiny_bert_info(directory)
    cfg = BertConfig(**info["config"])
    model = BertForPreTraining(cfg)
    safetensors_torch.load_model(model, str(Path(directory) / WEIGHTS))
    tokenizer = WordPieceTokenizer.from_file(Path(directory) / TOKENIZER, max_length=cfg.max_pos)
    return model.to(device or "cpu").eval(), tokenizer
