"""Factories for ArrayToBlocks / BlocksToArray (these operators hold no arrays)."""

import numpy as np
from helpers import operator_factory

import jaxlinops as jl


@operator_factory
def make_blocks_1d_mask(getkey, dtype):
    mask = np.array([True, False, True])
    return jl.ArrayToBlocks((7,), (3,), (2,), mask=mask, batch_shape="C"), (2, 7)


@operator_factory
def make_blocks_2d_batch(getkey, dtype):
    return jl.ArrayToBlocks((4, 5), (2, 2), (2, 1), batch_shape="C"), (2, 4, 5)


@operator_factory
def make_blocks_to_array(getkey, dtype):
    mask = np.array([[True, False], [True, True]])
    return jl.BlocksToArray((4, 4), (2, 2), mask=mask), (2, 3, 3, 3)
