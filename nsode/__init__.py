"""NSODE: predict a scalar autonomous ODE y' = f(y) in symbolic form from one trajectory.

Modules, in the order data flows: `nsode.data` (random ODEs, their solutions, the token
vocabulary and two-hot constants), `encoding` (IEEE-754 bits of the observations), `stream` and
`batching` (training examples from the generator's shards), `model` (the transformer), `train`,
`decode` (beam search), `select` (candidate choice by R^2), `predict` (the whole pipeline) and
`export` (shipping checkpoints to nsode/checkpoints/). Nothing here imports `bench`.
"""
from pathlib import Path

CHECKPOINTS = Path(__file__).parent / "checkpoints"
# The search's proposers (nsode-eps+refine since version 6, nsode predict): the paper's raw-input nsode-eps
# reads trajectories like its training data, the scale-invariant one all others
# (model card, "Which checkpoint proposes").
SEARCH_CHECKPOINT = "nsode-eps"
SCALED_CHECKPOINT = "nsode-eps-scaled"


def default_checkpoint(variant: str = "nsode-eps") -> Path:
    """The shipped checkpoint folder of a variant (importing this needs no torch)."""
    return CHECKPOINTS / variant
