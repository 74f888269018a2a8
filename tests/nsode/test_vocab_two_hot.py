"""The model's side of the two-hot scheme: targets from `nsode.data.tokens`, decoded constants."""
import numpy as np
import pytest

from nsode.data import tokens
from nsode.decode import decoded_constant
from nsode.model import build


def test_constant_between_grid_tokens_is_split_by_distance():
    i, a, j, b = tokens.two_hot(3.3)
    assert (tokens.ID_TO_TOKEN[i], tokens.ID_TO_TOKEN[j]) == ("3", "4")
    assert np.isclose(a, 0.7) and np.isclose(b, 0.3) and np.isclose(tokens.from_two_hot(i, a, j, b), 3.3)


def test_targets_carry_the_two_hot_weights_and_end_with_eos():
    rows = tokens.targets(["mul", 3.3, "y"])
    lo, hi, wa, wb = rows[1]
    assert (tokens.ID_TO_TOKEN[lo], tokens.ID_TO_TOKEN[hi]) == ("3", "4") and np.isclose(wa, 0.7)
    assert tokens.ID_TO_TOKEN[rows[-1][0]] == "<eos>" and rows[0][2:] == (1.0, 0.0)


def test_model_vocabulary_is_the_data_vocabulary():
    cfg = build("tiny").config
    assert cfg.tokens == list(tokens.TOKENS) and cfg.vocab_size == 36
    assert cfg.constant_token_ids == list(tokens.GRID_IDS)
    assert cfg.constant_values == [float(v) for v in range(-10, 11)]


def test_decoded_constants_snap_to_integers_and_keep_four_decimals():
    assert decoded_constant(1.998) == 2.0 and decoded_constant(-0.49996) == -0.5
    assert decoded_constant(3.14159) == 3.1416


def test_constants_beyond_the_grid_are_refused_or_clipped_to_its_end():
    from nsode.data.tokens import EncodingError, targets

    with pytest.raises(EncodingError):
        targets(["mul", 38.9, "y"])
    assert targets(["mul", 38.9, "y"], clip=True) == targets(["mul", 10.0, "y"])
    assert targets(["mul", -1e3, "y"], clip=True) == targets(["mul", -10.0, "y"])
