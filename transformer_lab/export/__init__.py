"""Models in files that run without Python: ONNX graphs for the site's live models.

- :mod:`~transformer_lab.export.onnx`: the book's GPT (logits and every head's attention)
  and a BERT such as all-MiniLM-L6-v2 (every head's attention and the sentence vector),
  exported by ``torch.onnx`` with a dynamic number of positions;
- :mod:`~transformer_lab.export.float16`: weights stored as float16 in the file and cast
  back to float32 in the graph, which halves the file and leaves the arithmetic float32;
- :mod:`~transformer_lab.export.live`: the four files the site loads (``gpt.onnx``,
  ``gpt.json``, ``minilm.onnx``, ``minilm.json``), with what the browser's tokenizers need.
"""
