"""Bad inputs to transformer_lab.pretrained.whisper and its CTranslate2 reader.

Each case: a callable, a call that must fail, the error type and a fragment of the
message (run by tests/test_bad_inputs.py). The model cases run on a small random Whisper
(width 8, one layer each side) and the shipped tokenizer; the damaged files are small
ones written to a temporary folder, and the first kilobyte of the shipped model.bin."""

import functools
import struct
import tempfile
from pathlib import Path

from bad_input_support import RECORDS, case, torch

from transformer_lab.pretrained import ctranslate2_format as CT2
from transformer_lab.pretrained import whisper as W

RECORDS.update({CT2.CTranslate2Model, W.GreedyResult, W.Transcript})

SPEC = "TinySpec"
NAME_AT = 4 + 2 + len(SPEC) + 1 + 4 + 4  # version, spec name, revision, variable count


@functools.cache
def folder() -> Path:
    return Path(tempfile.mkdtemp(prefix="bad_whisper_"))


def tiny_bytes() -> bytes:
    """A valid file: one float16 variable "w" of shape [2], one alias."""
    path = CT2.write_ctranslate2(
        folder() / "tiny.bin", {"w": torch.ones(2, dtype=torch.float16)}, spec=SPEC,
        aliases={"v": "w"},
    )  # fmt: skip
    return path.read_bytes()


def damaged(name: str, edit) -> Path:
    """tiny_bytes() changed by edit(bytearray) -> bytes, written as name."""
    path = folder() / name
    path.write_bytes(bytes(edit(bytearray(tiny_bytes()))))
    return path


def patch(offset: int, fmt: str, value):
    def edit(data: bytearray) -> bytearray:
        struct.pack_into("<" + fmt, data, offset, value)
        return data

    return edit


RANK_AT = NAME_AT + 2 + 2  # after the name "w" (length 2 with its zero byte)
TYPE_AT = RANK_AT + 1 + 4
SIZE_AT = TYPE_AT + 1


def read(name, edit):
    return lambda: CT2.read_ctranslate2(damaged(name, edit))


case(CT2.read_ctranslate2, lambda: CT2.read_ctranslate2(3), TypeError,
     "path must be a str or Path, got int")  # fmt: skip
case(CT2.read_ctranslate2, read("version.bin", patch(0, "I", 0xFFFFFFFF)), ValueError,
     "binary version 4294967295 (bytes ffffffff) is not one this reader knows "
     "(1 to 6)")  # fmt: skip
case(CT2.read_ctranslate2, read("zero.bin", patch(0, "I", 0)), ValueError,
     "binary version 0")  # fmt: skip
case(CT2.read_ctranslate2, read("short.bin", lambda d: d[:-3]), ValueError,
     "truncated: the length of the variable of alias 'v' needs 2 bytes at offset 49, but the "
     "file has 1 left (of 50)")  # fmt: skip
case(CT2.read_ctranslate2, read("head.bin", lambda d: d[:2]), ValueError,
     "truncated: the binary version needs 4 bytes at offset 0, but the file has 2 "
     "left")  # fmt: skip
case(CT2.read_ctranslate2, read("empty.bin", lambda d: b""), ValueError,
     "empty.bin is not a valid CTranslate2 model.bin: truncated: the binary version needs 4 "
     "bytes at offset 0, but the file has 0 left (of 0)")  # fmt: skip
case(CT2.read_ctranslate2, read("dtype.bin", patch(TYPE_AT, "B", 9)), ValueError,
     "variable 'w' has data type id 9; known ids are 0 (float32)")  # fmt: skip
case(CT2.read_ctranslate2, read("rank.bin", patch(RANK_AT, "B", 200)), ValueError,
     "variable 'w' has rank 200; at most 8 is expected")  # fmt: skip
case(CT2.read_ctranslate2, read("size.bin", patch(SIZE_AT, "I", 0xFFFFFFFF)), ValueError,
     "variable 'w' of shape [2] and type float16 needs 4 bytes, but its payload size "
     "says 4294967295")  # fmt: skip
HUGE = (patch(RANK_AT + 1, "I", 2**31 - 1), patch(SIZE_AT, "I", 2**32 - 2))  # a 4 GB claim
case(CT2.read_ctranslate2, read("huge.bin", lambda d: HUGE[1](HUGE[0](d))), ValueError,
     "truncated: the payload of 'w' needs 4294967294 bytes")  # fmt: skip
case(CT2.read_ctranslate2, read("tail.bin", lambda d: d + b"xyz"), ValueError,
     "3 bytes follow the end of the model")  # fmt: skip
case(CT2.read_ctranslate2, read("name.bin", patch(NAME_AT, "H", 0)), ValueError,
     "the name of variable 0 has length 0")  # fmt: skip
case(CT2.read_ctranslate2, read("alias.bin", lambda d: d[:-2] + b"x\0"),
     ValueError, "alias 'v' names 'x', which is not a variable")  # fmt: skip
case(CT2.read_ctranslate2,
     lambda: CT2.read_ctranslate2(W.whisper_dir() / "tokenizer.json"), ValueError,
     "tokenizer.json is not a valid CTranslate2 model.bin: binary version")  # fmt: skip

case(CT2.MissingVariableError,
     lambda: CT2.read_ctranslate2(damaged("ok.bin", lambda d: d)).get("nope"), ValueError,
     "ok.bin has no variable 'nope'")  # fmt: skip
case(CT2.write_ctranslate2,
     lambda: CT2.write_ctranslate2(folder() / "b.bin", {"w": torch.ones(2, dtype=torch.bool)},
                                   spec=SPEC),
     TypeError, "variable 'w' is torch.bool; the format stores float32, int8")  # fmt: skip
case(CT2.write_ctranslate2, lambda: CT2.write_ctranslate2(folder() / "b.bin", {}), ValueError,
     "spec must name the model's specification")  # fmt: skip
case(CT2.write_ctranslate2,
     lambda: CT2.write_ctranslate2(folder() / "b.bin", {}, spec=SPEC, aliases={"a": "b"}),
     ValueError, "alias 'a' names 'b', which is not a variable")  # fmt: skip
case(CT2.write_ctranslate2, lambda: CT2.write_ctranslate2(folder() / "b.bin", [], spec=SPEC),
     TypeError, "variables must be a dict of name -> tensor, got list")  # fmt: skip
case(CT2.write_ctranslate2,
     lambda: CT2.write_ctranslate2(folder() / "b.bin", {"": torch.ones(1)}, spec=SPEC),
     ValueError, "a variable name must be 1 to 65534 bytes")  # fmt: skip


# ---- Whisper ----------------------------------------------------------------------------

TINY = {"d_model": 8, "n_audio_heads": 2, "n_text_heads": 2, "d_mlp": 8, "n_audio_layers": 1,
        "n_text_layers": 1}  # fmt: skip


@functools.cache
def tiny() -> W.Whisper:
    torch.manual_seed(0)
    return W.Whisper(W.WhisperConfig(**TINY)).eval()


@functools.cache
def tokenizer() -> W.WhisperTokenizer:
    return W.WhisperTokenizer(W.whisper_dir() / "tokenizer.json")


def mel(*shape):
    return torch.zeros(*shape) if shape else torch.zeros(80, 3000)


def speech(seconds=1.0):
    n = int(seconds * 16000)
    return 0.1 * torch.sin(torch.arange(n) * 0.05)


def ids(*values):
    return torch.tensor([list(values)])


def truncated_folder() -> Path:
    """A folder whose model.bin is the first kilobyte of the shipped one."""
    path = folder() / "truncated"
    path.mkdir(exist_ok=True)
    with open(W.whisper_dir() / "model.bin", "rb") as f:
        (path / "model.bin").write_bytes(f.read(1024))
    return path


def plain_tokenizer() -> Path:
    """A tokenizer.json without Whisper's special tokens."""
    from tokenizers import Tokenizer, models

    path = folder() / "plain_tokenizer.json"
    Tokenizer(models.BPE()).save(str(path))
    return path


case(W.whisper_dir, lambda: W.whisper_dir("x"), TypeError, "positional argument")

case(W.WhisperConfig, lambda: W.WhisperConfig(d_model=10), ValueError,
     "d_model=10 is not divisible by n_audio_heads=6")  # fmt: skip
case(W.WhisperConfig, lambda: W.WhisperConfig(n_mels=0), ValueError,
     "n_mels must be a positive int, got 0")  # fmt: skip
case(W.WhisperConfig, lambda: W.WhisperConfig(eps=float("nan")), ValueError,
     "eps must be a positive finite number, got nan")  # fmt: skip
case(W.WhisperGeneration, lambda: W.WhisperGeneration(suppress_ids=("a",)), TypeError,
     "suppress_ids must be a tuple of token ids (ints >= 0), got ('a',)")  # fmt: skip
case(W.WhisperGeneration, lambda: W.WhisperGeneration(alignment_heads=((1,),)), TypeError,
     "alignment_heads must be (layer, head) pairs of ints")  # fmt: skip
case(W.WhisperGeneration, lambda: W.WhisperGeneration(max_length=0), ValueError,
     "max_length must be a positive int, got 0")  # fmt: skip
case(W.WhisperGeneration, lambda: W.WhisperGeneration(eot_id=-1), ValueError,
     "eot_id must be a non-negative int, got -1")  # fmt: skip

case(W.mel_filters, lambda: W.mel_filters(0), ValueError, "n_mels must be a positive int, got 0")
case(W.mel_filters, lambda: W.mel_filters(80, n_fft=1), ValueError, "n_fft must be >= 2, got 1")
case(W.mel_filters, lambda: W.mel_filters(80, sample_rate=16000.0), TypeError,
     "sample_rate must be an int, got float")  # fmt: skip

case(W.log_mel, lambda: W.log_mel([0.0, 0.1]), TypeError, "audio must be a torch.Tensor, got list")
case(W.log_mel, lambda: W.log_mel(torch.zeros(100, dtype=torch.int16)), TypeError,
     "audio must be a floating-point tensor of samples in [-1, 1] (16-bit PCM: divide by "
     "32768), got torch.int16")  # fmt: skip
case(W.log_mel, lambda: W.log_mel(torch.zeros(100, dtype=torch.int64)), TypeError,
     "got torch.int64")  # fmt: skip
case(W.log_mel, lambda: W.log_mel(torch.zeros(2, 100)), ValueError,
     "audio must be 1-d [samples] (one channel), got shape (2, 100)")  # fmt: skip
case(W.log_mel, lambda: W.log_mel(torch.zeros(0)), ValueError, "audio is empty (0 samples)")
case(W.log_mel, lambda: W.log_mel(torch.tensor([0.0, float("nan"), float("inf")])), ValueError,
     "audio has 2 NaN or infinite samples")  # fmt: skip
case(W.log_mel, lambda: W.log_mel(torch.zeros(31 * 16000)), ValueError,
     "audio is 31.00 s long (496000 samples at 16000 Hz); Whisper reads at most 30 s")  # fmt: skip
case(W.log_mel, lambda: W.log_mel(speech(), sample_rate=44100), ValueError,
     "sample_rate must be 16000 (Whisper hears 16 kHz audio), got 44100: resample")  # fmt: skip
case(W.log_mel, lambda: W.log_mel(speech(), sample_rate=16000.0), TypeError,
     "sample_rate must be an int (Hz), got float")  # fmt: skip
case(W.log_mel, lambda: W.log_mel(speech(), truncate="yes"), TypeError,
     "truncate must be a bool, got str")  # fmt: skip

case(W.whisper_sinusoids, lambda: W.whisper_sinusoids(4, 7), ValueError,
     "channels must be even, got 7")  # fmt: skip
case(W.whisper_sinusoids, lambda: W.whisper_sinusoids(0, 8), ValueError,
     "length must be a positive int, got 0")  # fmt: skip
case(W.whisper_sinusoids, lambda: W.whisper_sinusoids(4, 8, max_timescale=1.0), ValueError,
     "max_timescale must be a finite number > 1, got 1.0")  # fmt: skip

case(W.WhisperTokenizer, lambda: W.WhisperTokenizer(3), TypeError,
     "path must be a str or Path, got int")  # fmt: skip
case(W.WhisperTokenizer, lambda: W.WhisperTokenizer(W.whisper_dir() / "config.json"),
     ValueError, "config.json is not a tokenizer.json that tokenizers can read")  # fmt: skip
case(W.WhisperTokenizer, lambda: W.WhisperTokenizer(plain_tokenizer()), ValueError,
     "lacks Whisper's special tokens ['<|endoftext|>', '<|startoftranscript|>'")  # fmt: skip
case(W.WhisperTokenizer, lambda: W.WhisperTokenizer(plain_tokenizer(), d_vocab=0), ValueError,
     "d_vocab must be a positive int, got 0")  # fmt: skip
case(W.WhisperTokenizer, lambda: tokenizer().decode([50, 51864]), ValueError,
     "token ids must be in [0, 51864), got [51864]")  # fmt: skip
case(W.WhisperTokenizer, lambda: tokenizer().decode([-1]), ValueError,
     "token ids must be in [0, 51864), got [-1]")  # fmt: skip
case(W.WhisperTokenizer, lambda: tokenizer().decode([1.0]), TypeError,
     "token ids must be ints, got float (1.0)")  # fmt: skip
case(W.WhisperTokenizer, lambda: tokenizer().decode([True]), TypeError,
     "token ids must be ints, got bool")  # fmt: skip
case(W.WhisperTokenizer, lambda: tokenizer().decode("383"), TypeError,
     "ids must be a list of ints, got str")  # fmt: skip
case(W.WhisperTokenizer, lambda: tokenizer().decode(torch.tensor([1.0])), TypeError,
     "ids must be a 1-d integer tensor or a list of ints, got torch.float32")  # fmt: skip
case(W.WhisperTokenizer, lambda: tokenizer().decode([1], skip_special_tokens=1), TypeError,
     "skip_special_tokens must be a bool, got int")  # fmt: skip
case(W.WhisperTokenizer, lambda: tokenizer().encode(None), TypeError,
     "text must be a str, got NoneType")  # fmt: skip
case(W.WhisperTokenizer, lambda: tokenizer().token(99999), ValueError,
     "token ids must be in [0, 51864), got [99999]")  # fmt: skip

case(W.WhisperEncoder, lambda: W.WhisperEncoder(None), TypeError,
     "config must be a WhisperConfig, got NoneType")  # fmt: skip
case(W.WhisperEncoder, lambda: tiny().encoder(mel(1, 80, 2999)), ValueError,
     "mel must be [batch, 80, 3000] (log_mel of 30 s, with a batch dimension), got "
     "(1, 80, 2999)")  # fmt: skip
case(W.WhisperEncoder, lambda: tiny().encoder(mel()), ValueError,
     "mel must be [batch, 80, 3000]")  # fmt: skip
case(W.WhisperEncoder, lambda: tiny().encoder(mel(1, 80, 3000).long()), TypeError,
     "mel must be a floating-point tensor [batch, 80, 3000], got torch.int64")  # fmt: skip

case(W.WhisperDecoderBlock, lambda: W.WhisperDecoderBlock(8, 3, 8), ValueError,
     "d_model=8 is not divisible by n_heads=3")  # fmt: skip
case(W.WhisperDecoderBlock, lambda: tiny().decoder.blocks[0].cross_kv(torch.zeros(1, 5, 7)),
     ValueError, "memory has 7 features but the layer expects 8")  # fmt: skip
case(W.WhisperDecoderBlock, lambda: tiny().decoder.blocks[0].cross_kv(torch.zeros(5, 8)),
     ValueError, "memory must be [batch, pos, d_model], got (5, 8)")  # fmt: skip

case(W.WhisperDecoder, lambda: W.WhisperDecoder("tiny"), TypeError,
     "config must be a WhisperConfig, got str")  # fmt: skip
case(W.WhisperDecoder, lambda: tiny().decoder(ids(50257, 51864), torch.zeros(1, 4, 8)),
     ValueError, "idx must be in [0, 51864), got values from 50257 to 51864")  # fmt: skip
case(W.WhisperDecoder, lambda: tiny().decoder(ids(-1), torch.zeros(1, 4, 8)), ValueError,
     "idx must be in [0, 51864), got values from -1 to -1")  # fmt: skip
case(W.WhisperDecoder, lambda: tiny().decoder(ids(50257).float(), torch.zeros(1, 4, 8)),
     TypeError, "idx must be an integer tensor of token ids, got torch.float32")  # fmt: skip
case(W.WhisperDecoder, lambda: tiny().decoder(torch.zeros(1, 449, dtype=torch.long),
                                              torch.zeros(1, 4, 8)),
     ValueError, "449 positions exceed the context length n_ctx=448")  # fmt: skip
case(W.WhisperDecoder, lambda: tiny().decoder(ids(50257)), ValueError,
     "give the decoder either memory (the encoder output) or cross_kv")  # fmt: skip
case(W.WhisperDecoder,
     lambda: tiny().decoder(ids(50257), torch.zeros(1, 4, 8), ablate_cross=[7]), ValueError,
     "ablate_cross names layer 7; the decoder has layers 0..0")  # fmt: skip
case(W.WhisperDecoder,
     lambda: tiny().decoder(ids(50257), torch.zeros(1, 4, 8), ablate_cross="some"), ValueError,
     "ablate_cross must be None, 'all' or layer numbers, got 'some'")  # fmt: skip
case(W.WhisperDecoder,
     lambda: tiny().decoder(ids(50257), torch.zeros(1, 4, 8), ablate_cross=1.5), TypeError,
     "ablate_cross must be None, 'all' or a list of layer numbers, got float")  # fmt: skip
case(W.WhisperDecoder, lambda: tiny().decoder(ids(50257), cross_kv=[]), ValueError,
     "cross_kv must hold one (k, v) pair per layer (1)")  # fmt: skip
case(W.WhisperDecoder, lambda: tiny().decoder(ids(50257), torch.zeros(1, 4, 8), kv_cache=[]),
     TypeError, "kv_cache must be a KVCache or None, got list")  # fmt: skip

case(W.Whisper, lambda: W.Whisper(None), TypeError, "config must be a WhisperConfig, got NoneType")
case(W.Whisper, lambda: W.Whisper(W.WhisperConfig(**TINY), generation={}), TypeError,
     "generation must be a WhisperGeneration, got dict")  # fmt: skip
case(W.Whisper, lambda: tiny()(mel(1, 80, 3000), ids(99999)), ValueError,
     "idx must be in [0, 51864), got values from 99999 to 99999")  # fmt: skip

case(W.config_from_ctranslate2, lambda: W.config_from_ctranslate2(None), TypeError,
     "ct2 must be a CTranslate2Model (from read_ctranslate2), got NoneType")  # fmt: skip
case(W.config_from_ctranslate2,
     lambda: W.config_from_ctranslate2(CT2.read_ctranslate2(damaged("ok.bin", lambda d: d))),
     ValueError, "holds a TinySpec model, not WhisperSpec")  # fmt: skip
case(W.config_from_ctranslate2,
     lambda: W.config_from_ctranslate2(CT2.CTranslate2Model(Path("x.bin"), 6, "WhisperSpec", 3)),
     ValueError, "x.bin lacks ['encoder/conv1/weight'")  # fmt: skip
case(W.whisper_from_ctranslate2, lambda: W.whisper_from_ctranslate2("model.bin"), TypeError,
     "ct2 must be a CTranslate2Model (from read_ctranslate2), got str")  # fmt: skip

case(W.whisper_tiny_en, lambda: W.whisper_tiny_en(device="gpu"), ValueError,
     "device must be 'cpu', 'cuda', 'cuda:N', 'mps' or a torch.device, got 'gpu'")  # fmt: skip
case(W.whisper_tiny_en, lambda: W.whisper_tiny_en(path=truncated_folder()), ValueError,
     "truncated/model.bin is not a valid CTranslate2 model.bin: truncated")  # fmt: skip
case(W.whisper_tiny_en, lambda: W.whisper_tiny_en(path=5), TypeError,
     "path must be a str or Path, got int")  # fmt: skip

case(W.greedy_transcribe, lambda: W.greedy_transcribe(None, mel()), TypeError,
     "model must be a Whisper, got NoneType")  # fmt: skip
case(W.greedy_transcribe, lambda: W.greedy_transcribe(tiny(), mel(1, 80, 3000)), ValueError,
     "mel must be one utterance [80, 3000] (log_mel's output), got (1, 80, 3000)")  # fmt: skip
case(W.greedy_transcribe, lambda: W.greedy_transcribe(tiny(), mel(80, 2000)), ValueError,
     "mel must be one utterance [80, 3000] (log_mel's output), got (80, 2000)")  # fmt: skip
case(W.greedy_transcribe, lambda: W.greedy_transcribe(tiny(), mel().fill_(float("nan"))),
     ValueError, "mel has NaN or infinite values")  # fmt: skip
case(W.greedy_transcribe, lambda: W.greedy_transcribe(tiny(), mel(), max_length=2), ValueError,
     "max_length must be an int >= 3, got 2")  # fmt: skip
case(W.greedy_transcribe, lambda: W.greedy_transcribe(tiny(), mel(), max_length=449), ValueError,
     "max_length must be at most the decoder's 448 positions, got 449")  # fmt: skip
case(W.greedy_transcribe, lambda: W.greedy_transcribe(tiny(), mel(), self_cache="no"), TypeError,
     "self_cache must be a bool, got str")  # fmt: skip
case(W.greedy_transcribe, lambda: W.greedy_transcribe(tiny(), mel(), ablate_cross=[1]),
     ValueError, "ablate_cross names layer 1; the decoder has layers 0..0")  # fmt: skip

case(W.greedy_transcribe,
     lambda: W.greedy_transcribe(W.Whisper(W.WhisperConfig(**TINY, d_vocab=100)), mel()),
     ValueError, "model.generation names token 50362, beyond the model's d_vocab=100")  # fmt: skip

case(W.transcribe, lambda: W.transcribe(tiny(), tokenizer(), torch.zeros(16000)), ValueError,
     "audio is silent (every sample is 0): there is nothing to transcribe")  # fmt: skip
case(W.transcribe, lambda: W.transcribe(tiny(), tokenizer(), speech(30.5)), ValueError,
     "audio is 30.50 s long (488000 samples at 16000 Hz); Whisper reads at most 30 s")  # fmt: skip
case(W.transcribe, lambda: W.transcribe(tiny(), tokenizer(), speech(), sample_rate=8000),
     ValueError, "sample_rate must be 16000")  # fmt: skip
case(W.transcribe,
     lambda: W.transcribe(tiny(), tokenizer(), (speech() * 32767).to(torch.int16)), TypeError,
     "(16-bit PCM: divide by 32768)")  # fmt: skip
case(W.transcribe, lambda: W.transcribe(tiny(), tokenizer(), speech()[None]), ValueError,
     "audio must be 1-d [samples] (one channel)")  # fmt: skip
case(W.transcribe, lambda: W.transcribe(tiny(), tokenizer(), torch.zeros(0)), ValueError,
     "audio is empty")  # fmt: skip
case(W.transcribe, lambda: W.transcribe(tiny(), None, speech()), TypeError,
     "tokenizer must be a WhisperTokenizer, got NoneType")  # fmt: skip
