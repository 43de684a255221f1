"""Training: one small loop and what it is given.

``loop`` (``train``, ``evaluate``), ``run`` (``Run``: where a run stops, its seed, device,
progress, evaluations and checkpoints, handed to ``train`` and to every recipe), ``losses``
(next-token and seq2seq cross-entropy), ``schedules`` (warm-up then decay), ``checkpoint``
(save and resume, RNG state included), ``distributed`` (data parallelism over processes),
``progress`` (one progress line), and one recipe per model family: ``gpt`` (with ``python -m
transformer_lab.training.train_gpt``), ``bert_pretraining`` (masked-LM pretraining: the tiny
BERT and chapter 12's live run, with ``bert_reports``), ``finetune`` (classifiers: scratch,
probe, fine-tune), ``lora`` (adapting a decoder with LoRA: loss on the answers, greedy
answers) and ``toy`` (the toy tasks).
"""
