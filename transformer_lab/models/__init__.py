"""Models built from the package's components."""

from transformer_lab.models.gpt import GPT, GPTConfig  # noqa: F401
from transformer_lab.models.rnn import Seq2Seq, Seq2SeqConfig  # noqa: F401
from transformer_lab.models.transformer import Decoder, Encoder, EncoderDecoder, TransformerConfig

__all__ = ["TransformerConfig", "Encoder", "Decoder", "EncoderDecoder"]
