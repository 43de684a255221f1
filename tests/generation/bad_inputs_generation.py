"""Bad inputs to transformer_lab.generation.

Each case: a callable, a call that must fail, the error type and a fragment of the
message (run by ``tests/test_bad_inputs.py``)."""

from bad_input_support import (  # noqa: F401
    D,
    G,
    case,
    enc_dec,
    f,
    gpt,
    ids,
    nn,
    torch,
)

case(
    G.generate,
    lambda: G.generate(gpt(), ids([3, -2]), 2),
    ValueError,
    "idx must be in [0, 11), got values from -2 to 3",
)

case(
    G.next_token_probs,
    lambda: G.next_token_probs(torch.randn(2, 5), temperature=float("nan")),
    ValueError,
    "temperature must be a non-negative finite number, got nan",
)

case(
    G.next_token_probs,
    lambda: G.next_token_probs(torch.randn(2, 5) * 10, temperature=1e-40),
    ValueError,
    "temperature=1e-40 is too small for these logits",
)

case(
    G.sample_next,
    lambda: G.sample_next(torch.randn(2, 5) * 10, temperature=1e-40),
    ValueError,
    "is too small for these logits",
)

case(
    D.sequence_score,
    lambda: D.sequence_score(
        enc_dec(), ids([1, 2]), torch.zeros(1, 0, dtype=torch.long), bos_id=1, eos_id=2
    ),
    ValueError,
    "outputs must be [batch, n] with n >= 1 tokens to score, got (1, 0)",
)

case(
    G.top_k_filter,
    lambda: G.top_k_filter(f(2, 5), 0),
    ValueError,
    "top_k must be a positive int, got 0",
)

case(
    G.top_k_filter,
    lambda: G.top_k_filter([1.0, 2.0], 1),
    TypeError,
    "logits must be a floating-point tensor [..., d_vocab], got list",
)

case(
    G.top_p_filter,
    lambda: G.top_p_filter(f(2, 5), 1.5),
    ValueError,
    "top_p must be a number in (0, 1], got 1.5",
)

case(
    G.top_p_filter,
    lambda: G.top_p_filter(ids(1, 2), 0.5),
    TypeError,
    "logits must be a floating-point tensor [..., d_vocab], got torch.int64",
)

case(
    G.next_token_probs,
    lambda: G.next_token_probs(torch.full((2, 5), float("-inf"))),
    ValueError,
    "logits contain NaN or +inf, or a row of only -inf: there is no",
)

case(
    G.next_token_probs,
    lambda: G.next_token_probs(torch.full((2, 5), float("nan"))),
    ValueError,
    "logits contain NaN or +inf, or a row of only -inf: there is no",
)

case(
    G.sample_next,
    lambda: G.sample_next(torch.full((2, 5), float("-inf"))),
    ValueError,
    "logits contain NaN or +inf, or a row of only -inf: there is no",
)

case(
    G.sample_next,
    lambda: G.sample_next(f(5)),
    ValueError,
    "logits must be [batch, d_vocab], got shape (5,)",
)

case(
    G.sample_next,
    lambda: G.sample_next(f(2, 5), generator=123),
    TypeError,
    "generator must be a CPU torch.Generator, got 123",
)

case(
    G.generate,
    lambda: G.generate(gpt(), ids([1, 2]), -1),
    ValueError,
    "max_new_tokens must be a non-negative int, got -1",
)

case(
    G.generate,
    lambda: G.generate(gpt(), [[1, 2]], 1),
    TypeError,
    "idx must be an integer tensor of token ids, got list",
)

case(
    G.generate,
    lambda: G.generate(gpt(), ids([1, 2]), 1, temperature=-1),
    ValueError,
    "temperature must be a non-negative finite number, got -1",
)

case(
    G.generate,
    lambda: G.generate(nn.Linear(2, 2), ids([1, 2]), 1, use_cache=True),
    ValueError,
    "Linear has no key/value cache (no new_cache method)",
)

case(
    D.greedy_decode,
    lambda: D.greedy_decode(enc_dec(), ids(1, 2), bos_id=1, eos_id=2),
    ValueError,
    "src must be a non-empty [batch, src_pos] tensor of ids, got (2,)",
)

case(
    D.greedy_decode,
    lambda: D.greedy_decode(enc_dec(), ids([1, 2]), bos_id=10, eos_id=2),
    ValueError,
    "bos_id=10 is not a token id of the model's 7 targets",
)

case(
    D.beam_search,
    lambda: D.beam_search(enc_dec(), ids([1, 2]), bos_id=1, eos_id=99),
    ValueError,
    "eos_id=99 is not a token id of the model's 7 targets",
)

case(
    D.greedy_decode,
    lambda: D.greedy_decode(enc_dec(), ids([1, 2]), bos_id=1, eos_id=True),
    TypeError,
    "eos_id must be an int token id, got bool",
)

case(
    D.greedy_decode,
    lambda: D.greedy_decode(enc_dec(), ids([1, 2]), bos_id=1, eos_id=2, max_len=0),
    ValueError,
    "max_len must be a positive int, got 0",
)

case(
    D.greedy_decode,
    lambda: D.greedy_decode(None, ids([1, 2]), bos_id=1, eos_id=2),
    TypeError,
    "model must be an encoder-decoder with encode(src) and decode(tgt,",
)

case(
    D.beam_search,
    lambda: D.beam_search(enc_dec(), ids([1, 2]), bos_id=1, eos_id=2, beam_size=0),
    ValueError,
    "beam_size must be a positive int, got 0",
)

case(
    D.beam_search,
    lambda: D.beam_search(enc_dec(), ids([1, 2]), bos_id=1, eos_id=2, length_penalty=-1.0),
    ValueError,
    "length_penalty must be a non-negative finite number, got -1.0",
)

case(
    D.beam_hypotheses,
    lambda: D.beam_hypotheses(enc_dec(), ids([1.0, 2.0]), bos_id=1, eos_id=2),
    TypeError,
    "src must hold integer token ids, got torch.float32",
)

case(
    D.sequence_score,
    lambda: D.sequence_score(enc_dec(), ids([1, 2]), ids([1, 9]), bos_id=1, eos_id=2),
    ValueError,
    "outputs must be in [0, 7), got values from 1 to 9",
)

case(
    D.sequence_score,
    lambda: D.sequence_score(enc_dec(), ids([1, 2]), ids([1, 2], [3, 4]), bos_id=1, eos_id=2),
    ValueError,
    "outputs has batch=2 but src has batch=1",
)
