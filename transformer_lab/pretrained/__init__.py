"""Pretrained weights in the book's own code, read offline from installed packages.

``minilm`` (all-MiniLM-L6-v2 into our BERT, with sentence embeddings), ``smollm2``
(SmolLM2-135M-Instruct from its GGUF file into our Llama, and a chat helper),
``tiny_bert`` (the small BERT pretrained on Shakespeare that the package ships in
``assets/``) and ``book_gpt`` (chapter 13's character GPT, shipped in ``assets/`` too). The
WordPiece and GGUF tokenizers that MiniLM, the tiny BERT and SmolLM2 come with live with the
package's other tokenizers in ``data/`` (``data.wordpiece``, ``data.gguf_tokenizer``).
"""
