"""What the chapters measure: ``word_vectors`` (similarities, nearest words, analogies,
a 2-D map), ``head_patterns`` (what share of each attention head goes where) and
``sequential_depth`` (the longest chain of dependent matrix products in a network) and
``loss_surface`` (the loss along a random, filter-normalised line through weight space)."""
