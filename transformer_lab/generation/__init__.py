"""Generating text from a trained decoder: ``sampling`` (temperature, top-k, top-p) and
``search`` (greedy decoding and beam search for the seq2seq models)."""
