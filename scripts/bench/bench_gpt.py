"""Training benchmark for the book's GPT on the held-out Shakespeare plays.

Trains a named preset (``transformer_lab.training.gpt.PRESETS``) for its fixed number of
steps, evaluates the held-out loss (nats per character, every held-out character) every
``--eval-every`` steps, and reports tokens per second and the training time at which the
held-out loss first reached the target (evaluation time is not counted as training)::

    .venv/bin/python scripts/bench/bench_gpt.py                       # the chapter's CPU preset
    .venv/bin/python scripts/bench/bench_gpt.py --preset nanogpt-cpu  # nanoGPT's CPU settings
    .venv/bin/python scripts/bench/bench_gpt.py --speed               # speed only, no training run
    .venv/bin/python scripts/bench/bench_gpt.py --preset gpu          # CUDA: 6 x 6 x 384, ctx 256
    .venv/bin/python scripts/bench/bench_gpt.py --n-layers 4 --steps 700  # change the preset

On the CPU both the wall time and the process's CPU time are reported. On a machine shared
with other jobs the wall time is inflated; with ``--threads 1`` the CPU time is close to
what the run takes on an idle core. ``--speed`` times a few rounds of training steps of
the preset, of the same model on nanoGPT's CPU settings, and of a model written like
nanoGPT's ``model.py`` (fused qkv projection, ``nn.LayerNorm``), interleaved so that they
share the same conditions, and converts the preset's cost into an idle-machine estimate
by proportion to nanoGPT's CPU run, which took about ``NANOGPT_CPU_SECONDS`` on an idle
2-core machine like the book's reference machine.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, replace

import torch
import torch.nn.functional as F
from torch import nn

import transformer_lab
from transformer_lab.data import shakespeare
from transformer_lab.models.gpt import GPT
from transformer_lab.training.gpt import PRESETS, evaluate_lm, lr_factor, make_optimizer, preset
from transformer_lab.training.losses import lm_loss

# nanoGPT's README CPU run (4 layers, 4 heads, 128 wide, context 64, batch 12, 2000 steps)
# took about this many seconds on the book's idle 2-core reference CPU.
NANOGPT_CPU_SECONDS = 64.0


class _NanoBlock(nn.Module):
    """nanoGPT's ``Block``: fused ``c_attn``, ``nn.LayerNorm``, the fused attention kernel."""

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.c_attn, self.c_proj = nn.Linear(d_model, 3 * d_model), nn.Linear(d_model, d_model)
        self.c_fc, self.mlp_proj = nn.Linear(d_model, 4 * d_model), nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        batch, pos, d_model = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(d_model, dim=2)
        q, k, v = (t.view(batch, pos, self.n_heads, -1).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(y.transpose(1, 2).reshape(batch, pos, d_model))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


class NanoReference(nn.Module):
    """A model laid out like nanoGPT's ``GPT``, for timing only."""

    def __init__(self, d_vocab, n_ctx=64, n_layers=4, n_heads=4, d_model=128):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(d_vocab, d_model), nn.Embedding(n_ctx, d_model)
        self.h = nn.ModuleList(_NanoBlock(d_model, n_heads) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for block in self.h:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.T


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


class _Stepper:
    """Training steps of one model on fixed random tokens, timed in wall and CPU seconds."""

    def __init__(self, model, n_ctx, batch_size, d_vocab, device, amp):
        self.model, self.device, self.amp = model.to(device), device, amp
        self.opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        self.x = torch.randint(d_vocab, (batch_size, n_ctx), device=device)
        self.y = torch.randint(d_vocab, (batch_size, n_ctx), device=device)
        self.tokens_per_step = batch_size * n_ctx
        self.wall, self.cpu = [], []
        self.run(3)  # warm up

    def run(self, steps):
        _sync(self.device)
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(steps):
            with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.amp):
                loss = lm_loss(self.model, (self.x, self.y))
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.opt.step()
        _sync(self.device)
        self.wall.append((time.perf_counter() - wall) / steps)
        self.cpu.append((time.process_time() - cpu) / steps)

    def summary(self):
        wall, cpu = min(self.wall), min(self.cpu)  # the least disturbed round
        return {
            "ms_per_step": round(1e3 * wall, 1),
            "cpu_ms_per_step": round(1e3 * cpu, 1),
            "tokens_per_s": round(self.tokens_per_step / wall),
            "tokens_per_cpu_s": round(self.tokens_per_step / cpu),
        }


def speed(name, device, amp, rounds=5, steps=10):
    """Interleaved timing of the preset, of our GPT on nanoGPT's CPU settings and of the
    nanoGPT-style reference; an idle-machine estimate for the preset's whole run."""
    d_vocab = shakespeare.char_tokenizer().vocab_size
    config, recipe = preset(name, d_vocab)
    ref_config, ref_recipe = preset("nanogpt-cpu", d_vocab)
    transformer_lab.seed_everything(0)
    steppers = {
        name: _Stepper(GPT(config), config.n_ctx, recipe.batch_size, d_vocab, device, amp),
        "ours with nanogpt-cpu settings": _Stepper(
            GPT(ref_config), ref_config.n_ctx, ref_recipe.batch_size, d_vocab, device, amp
        ),
        "nanoGPT-style reference": _Stepper(
            NanoReference(d_vocab), ref_config.n_ctx, ref_recipe.batch_size, d_vocab, device, amp
        ),
    }
    for _ in range(rounds):
        for stepper in steppers.values():
            stepper.run(steps)
    report = {label: s.summary() for label, s in steppers.items()}
    ours, ref = steppers[name], steppers["nanoGPT-style reference"]
    run_cpu = min(ours.cpu) * recipe.steps
    ref_cpu = min(ref.cpu) * ref_recipe.steps
    report["estimate"] = {
        "preset_steps": recipe.steps,
        "preset_train_cpu_s": round(run_cpu, 1),
        "nanogpt_cpu_run_cpu_s": round(ref_cpu, 1),
        "idle_2core_estimate_s": round(NANOGPT_CPU_SECONDS * run_cpu / ref_cpu, 1),
        "how": f"{NANOGPT_CPU_SECONDS:.0f} s x (preset CPU time / nanoGPT CPU run's CPU time)",
    }
    return report


def train_to_target(
    name, device, target, eval_every, amp=False, steps=None, max_val=None, lr=None, n_layers=None
):
    """Train the preset (with ``steps``, ``lr`` or ``n_layers`` changed where given) for
    its fixed steps; evaluate every ``eval_every`` steps."""
    d_vocab = shakespeare.char_tokenizer().vocab_size
    train_ids, val_ids = shakespeare.encode_splits()
    val_ids = val_ids[:max_val] if max_val else val_ids
    config, recipe = preset(name, d_vocab)
    if steps is not None:
        recipe = replace(recipe, steps=steps, warmup=min(recipe.warmup, steps))
    if lr is not None:
        recipe = replace(recipe, lr=lr)
    if n_layers is not None:
        config = replace(config, n_layers=n_layers)
    transformer_lab.seed_everything(0)
    model = GPT(config).to(device)
    opt = make_optimizer(model, recipe)
    generator = torch.Generator().manual_seed(0)
    train_wall = train_cpu = 0.0
    history, reached = [], None
    model.train()
    for step in range(recipe.steps):
        _sync(device)
        wall, cpu = time.perf_counter(), time.process_time()
        for group in opt.param_groups:
            group["lr"] = recipe.lr * lr_factor(step, recipe)
        x, y = shakespeare.get_batch(train_ids, recipe.batch_size, config.n_ctx, generator, device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
            loss = lm_loss(model, (x, y))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), recipe.grad_clip)
        opt.step()
        _sync(device)
        train_wall += time.perf_counter() - wall
        train_cpu += time.process_time() - cpu
        if (step + 1) % eval_every == 0 or step + 1 == recipe.steps:
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
                val = evaluate_lm(model, val_ids, batch_size=256)
            model.train()
            point = {"step": step + 1, "val": round(val, 4), "train_s": round(train_wall, 2)}
            point["train_cpu_s"] = round(train_cpu, 2)
            history.append(point)
            print(json.dumps(point), flush=True)
            if reached is None and val <= target:
                reached = point
    tokens = recipe.steps * recipe.batch_size * config.n_ctx
    return {
        "preset": name,
        "config": {k: v for k, v in vars(config).items() if not k.startswith("_")},
        "recipe": asdict(recipe),
        "device": str(device),
        "threads": torch.get_num_threads(),
        "held_out_chars": len(val_ids),
        "final_val": history[-1]["val"],
        "target": target,
        "reached_target_at": reached,
        "train_s": round(train_wall, 2),
        "train_cpu_s": round(train_cpu, 2),
        "tokens": tokens,
        "tokens_per_s": round(tokens / train_wall),
        "tokens_per_cpu_s": round(tokens / train_cpu),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default=None,
        help="default: 'book-cpu' on the CPU, 'gpu' when CUDA is present",
    )
    parser.add_argument("--device", default=None, help="cpu or cuda (default: the best available)")
    parser.add_argument(
        "--target",
        type=float,
        default=None,
        help="held-out loss to reach (default 1.88 for CPU presets, 1.47 for 'gpu')",
    )
    parser.add_argument("--eval-every", type=int, default=None, help="steps between evaluations")
    parser.add_argument("--steps", type=int, default=None, help="override the preset's steps")
    parser.add_argument("--lr", type=float, default=None, help="override the peak learning rate")
    parser.add_argument("--n-layers", type=int, default=None, help="override the number of blocks")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    parser.add_argument("--amp", action="store_true", help="bfloat16 autocast (for CUDA)")
    parser.add_argument("--max-val", type=int, default=None, help="evaluate on fewer characters")
    parser.add_argument("--speed", action="store_true", help="time training steps only")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = transformer_lab.device(args.device)
    name = args.preset or ("gpu" if device.type == "cuda" else "book-cpu")
    target = args.target or (1.47 if name == "gpu" else 1.88)
    print(f"device {device}, threads {torch.get_num_threads()}, preset {name}", flush=True)
    if args.speed:
        report = speed(name, device, args.amp)
    else:
        eval_every = args.eval_every or max(1, PRESETS[name][1].steps // 10)
        overrides = dict(steps=args.steps, max_val=args.max_val, lr=args.lr)
        report = train_to_target(
            name, device, target, eval_every, amp=args.amp, n_layers=args.n_layers, **overrides
        )
    print(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
