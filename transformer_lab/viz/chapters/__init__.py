"""The pictures drawn for particular chapters, each from the numbers its chapter computes.

``transformer_lab.viz`` itself holds the figure machinery any chapter may call (heatmaps,
explorations that move without a kernel, numbered figures, listings, tables, live models,
attention browsers); the modules here use it, and it never imports them
(``tests/test_package_layout.py``). A chapter imports the module it needs, e.g.
``from transformer_lab.viz.chapters.architecture import where_we_are``.

=================  ==========  ================================================================
module             chapters    what it draws
=================  ==========  ================================================================
``timeline``       1           the papers of the book's story, 2014 to today
``lookup``         1           one-hot rows times an embedding matrix
``similarity``     1           cosine similarity against Euclidean distance
``word_map``       1           word vectors on a map (PCA), with analogies
``bottleneck``     2           the RNN bottleneck: loss, exact match, distance, sensitivity
``overlay``        3           a picture lit where a caption word's attention falls
``toy_attention``  4, 5, 6     the attention explorer over a toy sentence (its tokens and
                               embeddings are ``transformer_lab.data.toy_sentences``)
``pictures``       4, 8,       matrices drawn as boxes with their shapes: Q, K and V (4), the
                   13, 16      split into heads (8), the key/value cache (13), LoRA (16)
``pictures_ring``  18          the steps of the ring all-reduce
``architecture``   4 to 14,    the Transformer's diagram, the part a chapter builds lit
                   17, 19      (``where_we_are``); the whole diagram closes chapter 11
=================  ==========  ================================================================
"""
