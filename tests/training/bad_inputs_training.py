"""Bad inputs to transformer_lab.training.

Each case: a callable, a call that must fail, the error type and a fragment of the
message (run by ``tests/test_bad_inputs.py``)."""

from bad_input_support import (  # noqa: F401
    BP,
    BR,
    CK,
    DI,
    FT,
    MODELS_TOY,
    PRG,
    SCH,
    TG,
    TRAINING_GPT,
    TRAINING_LOSSES,
    TRN,
    T,
    bert,
    case,
    classifier,
    enc_dec,
    f,
    gpt,
    ids,
    labelled,
    nn,
    torch,
    wordpiece,
)

from transformer_lab.training.run import Run

_RECIPE = FT.ClassifierRecipe(steps=2, batch_size=2, lr=1e-3)

case(
    TRAINING_GPT.train_gpt,
    lambda: TRAINING_GPT.train_gpt(
        gpt(), torch.arange(-1, 40) % 12 - 1, TRAINING_GPT.TrainRecipe(steps=1, warmup=0)
    ),
    ValueError,
    "train_ids must be in [0, 11)",
)

case(
    TRAINING_LOSSES.lm_loss,
    lambda: TRAINING_LOSSES.lm_loss(gpt(), (ids([1, 2]), ids([1, 2, 3]))),
    ValueError,
    "targets y must have the shape of x (1, 2), got (1, 3)",
)

case(
    TRAINING_LOSSES.lm_loss,
    lambda: TRAINING_LOSSES.lm_loss(gpt(), (ids([1, 2]), ids([1, 12]))),
    ValueError,
    "labels must be in [0, 11), got values from 1 to 12",
)

case(
    TRAINING_LOSSES.lm_loss,
    lambda: TRAINING_LOSSES.lm_loss(gpt(), ids([1, 2])),
    TypeError,
    "batch must be a pair (x, y) of token-id tensors, got Tensor",
)

case(
    TRAINING_GPT.evaluate_lm,
    lambda: TRAINING_GPT.evaluate_lm(gpt(), torch.arange(20) % 11, batch_size=0),
    ValueError,
    "batch_size must be a positive int, got 0",
)

case(
    TRAINING_GPT.evaluate_lm,
    lambda: TRAINING_GPT.evaluate_lm(gpt(), torch.arange(20) % 11 - 1),
    ValueError,
    "data must be in [0, 11), got values from -1 to 9",
)

case(
    TRAINING_GPT.evaluate_lm,
    lambda: TRAINING_GPT.evaluate_lm(gpt(), [1, 2, 3]),
    TypeError,
    "data must be a tensor of integer token ids, got list",
)

case(
    TRAINING_GPT.TrainRecipe,
    lambda: TRAINING_GPT.TrainRecipe(batch_size=0),
    ValueError,
    "batch_size must be a positive int, got 0",
)

case(
    TRAINING_GPT.TrainRecipe,
    lambda: TRAINING_GPT.TrainRecipe(lr=float("nan")),
    ValueError,
    "lr must be a positive finite number, got nan",
)

case(
    TRAINING_GPT.TrainRecipe,
    lambda: TRAINING_GPT.TrainRecipe(grad_clip=None),
    TypeError,
    "grad_clip must be a number, got None",
)

case(
    TRAINING_GPT.lr_factor,
    lambda: TRAINING_GPT.lr_factor(-1, TRAINING_GPT.TrainRecipe()),
    ValueError,
    "step must be a non-negative int, got -1",
)

case(
    TRAINING_GPT.lr_factor,
    lambda: TRAINING_GPT.lr_factor(0, None),
    TypeError,
    "recipe must be a TrainRecipe, got NoneType",
)

case(
    TRAINING_GPT.make_optimizer,
    lambda: TRAINING_GPT.make_optimizer(None, TRAINING_GPT.TrainRecipe()),
    TypeError,
    "model must be an nn.Module, got NoneType",
)

case(
    TRAINING_GPT.make_optimizer,
    lambda: TRAINING_GPT.make_optimizer(gpt(), {"lr": 1}),
    TypeError,
    "recipe must be a TrainRecipe, got dict",
)

case(
    TRAINING_GPT.train_gpt,
    lambda: TRAINING_GPT.train_gpt(gpt(), torch.arange(40) % 11, None),
    TypeError,
    "recipe must be a TrainRecipe, got NoneType",
)

case(
    TRAINING_GPT.train_gpt,
    lambda: TRAINING_GPT.train_gpt(
        gpt(), torch.arange(40) % 11, TRAINING_GPT.TrainRecipe(steps=1, warmup=0), Run(device="gpu")
    ),
    ValueError,
    "device must be 'cpu', 'cuda', 'cuda:N', 'mps' or a torch.device, got 'gpu'",
)

case(
    TRAINING_GPT.train_gpt,
    lambda: TRAINING_GPT.train_gpt(
        gpt(), torch.arange(5) % 11, TRAINING_GPT.TrainRecipe(steps=1, warmup=0)
    ),
    ValueError,
    "train_ids has 5 tokens; windows of n_ctx=8 need more",
)

case(
    TRAINING_GPT.preset,
    lambda: TRAINING_GPT.preset("huge", 10),
    ValueError,
    "unknown preset 'huge'; choose from ['book-cpu', 'gpu', 'nanogpt-cpu']",
)

case(
    TRAINING_GPT.preset,
    lambda: TRAINING_GPT.preset("book-cpu", 0),
    ValueError,
    "d_vocab must be a positive int, got 0",
)

case(
    TRN.train,
    lambda: TRN.train(gpt(), [1, 2], TRAINING_LOSSES.lm_loss, lr=-1),
    ValueError,
    "lr must be a positive finite number, got -1",
)

case(
    TRN.train,
    lambda: TRN.train(gpt(), iter([]), TRAINING_LOSSES.lm_loss, run=Run(steps=-1)),
    ValueError,
    "steps must be a non-negative int, got -1",
)

case(
    TRN.train,
    lambda: TRN.train(gpt(), [1], TRAINING_LOSSES.lm_loss, run=Run(device="gpu")),
    ValueError,
    "device must be 'cpu', 'cuda', 'cuda:N', 'mps' or a torch.device, got 'gpu'",
)

case(TRN.train, lambda: TRN.train(None, [1]), TypeError, "model must be an nn.Module, got NoneType")

case(
    TRN.evaluate,
    lambda: TRN.evaluate(gpt(), [], TRAINING_LOSSES.lm_loss),
    ValueError,
    "evaluate got no batches",
)

case(
    TRN.evaluate,
    lambda: TRN.evaluate(gpt(), [1], TRAINING_LOSSES.lm_loss, device="cuda:x"),
    ValueError,
    "device must be 'cpu', 'cuda', 'cuda:N', 'mps' or a torch.device, got 'cuda:x'",
)

case(
    TRN.seq2seq_loss,
    lambda: TRN.seq2seq_loss(enc_dec(), (ids([1]), ids([2]))),
    TypeError,
    "batch must have src, tgt_in, tgt_out and pad_id (a numbers.Batch),",
)

case(
    TRN.to_device,
    lambda: TRN.to_device(f(2), "gpu"),
    ValueError,
    "device must be 'cpu', 'cuda', 'cuda:N', 'mps' or a torch.device, got 'gpu'",
)

case(
    TRN.num_threads,
    lambda: TRN.num_threads(0).__enter__(),
    ValueError,
    "the number of threads must be a positive int, got 0",
)

case(
    T.toy_batches,
    lambda: next(T.toy_batches("reverse", 5)),
    ValueError,
    "task must be one of ['neighbours', 'previous_token'] or a function,",
)

case(
    T.toy_batches,
    lambda: next(T.toy_batches("previous_token", 5, lengths=[1])),
    ValueError,
    "lengths must be ints >= 2, got [1]",
)

case(
    T.toy_batches,
    lambda: next(T.toy_batches("previous_token", 5, batch_size=0)),
    ValueError,
    "batch must be a positive int, got 0",
)

case(
    T.toy_loss,
    lambda: T.toy_loss(
        MODELS_TOY.TinyTransformer(MODELS_TOY.ToyConfig(d_vocab=6, d_model=8, n_heads=2, d_mlp=8)),
        (ids([1, 2]), ids([1, 2])),
    ),
    ValueError,
    "targets y must be [batch, pos, n_answers]=(1, 2, 1), got (1, 2)",
)

case(
    T.train_toy,
    lambda: T.train_toy(
        MODELS_TOY.TinyTransformer(MODELS_TOY.ToyConfig(d_vocab=6, d_model=8, n_heads=2, d_mlp=8)),
        run=Run(steps=-1),
    ),
    ValueError,
    "steps must be a non-negative int, got -1",
)

case(
    T.train_toy,
    lambda: T.train_toy(None),
    TypeError,
    "model must be a TinyTransformer (an nn.Module with a config), got",
)

case(
    T.train_toy,
    lambda: T.train_toy(
        MODELS_TOY.TinyTransformer(MODELS_TOY.ToyConfig(d_vocab=6, d_model=8, n_heads=2, d_mlp=8)),
        "previous_token",
        {"lr": 1e-3},
    ),
    TypeError,
    "recipe must be a ToyRecipe, got dict",
)

case(
    T.ToyRecipe, lambda: T.ToyRecipe(batch_size=0), ValueError, "batch_size must be a positive int"
)
case(
    T.ToyRecipe, lambda: T.ToyRecipe(lengths=[1]), ValueError, "lengths must be ints >= 2, got [1]"
)
case(T.ToyRecipe, lambda: T.ToyRecipe(lengths="12"), ValueError, "lengths must be ints >= 2")
case(T.ToyRecipe, lambda: T.ToyRecipe(lr=0.0), ValueError, "lr must be a positive finite number")
case(T.ToyRecipe, lambda: T.ToyRecipe(lr="3e-3"), TypeError, "lr must be a number, got str")
case(T.ToyRecipe, lambda: T.ToyRecipe(grad_clip=-1.0), ValueError,
     "grad_clip must be a positive finite number, got -1.0")  # fmt: skip
case(T.ToyRecipe, lambda: T.ToyRecipe(lr_schedule=0.5), TypeError,
     "lr_schedule must be a function step -> factor, got 0.5")  # fmt: skip

case(
    T.position_accuracy,
    lambda: T.position_accuracy(
        MODELS_TOY.TinyTransformer(MODELS_TOY.ToyConfig(d_vocab=6, d_model=8, n_heads=2, d_mlp=8)),
        n=1,
    ),
    ValueError,
    "sequences need at least 2 tokens to have neighbours, got n=1",
)

case(
    T.position_accuracy,
    lambda: T.position_accuracy(None),
    TypeError,
    "model must be a TinyTransformer (an nn.Module with a config), got",
)

# the shipped tiny BERT (chapter 12)
case(BP.TinyBertRecipe, lambda: BP.TinyBertRecipe(d_model=130), ValueError, "d_model=130")

case(
    BP.TinyBertRecipe,
    lambda: BP.TinyBertRecipe(steps=0),
    ValueError,
    "steps must be a positive int, got 0",
)
case(BP.TinyBertRecipe, lambda: BP.TinyBertRecipe(steps=100), ValueError,
     "warmup=200 is longer than steps=100")  # fmt: skip

case(BP.TinyBertRecipe, lambda: BP.TinyBertRecipe(batch=2.5), TypeError, "batch must be an int")

case(
    BP.shakespeare_corpus,
    lambda: BP.shakespeare_corpus(5),
    ValueError,
    "vocab_size must be an int >= 100, got 5",
)

case(
    BP.held_out_batch,
    lambda: BP.held_out_batch(None),
    TypeError,
    "corpus must be a ShakespeareCorpus, got NoneType",
)

case(
    BP.word_tokens,
    lambda: BP.word_tokens("abc"),
    TypeError,
    "tokenizer must be a WordPieceTokenizer, got str",
)

case(
    BR.masked_lm_report,
    lambda: BR.masked_lm_report(bert().bert, None, None),
    TypeError,
    "model must be a BertForPreTraining, got BertModel",
)

case(
    BP.pretrain_tiny_bert,
    lambda: BP.pretrain_tiny_bert(run=Run(steps=0)),
    ValueError,
    "run.steps must be in [1, 5000] (the recipe's schedule), got 0",
)

case(
    BP.pretrain_tiny_bert,
    lambda: BP.pretrain_tiny_bert({"steps": 5}),
    TypeError,
    "recipe must be a TinyBertRecipe, got dict",
)

case(TRN.TrainResult, lambda: TRN.TrainResult([1.0]).smoothed(0), ValueError, "window must be")

# data parallelism, checkpoints and the training command
case(
    DI.setup,
    lambda: DI.setup("gpu"),
    ValueError,
    "must be 'cpu', 'cuda', 'cuda:N', 'mps' or a torch.device",
)

case(DI.setup, lambda: DI.setup("cpu", backend="mpi"), ValueError, "backend must be 'nccl'")
case(DI.setup, lambda: DI.setup("cpu", backend="nccl"), ValueError,
     "the nccl backend needs CUDA devices, got device cpu")  # fmt: skip

case(DI.shard, lambda: DI.shard(torch.zeros(5, 2), 0, 2), ValueError, "does not split evenly")

case(DI.shard, lambda: DI.shard("text", 0, 1), TypeError, "got str")


case(DI.ring_all_reduce, lambda: DI.ring_all_reduce([]), ValueError, "non-empty list of tensors")

case(CK.set_rng_state, lambda: CK.set_rng_state({}), ValueError, "a dict from rng_state()")

case(
    CK.save_checkpoint,
    lambda: CK.save_checkpoint("c.pt", model=gpt(), optimizer=None, step=0),
    TypeError,
    "optimizer must be a torch optimizer, got NoneType",
)

case(CK.load_checkpoint, lambda: CK.load_checkpoint(None), TypeError, "path must be a file path")

case(TG.main, lambda: TG.main("--steps 5"), TypeError, "argv must be a list of strings")

case(TG.parse_args, lambda: TG.parse_args([1]), TypeError, "argv must be a list of strings")

case(
    FT.SequenceClassifier,
    lambda: FT.SequenceClassifier(nn.Linear(2, 2), 3),
    TypeError,
    "encoder must be a BertModel, got Linear",
)

case(
    FT.SequenceClassifier,
    lambda: FT.SequenceClassifier(classifier().encoder, 3, pooling="max"),
    ValueError,
    "pooling must be one of ('cls', 'mean'), got 'max'",
)

case(
    FT.SequenceClassifier,
    lambda: classifier().parameter_groups(1e-3, 0),
    ValueError,
    "encoder_lr must be a positive finite number, got 0",
)

case(FT.ClassificationBatch, lambda: labelled().to("gpu"), ValueError, "got 'gpu'")

case(
    FT.build_classifier,
    lambda: FT.build_classifier(classifier().encoder, 3, "distil"),
    ValueError,
    "method must be one of ('scratch', 'probe', 'finetune'), got 'distil'",
)

case(
    FT.build_classifier,
    lambda: FT.build_classifier(nn.Linear(2, 2), 3, "probe"),
    TypeError,
    "encoder must be a BertModel, got Linear",
)

case(
    FT.tokenize_labelled,
    lambda: FT.tokenize_labelled(None, ["a"], [0], 8),
    TypeError,
    "tokenizer must be a WordPieceTokenizer, got NoneType",
)

case(
    FT.tokenize_labelled,
    lambda: FT.tokenize_labelled(wordpiece(), "the cat", [0], 8),
    TypeError,
    "texts must be a list of strings, got str",
)

case(
    FT.classification_batches,
    lambda: next(FT.classification_batches(labelled(), 0, 0)),
    ValueError,
    "batch_size must be a positive int, got 0",
)

case(
    FT.classification_batches,
    lambda: next(FT.classification_batches([1, 2], 2, 0)),
    TypeError,
    "data must be a ClassificationBatch, got list",
)

case(
    FT.classification_loss,
    lambda: FT.classification_loss(
        classifier(), FT.ClassificationBatch(ids([1, 2]), ids([1, 1]), ids(3))
    ),
    ValueError,
    "labels must be in [0, 3), got values from 3",
)

case(FT.predict, lambda: FT.predict(None, labelled()), TypeError, "model must be an nn.Module")

case(
    FT.classification_accuracy,
    lambda: FT.classification_accuracy(classifier(), (ids([1]), ids([0]))),
    TypeError,
    "data must be a ClassificationBatch, got tuple",
)

case(
    FT.encode_features,
    lambda: FT.encode_features(nn.Linear(2, 2), labelled()),
    TypeError,
    "model must be a SequenceClassifier, got Linear",
)

case(SCH.warmup_linear, lambda: SCH.warmup_linear(0), ValueError, "steps must be a positive int")

case(
    SCH.warmup_linear,
    lambda: SCH.warmup_linear(10, 1.5),
    ValueError,
    "warmup (a share of the steps) must be in [0, 1), got 1.5",
)
case(
    SCH.warmup_linear,
    lambda: SCH.warmup_linear(10, "0.1"),
    ValueError,
    "warmup (a share of the steps) must be in [0, 1), got '0.1'",
)

case(
    FT.train_classifier,
    lambda: FT.train_classifier(nn.Linear(2, 2), labelled(), _RECIPE),
    TypeError,
    "model must be a SequenceClassifier, got Linear",
)
case(
    FT.train_classifier,
    lambda: FT.train_classifier(classifier(), labelled(), {"steps": 2}),
    TypeError,
    "recipe must be a ClassifierRecipe, got dict",
)
case(
    FT.train_classifier,
    lambda: FT.train_classifier(classifier(), labelled(), _RECIPE, Run(steps=3)),
    ValueError,
    "run.steps must be in [1, 2] (the recipe's schedule), got 3",
)
case(
    FT.ClassifierRecipe,
    lambda: FT.ClassifierRecipe(steps=0, batch_size=2, lr=1e-3),
    ValueError,
    "steps must be a positive int, got 0",
)
case(
    FT.ClassifierRecipe,
    lambda: FT.ClassifierRecipe(steps=2, batch_size=0, lr=1e-3),
    ValueError,
    "batch_size must be a positive int, got 0",
)
case(
    FT.ClassifierRecipe,
    lambda: FT.ClassifierRecipe(steps=2, batch_size=2, lr=1e-3, encoder_lr=-1e-4),
    ValueError,
    "encoder_lr must be a positive finite number, got -0.0001",
)
case(
    FT.ClassifierRecipe,
    lambda: FT.ClassifierRecipe(steps=2, batch_size=2, lr=2.0, weight_decay=0.5),
    ValueError,
    "lr * weight_decay must be < 1",
)

case(
    FT.fit_probe,
    lambda: FT.fit_probe(f(4), ids(0, 1, 2, 0), 3),
    ValueError,
    "features must be a [n, d] tensor, got (4,)",
)

case(
    FT.fit_probe,
    lambda: FT.fit_probe(f(4, 2), ids(0, 1, 2, 0), 2),
    ValueError,
    "labels must be in [0, 2), got values from 0 to 2",
)

case(PRG.progress_bar, lambda: PRG.progress_bar(-1, "x"), ValueError, "non-negative int")

case(PRG.progress_bar, lambda: PRG.progress_bar(True, "x"), ValueError, "non-negative int")

case(PRG.progress_bar, lambda: PRG.progress_bar(3, None), TypeError, "desc must be a string")
case(
    SCH.warmup_decay,
    lambda: SCH.warmup_decay(0, start=5, end=2),
    ValueError,
    "end must be at least start=5",
)
case(
    SCH.warmup_decay,
    lambda: SCH.warmup_decay(1, 1, 5, "exponential"),
    ValueError,
    "decay must be one of",
)
case(SCH.warmup_cosine, lambda: SCH.warmup_cosine(0, 1), ValueError, "steps must be a positive int")

_EMPTY = FT.ClassificationBatch(
    torch.zeros(0, 3, dtype=torch.long),
    torch.zeros(0, 3, dtype=torch.long),
    torch.zeros(0, dtype=torch.long),
)
for target, thunk, error, fragment in [
    (FT.classification_batches, lambda: FT.classification_batches(_EMPTY, 2, 0), ValueError,
     "data must hold at least one example"),
    (FT.classification_batches, lambda: FT.classification_batches(labelled(), 2, 2**64),
     ValueError, "seed must be an int in [-2**63, 2**64)"),
    (FT.ClassificationBatch, lambda: FT.ClassificationBatch(
        ids(*[[1, 2, 3]] * 4), torch.ones(4, 3, dtype=torch.long), torch.arange(3)),
     ValueError, "labels must be [batch] = (4,), one per row of input_ids, got (3,)"),
    (FT.ClassificationBatch, lambda: FT.ClassificationBatch(
        ids([1, 2, 3]), ids([1, 2, 1]), ids(0)), ValueError,
     "attention_mask must hold only 0 (padding) and 1 (real token)"),
    (FT.ClassificationBatch, lambda: FT.ClassificationBatch(
        ids([1, 2, 3]), ids([1, 1]), ids(0)), ValueError,
     "attention_mask must be [batch, pos] = (1, 3), got (1, 2)"),
    (FT.ClassificationBatch, lambda: FT.ClassificationBatch(
        f(1, 3), ids([1, 1, 1]), ids(0)), TypeError,
     "input_ids must be an integer tensor of token ids, got torch.float32"),
    (FT.ClassificationBatch, lambda: FT.ClassificationBatch(
        ids([1, 2, 3]), ids([1, 1, 1]), torch.tensor([0.0])), TypeError,
     "labels must be an integer tensor of token ids, got torch.float32"),
    (FT.predict, lambda: FT.predict(classifier(), labelled(), batch_size=0), ValueError,
     "batch_size must be a positive int, got 0"),
    (FT.predict, lambda: FT.predict(classifier(), _EMPTY), ValueError,
     "data must hold at least one example"),
    (FT.classification_accuracy, lambda: FT.classification_accuracy(classifier(), _EMPTY),
     ValueError, "data must hold at least one example"),
    (FT.encode_features, lambda: FT.encode_features(classifier(), _EMPTY), ValueError,
     "data must hold at least one example"),
    (FT.tokenize_labelled, lambda: FT.tokenize_labelled(wordpiece(), ["a b"], [-1], 8),
     ValueError, "labels must be class ids >= 0, got [-1]"),
    (FT.encode_features, lambda: FT.encode_features(classifier(), labelled(), static=1),
     TypeError, "static must be True or False, got 1"),
    (FT.classification_loss, lambda: FT.classification_loss(classifier(), "batch"), TypeError,
     "data must be a ClassificationBatch, got str"),
    (FT.ClassifierRecipe, lambda: FT.ClassifierRecipe(
        steps=2, batch_size=2, lr=1e-3, weight_decay=-1.0),
     ValueError, "weight_decay must be a non-negative finite number, got -1.0"),
    (FT.ClassifierRecipe, lambda: FT.ClassifierRecipe(steps=2, batch_size=2, lr=1e-3, warmup=1.0),
     ValueError, "warmup must be in [0, 1), got 1.0"),
    (FT.ClassifierRecipe, lambda: FT.ClassifierRecipe(steps=2, batch_size=2, lr=float("inf")),
     ValueError, "lr must be a positive finite number, got inf"),
    (FT.train_classifier, lambda: FT.train_classifier(classifier(), _EMPTY, _RECIPE),
     ValueError, "data must hold at least one example"),
    (FT.fit_probe, lambda: FT.fit_probe(torch.tensor([[0.0, float("nan")]] * 2), ids(0, 1), 2),
     ValueError, "features must be finite, with at least one row"),
    (FT.fit_probe, lambda: FT.fit_probe(f(4, 2), ids(0, 1, 0, 1), 2, steps=0), ValueError,
     "steps must be a positive int, got 0"),
    (FT.fit_probe, lambda: FT.fit_probe(f(4, 2), ids(0, 1, 0, 1), 2, lr=float("nan")),
     ValueError, "lr must be a positive finite number, got nan"),
    (FT.build_classifier, lambda: FT.build_classifier(bert().bert, 3, "probe", seed=2**64),
     ValueError, "seed must be an int in [-2**63, 2**64)"),
    (FT.build_classifier, lambda: FT.build_classifier(bert().bert, 1, "probe"), ValueError,
     "n_classes must be an int >= 2, got 1"),
    (FT.tokenize_labelled, lambda: FT.tokenize_labelled(wordpiece(), ["a"], [0.0], 8),
     TypeError, "labels must be int class ids, got [0.0]"),
    (FT.tokenize_labelled, lambda: FT.tokenize_labelled(wordpiece(), [], [], 8), ValueError,
     "texts must be as long as labels, and not empty, got 0 texts and 0 labels"),
]:  # fmt: skip
    case(target, thunk, error, fragment)

case(
    SCH.warmup_inverse_sqrt,
    lambda: SCH.warmup_inverse_sqrt(0),
    ValueError,
    "warmup must be a positive int, got 0",
)
case(
    SCH.warmup_inverse_sqrt,
    lambda: SCH.warmup_inverse_sqrt(10)(-1),
    ValueError,
    "step must be",
)
case(
    SCH.transformer_peak_lr,
    lambda: SCH.transformer_peak_lr(64.0, 10),
    TypeError,
    "d_model must be an int, got float",
)
case(
    TRN.seq2seq_loss,
    lambda: TRN.seq2seq_loss(enc_dec(), None, label_smoothing=1.0),
    ValueError,
    "label_smoothing must be in [0, 1), got 1.0",
)

# chapter 12's live run on whole words
from transformer_lab.data.mlm import word_spans  # noqa: E402
from transformer_lab.data.tokenizers import WordVocabulary  # noqa: E402


def _few_words() -> BP.ShakespeareWords:
    """Two tiny plays of three-word spans, a vocabulary of their words."""
    lines = ["the cat sat on the mat and the dog ran off", "a bird sang in the tree all day"]
    vocab = WordVocabulary.from_texts(lines, 30)
    train, val = word_spans([lines[:1]], vocab, 3), word_spans([lines[1:]], vocab, 3)
    return BP.ShakespeareWords(vocab, 3, train, val, "tree", torch.ones(30), 1.0)


for target, thunk, error, fragment in [
    (BP.held_out_words, lambda: BP.held_out_words(_few_words(), mask_prob=0), ValueError,
     "mask_prob must be in (0, 1), got 0: the test needs hidden words to score (0 hides none"),
    (BP.held_out_words, lambda: BP.held_out_words(_few_words(), n_pairs=2, mask_prob=1e-9),
     ValueError, "mask_prob=1e-09 hid no word in 2 pairs: the test needs hidden words to score"),
    (BP.held_out_words, lambda: BP.held_out_words(_few_words(), mask_prob=True), TypeError,
     "mask_prob must be a number, got bool"),
    (BP.shakespeare_words, lambda: BP.shakespeare_words(span=0), ValueError,
     "span must be a positive int, got 0"),
    (BP.held_out_words, lambda: BP.held_out_words("plays"), TypeError,
     "words must be a ShakespeareWords, got str"),
    (BR.NeighbourCounts, lambda: BR.NeighbourCounts([[1, 9]], 5, [0]), ValueError,
     "token ids must lie in [0, 5)"),
    (BR.NeighbourCounts, lambda: BR.NeighbourCounts([[1]], 5, [0]), ValueError,
     "sequences must hold at least one pair of neighbours"),
    (BR.word_mlm_report, lambda: BR.word_mlm_report(None, None, None), TypeError,
     "batch must be a PretrainingBatch, got NoneType"),
    (BR.blank_fill_report, lambda: BR.blank_fill_report(None, None, None), TypeError,
     "batch must be a PretrainingBatch, got NoneType"),
    (BP.WordBertRecipe, lambda: BP.WordBertRecipe(steps=10, warmup=20), ValueError,
     "warmup=20 is longer than steps=10"),
    (BP.WordBertRecipe, lambda: BP.WordBertRecipe(mask_prob=1.0), ValueError,
     "mask_prob must be below 1, got 1.0"),
    (BP.WordBertRecipe, lambda: BP.WordBertRecipe(vocab_size=5), ValueError,
     "vocab_size must be above the 5 special tokens"),
    (BP.WordBertRecipe, lambda: BP.WordBertRecipe(d_model=100, n_heads=3), ValueError,
     "d_model=100 must be divisible by n_heads=3"),
    (BP.pretrain_word_bert, lambda: BP.pretrain_word_bert({"steps": 5}), TypeError,
     "recipe must be a WordBertRecipe, got dict"),
]:  # fmt: skip
    case(target, thunk, error, fragment)

case(
    FT.build_classifier,
    lambda: FT.build_classifier(bert().bert, 3, "probe", config=bert().bert.config),
    ValueError,
    "config= is for method='scratch' only, got method='probe'",
)
case(
    FT.build_classifier,
    lambda: FT.build_classifier(bert().bert, 3, "scratch", config="small"),
    TypeError,
    "config must be a BertConfig, got str",
)
case(
    FT.train_classifier,
    lambda: FT.train_classifier(classifier(), labelled(), _RECIPE, eval_data="test"),
    TypeError,
    "data must be a ClassificationBatch, got str",
)
case(
    FT.train_classifier,
    lambda: FT.train_classifier(classifier(), labelled(), _RECIPE, Run(eval_every=1)),
    ValueError,
    "eval_every needs an eval_fn",
)
