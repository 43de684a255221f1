"""What the chapters measure: ``word_vectors`` (similarities, nearest words, analogies,
a 2-D map), ``head_patterns`` (what share of each attention head goes where),
``sequential_depth`` (the longest chain of dependent matrix products in a network),
``loss_surface`` (the loss along a random, filter-normalised line through weight space),
``ablation`` (a model run with some attention heads zeroed) and ``text_loss`` (a language
model's loss on a text in nats per character, whatever its tokenizer)."""
