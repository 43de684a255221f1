"""Transformer Lab: every component of the Transformer, from scratch and tested.

Where each stage lives, in the order data flows (imports only point down this list):

============  ==========================================================================
``nn``         the pieces: masks, attention (with grouped-query attention), the scores of
               recurrent attention, multi-head attention, norms, feed-forward, positions,
               blocks, the KV cache
``models``     whole networks: the recurrent seq2seq, the encoder-decoder, GPT, Llama,
               BERT, the captioner, the toy Transformer, the sequence classifier
``data``       data sets, all generated or read offline: numbers, Shakespeare, scenes,
               genres, masked-language-model batches, toy tasks
``training``   the loop, losses, schedules, checkpoints, data parallelism, one recipe per
               model family, and the trainer ``python -m transformer_lab.training.train_gpt``
``generation`` sampling (temperature, top-k, top-p) and search (greedy, beam)
``pretrained`` MiniLM, SmolLM2 from its GGUF file, the tiny BERT the book ships
``viz``        pictures: heatmaps, explorations that move without a kernel, numbered
               figures (their captions in ``viz/captions``) and listings; the pictures
               drawn for particular chapters in ``viz.chapters``
``analysis``   what chapters measure: word vectors, attention-head patterns, sequential depth
``export``     the site's live models as ONNX graphs, with every head's attention
``assets``     files the package ships (the tiny BERT, the fine-tuning sweep)
``exercises``  one checker module per chapter around one verdict runner
============  ==========================================================================

Beside them: ``checks`` (the argument checks every stage shares), ``hooks`` (named
activations, ``run_with_cache``), ``device`` (``transformer_lab.device()`` picks CUDA, then
MPS, then the CPU; ``seed_everything`` seeds every generator the book uses).
"""

from transformer_lab import hooks, nn
from transformer_lab.device import device, seed_everything
from transformer_lab.hooks import capture, run_with_cache

__version__ = "0.1.0"
__all__ = ["hooks", "nn", "device", "seed_everything", "capture", "run_with_cache"]
