"""NSODE: predict a scalar autonomous ODE y' = f(y) in symbolic form from one trajectory.

Modules, in the order data flows: `nsode.data` (random ODEs, their solutions, the token
vocabulary and two-hot constants), `nsode.train` (training on them), `encoding` (IEEE-754 bits
of the observations) and `scaling` (scale-invariant input), `model` (the transformer), `decode`
(beam search), `select` (the paper's pick by R^2), `nsode.search` (the model proposes, a fitter
decides), `predict` (the whole pipeline), `joint` (one law from several records) and `export`
(shipping checkpoints to nsode/checkpoints/). Nothing here imports `bench`.
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


def checkpoint_folder(name_or_path: str | Path) -> Path:
    """A checkpoint folder as given, or, for a bare name that is no folder here (`nsode-eps`), the
    shipped checkpoint of that name: a user with an installed package has no nsode/checkpoints/."""
    from odecore.shipped import by_name

    return by_name(Path(name_or_path).expanduser(), CHECKPOINTS)
