"""Models built from the package's components."""

from .transformer import Decoder, Encoder, EncoderDecoder, TransformerConfig

__all__ = ["TransformerConfig", "Encoder", "Decoder", "EncoderDecoder"]
