"""Scenarios for torchlinops' API and how-to pages, in our own words.

docs/index.md, docs/api/simple_linop.md and the sections of docs/howto/custom_linops.md
that `test_pages.py` does not cover. Each scenario runs on jaxlinops and, where
torchlinops is installed, on torchlinops from the same random numbers
(`scenario.run_scenario`). The docs/reference/** pages hold no code of their own: they
render docstrings, whose examples `tests/test_torchlinops_docs.py` runs.
"""

from __future__ import annotations

import pickle

import pytest

import jaxlinops
from torchlinops_examples import case
from torchlinops_examples.scenario import is_jax, run_scenario, sub


def index_dense(L, T):
    """index.md, "Create and Apply a Linear Operator": a Dense from `weightshape`,
    `ishape`, `oshape` keywords maps a vector of N=7 to M=3."""
    weight = T.randn(3, 7)
    A = L.Dense(weight, weightshape=L.Dim("MN"), ishape=L.Dim("N"), oshape=L.Dim("M"))
    x = T.randn(7)
    y = A(x)
    return {"y": y, "shapes": (tuple(x.shape), tuple(y.shape))}


# --- api/simple_linop.md ----------------------------------------------------------------


def _double(x):
    return 2 * x


def simple_linop_basic(L, T):
    """simple_linop.md, "Basic Usage": forward and adjoint lambdas on a (10, 20) array."""
    A = L.SimpleLinop(forward=lambda x: 2 * x, adjoint=lambda y: 2 * y)
    x = T.randn(10, 20)
    y = A(x)
    return {"y": y, "z": A.H(y), "N": A.N(x), "shapes": (A.ishape, A.oshape)}


def simple_linop_normal(L, T):
    """simple_linop.md, "Custom Normal Operation": `normal=` is what `A.N` applies (a
    deliberately different normal shows it is used, not adjoint(forward))."""
    A = L.SimpleLinop(forward=lambda x: 2 * x, adjoint=lambda y: 2 * y, normal=lambda x: 4 * x)
    marked = L.SimpleLinop(forward=lambda x: 2 * x, adjoint=lambda y: 2 * y, normal=lambda x: 5 * x)
    x = T.randn(6)
    return {"N": A.N(x), "marked": marked.N(x), "expected": 5 * x}


def simple_linop_named(L, T):
    """simple_linop.md, "Named Dimensions": a SimpleLinop on (Nx, Ny) composed after an
    FFT. The page's `FFT(Dim("Nx"))` passes dims as `ndim` and fails in torchlinops 0.8.3
    too; the scenario builds the 2-D FFT on those dims with `ndim=2, grid_shapes=...`.
    The chain's oshape is not compared: jaxlinops matches the FFT's `...` to no dims and
    gives `(Kx, Ky)`, torchlinops keeps `(..., Kx, Ky)`; the output arrays agree."""
    A = L.SimpleLinop(
        forward=lambda x: 2 * x,
        adjoint=lambda y: 2 * y,
        ishape=("Nx", "Ny"),
        oshape=("Nx", "Ny"),
    )
    B = L.FFT(ndim=2, grid_shapes=(L.Dim("NxNy"), L.Dim("KxKy"))) @ A
    x = T.randn(4, 4, dtype=T.complex64)
    return {"ishape": B.ishape, "y": B(x), "back": B.H(B(x))}


def simple_linop_no_check(L, T):
    """simple_linop.md, "No Adjoint Checking": a wrong adjoint is accepted and
    `is_adjoint` exposes it."""
    A = L.SimpleLinop(forward=lambda x: 2 * x, adjoint=lambda y: 3 * y)
    x, y = T.randn(5), T.randn(5)
    return {"H": A.H(y), "is_adjoint": bool(sub(L, "utils").is_adjoint(A, x, y))}


def simple_linop_module_functions(L, T):
    """simple_linop.md, "Multiprocessing Limitations": with module-level functions the
    operator pickles and applies after a round trip."""
    A = L.SimpleLinop(forward=_double, adjoint=_double)
    B = pickle.loads(pickle.dumps(A))
    x = T.randn(5)
    return {"y": B(x), "H": B.H(x)}


# --- howto/custom_linops.md ---------------------------------------------------------------


def _scale_class(L):
    """The guide's minimal example: static `fn(x, /, scale)`, a `forward` that passes the
    scale, and an `adjoint` that builds a new instance with the shapes swapped."""
    NS = sub(L, "nameddim").NamedShape

    class Scale(L.NamedLinop):
        def __init__(self, scale, ishape, oshape):
            super().__init__(NS(ishape, oshape))
            self.scale = scale

        @staticmethod
        def fn(x, /, scale):
            return scale * x

        @staticmethod
        def adj_fn(x, /, scale):
            return scale * x

        def forward(self, x):
            return self.fn(x, self.scale)

        def adjoint(self):
            return type(self)(self.scale, ishape=self._shape.oshape, oshape=self._shape.ishape)

    return Scale


def howto_minimal(L, T):
    """custom_linops.md, "Minimal Example": y = 3x and its adjoint, with the adjoint's
    shapes swapped."""
    A = _scale_class(L)(3.0, ishape=L.Dim("N"), oshape=L.Dim("K"))
    x = T.randn(5)
    y = A(x)
    return {"y": y, "z": A.H(y), "H_shapes": (A.H.ishape, A.H.oshape)}


def howto_ioshape_shortcut(L, T):
    """custom_linops.md, "Call super().__init__()": `NS(ioshape=Dim("N"))` is
    `("N",) -> ("N",)`. torchlinops 0.8.3's NamedShape needs `ishape` (the page's shortcut
    raises there), so the torch run spells it `NS(Dim("N"))`."""
    NS = sub(L, "nameddim").NamedShape
    shape = NS(ioshape=L.Dim("N")) if is_jax(L) else NS(L.Dim("N"))
    return {"ishape": shape.ishape, "oshape": shape.oshape}


def _matrix_class(L):
    """A Dense-like linop with the `(linop, x, /)` protocol, a `normal_fn`, the conjugate
    in the adjoint ("Common Mistakes") and a `split` that builds `type(linop)(...)`."""
    NS = sub(L, "nameddim").NamedShape

    class Matrix(L.NamedLinop):
        def __init__(self, weight, ishape, oshape):
            super().__init__(NS(ishape, oshape))
            self.weight = weight

        @staticmethod
        def fn(linop, x, /):
            return linop.weight @ x

        @staticmethod
        def adj_fn(linop, x, /):
            return linop.weight.conj().T @ x

        @staticmethod
        def normal_fn(linop, x, /):
            return linop.weight.conj().T @ (linop.weight @ x)

        @staticmethod
        def split(linop, tile):
            ibatch = tuple(tile.get(dim, slice(None)) for dim in linop.ishape)
            obatch = tuple(tile.get(dim, slice(None)) for dim in linop.oshape)
            w = linop.weight[obatch + ibatch]
            return type(linop)(w, ishape=linop.ishape, oshape=linop.oshape)

        def size(self, dim):
            if dim in self.oshape:
                return self.weight.shape[0]
            return self.weight.shape[1] if dim in self.ishape else None

    return Matrix


def howto_split_and_test(L, T):
    """custom_linops.md, "Use type(linop) in split()" and "Testing Your Linop": a complex
    Dense-like linop passes `is_adjoint`, its normal is A^H A, and `split_linop` over N
    tiles it into pieces that add up to A(x)."""
    A = _matrix_class(L)(T.randn(4, 6, dtype=T.complex64), ("N",), ("M",))
    x, y = T.randn(6, dtype=T.complex64), T.randn(4, dtype=T.complex64)
    linops, ibatches, _ = sub(L, "linops.split").split_linop(A, {"N": 3})
    pieces = [op(x[tuple(i)]) for op, i in zip(linops.ravel(), ibatches.ravel(), strict=True)]
    return {
        "adjoint": bool(sub(L, "utils").is_adjoint(A, x, y)),
        "N": A.N(x),
        "AHA": A.H(A(x)),
        "tiles": len(pieces),
        "split_sum": pieces[0] + pieces[1],
        "y": A(x),
    }


def howto_choosing(L, T):
    """custom_linops.md, "Choosing the Right Operator": Dense, Diagonal, Identity,
    `@` (Chain) and `+` (Add) on the same dims."""
    A = L.Dense(T.randn(4, 4), L.Dim("MN"), L.Dim("N"), L.Dim("M"))
    B = L.Dense(T.randn(4, 4), L.Dim("MN"), L.Dim("N"), L.Dim("M"))
    D = L.Diagonal(T.randn(4), ioshape=L.Dim("M"))
    x = T.randn(4)
    return {
        "chain": (D @ A)(x),
        "add": (A + B)(x),
        "identity": (L.Identity(L.Dim("M")) @ A)(x),
        "kinds": (type(D @ A).__name__, type(A + B).__name__),
    }


SCENARIOS = {
    "page:index::dense": index_dense,
    "page:simple_linop::basic": simple_linop_basic,
    "page:simple_linop::normal": simple_linop_normal,
    "page:simple_linop::named": simple_linop_named,
    "page:simple_linop::no_check": simple_linop_no_check,
    "page:simple_linop::module_functions": simple_linop_module_functions,
    "page:custom_linops::minimal": howto_minimal,
    "page:custom_linops::ioshape_shortcut": howto_ioshape_shortcut,
    "page:custom_linops::split_and_test": howto_split_and_test,
    "page:custom_linops::choosing": howto_choosing,
}


@pytest.mark.parametrize("scenario", [case(k, f) for k, f in SCENARIOS.items()])
def test_page_scenario(scenario):
    """The scenario runs on jaxlinops and returns what torchlinops returns."""
    run_scenario(scenario)


def test_named_shape_ioshape_keyword():
    """`NamedShape(ioshape=dims)` is `dims -> dims` (custom_linops.md's shortcut), not the
    default `... -> ...` with an extra shape named `ioshape`."""
    shape = jaxlinops.nameddim.NamedShape(ioshape=("N", "M"))
    assert (shape.ishape, shape.oshape) == (("N", "M"), ("N", "M"))
    assert "ioshape" not in shape.shapes
