"""Bad inputs to transformer_lab.data.

Each case: a callable, a call that must fail, the error type and a fragment of the
message (run by ``tests/test_bad_inputs.py``)."""

from bad_input_support import (  # noqa: F401
    CAP_SCENE,
    DATA_TOY,
    GR,
    MLM,
    NU,
    NW,
    SC,
    SH,
    TK,
    TOP,
    case,
    ids,
    torch,
)

case(
    TK.Vocabulary,
    lambda: TK.Vocabulary(["a", "a"]),
    ValueError,
    "token 'a' appears twice (at 0 and 1)",
)

case(
    TK.Vocabulary,
    lambda: TK.Vocabulary(["a"]).encode("a"),
    TypeError,
    "tokens must be a list of tokens; a str would be read character by",
)

case(
    TK.Vocabulary,
    lambda: TK.Vocabulary(["a"]).encode(["b"]),
    ValueError,
    "not in the vocabulary: ['b']",
)

case(
    TK.Vocabulary,
    lambda: TK.Vocabulary(["a"]).decode([3]),
    ValueError,
    "indices [3] are outside 0..0",
)

case(TK.Vocabulary, lambda: TK.Vocabulary([1, 2]), TypeError, "tokens must be strings, got [1, 2]")

case(
    DATA_TOY.previous_token,
    lambda: DATA_TOY.previous_token(2, 1, 5),
    ValueError,
    "sequences need at least 2 tokens to have neighbours, got n=1",
)

case(
    DATA_TOY.neighbours,
    lambda: DATA_TOY.neighbours(0, 4, 5),
    ValueError,
    "batch must be a positive int, got 0",
)

case(
    MLM.mask_tokens,
    lambda: MLM.mask_tokens(ids([1, 2]), mask_id=3, vocab_size=5, mask_prob=1.5),
    ValueError,
    "mask_prob must be a probability in [0, 1], got 1.5",
)

case(
    MLM.mask_tokens,
    lambda: MLM.mask_tokens([[1, 2]], mask_id=3, vocab_size=5),
    TypeError,
    "input_ids must be an integer tensor of token ids",
)

case(
    MLM.mask_tokens,
    lambda: MLM.mask_tokens(ids([1, 2]), mask_id=9, vocab_size=5),
    ValueError,
    "mask_id=9 is not in [0, vocab_size=5)",
)

case(
    MLM.SentencePair,
    lambda: MLM.SentencePair([1], [2], 3),
    ValueError,
    "is_next must be 0 or 1, got 3",
)

case(
    MLM.next_sentence_pairs,
    lambda: MLM.next_sentence_pairs([[1, 2]], -1),
    ValueError,
    "n_pairs must be a non-negative int, got -1",
)

case(
    MLM.next_sentence_pairs,
    lambda: MLM.next_sentence_pairs([[1, 2], [3]], 2, next_prob=2.0),
    ValueError,
    "next_prob must be in [0, 1], got 2.0",
)

case(
    MLM.pack_pair,
    lambda: MLM.pack_pair([1], [2], cls_id=0, sep_id=1, max_len=2),
    ValueError,
    "max_len must leave room for 3 special tokens and 1 token each, got 2",
)

case(MLM.pad_batch, lambda: MLM.pad_batch([], 0), ValueError, "need at least one sequence")
case(MLM.pad_batch, lambda: MLM.pad_batch([[1, 2], []], 0), ValueError,
     "every sequence needs at least one token; sequence 1 is empty")  # fmt: skip

case(
    MLM.pad_batch,
    lambda: MLM.pad_batch([[1], ["a"]], 0),
    TypeError,
    "sequences must hold lists of int token ids, got ['a']",
)

case(
    MLM.pretraining_batch,
    lambda: MLM.pretraining_batch([], cls_id=0, sep_id=1, pad_id=2, mask_id=3, vocab_size=10),
    ValueError,
    "need at least one sequence",
)

case(
    NU.NumbersConfig,
    lambda: NU.NumbersConfig(src_lang="xx"),
    ValueError,
    "language must be one of ('en', 'de', 'fr'), got 'xx'",
)

case(
    NU.NumbersConfig,
    lambda: NU.NumbersConfig(n_train=-1),
    ValueError,
    "need n_train > 0 and n_val, n_test >= 0, got -1, 500, 2000",
)

case(
    TK.Vocab,
    lambda: TK.Vocab(["a"]).encode("a"),
    TypeError,
    "encode takes a list of tokens, not a string; use tokenize() first",
)

case(
    TK.Vocab,
    lambda: TK.Vocab(["a"]).decode([99]),
    ValueError,
    "id 99 is outside the vocabulary of 5 tokens",
)

case(
    TK.Vocab,
    lambda: TK.Vocab(["x", "y"]).decode([True, False]),
    TypeError,
    "ids must be integer token ids, got True (bool)",
)

case(
    NU.NumberData,
    lambda: NU.NumberData(None, {}),
    TypeError,
    "config must be a NumbersConfig, got NoneType",
)

case(
    NW.number_to_words,
    lambda: NW.number_to_words(-5, "en"),
    ValueError,
    "number must be in [0, 10**16), got -5",
)

case(
    NW.number_to_words,
    lambda: NW.number_to_words(1.5, "en"),
    TypeError,
    "number must be an int, got float",
)

case(
    NW.number_to_words,
    lambda: NW.number_to_words(5, "xx"),
    ValueError,
    "language must be one of ('en', 'de', 'fr'), got 'xx'",
)

case(NW.tokenize, lambda: NW.tokenize(None, "en"), TypeError, "text must be a str, got NoneType")

case(NW.split_german, lambda: NW.split_german(None), TypeError, "word must be a str, got NoneType")

case(
    NU.load,
    lambda: NU.load(n_train=-1),
    ValueError,
    "need n_train > 0 and n_val, n_test >= 0, got -1, 500, 2000",
)

case(
    NU.load,
    lambda: NU.load(nope=1),
    TypeError,
    "NumbersConfig.__init__() got an unexpected keyword argument 'nope'",
)

case(
    NU.predict,
    lambda: NU.predict(None, None),
    TypeError,
    "translate must be a function src -> ids, got NoneType",
)

case(
    NU.exact_match,
    lambda: NU.exact_match([["a"]], [["a"], ["b"]]),
    ValueError,
    "1 predictions for 2 references",
)

case(
    NU.exact_match,
    lambda: NU.exact_match([None], ["1"]),
    TypeError,
    "predictions must hold only token sequences (lists of strings), got NoneType: None",
)

case(
    NU.exact_match,
    lambda: NU.exact_match([["1"]], [[1]]),
    TypeError,
    "references must hold only token sequences (lists of strings), got list: [1]",
)

case(
    NU.accuracy_by_length,
    lambda: NU.accuracy_by_length([True], [1, 2], [0, 5]),
    ValueError,
    "correct has shape (1,), lengths (2,)",
)

case(
    NU.accuracy_by_length,
    lambda: NU.accuracy_by_length([True], [1], [5, 0]),
    ValueError,
    "bins must be at least two increasing edges, got [5, 0]",
)

case(
    SH.markdown_to_text,
    lambda: SH.markdown_to_text(None),
    TypeError,
    "expected string or bytes-like object, got 'NoneType'",
)

case(
    SH.split_plays,
    lambda: SH.split_plays(min_val_chars=-1),
    ValueError,
    "min_val_chars must be a positive int, got -1",
)

case(
    SH.split_plays,
    lambda: SH.split_plays([], 10),
    ValueError,
    "0 plays cannot hold out 10 characters",
)

case(
    SH.train_val_text,
    lambda: SH.train_val_text(min_val_chars=10**9),
    ValueError,
    "38 plays cannot hold out 1000000000 characters",
)

case(
    TK.CharTokenizer,
    lambda: TK.CharTokenizer("ab").encode("abz"),
    ValueError,
    "character 'z' is not in the vocabulary",
)

case(
    TK.CharTokenizer,
    lambda: TK.CharTokenizer("ab").decode([5]),
    ValueError,
    "ids must be in [0, 2), got [5]",
)

case(
    TK.CharTokenizer,
    lambda: TK.CharTokenizer("ab").decode([True, False]),
    TypeError,
    "ids must be integer token ids, got True (bool)",
)

case(
    TK.CharTokenizer,
    lambda: TK.CharTokenizer("ab").decode(torch.tensor([0.0, 1.0])),
    TypeError,
    "ids must be a 1-d tensor of integer ids, got torch.float32 (2,)",
)

case(
    TK.CharTokenizer, lambda: TK.CharTokenizer(None), TypeError, "chars must be a str, got NoneType"
)

case(
    TK.BPETokenizer,
    lambda: TK.BPETokenizer(None),
    TypeError,
    "tokenizer must be a tokenizers.Tokenizer, got NoneType",
)

case(
    SH.bpe_tokenizer,
    lambda: SH.bpe_tokenizer(10),
    ValueError,
    "vocab_size must be at least 257 (256 bytes + merges), got 10",
)

case(
    SH.encode_splits,
    lambda: SH.encode_splits("chars"),
    TypeError,
    "tokenizer must be a CharTokenizer, a BPETokenizer or None, got str",
)

case(
    SH.get_batch,
    lambda: SH.get_batch(torch.arange(20), -1, 8),
    ValueError,
    "batch_size must be a positive int, got -1",
)

case(
    SH.get_batch,
    lambda: SH.get_batch(torch.arange(5), 2, 8),
    ValueError,
    "data has 5 tokens, need more than block_size=8",
)

case(
    MLM.PretrainingBatch,
    lambda: MLM.PretrainingBatch(*[ids([1])] * 5).to("gpu"),
    ValueError,
    "got 'gpu'",
)

case(NU.Batch, lambda: NU.Batch(ids([1]), ids([1]), ids(0)).to("tpu!"), ValueError, "got 'tpu!'")

case(GR.split_passages, lambda: GR.split_passages(["a line"]), TypeError, "text must be a str")

case(
    GR.split_passages,
    lambda: GR.split_passages("a", words=0),
    ValueError,
    "words must be a positive int, got 0",
)

case(
    GR.genre_task,
    lambda: GR.genre_task(0),
    ValueError,
    "test_per_genre must be a positive int, got 0",
)

case(GR.genre_task, lambda: GR.genre_task(2.5), TypeError, "test_per_genre must be an int")

case(
    GR.sample_labelled,
    lambda: GR.sample_labelled([], 10, 0),
    ValueError,
    "n must be a positive multiple of 3, got 10",
)

case(
    GR.sample_labelled,
    lambda: GR.sample_labelled([GR.Passage("a", 0, "x")] * 3, 3, 0),
    ValueError,
    "the pool has 0 history passages, need 1",
)

case(
    GR.majority_baseline,
    lambda: GR.majority_baseline(None),
    TypeError,
    "task must be a GenreTask, got NoneType",
)

case(
    SC.Thing,
    lambda: SC.Thing("purple", "circle", 0, 0),
    ValueError,
    "colour must be one of ['blue', 'green', 'red', 'yellow'], got 'purple'",
)

case(
    SC.Thing,
    lambda: SC.Thing("red", "circle", 3, 0),
    ValueError,
    "row must be an int in 0..2, got 3",
)

case(
    SC.Scene,
    lambda: SC.Scene(SC.Thing("red", "circle", 0, 2), SC.Thing("blue", "square", 0, 1)),
    ValueError,
    "first must stand in a column left of second's, got columns 2 and 1",
)

case(
    SC.Scene,
    lambda: SC.Scene("red circle", CAP_SCENE.second),
    TypeError,
    "a Scene holds two Things, got str, Thing",
)

case(SC.caption, lambda: SC.caption("a red circle"), TypeError, "scene must be a Scene, got str")

case(
    SC.parse_caption,
    lambda: SC.parse_caption("a red circle"),
    TypeError,
    "parse_caption takes a list of words (str)",
)

case(
    SC.parse_caption,
    lambda: SC.parse_caption(["a", "red", "circle", "above"]),
    ValueError,
    "expected a caption 'a <colour> <shape> left of a <colour> <shape>', got 'a red circle above'",
)

case(
    SC.render,
    lambda: SC.render(CAP_SCENE, jitter=2),
    ValueError,
    "jitter must be 0 or 1 pixel, got 2",
)

case(SC.render, lambda: SC.render(None), TypeError, "scene must be a Scene, got NoneType")

case(
    SC.SceneData,
    lambda: SC.SceneData({"test": [CAP_SCENE]}, 0),
    ValueError,
    "splits must be a dict with a non-empty 'train' list of scenes",
)

case(
    SC.SceneData,
    lambda: SC.SceneData({"train": ["a red circle"]}, 0),
    TypeError,
    "splits['train'] must be a non-empty list of Scenes",
)

case(
    SC.load,
    lambda: SC.load(test_fraction=1.5),
    ValueError,
    "test_fraction must be a float in (0, 1), got 1.5",
)

case(SC.load, lambda: SC.load(seed="0"), TypeError, "seed must be an int, got str")
case(SH.spoken_lines, lambda: SH.spoken_lines(None), TypeError, "text must be a str, got NoneType")


def _five_scenes():
    return SC.SceneData({"train": SC.all_scenes()[:5]}, 0)


for target, thunk, error, fragment in [
    (SC.SceneData.batches, lambda: _five_scenes().batches("train", 10), ValueError,
     "batch_size=10 is more than the 5 train scenes"),
    (SC.SceneData.batches, lambda: _five_scenes().batches("train", 2, seed=1.5), TypeError,
     "seed must be an int, got float"),
    (SC.SceneData.batch, lambda: _five_scenes().batch("train", 1.7), TypeError,
     "index must be an int, a list of ints or an integer tensor, got 1.7"),
    (SC.SceneData.batch, lambda: _five_scenes().batch("train", torch.tensor([0.5])), TypeError,
     "index must be an int, a list of ints or an integer tensor"),
    (SC.SceneData, lambda: SC.SceneData({"train": SC.all_scenes()[:2]}, seed=None), TypeError,
     "seed must be an int, got NoneType"),
    (SC.load, lambda: SC.load(test_fraction=1e-6), ValueError,
     "test_fraction=1e-06 holds out 0 of 3564 scenes; both splits need at least one"),
    (SC.load, lambda: SC.load(test_fraction=1), ValueError,
     "test_fraction must be a float in (0, 1), got 1"),
    (SC.render, lambda: SC.render(CAP_SCENE, noise=float("nan")), ValueError,
     "noise must be a non-negative finite number, got nan"),
    (SC.render, lambda: SC.render(CAP_SCENE, generator=0), TypeError,
     "generator must be a torch.Generator or None, got int"),
    (GR.sample_labelled, lambda: GR.sample_labelled("passages", 3, 0), TypeError,
     "pool must be a list or tuple of Passages, got str"),
    (GR.sample_labelled, lambda: GR.sample_labelled([1, 2, 3], 3, 0), TypeError,
     "pool must hold Passages only"),
    (GR.majority_baseline, lambda: GR.majority_baseline(GR.GenreTask((), ())), ValueError,
     "task must have passages in both its train and test sets"),
    (GR.genre_task, lambda: GR.genre_task(seed="a"), TypeError,
     "seed must be an int, got str"),
]:  # fmt: skip
    case(target, thunk, error, fragment)

case(
    NU.NumbersConfig,
    lambda: NU.NumbersConfig(join=0),
    ValueError,
    "join must be a positive int, got 0",
)
case(
    NU.load,
    lambda: NU.load(joint_vocab="yes"),
    TypeError,
    "joint_vocab must be a bool, got str",
)

# whole words as tokens (chapter 12's live run)
for target, thunk, error, fragment in [
    (TK.WordVocabulary, lambda: TK.WordVocabulary(["the", "The,"]), ValueError,
     "words must be lower-case words like 'thee', got ['The,']"),
    (TK.WordVocabulary, lambda: TK.WordVocabulary(["the", "the"]), ValueError,
     "words must be distinct"),
    (TK.WordVocabulary.from_texts, lambda: TK.WordVocabulary.from_texts(["a b"], 5), ValueError,
     "size must be an int >= 6, got 5"),
    (TK.WordVocabulary.words, lambda: TK.WordVocabulary.words(None), TypeError,
     "text must be a str, got NoneType"),
    (MLM.word_spans, lambda: MLM.word_spans([["a b"]], TK.WordVocabulary(["a"]), 0), ValueError,
     "span must be a positive int, got 0"),
    (MLM.word_spans, lambda: MLM.word_spans([["a b"]], ["a"], 2), TypeError,
     "vocab must be a WordVocabulary, got list"),
    (MLM.word_spans, lambda: MLM.word_spans(["a b"], TK.WordVocabulary(["a"]), 2), TypeError,
     "documents must hold lists of lines, got a str"),
]:  # fmt: skip
    case(target, thunk, error, fragment)

case(
    TOP.fill, lambda: TOP.fill("no slot", "dog"), ValueError, "template must be a str holding '{w}'"
)
case(TOP.fill, lambda: TOP.fill("the {w}", "two words"), ValueError, "word must be one word")
case(TOP.topic_task, lambda: TOP.topic_task("a"), TypeError, "seed must be an int")
case(TOP.topic_task, lambda: TOP.topic_task([1]), TypeError, "seed must be an int, got list")
case(
    TOP.fill, lambda: TOP.fill("{a} {w}", "Apple!"), ValueError, "word must be one word of letters"
)
case(
    TOP.sample_labelled,
    lambda: TOP.sample_labelled(TOP.topic_task(0).train, 7, 0),
    ValueError,
    "n must be a positive multiple of 5, got 7",
)
case(
    TOP.sample_labelled,
    lambda: TOP.sample_labelled(TOP.topic_task(0).train, 5000, 0),
    ValueError,
    "the pool has 400 animal sentences, need 1000",
)
case(
    TOP.sample_labelled,
    lambda: TOP.sample_labelled([1, 2], 5, 0),
    TypeError,
    "pool must hold Sentences only",
)
