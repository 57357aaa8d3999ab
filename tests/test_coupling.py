"""What operators declare about splitting: `coupling(dim)` per dim, which the sharding
layer alone decides from. (The contract checks, for every factory and every dim, that
`Coupling.NONE` holds exactly where `split` succeeds.)"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close

import jaxlinops as jl
from jaxlinops import Coupling

RNG = np.random.default_rng(0)


def test_halos_follow_the_kernel():
    K = jl.Convolution(RNG.standard_normal((5, 3)), "B", "Nx Ny", "Mx My")
    assert [K.coupling(d) for d in ("B", "Nx", "Ny", "Mx", "My")] == [
        Coupling.NONE,
        Coupling.halo(2),
        Coupling.halo(1),
        Coupling.halo(2),
        Coupling.halo(1),
    ]
    interp = jl.Interpolate(RNG.uniform(0, 7, (6, 2)), (8, 8), "C", "K", width=(4.0, 5.0))
    assert interp.coupling("Nx") == Coupling.halo(2)
    assert interp.coupling("Ny") == Coupling.halo(3)
    assert interp.coupling("K") == interp.coupling("C") == Coupling.NONE


def test_fft_and_nufft_couple_their_image_dims_globally():
    F = jl.NUFFT(RNG.uniform(-4, 4, (6, 2)), (8, 8), "K", batch_shape="C")
    assert F.coupling("Nx") == Coupling.GLOBAL
    assert F.coupling("K") == F.coupling("C") == Coupling.NONE
    assert jl.FFT(2).coupling("Kx") == Coupling.GLOBAL


def test_a_chain_reports_the_strongest_coupling_of_its_children():
    S = jl.Dense(RNG.standard_normal((3, 8, 8)), "C Nx Ny", "Nx Ny", "C Nx Ny")
    K = jl.Convolution(RNG.standard_normal((3, 3)), "C", "Nx Ny", "Mx My")
    A = K @ S
    assert A.coupling("C") == Coupling.NONE
    assert A.coupling("Nx") == Coupling.halo(1)  # Dense: none; Convolution: a halo
    assert (jl.FFT(2, "C", ("Mx My", "Kx Ky")) @ A).coupling("Mx") == Coupling.GLOBAL
    assert A.H.coupling("Nx") == Coupling.halo(1)


def test_batching_decides_from_the_declaration():
    K = jl.Convolution(RNG.standard_normal(3), "B", "N", "M", padding_mode="circular")
    with pytest.raises(ValueError, match=r"cannot be split along dim 'N': it couples the "
                                         r"entries of that dim \(a halo of 1\)"):  # fmt: skip
        jl.create_batched_linop(K, jl.BatchSpec({"N": 2}))
    B = jl.create_batched_linop(K, jl.BatchSpec({"B": 1}))
    x = RNG.standard_normal((2, 5))
    assert_close(B(x), K(x), np.float64)
