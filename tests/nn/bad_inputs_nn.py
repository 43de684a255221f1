"""Bad inputs to transformer_lab.nn.

Each case: a callable, a call that must fail, the error type and a fragment of the
message (run by ``tests/test_bad_inputs.py``)."""

from bad_input_support import (  # noqa: F401
    KV,
    NN_ATTENTION,
    NN_MULTI_HEAD,
    NN_SCORES,
    RN,
    RO,
    SW,
    B,
    M,
    P,
    W,
    case,
    f,
    gpt,
    ids,
    nn,
    torch,
    x3,
)

from transformer_lab.nn.functional import at_least_float32

case(
    B.DecoderBlock,
    lambda: B.DecoderBlock(8, 2, 16)(x3(1, 3, 8), None),
    TypeError,
    "memory (the encoder output",
)

case(
    B.DecoderBlock,
    lambda: B.DecoderBlock(8, 2, 16)(x3(1, 3, 8), x3(3, 8)),
    ValueError,
    "memory must be [batch, src_pos, d_model], got shape (3, 8)",
)

case(
    P.sinusoidal_encoding,
    lambda: P.sinusoidal_encoding(4, 8, base=0),
    ValueError,
    "base must be a positive finite number, got 0",
)

case(
    P.sinusoidal_encoding,
    lambda: P.sinusoidal_encoding(4, 8, base=-10.0),
    ValueError,
    "base must be a positive finite number",
)

case(
    P.sinusoidal_encoding,
    lambda: P.sinusoidal_encoding(4, 8, base=float("nan")),
    ValueError,
    "base must be a positive finite number",
)

case(
    RN.LayerNorm,
    lambda: RN.LayerNorm(4, eps=0),
    ValueError,
    "eps must be a positive finite number, got 0",
)

case(
    RN.LayerNorm,
    lambda: RN.LayerNorm(4, eps=-1e-5),
    ValueError,
    "eps must be a positive finite number",
)

case(
    NN_MULTI_HEAD.MultiHeadAttention,
    lambda: NN_MULTI_HEAD.MultiHeadAttention(8, 2, dropout=1.5),
    ValueError,
    "dropout must be in [0, 1), got 1.5",
)

case(
    NN_MULTI_HEAD.MultiHeadAttention,
    lambda: NN_MULTI_HEAD.MultiHeadAttention(8, 2, dropout=-0.1),
    ValueError,
    "dropout must be in [0, 1)",
)

case(
    NN_ATTENTION.scaled_dot_product_attention,
    lambda: NN_ATTENTION.scaled_dot_product_attention(f(2, 3, 4), f(2, 3, 5), f(2, 3, 4)),
    ValueError,
    "key has d_head=5 but query has d_head=4",
)

case(
    NN_ATTENTION.scaled_dot_product_attention,
    lambda: NN_ATTENTION.scaled_dot_product_attention(
        f(2, 3, 4), f(2, 3, 4), f(2, 3, 4), torch.ones(4, 7, dtype=torch.bool)
    ),
    ValueError,
    "mask shape (4, 7) does not broadcast to (2, 3, 3)",
)

case(
    NN_ATTENTION.attention_weights,
    lambda: NN_ATTENTION.attention_weights(f(3, 4), torch.ones(3, 5, dtype=torch.bool)),
    ValueError,
    "mask shape (3, 5) does not broadcast to (3, 4)",
)

case(
    NN_ATTENTION.attention_weights,
    lambda: NN_ATTENTION.attention_weights([[1.0]]),
    TypeError,
    "scores must be a floating-point tensor, got list",
)

case(
    NN_ATTENTION.empty_rows,
    lambda: NN_ATTENTION.empty_rows(torch.ones(3, 3)),
    TypeError,
    "mask must be a bool tensor (True = may attend), got torch.float32",
)

case(
    NN_ATTENTION.check_qkv,
    lambda: NN_ATTENTION.check_qkv(None, f(2, 3), f(2, 3)),
    TypeError,
    "query must be a torch.Tensor, got NoneType",
)

case(
    NN_ATTENTION.check_qkv,
    lambda: NN_ATTENTION.check_qkv(f(2, 3), f(2, 3).double(), f(2, 3)),
    TypeError,
    "query, key and value dtypes differ: torch.float32, torch.float64,",
)

case(
    NN_ATTENTION.broadcast_shape,
    lambda: NN_ATTENTION.broadcast_shape((2, 3), None),
    TypeError,
    "shapes must be tuples of ints, got NoneType",
)

case(
    NN_SCORES.DotScore,
    lambda: NN_SCORES.DotScore()(f(2, 4), f(2, 5, 3)),
    ValueError,
    "dot score needs equal sizes: query has 4, keys have 3",
)

case(
    NN_SCORES.MultiplicativeScore,
    lambda: NN_SCORES.MultiplicativeScore(4, 3)(f(2, 5), f(2, 5, 3)),
    ValueError,
    "query has 5 features but the score expects 4",
)

case(
    NN_SCORES.MultiplicativeScore,
    lambda: NN_SCORES.MultiplicativeScore(0, 3),
    ValueError,
    "d_query must be a positive int, got 0",
)

case(
    NN_SCORES.AdditiveScore,
    lambda: NN_SCORES.AdditiveScore(4, 3)(f(2, 4), f(2, 5, 6)),
    ValueError,
    "keys have 6 features but the score expects 3",
)

case(
    NN_SCORES.AdditiveScore,
    lambda: NN_SCORES.AdditiveScore(4, -3),
    ValueError,
    "d_key must be a positive int, got -3",
)

case(
    NN_SCORES.make_score,
    lambda: NN_SCORES.make_score("cosine", 4, 4),
    ValueError,
    "score kind must be one of ['additive', 'dot', 'multiplicative'], got",
)

case(
    NN_SCORES.make_score,
    lambda: NN_SCORES.make_score("dot", 0, 4),
    ValueError,
    "d_query must be a positive int, got 0",
)

case(
    NN_SCORES.attend,
    lambda: NN_SCORES.attend(NN_SCORES.DotScore(), f(2, 4), f(2, 5, 4), f(2, 6, 4)),
    ValueError,
    "values must be [batch, key_pos, d_value] with [batch, key_pos]=(2,",
)

case(
    NN_SCORES.attend,
    lambda: NN_SCORES.attend(
        NN_SCORES.DotScore(), f(2, 4), f(2, 5, 4), mask=torch.ones(2, 6, dtype=torch.bool)
    ),
    ValueError,
    "mask shape (2, 6) does not broadcast to (2, 5)",
)

case(M.causal_mask, lambda: M.causal_mask(0), ValueError, "n_query must be a positive int, got 0")

case(M.causal_mask, lambda: M.causal_mask(3.0), TypeError, "n_query must be an int, got float")

case(
    M.padding_mask,
    lambda: M.padding_mask(None),
    TypeError,
    "lengths must be a 1-d sequence of ints, got None",
)
case(
    M.padding_mask,
    lambda: M.padding_mask([2, None]),
    TypeError,
    "lengths must be a 1-d sequence of ints",
)
case(
    M.padding_mask, lambda: M.padding_mask([2, -1]), ValueError, "lengths must be >= 0, got [2, -1]"
)

case(
    M.padding_mask,
    lambda: M.padding_mask([2, 3], max_len=2),
    ValueError,
    "max_len=2 is shorter than the longest sequence (3)",
)

case(
    M.padding_mask_from_ids,
    lambda: M.padding_mask_from_ids(ids(1, 2), 0),
    ValueError,
    "ids must be [batch, pos], got shape (2,)",
)

case(
    M.padding_mask_from_ids,
    lambda: M.padding_mask_from_ids([[1, 2]], 0),
    TypeError,
    "ids must be a torch.Tensor of token ids, got list",
)

case(
    M.combine_masks,
    lambda: M.combine_masks(torch.ones(3, 3, dtype=torch.bool), torch.ones(4, 4, dtype=torch.bool)),
    ValueError,
    "mask shapes (3, 3) and (4, 4) do not broadcast together",
)

case(
    M.combine_masks,
    lambda: M.combine_masks(torch.ones(3, 3), None),
    TypeError,
    "masks must be bool (True = may attend), got torch.float32",
)

case(
    M.combine_masks,
    lambda: M.combine_masks([[True]]),
    TypeError,
    "masks must be bool tensors or None, got list",
)

case(
    M.check_mask,
    lambda: M.check_mask(torch.ones(4, 7, dtype=torch.bool), (2, 8, 5, 5)),
    ValueError,
    "mask shape (4, 7) does not broadcast to (2, 8, 5, 5)",
)

case(
    M.check_mask,
    lambda: M.check_mask(torch.ones(5, 5), (2, 8, 5, 5)),
    TypeError,
    "mask must be bool with True = may attend, got dtype torch.float32;",
)

case(
    M.to_torch_mask,
    lambda: M.to_torch_mask(torch.ones(2, 5, dtype=torch.bool), key_padding=True),
    ValueError,
    "a key padding mask must be [batch, 1, 1, key_pos], got shape (2, 5)",
)

case(
    M.to_torch_mask,
    lambda: M.to_torch_mask(torch.ones(2, 5)),
    TypeError,
    "mask must be bool with True = may attend, got dtype torch.float32;",
)

case(
    M.to_torch_mask,
    lambda: M.to_torch_mask([[True]]),
    TypeError,
    "mask must be a bool tensor or None, got list",
)

case(
    M.from_torch_mask,
    lambda: M.from_torch_mask(torch.ones(2, 5, dtype=torch.long)),
    TypeError,
    "expected a bool or float PyTorch mask, got dtype torch.int64",
)

case(
    M.from_torch_mask,
    lambda: M.from_torch_mask(torch.full((2, 5), 0.5)),
    ValueError,
    "expected an additive float mask of only 0 and -inf; one with other",
)

case(
    M.from_torch_mask,
    lambda: M.from_torch_mask([[True]]),
    TypeError,
    "torch_mask must be a tensor or None, got list",
)

case(
    P.sinusoidal_encoding,
    lambda: P.sinusoidal_encoding(0, 4),
    ValueError,
    "n_positions must be a positive int, got 0",
)

case(
    P.SinusoidalPositions,
    lambda: P.SinusoidalPositions(8, 4)(f(2, 3, 5)),
    ValueError,
    "expected x of shape [..., pos, 4], got (2, 3, 5)",
)

case(
    P.SinusoidalPositions,
    lambda: P.SinusoidalPositions(8, 4)(f(2, 3, 4), offset=-1),
    ValueError,
    "offset must be a non-negative int, got -1",
)

case(
    P.SinusoidalPositions,
    lambda: P.SinusoidalPositions(8, 4)(None),
    TypeError,
    "x must be a floating-point tensor [..., pos, d_model], got NoneType",
)

case(
    P.SinusoidalPositions,
    lambda: P.SinusoidalPositions(0, 4),
    ValueError,
    "n_positions must be a positive int, got 0",
)

case(
    P.LearnedPositions,
    lambda: P.LearnedPositions(4, 4)(f(1, 5, 4)),
    ValueError,
    "learned positions cover 4 positions but positions 0..4 were asked for",
)

case(
    P.LearnedPositions,
    lambda: P.LearnedPositions(-1, 4),
    ValueError,
    "max_pos must be a positive int, got -1",
)

case(
    P.LearnedPositions,
    lambda: P.LearnedPositions(4, 4)(ids(1, 2)),
    TypeError,
    "x must be a floating-point tensor [..., pos, d_model], got torch.int64",
)

case(
    RN.LayerNorm,
    lambda: RN.LayerNorm(4)(torch.ones(2, 4, dtype=torch.long)),
    TypeError,
    "LayerNorm expects a floating-point tensor, got torch.int64",
)

case(
    RN.LayerNorm,
    lambda: RN.LayerNorm.from_torch(nn.Linear(4, 4)),
    TypeError,
    "expected nn.LayerNorm, got Linear",
)

case(
    SW.FeedForward,
    lambda: SW.FeedForward(8, 16)(f(2, 6)),
    ValueError,
    "FeedForward expects d_model=8, got shape (2, 6)",
)

case(
    SW.FeedForward,
    lambda: SW.FeedForward(8, 16)(f(2, 8).double()),
    TypeError,
    "input has dtype torch.float64 but the weights torch.float32",
)

case(
    SW.FeedForward,
    lambda: SW.FeedForward(8, 16, activation="tanh"),
    ValueError,
    "activation must be one of ['gelu', 'gelu_tanh', 'relu'], got 'tanh'",
)

case(
    SW.FeedForward,
    lambda: SW.FeedForward(8, 16).load_linear(nn.Linear(8, 4), nn.Linear(16, 8)),
    ValueError,
    "linear1 must be nn.Linear with bias and weight (16, 8), got weight",
)

case(
    NN_MULTI_HEAD.MultiHeadAttention,
    lambda: NN_MULTI_HEAD.MultiHeadAttention(8, 2)(f(2, 3, 8).double()),
    TypeError,
    "query has dtype torch.float64 but the weights torch.float32",
)

case(
    NN_MULTI_HEAD.MultiHeadAttention,
    lambda: NN_MULTI_HEAD.MultiHeadAttention(8, 2)(f(2, 3, 8), f(3, 4, 8)),
    ValueError,
    "query has batch=2 but key has batch=3",
)

case(
    NN_MULTI_HEAD.MultiHeadAttention,
    lambda: NN_MULTI_HEAD.MultiHeadAttention.from_torch(nn.Linear(8, 8)),
    TypeError,
    "expected nn.MultiheadAttention, got Linear",
)

case(
    NN_MULTI_HEAD.MultiHeadAttention,
    lambda: NN_MULTI_HEAD.MultiHeadAttention(8, 3),
    ValueError,
    "d_model=8 is not divisible by n_heads=3",
)

case(
    NN_MULTI_HEAD.affine,
    lambda: NN_MULTI_HEAD.affine(f(2, 3), f(4, 5)),
    ValueError,
    "affine needs tensors x [..., d_in], W [d_in, d_out], b [d_out] or None of one dtype; "
    "got x (2, 3), W (4, 5)",
)

case(
    NN_MULTI_HEAD.affine,
    lambda: NN_MULTI_HEAD.affine(None, f(4, 5)),
    TypeError,
    "got x NoneType, W (4, 5)",
)

case(
    B.EncoderBlock,
    lambda: B.EncoderBlock(8, 2, 16)(f(2, 3, 6)),
    ValueError,
    "query has 6 features but the layer expects 8",
)

case(
    B.EncoderBlock,
    lambda: B.EncoderBlock.from_torch(nn.TransformerDecoderLayer(8, 2, 16)),
    TypeError,
    "expected nn.TransformerEncoderLayer, got TransformerDecoderLayer",
)

case(
    B.EncoderBlock,
    lambda: B.EncoderBlock(8, 2, 16, dropout=2.0),
    ValueError,
    "dropout must be in [0, 1), got 2.0",
)

case(
    B.DecoderBlock,
    lambda: B.DecoderBlock.from_torch(nn.TransformerEncoderLayer(8, 2, 16)),
    TypeError,
    "expected nn.TransformerDecoderLayer, got TransformerEncoderLayer",
)

case(KV.KVCache, lambda: KV.KVCache(0), ValueError, "n_layers must be a positive int, got 0")

case(
    KV.KVCache,
    lambda: (lambda c: (gpt()(ids([1, 2], [3, 4]), kv_cache=c), gpt()(ids([5]), kv_cache=c)))(
        gpt().new_cache()
    ),
    ValueError,
    "the cache holds [batch, n_heads, pos, d_head]=(2, 2, 2, 4) but the",
)

case(
    NN_MULTI_HEAD.MultiHeadAttention,
    lambda: NN_MULTI_HEAD.MultiHeadAttention(8, 2)(
        x3(2, 3, 8), mask=torch.ones(4, 7, dtype=torch.bool)
    ),
    ValueError,
    "mask shape (4, 7) does not broadcast to (2, 2, 3, 3)",
)

case(
    RN.rms_norm,
    lambda: RN.rms_norm(f(2, 4), torch.ones(5)),
    ValueError,
    "x has 4 features but gain has 5",
)

case(
    RN.rms_norm,
    lambda: RN.rms_norm(ids([1, 2]), torch.ones(2)),
    TypeError,
    "expects a floating-point tensor x, got torch.int64",
)

case(RN.RMSNorm, lambda: RN.RMSNorm(4, eps=-1.0), ValueError, "eps must be a positive finite")

case(RN.RMSNorm, lambda: RN.RMSNorm(4)(f(2, 3)), ValueError, "x has 3 features but gain has 4")

case(
    RO.rotary_frequencies,
    lambda: RO.rotary_frequencies(5),
    ValueError,
    "d_head must be a positive even int, got 5",
)

case(
    RO.rotary_cos_sin,
    lambda: RO.rotary_cos_sin(torch.arange(3.0), 4),
    TypeError,
    "positions must be an integer tensor, got torch.float32",
)

case(
    RO.apply_rotary,
    lambda: RO.apply_rotary(f(1, 2, 3, 4), *RO.rotary_cos_sin(torch.arange(5), 4)),
    ValueError,
    "cos must be [..., pos, d_head/2]=(3, 2)",
)

from bad_input_support import LL, LLAMA_SMALL  # noqa: E402

_cos1, _sin1 = RO.rotary_cos_sin(torch.arange(3), 4)  # [pos, d_head/2]: shared by the batch
_cos2, _sin2 = RO.rotary_cos_sin(torch.arange(3).expand(2, 3), 4)  # [batch, pos, d_head/2]
for target, thunk, error, fragment in [
    (RO.rotary_cos_sin, lambda: RO.rotary_cos_sin(torch.tensor([True, False]), 4), TypeError,
     "positions must be an integer tensor, got torch.bool"),
    (RO.rotary_cos_sin, lambda: RO.rotary_cos_sin(torch.arange(3) * 1j, 4), TypeError,
     "positions must be an integer tensor, got torch.complex64"),
    (RO.rotary_cos_sin, lambda: RO.rotary_cos_sin(torch.arange(3), True), TypeError,
     "d_head must be an int, got bool"),
    (RO.rotary_cos_sin, lambda: RO.rotary_cos_sin(torch.arange(3), 4, True), TypeError,
     "base must be a number, got bool"),
    (RO.apply_rotary, lambda: RO.apply_rotary(f(2, 1, 3, 4), _cos1, _sin2), ValueError,
     "cos (3, 2) and sin (2, 3, 2) must have one shape, [pos, d_head/2] or "
     "[batch, pos, d_head/2], for x (2, 1, 3, 4)"),
    (RO.apply_rotary, lambda: RO.apply_rotary(f(2, 3, 3, 4), _cos2, _sin1), ValueError,
     "cos (2, 3, 2) and sin (3, 2) must have one shape"),
    (RO.apply_rotary, lambda: RO.apply_rotary(f(2, 3, 5, 4), _cos1, _sin1), ValueError,
     "cos must be [..., pos, d_head/2]=(5, 2) for x (2, 3, 5, 4), got (3, 2) "
     "(x is read as [batch, n_heads, pos, d_head])"),  # x as [batch, pos, n_heads, d_head]
    (RO.apply_rotary, lambda: RO.apply_rotary(f(2, 1, 3, 4), _cos1.bool(), _sin1), TypeError,
     "cos must be a floating-point tensor [..., pos, d_head/2], got torch.bool"),
    (LL.LlamaAttention,
     lambda: LL.LlamaAttention(LL.LlamaConfig(**LLAMA_SMALL))(f(2, 3, 8), _cos1, _sin2),
     ValueError, "cos (3, 2) and sin (2, 3, 2) must have one shape"),
]:  # fmt: skip
    case(target, thunk, error, fragment)


case(
    SW.SwiGLU,
    lambda: SW.SwiGLU(4, 8)(f(2, 5)),
    ValueError,
    "SwiGLU expects d_model=4, got shape (2, 5)",
)

case(SW.SwiGLU, lambda: SW.SwiGLU(4, 0), ValueError, "d_mlp must be a positive int, got 0")

case(
    NN_ATTENTION.repeat_kv,
    lambda: NN_ATTENTION.repeat_kv(f(1, 2, 3, 4), 0),
    ValueError,
    "n_rep must be a positive int",
)

case(
    NN_ATTENTION.grouped_query_attention,
    lambda: NN_ATTENTION.grouped_query_attention(f(1, 6, 3, 4), f(1, 4, 3, 4), f(1, 4, 3, 4)),
    ValueError,
    "q has n_heads=6, which n_kv_heads=4 does not divide",
)

case(
    NN_ATTENTION.grouped_query_attention,
    lambda: NN_ATTENTION.grouped_query_attention(f(1, 4, 3, 4), f(1, 2, 3, 4), f(1, 1, 3, 4)),
    ValueError,
    "k has 2 heads but v has 1",
)

case(
    NN_ATTENTION.grouped_query_attention,
    lambda: NN_ATTENTION.grouped_query_attention(f(2, 4, 3, 4), f(1, 2, 3, 4), f(1, 2, 3, 4)),
    ValueError,
    "q, k and v must have one batch size, got q (2, 4, 3, 4), k (1, 2, 3, 4) and v (1, 2, 3, 4)",
)

case(
    NN_ATTENTION.grouped_query_attention,
    lambda: NN_ATTENTION.grouped_query_attention(
        f(2, 4, 3, 4), f(2, 2, 3, 4), f(1, 2, 3, 4), need_weights=False
    ),
    ValueError,
    "q, k and v must have one batch size",
)

case(
    KV.KVCache,
    lambda: KV.KVCache(0),
    ValueError,
    "n_layers must be a positive int, got 0",
)

case(
    at_least_float32,
    lambda: at_least_float32([1.0]),
    TypeError,
    "t must be a torch.Tensor, got list",
)

# weights kept in bfloat16 or int8
from transformer_lab.nn import stored_weights as STW  # noqa: E402

case(STW.StoredWeight, lambda: STW.StoredWeight(torch.randn(3, 4), "float16"), ValueError,
     "storage must be one of")  # fmt: skip
case(STW.StoredWeight, lambda: STW.StoredWeight(torch.randn(3), "int8"), ValueError, "weight")
case(STW.StoredWeight, lambda: STW.StoredWeight(torch.tensor([[1.0, float("nan")]]), "int8"),
     ValueError, "weight has NaN or infinite values")  # fmt: skip
case(STW.StoredWeight, lambda: torch.ones(2, 5) @ STW.StoredWeight(torch.randn(3, 4), "int8"),
     ValueError, "x must be [..., 3], got (2, 5)")  # fmt: skip
case(STW.StoredWeight,
     lambda: torch.ones(2, 3, dtype=torch.long) @ STW.StoredWeight(torch.randn(3, 4), "int8"),
     TypeError, "x @ StoredWeight needs a float32 or bfloat16 tensor, got torch.int64")  # fmt: skip
case(STW.store_matrices, lambda: STW.store_matrices("model", ["W"], "int8"), TypeError,
     "module must be")  # fmt: skip
case(STW.store_matrices, lambda: STW.store_matrices(torch.nn.Linear(2, 2), ["W"], "int8"),
     ValueError, "Linear has no parameter 'W' to store")  # fmt: skip
case(STW.storage_supported, lambda: STW.storage_supported("int4"), ValueError,
     "storage must be one of")  # fmt: skip
case(STW.StoredWeight, lambda: STW.StoredWeight(torch.ones(0, 4), "int8"), ValueError,
     "weight must hold at least one number, got shape (0, 4)")  # fmt: skip
