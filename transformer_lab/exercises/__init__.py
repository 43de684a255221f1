"""Exercise checkers: run a reader's function against the package and say what went wrong.

Each ``check_*`` calls the reader's ``fn`` on several seeded inputs (batch dimensions
included, odd lengths, keys and queries of different lengths), compares it with the
package's answer and, when they differ, tries the usual mistakes (forgotten scaling,
softmax over the wrong axis, mask the wrong way round, ...) to say in plain words what went
wrong. It prints the verdict, ``✓ name: message`` or ``✗ name: message``, and returns a
:class:`CheckResult` (truthy when passed, with ``.passed`` and ``.message``). A wrong answer
never raises, so a notebook keeps running, unless ``strict=True``, which raises
``AssertionError`` with the message; ``verbose=False`` prints nothing.

Layout:

- :mod:`.runner`: :class:`CheckResult`, :class:`WrongAnswer`, :func:`run_check` (the verdict
  every checker returns) and the helpers a checker is made of: ``call`` (runs the reader's
  function, reports exceptions and in-place edits), ``need_tensor``, ``compare`` (names the
  first matching mistake), ``close``, ``largest_difference``, ``describe_shapes``.
- :mod:`.attention_mistakes`: random attention inputs and the usual mistakes in attention,
  shared by the attention checkers.
- one module per chapter, ``chNN_topic.py`` (``ch01_embeddings`` ... ``ch19_whisper``),
  holding that chapter's checkers; every exercise has a checker of its own.
  A checker module imports only :mod:`.runner`, :mod:`.attention_mistakes` and other
  modules' public names; the model modules never import checkers.

Every checker is re-exported here: ``from transformer_lab import exercises`` then
``exercises.check_attention(my_attention)``.
"""

from transformer_lab.exercises.ch01_embeddings import (
    check_cosine_similarity,
    check_embedding_lookup,
    check_one_hot,
    check_pca_2d,
)
from transformer_lab.exercises.ch02_rnn import check_gru_chain, check_rnn
from transformer_lab.exercises.ch03_seq2seq import (
    check_attention_step,
    check_flatten_weights,
    check_mean_pooling_query,
    check_padding_weight,
    check_score_costs,
)
from transformer_lab.exercises.ch04_self_attention import check_attention, check_attention_weights
from transformer_lab.exercises.ch05_scaling import (
    check_half_weight_temperature,
    check_score_divisor,
    check_stable_softmax,
)
from transformer_lab.exercises.ch06_masking import (
    check_causal_mask,
    check_masked_attention,
    check_padding_mask,
)
from transformer_lab.exercises.ch07_positions import check_shift_matrix, check_sinusoidal_encoding
from transformer_lab.exercises.ch08_multi_head import check_multi_head_attention, check_split_heads
from transformer_lab.exercises.ch09_add_and_norm import check_layer_norm, check_layer_norm_by_hand
from transformer_lab.exercises.ch10_block import (
    check_block_parameter_count,
    check_feed_forward,
    check_pre_ln_block,
)
from transformer_lab.exercises.ch11_encoder_decoder import (
    check_cross_attention,
    check_cross_attention_cache,
    check_label_smoothing,
    check_sequence_score,
    check_smallest_margin,
)
from transformer_lab.exercises.ch12_bert import (
    check_bag_of_words_score,
    check_mask_counts,
    check_mean_pool,
    check_previous_token_score,
)
from transformer_lab.exercises.ch13_gpt import check_next_token_loss, check_nucleus
from transformer_lab.exercises.ch14_decoders import check_kv_cache_bytes, check_rms_norm
from transformer_lab.exercises.ch15_fine_tuning import (
    check_majority_baseline,
    check_naive_bayes,
    check_parameter_groups,
)
from transformer_lab.exercises.ch16_lora import check_lora_count, check_lora_forward, check_merge
from transformer_lab.exercises.ch17_recall import check_entry_of, check_max_pairs
from transformer_lab.exercises.ch18_data_parallel import check_global_batch, check_ring_all_reduce
from transformer_lab.exercises.ch19_whisper import check_cache_numbers, check_frames_per_second
from transformer_lab.exercises.runner import CheckResult, WrongAnswer, run_check

__all__ = [
    "CheckResult",
    "WrongAnswer",
    "run_check",
    # chapter 1
    "check_one_hot",
    "check_embedding_lookup",
    "check_cosine_similarity",
    "check_pca_2d",
    # chapter 2
    "check_rnn",
    "check_gru_chain",
    # chapter 3
    "check_attention_step",
    "check_mean_pooling_query",
    "check_padding_weight",
    "check_score_costs",
    "check_flatten_weights",
    # chapter 4
    "check_attention_weights",
    "check_attention",
    # chapter 5
    "check_stable_softmax",
    "check_score_divisor",
    "check_half_weight_temperature",
    # chapter 6
    "check_causal_mask",
    "check_padding_mask",
    "check_masked_attention",
    # chapter 7
    "check_sinusoidal_encoding",
    "check_shift_matrix",
    # chapter 8
    "check_split_heads",
    "check_multi_head_attention",
    # chapter 9
    "check_layer_norm",
    "check_layer_norm_by_hand",
    # chapter 10
    "check_feed_forward",
    "check_pre_ln_block",
    "check_block_parameter_count",
    # chapter 11
    "check_cross_attention",
    "check_sequence_score",
    "check_cross_attention_cache",
    "check_label_smoothing",
    "check_smallest_margin",
    # chapter 12
    "check_previous_token_score",
    "check_mean_pool",
    "check_bag_of_words_score",
    "check_mask_counts",
    # chapter 13
    "check_next_token_loss",
    "check_nucleus",
    # chapter 14
    "check_rms_norm",
    "check_kv_cache_bytes",
    # chapter 15
    "check_majority_baseline",
    "check_parameter_groups",
    "check_naive_bayes",
    # chapter 16
    "check_lora_forward",
    "check_merge",
    "check_lora_count",
    # chapter 17
    "check_entry_of",
    "check_max_pairs",
    # chapter 18
    "check_ring_all_reduce",
    "check_global_batch",
    # chapter 19
    "check_frames_per_second",
    "check_cache_numbers",
]
