"""Scenarios for torchlinops' marimo tutorials custom_linop.py and mri_reconstruction.py,
in our own words and at small sizes (tutorials/basics.py is in `test_pages.py`).

Each scenario runs on jaxlinops and, where torchlinops is installed, on torchlinops from
the same random numbers (`scenario.run_scenario`). Torch-only idioms of the tutorials
that are not torchlinops API (`nn.Parameter` buffers, in-place index assignment,
plotting) are replaced by plain arrays and numpy; the linop calls are the tutorials'.
"""

from __future__ import annotations

import numpy as np
import pytest

from torchlinops_examples import case
from torchlinops_examples.scenario import Close, run_scenario, sub

# --- tutorials/custom_linop.py ------------------------------------------------------------


def _diag_scale(L, T):
    """The tutorial's DiagScale: y = w * x with static `fn`, `adj_fn`, `normal_fn`."""
    NS = sub(L, "nameddim").NamedShape

    class DiagScale(L.NamedLinop):
        def __init__(self, weight, ioshape):
            super().__init__(NS(ioshape, ioshape))
            self.weight = weight

        @staticmethod
        def fn(linop, x, /):
            return x * linop.weight

        @staticmethod
        def adj_fn(linop, x, /):
            return x * T.conj(linop.weight)

        @staticmethod
        def normal_fn(linop, x, /):
            return x * (T.conj(linop.weight) * linop.weight)

    return DiagScale


def _permute(L):
    """The tutorial's Permute: y[i] = x[perm[i]], adjoint by the inverse permutation,
    and a `size` method."""
    NS = sub(L, "nameddim").NamedShape

    class Permute(L.NamedLinop):
        def __init__(self, perm, inv_perm, ishape, oshape):
            super().__init__(NS(ishape, oshape))
            self.perm = perm
            self.inv_perm = inv_perm

        @staticmethod
        def fn(linop, x, /):
            return x[linop.perm]

        @staticmethod
        def adj_fn(linop, x, /):
            return x[linop.inv_perm]

        def size(self, dim):
            return len(self.perm) if dim in self.ishape or dim in self.oshape else None

    return Permute


def custom_linop_diag_scale(L, T):
    """custom_linop.py, "Example 1" and "Testing the Adjoint": D(x), D.H(y), D.N(x)
    through `normal_fn`, and `is_adjoint`."""
    w = T.randn(8, dtype=T.complex64)
    D = _diag_scale(L, T)(w, ioshape=L.Dim("N"))
    x = T.randn(8, dtype=T.complex64)
    y = D(x)
    x_test, y_test = T.randn(8, dtype=T.complex64), T.randn(8, dtype=T.complex64)
    return {
        "y": y,
        "H": D.H(y),
        "N": D.N(x),
        "adjoint": bool(sub(L, "utils").is_adjoint(D, x_test, y_test)),
    }


def custom_linop_permute(L, T):
    """custom_linop.py, "Example 2": P(x), P.H(P(x)) == x, the size method and
    `is_adjoint`."""
    perm = np.asarray(T.randperm(6))
    Permute = _permute(L)
    P = Permute(T.tensor(perm), T.tensor(np.argsort(perm)), ishape=L.Dim("X"), oshape=L.Dim("Y"))
    x = T.arange(6, dtype=T.float32)
    x_test, y_test = T.randn(6), T.randn(6)
    return {
        "P": P(x),
        "round_trip": P.H(P(x)),
        "sizes": (P.size("X"), P.size("Y"), P.size("Z")),
        "adjoint": bool(sub(L, "utils").is_adjoint(P, x_test, y_test)),
    }


def custom_linop_compose(L, T):
    """custom_linop.py, "Composing Custom and Built-in Operators": DiagScale on K after
    a keyword-built complex Dense; forward, adjoint shapes and `is_adjoint`."""
    M_op = L.Dense(
        weight=T.randn(5, 8, dtype=T.complex64),
        weightshape=L.Dim("KN"),
        ishape=L.Dim("N"),
        oshape=L.Dim("K"),
    )
    D_k = _diag_scale(L, T)(T.randn(5, dtype=T.complex64), ioshape=L.Dim("K"))
    A = D_k @ M_op
    x = T.randn(8, dtype=T.complex64)
    y = A(x)
    x_t, y_t = T.randn(8, dtype=T.complex64), T.randn(5, dtype=T.complex64)
    return {
        "y": y,
        "H": A.H(y),
        "shapes": (A.ishape, A.oshape),
        "adjoint": bool(sub(L, "utils").is_adjoint(A, x_t, y_t)),
    }


# --- tutorials/mri_reconstruction.py ------------------------------------------------------

IMAGE = (8, 8)
COILS, SPOKES, READOUTS = 2, 6, 12


def _mri_data():
    """The tutorial's radial trajectory (in [-1/2, 1/2), then scaled to the grid),
    Gaussian coil maps with a linear phase, analytic DCF and a disc phantom, in numpy."""
    nx, ny = IMAGE
    radius = min(IMAGE) // 2
    angles = np.linspace(0, 2 * np.pi, SPOKES + 1)[:-1]
    readout = np.linspace(-radius, radius, READOUTS)
    locs = np.stack(
        [np.outer(np.cos(angles), readout).ravel(), np.outer(np.sin(angles), readout).ravel()],
        axis=1,
    ) / (2 * radius)
    X, Y = np.meshgrid(np.linspace(-0.5, 0.5, nx), np.linspace(-0.5, 0.5, ny), indexing="ij")
    maps = np.stack(
        [
            np.exp(-((X - 0.3 * np.cos(a)) ** 2 + (Y - 0.3 * np.sin(a)) ** 2) / 2)
            * np.exp(2j * np.pi * (0.1 * X + 0.1 * Y))
            for a in 2 * np.pi * np.arange(COILS) / COILS
        ]
    )
    dcf = np.hypot(locs[:, 0], locs[:, 1]) + 1e-6
    i, j = np.indices(IMAGE)
    x_true = (((i - nx // 2) ** 2 + (j - ny // 2) ** 2) < 3**2).astype(np.complex128)
    # The tutorial simulates with an exact DFT over the grid positions in [-1/2, 1/2].
    r = np.stack([X.ravel(), Y.ravel()], axis=1)
    kspace = (maps * x_true).reshape(COILS, -1) @ np.exp(-2j * np.pi * locs @ r.T).T
    return (
        (locs * np.array(IMAGE)).astype(np.float32),
        maps.astype(np.complex64),
        (dcf / dcf.mean()).astype(np.float32),
        x_true.astype(np.complex64),
        kspace.astype(np.complex64),
    )


def mri_reconstruction(L, T):
    """mri_reconstruction.py, "Iterative Reconstruction" at 8x8, 2 coils, 6 spokes of 12
    readouts: NUFFT (oversamp 2, width 6), Dense coil maps, Diagonal DCF on (C, R),
    `D ** (1/2) @ F @ S`, power-method normalization (`tqdm_kwargs`), the adjoint and 50
    CG iterations. The two libraries' NUFFT kernels agree to ~3e-6 here (float32 data,
    width 6 at oversampling 2), so operator results compare at 1e-4 by relative norm. The
    normal operator's condition number is about 3e9, beyond float32's 1/u: once CG
    stagnates (about 35 iterations) its iterate moves along near-null directions set by
    rounding, so the solutions of the two libraries compare at 1e-1 only (measured 6.7e-2
    with jaxlinops' JAX path, 9e-5 with finufft, which rounds otherwise), while the
    reconstruction error against the truth, what the tutorial reports, compares at 1e-2
    (measured 8e-4)."""
    locs, maps, dcf, x_true, kspace = (T.tensor(a) for a in _mri_data())
    nufft_op = L.NUFFT(
        locs=locs,
        grid_size=IMAGE,
        output_shape=L.Dim("R"),
        input_shape=L.Dim("NxNy"),
        batch_shape=L.Dim("C"),
        oversamp=2.0,
        width=6.0,
    )
    coil_op = L.Dense(
        weight=maps, weightshape=L.Dim("CNxNy"), ishape=L.Dim("NxNy"), oshape=L.Dim("CNxNy")
    )
    density_op = L.Diagonal(weight=dcf, ioshape=L.Dim("CR"))
    A = (density_op ** (1 / 2)) @ nufft_op @ coil_op
    _, eigenval = L.alg.power_method(A.N, T.ones_like(x_true), tqdm_kwargs=dict(leave=False))
    A = ((1 / (1.01 * float(eigenval))) ** 0.5) * A
    y = (density_op ** (1 / 2))(kspace + 1e-5 * T.randn_like(kspace))
    rhs = A.H(y)
    rhs = rhs * (1 / float(T.linalg.vector_norm(rhs)))
    x_recon = L.alg.conjugate_gradients(
        A=A.N, y=rhs, max_num_iters=50, gtol=1e-4, tqdm_kwargs=dict(leave=False)
    )
    x_recon = x_recon * (float(T.max(T.abs(x_true))) / float(T.max(T.abs(x_recon))))
    error = float(T.linalg.vector_norm(x_recon - x_true) / T.linalg.vector_norm(x_true))
    return {
        "forward": Close(A(x_true), 1e-4),
        "eigenval": Close(eigenval, 1e-4),
        "rhs": Close(rhs, 1e-4),
        "x_recon": Close(x_recon, 1e-1),
        "error": Close(error, 1e-2),
    }


SCENARIOS = {
    "page:tutorials/custom_linop::diag_scale": custom_linop_diag_scale,
    "page:tutorials/custom_linop::permute": custom_linop_permute,
    "page:tutorials/custom_linop::compose": custom_linop_compose,
    "page:tutorials/mri_reconstruction::recon": mri_reconstruction,
}


@pytest.mark.parametrize("scenario", [case(k, f) for k, f in SCENARIOS.items()])
def test_tutorial_scenario(scenario):
    """The scenario runs on jaxlinops and returns what torchlinops returns."""
    run_scenario(scenario)
