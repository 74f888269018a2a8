import sympy
import torch

from nsode.data import tokens
from nsode.decode import beam_search, to_expression
from nsode.encoding import encode_observations


def same_up_to_constants(a: sympy.Expr, b: sympy.Expr, tol: float = 1e-2) -> bool:
    """Same tree, numbers within tol = 1% of the grid spacing (two-hot constants are continuous)."""
    if a.is_Number and b.is_Number:
        return abs(float(a) - float(b)) <= tol
    return a.func == b.func and len(a.args) == len(b.args) and all(
        same_up_to_constants(x, y, tol) for x, y in zip(a.args, b.args))


def test_tiny_model_overfits_a_handful_of_odes_and_decodes_them(overfit, overfit_odes):
    model, observations, train_acc = overfit
    assert train_acc == 1.0
    for (t, y), truth in zip(observations, overfit_odes):
        bits = torch.from_numpy(encode_observations(t, y))
        best = beam_search(model, bits, beam=1)[0]  # greedy: the paper's rule
        expected = tokens.decode(tokens.encode(truth))  # the target's own token order
        assert list(best.prefix[:1]) == tokens.encode(truth)[:1]
        assert same_up_to_constants(to_expression(best.prefix), expected), (best.prefix, truth)
