"""Models built from the package's components."""

from .gpt import GPT, GPTConfig  # noqa: F401
from .rnn import Seq2Seq, Seq2SeqConfig  # noqa: F401
from .transformer import Decoder, Encoder, EncoderDecoder, TransformerConfig

__all__ = ["TransformerConfig", "Encoder", "Decoder", "EncoderDecoder"]
