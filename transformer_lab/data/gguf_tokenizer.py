"""SmolLM2's tokenizer: the byte-level BPE stored in a GGUF file, run by the ``tokenizers``
library (Rust).

:class:`GGUFTokenizer` rebuilds the tokenizer from the vocabulary and the merges of the
model's GGUF file: the text's UTF-8 bytes are merged pair by pair in the order the merges
were learned, so any text, emoji included, has a spelling; the file's chat template turns a
conversation into the prompt the model was tuned on (:meth:`GGUFTokenizer.chat_prompt`).
The other tokenizers of the package are in :mod:`transformer_lab.data.tokenizers` and
:mod:`transformer_lab.data.wordpiece`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch

from transformer_lab.checks import instance_of, token_id_list

__all__ = ["GGUFTokenizer", "CHAT_ROLES"]

CHAT_ROLES = ("system", "user", "assistant")  # the turns of SmolLM2's chat template
_TURN = ("role", "content")


class GGUFTokenizer:
    """The byte-level BPE tokenizer of a GGUF file, run by ``tokenizers``.

    ``encode(text) -> list[int]`` (special tokens such as ``<|im_start|>`` written in the
    text become their ids), ``decode(ids) -> str``, ``tokens(text)`` (the pieces, with
    ``Ġ`` for a space as byte-level BPE writes it), and :meth:`chat_prompt`.
    """

    def __init__(self, metadata: dict):
        from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

        instance_of(metadata, dict, "metadata")
        kind = metadata.get("tokenizer.ggml.model")
        if kind != "gpt2":
            raise ValueError(f"only byte-level BPE ('gpt2') tokenizers are supported, got {kind!r}")
        tokens = list(metadata["tokenizer.ggml.tokens"])
        merges = [tuple(m.split(" ", 1)) for m in metadata["tokenizer.ggml.merges"]]
        types = list(metadata.get("tokenizer.ggml.token_type", [1] * len(tokens)))
        vocab = {tok: i for i, tok in enumerate(tokens)}
        self._tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
        self._tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        self._tok.decoder = decoders.ByteLevel()
        control = [tokens[i] for i, kind in enumerate(types) if kind == 3]  # CONTROL tokens
        self._tok.add_special_tokens([AddedToken(s, special=True) for s in control])
        self.special_tokens = control
        self.vocab_size = len(tokens)
        self.bos_id = metadata.get("tokenizer.ggml.bos_token_id")
        self.eos_id = metadata.get("tokenizer.ggml.eos_token_id")
        self.pad_id = metadata.get("tokenizer.ggml.padding_token_id")
        self.chat_template = metadata.get("tokenizer.chat_template")

    def encode(self, text: str) -> list[int]:
        instance_of(text, str, "text", "a str")
        return self._tok.encode(text, add_special_tokens=False).ids

    def tokens(self, text: str) -> list[str]:
        instance_of(text, str, "text", "a str")
        return self._tok.encode(text, add_special_tokens=False).tokens

    def decode(self, ids: Sequence[int] | torch.Tensor, skip_special_tokens: bool = False) -> str:
        if isinstance(ids, torch.Tensor):
            if ids.dim() != 1 or ids.is_floating_point():
                raise ValueError(f"ids must be a 1-d integer tensor, got {tuple(ids.shape)}")
            ids = ids.tolist()
        ids = list(ids) if isinstance(ids, Iterable) and not isinstance(ids, str) else None
        if ids is None or not all(isinstance(i, int) for i in ids):
            raise TypeError("ids must be a sequence of ints")
        ids = token_id_list(ids, self.vocab_size)  # bools too: True would read as id 1
        return self._tok.decode(ids, skip_special_tokens=skip_special_tokens)

    def chat_prompt(self, messages: str | Sequence[dict], add_generation_prompt: bool = True):
        """The text the model expects for a conversation, made by the file's own chat
        template (Jinja). ``messages`` is a question (one user turn) or a list of
        ``{"role": ..., "content": ...}`` with both strings and the role one of
        :data:`CHAT_ROLES`, the roles SmolLM2's template was tuned on (the template itself
        would print any role); the template adds the default system turn."""
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        if not isinstance(messages, (list, tuple)):
            raise TypeError(
                "messages must be a str or a list of {'role', 'content'} dicts, "
                f"got {type(messages).__name__}"
            )
        if not messages:
            raise ValueError("messages is empty: give a question or at least one message")
        for i, m in enumerate(messages):
            if not isinstance(m, dict) or not all(isinstance(m.get(k), str) for k in _TURN):
                raise TypeError(
                    f"messages[{i}] must be a dict with str 'role' and 'content', got {m!r:.80}"
                )
            if m["role"] not in CHAT_ROLES:
                raise ValueError(
                    f"messages[{i}]['role'] must be one of {CHAT_ROLES}, got {m['role']!r}"
                )
        if not self.chat_template:
            raise ValueError("this GGUF file has no tokenizer.chat_template")
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        return env.from_string(self.chat_template).render(
            messages=list(messages), add_generation_prompt=add_generation_prompt
        )
