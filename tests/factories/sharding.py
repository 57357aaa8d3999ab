"""Factories for batched operators: the contract holds for them as for any operator."""

import jax
import jax.numpy as jnp
import numpy as np
from helpers import operator_factory, rand, real_dtype

import jaxlinops as jl


def _sense(getkey, dtype, coils, shape=(4, 5)):
    maps = jl.Dense(rand(getkey(), (coils, *shape), dtype), "CNxNy", "NxNy", "CNxNy")
    mask = jnp.asarray(rand(getkey(), shape, real_dtype(dtype)) > 0)
    fft = jl.FFT(2, batch_shape="C", centered=True)
    return jl.Diagonal(mask.astype(real_dtype(dtype)), "CKxKy") @ fft @ maps


@operator_factory
def make_batched_sense(getkey, dtype):
    # 3 coils in tiles of 2 over 2 devices: one ragged tile
    spec = jl.BatchSpec({"C": 2}, device_matrix=jax.devices()[:2])
    return jl.create_batched_linop(_sense(getkey, dtype, 3), spec), (4, 5)


@operator_factory
def make_batched_nested(getkey, dtype):
    # NUFFT SENSE: coils across 2 devices, then readout chunks (ragged) one after another
    locs = np.random.default_rng(getkey()).uniform(-2, 2, (7, 2))
    nufft = jl.NUFFT(locs.astype(real_dtype(dtype)), (4, 4), "R", batch_shape="C", oversamp=2.0)
    maps = jl.Dense(rand(getkey(), (2, 4, 4), dtype), "CNxNy", "NxNy", "CNxNy")
    specs = [jl.BatchSpec({"C": 1}, device_matrix=jax.devices()[:2]), jl.BatchSpec({"R": 3})]
    return jl.create_batched_linop(nufft @ maps, specs), (4, 4)


@operator_factory
def make_batched_grid_sense(getkey, dtype):
    # the image grid split by domain decomposition (`GridSplitLinop`): Nx = 5 in ragged
    # slabs over 2 devices, the FFT distributed
    spec = jl.BatchSpec({"Nx": 3}, device_matrix=jax.devices()[:2])
    return jl.create_batched_linop(_sense(getkey, dtype, 2, (5, 4)), spec), (5, 4)
