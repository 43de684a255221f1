"""A picture lit where a caption word's attention falls (chapter 3)."""

from __future__ import annotations

import torch

from transformer_lab.checks import fraction

__all__ = ["attention_overlay"]


def attention_overlay(
    image: torch.Tensor, weights: torch.Tensor, floor: float = 0.2
) -> torch.Tensor:
    """The picture ``[3, H, W]`` lit where one word's ``weights [cells]`` are (the cells in
    row-major order over a square grid), dimmed elsewhere: each pixel is scaled by
    ``floor + (1 - floor) * w / max(w)`` of its cell. Returns ``[H, W, 3]`` for ``imshow``."""
    if not isinstance(image, torch.Tensor) or image.dim() != 3 or image.shape[0] != 3:
        got = tuple(image.shape) if isinstance(image, torch.Tensor) else type(image).__name__
        raise ValueError(f"image must be [3, H, W], got {got}")
    if not isinstance(weights, torch.Tensor) or weights.dim() != 1:
        got = tuple(weights.shape) if isinstance(weights, torch.Tensor) else type(weights).__name__
        raise ValueError(f"weights must be one word's weights [cells], got {got}")
    side = round(weights.numel() ** 0.5)
    height, width = image.shape[1:]
    if side * side != weights.numel() or height % side or width % side:
        raise ValueError(
            f"{weights.numel()} weights do not tile a {height}x{width} picture as a square grid"
        )
    fraction(floor, "floor")
    grid = weights.detach().float().cpu().reshape(side, side)
    grid = grid / grid.max().clamp_min(1e-12)
    light = grid.repeat_interleave(height // side, 0).repeat_interleave(width // side, 1)
    return (image.detach().cpu() * (floor + (1 - floor) * light)).permute(1, 2, 0)
