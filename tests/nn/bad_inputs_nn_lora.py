"""Bad inputs to transformer_lab.nn.lora (run by ``tests/test_bad_inputs.py``)."""

from bad_input_support import case, nn, torch

from transformer_lab.models.llama import Llama, LlamaConfig
from transformer_lab.nn import lora as LO


def _llama():
    torch.manual_seed(0)
    c = LlamaConfig(d_vocab=11, n_ctx=8, n_layers=1, n_heads=2, n_kv_heads=1, d_model=8, d_mlp=12)
    return Llama(c)


def _adapted():
    model = _llama()
    LO.add_lora(model, ["W_Q"], rank=2, alpha=2)
    return model


case(LO.LoRA, lambda: LO.LoRA(8, 8, 0, 1.0), ValueError, "rank must be a positive int, got 0")
case(LO.LoRA, lambda: LO.LoRA(8, 8, 2, float("nan")), ValueError, "alpha")
case(LO.add_lora, lambda: LO.add_lora(_llama(), "W_Q"), TypeError, "non-empty list")
case(LO.add_lora, lambda: LO.add_lora(_llama(), ["W_X"]), ValueError, "name no parameter")
case(LO.add_lora, lambda: LO.add_lora(_llama(), ["gain"]), ValueError, "not 2-d")
case(LO.add_lora, lambda: LO.add_lora("model", ["W_Q"]), TypeError, "module must be")
case(LO.add_lora, lambda: LO.add_lora(_adapted(), ["W_V"]), ValueError, "already has LoRA")
case(LO.lora_modules, lambda: list(LO.lora_modules(None)), TypeError, "module must be")
case(LO.lora_parameters, lambda: LO.lora_parameters(3), TypeError, "module must be")
case(LO.merge_lora, lambda: LO.merge_lora(_llama()), ValueError, "no LoRA adapters")
case(LO.merge_lora, lambda: LO.merge_lora(LO.merge_lora(_adapted())), ValueError, "merged already")
case(LO.unmerge_lora, lambda: LO.unmerge_lora(_adapted()), ValueError, "not merged")
case(LO.merged, lambda: LO.merged(_llama()).__enter__(), ValueError, "no LoRA adapters")
case(LO.remove_lora, lambda: LO.remove_lora(_adapted(), merge=1), TypeError, "merge must be")
case(LO.remove_lora, lambda: LO.remove_lora(nn.Linear(2, 2)), ValueError, "no LoRA adapters")
case(LO.lora_state_dict, lambda: LO.lora_state_dict(_llama()), ValueError, "no LoRA adapters")
case(
    LO.load_lora_state_dict,
    lambda: LO.load_lora_state_dict(_adapted(), {"x.A": torch.zeros(1)}),
    ValueError,
    "state does not match the adapters",
)
case(
    LO.load_lora_state_dict,
    lambda: LO.load_lora_state_dict(_adapted(), [1]),
    TypeError,
    "state must be",
)
case(LO.count_parameters, lambda: LO.count_parameters("m"), TypeError, "module must be")
