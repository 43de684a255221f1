"""Generating text from a trained decoder: ``sampling`` (temperature, top-k, top-p),
``search`` (greedy decoding and beam search for the seq2seq models) and ``answers`` (a
decoder's batched greedy answers to prompts)."""
