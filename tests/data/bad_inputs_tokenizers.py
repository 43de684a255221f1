"""Bad inputs to the tokenizers that ship with pretrained models: BERT's WordPiece
(transformer_lab.data.wordpiece) and SmolLM2's byte-level BPE (transformer_lab.data.gguf_tokenizer).
The tokenizers of transformer_lab.data.tokenizers have theirs in bad_inputs_data.py.

Each case: a callable, a call that must fail, the error type and a fragment of the
message (run by ``tests/test_bad_inputs.py``)."""

from bad_input_support import GT, WP, case, torch, wordpiece

case(
    WP.WordPieceTokenizer,
    lambda: wordpiece()("the cat", "a dog", max_length=3),
    ValueError,
    "max_length must be an int >= 5 (room for a pair [CLS] A [SEP] B [SEP]",
)

case(
    WP.WordPieceTokenizer,
    lambda: WP.WordPieceTokenizer(wordpiece().backend, max_length=1),
    ValueError,
    "max_length must be an int >= 3",
)

for thunk, error, fragment in [
    (lambda: wordpiece().decode([999999]), ValueError, "ids must be in [0, 44), got [999999]"),
    (lambda: wordpiece().decode([True, False]), TypeError,
     "ids must be integer token ids, got True (bool)"),
    (lambda: wordpiece().convert_ids_to_tokens([5, -1]), ValueError,
     "ids must be in [0, 44), got [-1]"),
]:  # fmt: skip
    case(WP.WordPieceTokenizer, thunk, error, fragment)

case(
    WP.TokenBatch,
    lambda: wordpiece()(["the cat"]).to("gpu"),
    ValueError,
    "device must be 'cpu', 'cuda', 'cuda:N', 'mps' or a torch.device, got 'gpu'",
)

case(
    GT.GGUFTokenizer,
    lambda: GT.GGUFTokenizer({"tokenizer.ggml.model": "llama"}),
    ValueError,
    "only byte-level BPE ('gpt2') tokenizers are supported, got 'llama'",
)

_CHAT = GT.GGUFTokenizer(
    {
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.tokens": ["a", "b"],
        "tokenizer.ggml.merges": [],
        "tokenizer.chat_template": "{% for m in messages %}{{ m['content'] }}{% endfor %}",
    }
)
for thunk, error, fragment in [
    (lambda: _CHAT.chat_prompt([]), ValueError,
     "messages is empty: give a question or at least one message"),
    (lambda: _CHAT.chat_prompt([{"role": "robot", "content": "hi"}]), ValueError,
     "messages[0]['role'] must be one of ('system', 'user', 'assistant'), got 'robot'"),
    (lambda: _CHAT.chat_prompt(["hi"]), TypeError,
     "messages[0] must be a dict with str 'role' and 'content', got 'hi'"),
    (lambda: _CHAT.chat_prompt([{"role": "user", "content": "a"}, {"role": "user"}]), TypeError,
     "messages[1] must be a dict with str 'role' and 'content', got {'role': 'user'}"),
    (lambda: _CHAT.chat_prompt(None), TypeError,
     "messages must be a str or a list of {'role', 'content'} dicts, got NoneType"),
    (lambda: _CHAT.decode([True, False]), TypeError,
     "ids must be integer token ids, got True (bool)"),
    (lambda: _CHAT.decode([0, 2]), ValueError, "ids must be in [0, 2), got [2]"),
]:  # fmt: skip
    case(GT.GGUFTokenizer, thunk, error, fragment)

for thunk, error, fragment in [
    (lambda: wordpiece().renumbered([1, 2]), TypeError,
     "counts must be a tensor of one count per token, got list"),
    (lambda: wordpiece().renumbered(torch.ones(3, dtype=torch.long)), ValueError,
     "counts must hold one integer count per token, shape (44,), got torch.int64 (3,)"),
    (lambda: wordpiece().renumbered(torch.ones(44)), ValueError,
     "counts must hold one integer count per token, shape (44,), got torch.float32 (44,)"),
]:  # fmt: skip
    case(WP.WordPieceTokenizer, thunk, error, fragment)
