"""Bad inputs to transformer_lab.models.

Each case: a callable, a call that must fail, the error type and a fragment of the
message (run by ``tests/test_bad_inputs.py``)."""

from bad_input_support import (  # noqa: F401
    BE,
    CAP,
    GP,
    KV,
    LL,
    LLAMA_SMALL,
    MODELS_TOY,
    TR,
    R,
    bert,
    captioner,
    case,
    enc_dec,
    f,
    gpt,
    ids,
    llama,
    nn,
    s2s,
    torch,
    toy,
)

from transformer_lab.models import ngram as NG

case(
    TR.EncoderDecoder,
    lambda: enc_dec().decode(ids([1, 2]), None),
    TypeError,
    "memory (the encoder output [batch, src_pos, d_model]) must be a torch.Tensor, got NoneType",
)

case(
    GP.GPT,
    lambda: gpt()(ids([1, -1])),
    ValueError,
    "idx must be in [0, 11), got values from -1 to 1",
)

case(
    GP.GPT,
    lambda: gpt()(ids([1, 11])),
    ValueError,
    "idx must be in [0, 11), got values from 1 to 11",
)

case(
    MODELS_TOY.TinyTransformer,
    lambda: toy()(ids([0, -1])),
    ValueError,
    "x must be in [0, 6), got values from -1 to 0",
)

case(
    TR.TransformerConfig,
    lambda: TR.TransformerConfig(0, 5),
    ValueError,
    "d_vocab_src must be a positive int, got 0",
)

case(
    TR.TransformerConfig,
    lambda: TR.TransformerConfig(9, 7, share_embeddings=True),
    ValueError,
    "share_embeddings needs one joint vocabulary, but d_vocab_src=9 and d_vocab_tgt=7",
)
case(
    TR.TransformerConfig,
    lambda: TR.TransformerConfig(9, 7, scale_embeddings="yes"),
    TypeError,
    "scale_embeddings must be a bool, got str",
)

case(
    TR.Encoder, lambda: TR.Encoder(None), TypeError, "cfg must be a TransformerConfig, got NoneType"
)

case(
    TR.Decoder,
    lambda: TR.Decoder({"d_model": 8}),
    TypeError,
    "cfg must be a TransformerConfig, got dict",
)

case(
    TR.EncoderDecoder,
    lambda: TR.EncoderDecoder(None),
    TypeError,
    "cfg must be a TransformerConfig, got NoneType",
)

case(
    TR.EncoderDecoder,
    lambda: enc_dec()(ids([1, 9]), ids([1, 2])),
    ValueError,
    "token ids must be in [0, 9), got values from 1 to 9",
)

case(
    TR.EncoderDecoder,
    lambda: enc_dec().load_torch_transformer(nn.TransformerEncoderLayer(8, 2, 16)),
    TypeError,
    "expected nn.Transformer, got TransformerEncoderLayer",
)

case(
    TR.EncoderDecoder,
    lambda: enc_dec()(ids([1, 2]), ids([1, 2]), src_mask=torch.ones(3, 3, dtype=torch.bool)),
    ValueError,
    "mask shape (3, 3) does not broadcast to (1, 2, 2, 2)",
)

case(
    BE.BertConfig,
    lambda: BE.BertConfig(d_vocab=0),
    ValueError,
    "d_vocab must be a positive int, got 0",
)

case(BE.BertModel, lambda: BE.BertModel(None), TypeError, "cfg must be a BertConfig, got NoneType")
case(BE.BertModel, lambda: bert().bert(ids([1, 2]), attention_mask=torch.tensor([[1, 2]])),
     ValueError, "attention_mask must hold 1 for real tokens and 0 for padding")  # fmt: skip
case(LL.Llama, lambda: llama()(ids([1, 2]), attention_mask=torch.tensor([[1, 2]])),
     ValueError, "attention_mask must hold 1 (or True) for real tokens")  # fmt: skip

case(
    BE.BertModel,
    lambda: bert().bert(ids([1, 25])),
    ValueError,
    "token ids must lie in [0, 20), got [1, 25]",
)

case(
    BE.BertModel,
    lambda: bert().bert(ids([1, 2]), attention_mask=torch.ones(1, 3)),
    ValueError,
    "attention_mask must be [batch, pos] = (1, 2) (1 = real token, 0 =",
)

case(
    BE.BertModel,
    lambda: bert().bert(ids([1, 2]), segment_ids=ids([0, 5])),
    ValueError,
    "segment_ids must lie in [0, 2)",
)

case(
    BE.BertForPreTraining,
    lambda: bert().pretraining_loss(ids([1, 2]), ids([-100, 30])),
    ValueError,
    "labels must be in [0, 20) (or ignore_index=-100), got values from 0",
)

case(
    BE.BertForPreTraining,
    lambda: bert().pretraining_loss(ids([1, 2]), ids([-100, 3]), is_next=torch.tensor([2])),
    ValueError,
    "is_next must hold 0 or 1, got [2]",
)

case(
    BE.BertForPreTraining,
    lambda: bert()(None),
    TypeError,
    "input_ids must be an int64 or int32 tensor, got NoneType",
)

case(
    R.Seq2SeqConfig,
    lambda: R.Seq2SeqConfig(5, 5, cell="transformer"),
    ValueError,
    "cell must be one of ['gru', 'lstm'], got 'transformer'",
)

case(
    R.Seq2Seq,
    lambda: s2s()(ids([1, 20]), ids([1, 2])),
    ValueError,
    "src has ids in [1, 20] but the vocabulary has 9 tokens",
)

case(
    R.Seq2Seq,
    lambda: s2s()(ids([1, 2]), ids([[1], [2]])),
    ValueError,
    "tgt_in must be a non-empty [batch, pos] tensor, got (1, 2, 1)",
)

case(R.Seq2Seq, lambda: R.Seq2Seq(None), TypeError, "cfg must be a Seq2SeqConfig, got NoneType")

case(
    GP.GPTConfig,
    lambda: GP.GPTConfig(d_vocab=10, eps=float("nan")),
    ValueError,
    "eps must be a positive finite number, got nan",
)

case(
    GP.GPTConfig,
    lambda: GP.GPTConfig(d_vocab=10, init_std=float("inf")),
    ValueError,
    "init_std must be a positive finite number, got inf",
)

case(GP.GPT, lambda: GP.GPT({"d_vocab": 3}), TypeError, "config must be a GPTConfig, got dict")

case(
    GP.GPT,
    lambda: GP.GPT.from_hf_gpt2(nn.Linear(3, 3)),
    TypeError,
    "expected a Hugging Face GPT2LMHeadModel or GPT2Model, got Linear",
)

case(
    GP.GPTBlock,
    lambda: GP.GPTBlock(8, 2, 16)(f(2, 3, 6)),
    ValueError,
    "query has 6 features but the layer expects 8",
)

case(
    GP.GPTBlock,
    lambda: GP.GPTBlock(8, 2, 16).forward_cached(f(2, 3, 8), None, 0),
    TypeError,
    "cache must be a KVCache, got NoneType",
)

case(
    MODELS_TOY.ToyConfig,
    lambda: MODELS_TOY.ToyConfig(d_vocab=0),
    ValueError,
    "d_vocab must be a positive int, got 0",
)

case(
    MODELS_TOY.TinyTransformer,
    lambda: MODELS_TOY.TinyTransformer(None),
    TypeError,
    "cfg must be a ToyConfig, got NoneType",
)

case(
    LL.LlamaConfig,
    lambda: LL.LlamaConfig(d_vocab=11, n_heads=4, n_kv_heads=3),
    ValueError,
    "n_heads=4 is not divisible by n_kv_heads=3",
)

case(
    LL.LlamaAttention,
    lambda: LL.LlamaAttention(None),
    TypeError,
    "config must be a LlamaConfig, got NoneType",
)

case(
    LL.LlamaBlock,
    lambda: LL.LlamaBlock(LLAMA_SMALL),
    TypeError,
    "config must be a LlamaConfig, got dict",
)

case(
    LL.Llama,
    lambda: llama()(ids([1, 11])),
    ValueError,
    "idx must be in [0, 11), got values from 1 to 11",
)

case(
    LL.Llama,
    lambda: llama()(ids([1, 2]), kv_cache=KV.KVCache(2)),
    ValueError,
    "kv_cache has 2 layers but the model has 1",
)

case(
    CAP.CaptionerConfig,
    lambda: CAP.CaptionerConfig(12, canvas=20),
    ValueError,
    "canvas=20 is not a multiple of patch=8",
)

case(
    CAP.CaptionerConfig,
    lambda: CAP.CaptionerConfig(12, score="cosine"),
    ValueError,
    "score must be 'dot', 'multiplicative' or 'additive', got 'cosine'",
)

case(
    CAP.CaptionerConfig,
    lambda: CAP.CaptionerConfig(12, d_model=0),
    ValueError,
    "d_model must be a positive int, got 0",
)

case(
    CAP.ConvEncoder,
    lambda: CAP.ConvEncoder({"d_vocab": 12}),
    TypeError,
    "cfg must be a CaptionerConfig, got dict",
)

case(
    CAP.ConvEncoder,
    lambda: captioner().encoder(f(2, 3, 16, 16)),
    ValueError,
    "images must be [batch, 3, 24, 24], got (2, 3, 16, 16)",
)

case(
    CAP.Captioner,
    lambda: captioner()(f(1, 3, 24, 24), ids([1, 12])),
    ValueError,
    "tgt_in has ids in [1, 12] but the vocabulary has 12 words",
)

case(
    CAP.Captioner,
    lambda: captioner().decode(f(1, 4, 8), ids([1])),
    ValueError,
    "cells must be [batch, 9, 8], got (1, 4, 8)",
)

case(
    CAP.Captioner,
    lambda: captioner().greedy_caption(f(1, 3, 24, 24), max_len=0),
    ValueError,
    "max_len must be a positive int, got 0",
)

case(
    CAP.caption_accuracy,
    lambda: CAP.caption_accuracy(ids([1]), ids([1], [2])),
    ValueError,
    "predicted has 1 captions, reference 2",
)

case(
    CAP.caption_accuracy,
    lambda: CAP.caption_accuracy(f(1, 2), ids([1, 2])),
    TypeError,
    "predicted must be a tensor of word ids, got torch.float32",
)


def _cells(batch=1):
    return f(batch, 9, 8)


for target, thunk, error, fragment in [
    (CAP.Captioner.decode_step, lambda: captioner().decode_step(
        ids([1]), f(1, 1, 8), _cells()), ValueError,
     "prev must be [batch], one word per caption, got (1, 1)"),
    (CAP.Captioner.decode_step, lambda: captioner().decode_step(
        ids(12), f(1, 1, 8), _cells()), ValueError,
     "prev has ids in [12, 12] but the vocabulary has 12 tokens"),
    (CAP.Captioner.decode_step, lambda: captioner().decode_step(
        ids(1, 2), f(1, 1, 8), _cells()), ValueError,
     "prev must be [batch] and state [1, 1, 8] for cells of batch 1, got (2,) and (1, 1, 8)"),
    (CAP.Captioner.decode_step, lambda: captioner().decode_step(
        ids(1), f(1, 1, 8).long(), _cells()), TypeError,
     "state must be a floating-point tensor, got torch.int64"),
    (CAP.Captioner.decode, lambda: captioner().decode(_cells().long(), ids([1, 3])),
     TypeError, "cells must be a floating-point tensor, got torch.int64"),
    (CAP.caption_accuracy, lambda: CAP.caption_accuracy(ids([3, 2]), ids([0, 0])), ValueError,
     "reference holds only padding (pad_id=0): no word to score"),
    (CAP.caption_accuracy, lambda: CAP.caption_accuracy(ids([3, 2]), ids([3, 2]), pad_id=-1),
     ValueError, "pad_id must be a non-negative int, got -1"),
]:  # fmt: skip
    case(target, thunk, error, fragment)


def _s2s_step(prev, state_of):
    """One decode_step of a small Seq2Seq on a batch-2 source, with the state state_of(final)."""
    model = s2s()
    memory = model.encode(torch.tensor([[3, 4], [5, 6]]))
    return model.decode_step(prev, state_of(memory.final), memory)


case(
    R.Seq2Seq,
    lambda: _s2s_step(torch.tensor([[1, 1]]), lambda h: h),
    ValueError,
    "prev must be [batch], one token per row, got (1, 2)",
)
case(
    R.Seq2Seq,
    lambda: _s2s_step(torch.tensor([1, 99]), lambda h: h),
    ValueError,
    "prev has ids in [1, 99] but the vocabulary has 7 tokens",
)
case(
    R.Seq2Seq,
    lambda: _s2s_step(torch.tensor([1, 1]), lambda h: h[:, :1]),
    ValueError,
    "for a memory of batch 2, prev must be [2] and state a tensor of shape [1, 2, 8]",
)
case(
    R.Seq2Seq,
    lambda: _s2s_step(torch.tensor([1, 1, 1]), lambda h: h),
    ValueError,
    "got prev (3,) and state [(1, 2, 8)]",
)
case(
    R.Seq2Seq,
    lambda: _s2s_step(torch.tensor([1, 1]), lambda h: None),
    ValueError,
    "got prev (2,) and state ['NoneType']",
)


def _fed_step(state_of):
    """One decode_step of a small Seq2Seq with input feeding, with the state state_of(memory)."""
    torch.manual_seed(0)
    cfg = R.Seq2SeqConfig(9, 7, d_embed=4, d_hidden=8, attention="dot", input_feeding=True)
    model = R.Seq2Seq(cfg).eval()
    memory = model.encode(torch.tensor([[3, 4], [5, 6]]))
    return model.decode_step(torch.tensor([1, 1]), state_of(model, memory), memory)


case(
    R.Seq2Seq,
    lambda: _fed_step(lambda model, memory: memory.final),
    ValueError,
    "state a pair (RNN state, o_prev) with o_prev of shape [2, 8] (input feeding; see "
    "initial_state)",
)
case(
    R.Seq2Seq,
    lambda: _fed_step(lambda model, memory: (memory.final, torch.zeros(2, 4))),
    ValueError,
    "got prev (2,) and state [(1, 2, 8), (2, 4)]",
)
case(
    R.Seq2SeqConfig,
    lambda: R.Seq2SeqConfig(5, 5, attention="dot", input_feeding=1),
    TypeError,
    "input_feeding must be a bool, got int",
)
case(
    R.Seq2SeqConfig,
    lambda: R.Seq2SeqConfig(5, 5, input_feeding=True),
    ValueError,
    "input_feeding needs attention",
)


# The n-gram count model: order, discount and ids are checked at the door.
case(NG.NGramLM, lambda: NG.NGramLM(0, 6), ValueError, "order must be a positive int, got 0")
case(NG.NGramLM, lambda: NG.NGramLM(11, 75), ValueError, "order=11 is too long for d_vocab=75")
case(
    NG.NGramLM,
    lambda: NG.NGramLM(3, 6, discount=1.0),
    ValueError,
    "discount must be None (estimated) or a number in (0, 1), got 1.0",
)
case(
    NG.NGramLM,
    lambda: NG.NGramLM(2, 6).fit(ids(1, 2, 6)),
    ValueError,
    "ids must be in [0, 6), got values from 1 to 6",
)
case(
    NG.NGramLM,
    lambda: NG.NGramLM(2, 6).fit(ids([1, 2, 3])),
    ValueError,
    "ids must be 1-d with at least 2 token ids, got shape (1, 3)",
)
case(
    NG.NGramLM,
    lambda: NG.NGramLM(2, 6).next_distribution(ids(1)),
    ValueError,
    "has no counts yet: call fit(ids) first",
)
case(
    NG.select_ngram,
    lambda: NG.select_ngram(ids(0, 1, 2, 3), ids(0, 1), 6, orders=[2, 0]),
    ValueError,
    "orders[i] must be a positive int, got 0",
)
case(
    NG.select_ngram,
    lambda: NG.select_ngram(ids(0, 1, 2, 3), ids(0, 9), 6, orders=[2]),
    ValueError,
    "valid_ids must be in [0, 6), got values from 0 to 9",
)

case(GP.init_blocks, lambda: GP.init_blocks([1, 2], 0.02), TypeError, "blocks must be")
case(GP.init_blocks, lambda: GP.init_blocks(gpt().blocks, 0.0), ValueError, "std")
case(LL.Llama, lambda: llama().store_weights("float16"), ValueError, "storage must be one of")
case(LL.Llama, lambda: llama().store_weights("int8").store_weights("int8"), ValueError,
     "the weights are already stored as int8")  # fmt: skip
