"""`jaxlinops.utils._roll` (torchlinops' module path) against numpy's roll and shifts."""

import numpy as np
import pytest

from jaxlinops.utils._roll import fftshift, ifftshift, roll


@pytest.mark.parametrize("shifts, dims", [((1, -2, 9), (0, 1, 2)), (3, 2), ((), ())])
def test_roll_matches_numpy(shifts, dims):
    x = np.arange(3 * 5 * 8.0).reshape(3, 5, 8)
    want = np.roll(x, shifts, dims) if dims != () else x
    np.testing.assert_array_equal(roll(x, shifts, dims), want)


@pytest.mark.parametrize("dim", [None, 1, (0, 2)])
def test_fftshift_and_ifftshift_match_numpy(dim):
    x = np.arange(3 * 5 * 8.0).reshape(3, 5, 8)
    np.testing.assert_array_equal(fftshift(x, dim), np.fft.fftshift(x, dim))
    np.testing.assert_array_equal(ifftshift(x, dim), np.fft.ifftshift(x, dim))


def test_roll_of_an_empty_axis_and_mismatched_arguments():
    assert roll(np.zeros((0, 5)), (1, 1), (0, 1)).shape == (0, 5)
    with pytest.raises(ValueError, match=r"`roll`: `shifts` and `dims` need the same length"):
        roll(np.zeros(3), (1, 2), (0,))
