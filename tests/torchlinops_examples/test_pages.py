"""Scenarios for torchlinops' docs pages and tutorials, in our own words.

Those pages are not installed (they live in the torch-named-linops repository), so each
test here exercises the API calls one page section demonstrates, written afresh. A
scenario takes the library (`torchlinops` or `jaxlinops`) and its array namespace
(`torch` or the `torch_as_jax` shim, which draws the same random numbers) and returns
what the page shows; the jaxlinops run must return the same (arrays at float32
tolerance, dims as their names). Without torchlinops, the jaxlinops run still runs.
"""

from __future__ import annotations

import pytest

from torchlinops_examples import case
from torchlinops_examples.scenario import run_scenario, sub


def getting_started_dense(L, T):
    """getting_started/index.md, "Dense": apply, `@`, `.H`, `.N` of a Dim-named Dense."""
    w = T.randn(3, 7)
    A = L.Dense(w, L.Dim("MN"), ishape=L.Dim("N"), oshape=L.Dim("M"))
    x, b = T.randn(7), T.randn(3)
    return {"y": A(x), "y@": A @ x, "AH": A.H(b), "AN": A.N(x), "ishape": A.ishape}


def getting_started_fft_chain(L, T):
    """getting_started/index.md, "Composition": an FFT after a Dense."""
    w = T.randn(3, 7)
    D = L.Dense(w, L.Dim("MN"), ishape=L.Dim("N"), oshape=L.Dim("M"))
    F = L.FFT(ndim=1, grid_shapes=(L.Dim("M"), L.Dim("K")), batch_shape=L.Dim(""))
    A = F @ D
    x = T.randn(7)
    return {"y": A(x), "N": A.N(x), "oshape": A.oshape}


def getting_started_config(L, T):
    """getting_started/index.md, "Config": `config.using(reduce_identity_in_normal=...)`."""
    w = T.randn(3, 7)
    A = L.FFT(ndim=1, grid_shapes=(L.Dim("M"), L.Dim("K")), batch_shape=L.Dim("")) @ L.Dense(
        w, L.Dim("MN"), ishape=L.Dim("N"), oshape=L.Dim("M")
    )
    x = T.randn(7)
    with L.config.using(reduce_identity_in_normal=False):
        kept = A.N(x)
    return {"N": kept}


def named_abstractions_dimension(L, T):
    """explanations/named_abstractions.md, "NamedDimension": equality, hashing, next_unused."""
    ND = sub(L, "nameddim").NamedDimension
    return {
        "eq": ND("A") == "A",
        "eq1": ND("A", 1) == "A1",
        "hash": {ND("A"): 10}["A"],
        "next": str(ND("A").next_unused(("A", "A1"))),
        "dims": L.Dim("A1B2Kx1Ky2"),
    }


def named_abstractions_collection(L, T):
    """explanations/named_abstractions.md, "NamedDimCollection": a rename propagates."""
    c = sub(L, "nameddim").NamedDimCollection(shape1=("A", "B"), shape2=("B", "C"))
    c.shape1 = ("D", "E")
    return {"shape2": c.shape2}


def named_abstractions_shape(L, T):
    """explanations/named_abstractions.md, "NamedShape": `.H`, `.N`, `+`."""
    NS = sub(L, "nameddim").NamedShape
    s = NS(("A", "B"), ("C", "D"))
    full = NS(("Batch",), ("Batch",)) + NS(("Nx", "Ny"), ("Kx", "Ky"))
    return {
        "H": (s.H.ishape, s.H.oshape),
        "N": (s.N.ishape, s.N.oshape),
        "sum": (full.ishape, full.oshape),
    }


def named_abstractions_linop_shape(L, T):
    """explanations/named_abstractions.md, "Shapes of a linop": ishape, oshape, shape."""
    A = L.Dense(T.randn(3, 4), ("M", "N"), ("N",), ("M",))
    return {"ishape": A.ishape, "oshape": A.oshape, "shape": (A.shape.ishape, A.shape.oshape)}


def custom_linops_scale(L, T):
    """howto/custom_linops.md: a NamedLinop subclass with static `fn`/`adj_fn`."""
    NS = sub(L, "nameddim").NamedShape

    class Scale(L.NamedLinop):
        def __init__(self, scale, ishape, oshape):
            super().__init__(NS(ishape, oshape))
            self.scale = scale

        @staticmethod
        def fn(linop, x, /):
            return linop.scale * x

        @staticmethod
        def adj_fn(linop, x, /):
            return linop.scale * x

    A = Scale(3.0, ishape=L.Dim("N"), oshape=L.Dim("N"))
    x = T.randn(5)
    return {"y": A(x), "H": A.H(x), "N": A.N(x)}


def custom_linops_is_adjoint(L, T):
    """howto/custom_linops.md, "Testing": `utils.is_adjoint` on a Dense."""
    A = L.Dense(T.randn(3, 4), ("M", "N"), ("N",), ("M",))
    return {"adjoint": bool(sub(L, "utils").is_adjoint(A, T.randn(4), T.randn(3)))}


def multi_gpu_split(L, T):
    """explanations/multi_gpu.md, "Splitting": `split_linop` into tiles along N."""
    split = sub(L, "linops.split").split_linop
    A = L.Dense(T.randn(3, 4), ("M", "N"), ("N",), ("M",))
    x = T.randn(4)
    linops, islices, _ = split(A, {"N": 2})  # the tiles and the input slices they read
    parts = [op(x[tuple(s)]) for op, s in zip(linops.ravel(), islices.ravel(), strict=True)]
    return {"count": len(parts), "sum": sum(parts)}


def tutorial_basics_cg(L, T):
    """tutorials/basics.py, "Solving": CG on the normal equations returns the solution."""
    w = T.randn(6, 4)
    A = L.Dense(w, ("M", "N"), ("N",), ("M",))
    y = T.randn(6)
    x = L.alg.conjugate_gradients(A.N, A.H(y), max_num_iters=50, gtol=1e-06)
    return {"x": x}


def tutorial_basics_power_method(L, T):
    """tutorials/basics.py, "Step size": the power method's top eigenvalue of A.N."""
    A = L.Dense(T.randn(6, 4), ("M", "N"), ("N",), ("M",))
    _, eig = L.alg.power_method(A.N, T.randn(4), max_iters=200)
    return {"eig": eig}


SCENARIOS = {
    "page:getting_started::dense": getting_started_dense,
    "page:getting_started::fft_chain": getting_started_fft_chain,
    "page:getting_started::config": getting_started_config,
    "page:named_abstractions::dimension": named_abstractions_dimension,
    "page:named_abstractions::collection": named_abstractions_collection,
    "page:named_abstractions::shape": named_abstractions_shape,
    "page:named_abstractions::linop_shape": named_abstractions_linop_shape,
    "page:custom_linops::scale": custom_linops_scale,
    "page:custom_linops::is_adjoint": custom_linops_is_adjoint,
    "page:multi_gpu::split": multi_gpu_split,
    "page:tutorials/basics::cg": tutorial_basics_cg,
    "page:tutorials/basics::power_method": tutorial_basics_power_method,
}


@pytest.mark.parametrize("scenario", [case(k, f) for k, f in SCENARIOS.items()])
def test_page_scenario(scenario):
    """The scenario runs on jaxlinops and returns what torchlinops returns."""
    run_scenario(scenario)
