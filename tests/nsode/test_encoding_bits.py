import numpy as np
import pytest

from nsode.encoding import BITS_PER_OBSERVATION, bits_to_float, encode_observations, float_bits


def test_bit_encoding_round_trips_every_special_double():
    x = np.array([0.0, -0.0, 1.0, -2.5, np.nan, np.inf, -np.inf, 5e-324, -2.2250738585072e-309,
                  np.finfo(float).max, np.finfo(float).tiny, 3.3])
    back = bits_to_float(float_bits(x))
    assert np.array_equal(back.view(np.uint64), x.view(np.uint64))  # bit-exact, -0.0 and NaN included


def test_bits_are_most_significant_first_sign_then_exponent():
    one, minus_zero = float_bits(np.array([1.0, -0.0]))
    assert one[0] == 0 and list(one[1:12]) == [0] + [1] * 10 and not one[12:].any()
    assert minus_zero[0] == 1 and not minus_zero[1:].any()


def test_observation_is_128_bits_of_t_then_y():
    t = np.array([0.0, 0.5, 1.0])
    y = np.array([np.nan, np.inf, -1.0])
    enc = encode_observations(t, y)
    assert enc.shape == (3, BITS_PER_OBSERVATION) and enc.dtype == np.float32
    assert set(np.unique(enc)) <= {0.0, 1.0}
    assert np.array_equal(bits_to_float(enc[:, :64].astype(np.uint8)), t)
    np.testing.assert_array_equal(bits_to_float(enc[:, 64:].astype(np.uint8)), y)


def test_times_are_encoded_as_full_doubles_like_the_values():
    x = np.array([0.1, 1 / 3, 2.0 + 2**-40])  # the last bits of 2 + 2**-40 are lost in a float32
    encoded = encode_observations(x, x)
    assert np.array_equal(encoded[:, :64], float_bits(x)) and np.array_equal(encoded[:, :64], encoded[:, 64:])


def test_observations_must_be_one_dimensional():
    """A (n, k) array would be encoded as n*k observations of the wrong shape for the model."""
    with pytest.raises(ValueError, match="1-D arrays of equal length"):
        encode_observations(np.zeros((4, 2)), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="1-D arrays of equal length"):
        encode_observations(np.zeros(4), np.zeros(5))
