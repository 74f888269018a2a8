"""A tiny NSODE overfitted on five ODEs, shared by the decoding tests (trains in ~10 s on one core)."""
import numpy as np
import pytest
import sympy
import torch

from nsode.train.batching import collate, two_hot_loss
from nsode.data import tokens
from odecore.expressions import Y, compile_scalar
from odecore.solving import solve
from nsode.model import build

ODES = [-0.5 * Y, Y * (1 - Y / 4), sympy.sin(Y) + sympy.Rational(3, 2), Y - Y**3, 2 - sympy.sqrt(Y)]


@pytest.fixture(scope="session")
def overfit_odes():
    return ODES


@pytest.fixture(scope="session")
def overfit():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    t = np.linspace(0, 2, 32)
    observations = [(t, solve(compile_scalar(e), 1.5, t)) for e in ODES]
    model = build("tiny")
    batch = collate(observations, [tokens.targets(tokens.encode(e)) for e in ODES], model.config.bos_token_id,
                    model.config.pad_token_id)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    settled = None  # the step every token was first right, after which the rate drops tenfold
    for step in range(1100):  # 300 steps memorise the handful here; other builds of torch may need more
        loss, acc = two_hot_loss(model(batch.bits, batch.dec_ids, batch.dec_w, batch.mask),
                                 batch.tgt_ids, batch.tgt_w)
        if settled is None and step >= 300 and acc == 1.0:
            settled = step
            for group in opt.param_groups:  # at 2e-3 the decoded constants still swing by +-0.05
                group["lr"] = 2e-4
        if settled is not None and step - settled >= 100 and acc == 1.0:
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    return model, observations, float(acc)
