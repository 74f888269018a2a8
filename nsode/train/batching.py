"""Training examples -> tensors: observation sampling per variant, noise, bits, two-hot rows.

A target sequence is a list of rows (id_lo, id_hi, w_lo, w_hi): an ordinary token k is
(k, k, 1, 0); a constant alpha x_i + beta x_{i+1} is (i, i+1, alpha, beta). The same rows are
the cross-entropy targets (a two-hot distribution) and, shifted right behind BOS, the decoder
inputs (a mix of two embeddings), as in the paper.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch
from scipy.interpolate import CubicSpline

from nsode.data import tokens as vocab
from nsode.encoding import BITS_PER_OBSERVATION, encode_observations
from nsode.scaling import Scale

# the paper's two variants (Sec. 4): observed points and multiplicative noise. off_grid: the
# default fraction of examples whose times are drawn uniformly on [0, T] instead of from the
# 1024-point grid (beyond the paper; `observe`)
VARIANTS = {
    "nsode": dict(n_points=256, random_points=False, noise=0.0, off_grid=0.0),
    "nsode-eps": dict(n_points=128, random_points=True, noise=0.01, off_grid=0.5),
}


def observe(t: np.ndarray, y: np.ndarray, variant: str, rng: np.random.Generator,
            off_grid: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The points the model sees of a solution stored on the regular grid t.

    With probability `off_grid` (default: the variant's) the times are drawn uniformly on
    [t_0, t_end] and y is the cubic spline of the stored solution there (error far below the
    noise). The bit encoding shows every mantissa bit of t, and a model that only ever saw grid
    times reads user data such as linspace(0, 2, 128) worse (measured: R^2 0.80 vs 0.94).
    """
    spec = VARIANTS[variant]
    off_grid = spec["off_grid"] if off_grid is None else off_grid
    n = min(spec["n_points"], len(t))
    if off_grid and rng.random() < off_grid:  # either variant: --off-grid with nsode too
        t_obs = np.sort(rng.uniform(t[0], t[-1], size=n))
        y_obs = CubicSpline(t, y)(t_obs)
    else:
        if spec["random_points"]:
            idx = np.sort(rng.choice(len(t), size=n, replace=False))
        else:  # every k-th grid point: exactly equidistant (1024 / 256 = 4)
            idx = np.arange(n) * (len(t) // n)
        t_obs, y_obs = t[idx], y[idx]
    if spec["noise"]:
        y_obs = y_obs * rng.normal(1.0, spec["noise"], size=n)
    return t_obs, y_obs


def model_view(t: np.ndarray, y: np.ndarray, expression: str, rows: list, scaling: str = "none"):
    """(t, y, target rows) as the model sees them: unchanged for the paper's input path; with
    `scaling="pow2"` the observations are normalised by `nsode.scaling.Scale` and the target is
    the same ODE in those units (`scaled_targets`). None when the scaled target cannot be encoded."""
    if scaling == "none":
        return t, y, rows
    scale = Scale.of(t, y)
    if scale.time_exp == scale.value_exp == 0:
        target = rows
    else:
        target = scaled_targets(expression, scale.time_exp, scale.value_exp)
    if target is None:
        return None
    tau, u = scale.apply(t, y)
    return tau, u, target


@lru_cache(maxsize=200_000)
def scaled_targets(expression: str, time_exp: int, value_exp: int) -> list | None:
    """Target rows of g(u) = (a / s) f(s u) for a stored f; constants beyond the two-hot grid are
    clipped to its ends (the search refits constants; the skeleton is what must be right)."""
    try:
        g = Scale(0.0, time_exp, value_exp).to_model(vocab.parse_infix(expression))
        return vocab.targets(vocab.encode(g), clip=True)
    except (vocab.EncodingError, ValueError, TypeError, ZeroDivisionError):
        return None


@dataclass
class Batch:
    bits: torch.Tensor  # (B, n, 128)
    mask: torch.Tensor  # (B, n) 1 for real observations
    dec_ids: torch.Tensor  # (B, L, 2) decoder inputs
    dec_w: torch.Tensor  # (B, L, 2)
    tgt_ids: torch.Tensor  # (B, L, 2) two-hot targets
    tgt_w: torch.Tensor  # (B, L, 2); all zero at padding

    def to(self, device, non_blocking: bool = False) -> "Batch":
        return Batch(*(getattr(self, f).to(device, non_blocking=non_blocking) for f in self.__dataclass_fields__))

    def pin_memory(self) -> "Batch":
        """Page-locked copies, for a DataLoader feeding a GPU (`pin_memory=True`)."""
        return Batch(*(getattr(self, f).pin_memory() for f in self.__dataclass_fields__))


def collate(observations: list[tuple[np.ndarray, np.ndarray]], rows: list[list[tuple]], bos: int, pad: int) -> Batch:
    """Pad a list of (t, y) observations and target rows into one Batch."""
    B = len(rows)
    n = max(len(t) for t, _ in observations)
    L = max(len(r) for r in rows)
    bits = np.zeros((B, n, BITS_PER_OBSERVATION), np.uint8)  # 0/1: a quarter of float32 to move (the model casts)
    mask = np.zeros((B, n), np.int64)
    tgt_ids = np.full((B, L, 2), pad, np.int64)
    tgt_w = np.zeros((B, L, 2), np.float32)
    for b, ((t, y), r) in enumerate(zip(observations, rows)):
        bits[b, : len(t)] = encode_observations(t, y)
        mask[b, : len(t)] = 1
        arr = np.asarray(r, dtype=np.float64)
        tgt_ids[b, : len(r)] = arr[:, :2].astype(np.int64)
        tgt_w[b, : len(r)] = arr[:, 2:]
    dec_ids = np.concatenate([np.full((B, 1, 2), bos, np.int64), tgt_ids[:, :-1]], 1)
    dec_w = np.concatenate([np.tile(np.array([1.0, 0.0], np.float32), (B, 1, 1)), tgt_w[:, :-1]], 1)
    dec_w[dec_ids[..., 0] == pad] = (1.0, 0.0)  # padding inputs: any finite embedding will do
    return Batch(*(torch.from_numpy(a) for a in (bits, mask, dec_ids, dec_w, tgt_ids, tgt_w)))


def two_hot_loss(logits: torch.Tensor, tgt_ids: torch.Tensor, tgt_w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean cross-entropy against two-hot targets over non-padding positions, and token accuracy.

    Accuracy counts a position correct when the argmax is one of the target's support tokens
    with positive weight (for a constant: either grid neighbour).
    """
    logp = logits.float().log_softmax(-1)
    picked = logp.gather(-1, tgt_ids)  # (B, L, 2)
    real = tgt_w.sum(-1) > 0
    nll = -(picked * tgt_w).sum(-1)
    loss = nll[real].mean()
    pred = logits.argmax(-1, keepdim=True)
    hit = ((pred == tgt_ids) & (tgt_w > 0)).any(-1)
    acc = hit[real].float().mean()
    return loss, acc
