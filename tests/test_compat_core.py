"""torchlinops' calls on the core operators and containers, against torchlinops itself
(where installed) and dense references: the torch-only options of `Add`/`Concat`/`Stack`,
`name=`, `A.shape`, `NamedLinop.split(A, tile)` and `adj_split` with `NamedDimension`
keys, the custom-operator protocol (static `fn`/`adj_fn`/`normal_fn`/`split`),
`BreakpointLinop`, `Sleep` and `config.reduce_identity_in_normal`; assignable scheduling
options, `A.modules()`, and `NamedLinop(shape)` built directly."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxlinops as jl
from jaxlinops.nameddim import NamedDimension as ND, NamedShape as NS


def torch_libs():
    """`(torch, torchlinops)`, or skip the test where they are not installed."""
    return pytest.importorskip("torch"), pytest.importorskip("torchlinops")


def crand(seed: int, shape) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def close(got, want):
    """complex128 throughout: agreement to 1e-10 of the scale."""
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-12)


def dense_pair(seed: int, shape=(3, 4)):
    """The same Dense `N -> M` in both libraries, and its matrix."""
    torch, tl = torch_libs()
    w = crand(seed, shape)
    return jl.Dense(w, "MN", "N", "M"), tl.Dense(torch.tensor(w), ("M", "N"), ("N",), ("M",)), w


# --------------------------------------------------------------- torch-only options
def test_add_accepts_torch_options_and_matches_torchlinops():
    torch, tl = torch_libs()
    (ja, ta, wa), (jb, tb, wb) = dense_pair(0), dense_pair(1)
    opts = dict(threaded=False, num_workers=2, accumulate=True)
    A, T = jl.Add(ja, jb, **opts, name="S"), tl.Add(ta, tb, **opts)
    x, y = crand(2, 4), crand(3, 3)
    close(A(x), T(torch.tensor(x)).numpy())
    close(A.H(y), T.H(torch.tensor(y)).numpy())
    close(A(x), (wa + wb) @ x)
    assert repr(A).startswith("S((N) -> (M))") and A.H.name == "S.H"


@pytest.mark.parametrize(
    "dims", [dict(idim="N"), dict(odim="M"), dict(idim="N", odim="M")], ids=str
)
def test_concat_accepts_torch_options_and_matches_torchlinops(dims):
    torch, tl = torch_libs()
    (ja, ta, wa), (jb, tb, wb) = dense_pair(0), dense_pair(1)
    opts = dict(threaded=True, num_workers=1, accumulate=True)
    A = jl.Concat(ja, jb, **dims, **opts, name="C")
    T = tl.Concat(ta, tb, **dims, **opts)
    x = crand(2, (8 if "idim" in dims else 4,))
    y = crand(3, (6 if "odim" in dims else 3,))
    close(A(x), T(torch.tensor(x)).numpy())
    close(A.H(y), T.H(torch.tensor(y)).numpy())
    zero = np.zeros_like(wa)
    dense = {  # the block matrix of each layout
        ("idim",): np.hstack([wa, wb]),
        ("odim",): np.vstack([wa, wb]),
        ("idim", "odim"): np.block([[wa, zero], [zero, wb]]),
    }[tuple(dims)]
    close(A(x), dense @ x)
    assert A.name == "C" and A.H.name == "C.H"


def test_stack_accepts_torch_options_and_defaults():
    torch, tl = torch_libs()
    (ja, ta, wa), (jb, tb, wb) = dense_pair(0), dense_pair(1)
    opts = dict(threaded=False, num_workers=None, accumulate=False)
    # torchlinops' default `(None, None)` spelled out: no new input dim
    A = jl.Stack(ja, jb, idim_and_idx=(None, None), odim_and_idx=("B", 0), **opts)
    T = tl.Stack(ta, tb, idim_and_idx=(None, None), odim_and_idx=("B", 0), **opts)
    x, y = crand(2, 4), crand(3, (2, 3))
    close(A(x), T(torch.tensor(x)).numpy())
    close(A.H(y), T.H(torch.tensor(y)).numpy())
    close(A(x), np.stack([wa @ x, wb @ x]))
    assert A.ishape == ("N",) and A.oshape == ("B", "M")


def test_scheduling_options_are_assignable_and_checked():
    """torchlinops' `add.threaded = False`: the options change the grouping of the sum, not
    the operator; every other field stays frozen."""
    (ja, _, wa), (jb, _, wb) = dense_pair(0), dense_pair(1)
    A = jl.Add(ja, jb, ja)
    A.threaded, A.num_workers, A.accumulate = False, 2, True
    assert (A.threaded, A.num_workers, A.accumulate) == (False, 2, True)
    x, y = crand(2, 4), crand(3, 3)
    close(A(x), (2 * wa + wb) @ x)
    close(A.H(y), (2 * wa + wb).conj().T @ y)
    with pytest.raises(ValueError, match=r"`Add\(num_workers=...\)`.*at least 1.*got 0"):
        A.num_workers = 0
    with pytest.raises(TypeError, match=r"`Add\(threaded=...\)` expects a bool"):
        A.threaded = "no"
    with pytest.raises(dataclasses.FrozenInstanceError):
        A.linops = ()  # pyright: ignore[reportAttributeAccessIssue]
    C = jl.Concat(ja, jb, odim="M")
    C.accumulate = True
    close(C(x), np.concatenate([wa @ x, wb @ x]))


def test_a_sum_of_operators_with_different_shapes_is_also_an_assertion_error():
    """torchlinops asserts; jaxlinops' ValueError is an AssertionError too."""
    A = jl.Dense(np.ones((3, 2)), "MN", "N", "M")
    B = jl.Dense(np.ones((4, 5)), "PQ", "Q", "P")
    for build in (lambda: A - B, lambda: jl.Add(A, B)):
        with pytest.raises(ValueError, match=r"`Add` requires all operators to share ishape"):
            build()
        with pytest.raises(AssertionError):
            build()


def test_modules_lists_every_operator_inside_once():
    """torch's `Module.modules()`: the operator, then what it holds, depth first, each
    object once (a shared child is listed once)."""
    (ja, _, _), (jb, _, _) = dense_pair(0), dense_pair(1)
    chain = jl.Chain(ja, jb.H)
    A = jl.Add(chain, chain)
    found = list(A.modules())
    assert found[0] is A and found[1] is A.linops[0]
    assert len(found) == len({id(m) for m in found})
    want = {id(A), *(id(c) for c in A.linops), *(id(op) for c in A.linops for op in c.linops)}
    assert {id(m) for m in found} == want
    T = jl.NUFFT(np.zeros((5, 2)), (8, 8), output_shape=("K",), toeplitz=True)
    assert any(isinstance(m, jl.NUFFT) for m in (T.H @ T).modules()) is False
    assert any(isinstance(m, jl.NUFFT) for m in jl.Chain(T, T.H).modules())


def test_the_base_class_built_directly_is_torchlinops_stand_in():
    """`NamedLinop(NS(ishape, oshape))`: dims and torchlinops' default `fn` (`x -> x`)."""
    A = jl.NamedLinop(NS(("A", "B"), ("C",)))
    assert isinstance(A, jl.NamedLinop) and repr(A) == "NamedLinop((A, B) -> (C))"
    assert jl.NamedLinop(NS("N", "M"), name="T").name == "T"
    assert (A.H.ishape, A.H.oshape) == (("C",), ("A", "B"))
    assert A.N.ishape == ("A", "B") and A.split(A, {}) == A
    B = jl.NamedLinop(NS(("C",), ("C1",)))
    assert (B @ A).N.oshape == ("A1", "B1")
    A.check_input_shape(np.ones((2, 3)))
    with pytest.raises(ValueError, match="incompatible input"):
        A.check_input_shape(np.ones(2))
    with pytest.raises(ValueError, match=r"`NamedLinop\(\(A, B\) -> \(C\)\)`.*as many dims"):
        A(np.ones((2, 3)))
    R = jl.NamedLinop(NS(("N",), ("M",)))  # a renaming: x -> x, as torchlinops
    x = crand(0, 4)
    close(R(x), x)
    close(jax.jit(lambda v: R.H(v))(x), x)


def test_concat_infer_dim_idx_counts_from_the_end_after_an_ellipsis():
    shape = (ND("A"), ND("B"), ND("..."), ND("C"), ND("D"), ND("E"))
    assert jl.Concat._infer_dim_idx("B", shape) == 1
    assert jl.Concat._infer_dim_idx("C", shape) == -3
    with pytest.raises(ValueError, match="Cannot infer"):
        jl.Concat._infer_dim_idx("B", ("...", "B", "..."))


# --------------------------------------------------------------- names and shapes
def test_chain_and_simple_linop_take_a_name():
    torch, tl = torch_libs()
    ja, ta, _ = dense_pair(0)
    C, TC = jl.Chain(ja, ja.H, name="gram"), tl.Chain(ta, ta.H, name="gram")
    assert repr(C).splitlines()[0].startswith("gram(") and repr(TC).startswith("gram(")
    assert C.H.name == "gram.H" and C.H.H.name == "gram"
    S = jl.SimpleLinop(jnp.negative, jnp.negative, None, ("N",), ("N",), "neg")
    TS = tl.SimpleLinop(torch.neg, torch.neg, None, ("N",), ("N",), "neg")
    assert S.name == TS.name == "neg" and S.H.name == TS.H.name == "neg.H"
    assert repr(S).startswith("neg(") and repr(TS).startswith("neg(")
    x = crand(1, 4)
    close(S(x), TS(torch.tensor(x)).numpy())


def test_shape_matches_torchlinops():
    ja, ta, _ = dense_pair(0)
    for got, want in ((ja.shape, ta.shape), (ja.shape.H, ta.shape.H), (ja.shape.N, ta.shape.N)):
        assert tuple(got.ishape) == tuple(map(str, want.ishape))
        assert tuple(got.oshape) == tuple(map(str, want.oshape))
    assert jl.Identity("NM").shape.N.oshape == ("N", "M")


def test_named_shape_adjoint_and_normal_match_torchlinops():
    """`NamedShape.adjoint()`/`.normal()` (and `.H`/`.N`) as torchlinops computes them,
    other shapes kept, a subclass kept; `NS`/`ND` at the top level as in torchlinops."""
    _, tl = torch_libs()
    assert jl.NS is jl.NamedShape and jl.ND is jl.NamedDimension
    assert tl.NS.__name__ == jl.NS.__name__ and tl.ND.__name__ == jl.ND.__name__

    def dims(shape):
        return tuple(map(str, shape))

    cases = [(("C", "Nx", "Ny"), ("C", "K")), (("N", "M"), ("N", "M")), (("A",), ("B", "A"))]
    for ishape, oshape in cases:
        extra = {"kshape": ("Kx", "Ky")}
        mine, theirs = NS(ishape, oshape, **extra), tl.nameddim.NamedShape(ishape, oshape, **extra)
        for got, want in ((mine.adjoint(), theirs.adjoint()), (mine.normal(), theirs.normal()),
                          (mine.H, theirs.H), (mine.N, theirs.N)):  # fmt: skip
            assert (dims(got.ishape), dims(got.oshape)) == (dims(want.ishape), dims(want.oshape))
            assert dims(got.other_shapes["kshape"]) == ("Kx", "Ky")

    class Tagged(NS):
        pass

    assert type(Tagged(("A",), ("B",)).adjoint()) is Tagged
    A = jl.Dense(crand(0, (3, 4)), "MN", "N", "M")
    assert A.H.shape == A.shape.adjoint() and A.N.shape == A.shape.normal()


# --------------------------------------------------------------- split and adj_split
def test_split_called_as_a_static_method_on_an_instance():
    """torchlinops' `split`/`adj_split` are static: `A.split(A, tile)` splits A, and
    `A.split(B, tile)` splits B, as torchlinops does; other argument counts are refused."""
    torch, tl = torch_libs()
    (ja, ta, _), (jb, tb, _) = dense_pair(0, (6, 4)), dense_pair(1, (6, 4))
    tile = {"M": slice(1, 4), "N": slice(0, 2)}
    x, v = crand(2, 2), crand(3, 3)  # sized as the tile's N and M
    for mine, theirs, u in ((ja, ta, x), (ja + jb, ta + tb, x), (jl.Chain(ja.H, ja), ta @ ta.H, v)):
        got = mine.split(mine, tile)
        close(got(u), theirs.split(theirs, tile)(torch.tensor(u)).numpy())
    close(ja.split(jb, tile)(x), jb.split(tile)(x))
    close(
        ja.adj_split(ja, tile).H(crand(3, 3)), ta.adj_split(ta, tile).H(torch.tensor(crand(3, 3)))
    )
    with pytest.raises(TypeError, match=r"`Dense.split` takes a tile.*got 3 arguments"):
        ja.split(ja, tile, tile)
    with pytest.raises(TypeError, match=r"`Dense.adj_split` takes a tile.*the first a dict"):
        ja.adj_split(tile, tile)


def test_split_with_named_dimension_keys_matches_torchlinops():
    torch, tl = torch_libs()
    w, v = crand(0, (3, 4)), crand(1, 4)
    JD = jl.Dense(w, "MN", "N", "M")
    A = jl.Chain(JD, JD.H, jl.Diagonal(v, "N"))  # `@` would fold JD.H @ JD into a Gram
    TD = tl.Dense(torch.tensor(w), ("M", "N"), ("N",), ("M",))
    T = tl.Diagonal(torch.tensor(v), ("N",)) @ TD.H @ TD
    tile = {ND("N"): slice(1, 3), ND("M"): slice(0, 2)}
    x = crand(2, 2)
    want = type(T).split(T, tile)(torch.tensor(x)).numpy()  # torchlinops' own split
    for tiled in (jl.NamedLinop.split(A, tile), A.split(tile), A.adj_split(tile)):
        close(tiled(x), want)
    # dense reference: rows and columns 1:3 of diag(v) W^H P W, P keeping rows 0:2 of W
    P = np.diag([1.0, 1.0, 0.0])
    close(jl.NamedLinop.split(A, tile)(x), (np.diag(v) @ w.conj().T @ P @ w)[1:3, 1:3] @ x)


def test_split_checks_a_users_tile():
    D = jl.Diagonal(jnp.arange(4.0), "N")
    with pytest.raises(TypeError, match="step 1"):
        jl.NamedLinop.split(D, {ND("N"): slice(0, 4, 2)})
    with pytest.raises(ValueError, match=r"dims \['K'\] are not dims of Diagonal"):
        D.adj_split({"K": slice(0, 1)})


# --------------------------------------------------------------- fn, adj_fn, normal_fn
def test_static_functions_of_builtin_operators_match_torchlinops():
    torch, tl = torch_libs()
    ja, ta, w = dense_pair(0)
    x, y = crand(1, 4), crand(2, 3)
    close(jl.NamedLinop.fn(ja, x), type(ta).fn(ta, torch.tensor(x)).numpy())
    close(type(ja).adj_fn(ja, y), type(ta).adj_fn(ta, torch.tensor(y)).numpy())
    close(ja.normal_fn(ja, x), w.conj().T @ (w @ x))


# --------------------------------------------------------------- the custom protocol
class DiagScale(jl.NamedLinop):
    """torchlinops' tutorial operator, with `jnp` for `torch`: y = w * x."""

    def __init__(self, weight, ioshape):
        super().__init__(NS(ioshape, ioshape))
        self.weight = weight

    @staticmethod
    def fn(linop, x, /):
        return x * linop.weight

    @staticmethod
    def adj_fn(linop, x, /):
        return x * jnp.conj(linop.weight)

    @staticmethod
    def normal_fn(linop, x, /):
        return x * (jnp.abs(linop.weight) ** 2).astype(x.dtype)  # strict promotion in tests

    @staticmethod
    def split(linop, tile):
        ibatch = tuple(tile.get(dim, slice(None)) for dim in linop.ishape)
        return type(linop)(linop.weight[ibatch], linop.ishape)


class Permute(jl.NamedLinop):
    """torchlinops' tutorial permutation: y[i] = x[perm[i]]."""

    def __init__(self, perm, ishape, oshape, name=None):
        super().__init__(NS(ishape, oshape), name=name)
        self.perm = jnp.asarray(perm)
        self.inv_perm = jnp.argsort(self.perm)

    @staticmethod
    def fn(linop, x, /):
        return x[linop.perm]

    @staticmethod
    def adj_fn(linop, x, /):
        return x[linop.inv_perm]

    @staticmethod
    def normal_fn(linop, x, /):  # orthogonal
        return x

    def size(self, dim):
        return len(self.perm) if dim in self.ishape + self.oshape else None


def torch_diag_scale(tl, torch):
    """The same tutorial operator in torchlinops."""

    class TorchDiagScale(tl.NamedLinop):
        def __init__(self, weight, ioshape):
            super().__init__(tl.nameddim.NamedShape(ioshape, ioshape))
            self.weight = torch.nn.Parameter(weight, requires_grad=False)

        @staticmethod
        def fn(linop, x, /):
            return x * linop.weight

        @staticmethod
        def adj_fn(linop, x, /):
            return x * torch.conj(linop.weight)

        @staticmethod
        def normal_fn(linop, x, /):
            return x * torch.abs(linop.weight) ** 2

    return TorchDiagScale


def test_custom_protocol_matches_torchlinops():
    torch, tl = torch_libs()
    v, w = crand(0, 4), crand(1, (3, 4))
    D = DiagScale(jnp.asarray(v), ("N",))
    TD = torch_diag_scale(tl, torch)(torch.tensor(v), ("N",))
    A = jl.Dense(w, "MN", "N", "M") @ D
    TA = tl.Dense(torch.tensor(w), ("M", "N"), ("N",), ("M",)) @ TD
    x, y = crand(2, 4), crand(3, 3)
    close(D(x), TD(torch.tensor(x)).numpy())
    close(D.H(x), TD.H(torch.tensor(x)).numpy())
    close(D.N(x), TD.N(torch.tensor(x)).numpy())
    close(A(x), TA(torch.tensor(x)).numpy())
    close(A.H(y), TA.H(torch.tensor(y)).numpy())
    close(A.N(x), TA.N(torch.tensor(x)).numpy())


def test_custom_protocol_against_dense_references():
    v, perm = crand(0, 4), np.array([2, 0, 3, 1])
    D, P = DiagScale(jnp.asarray(v), ("N",)), Permute(perm, "N", "K", name="perm")
    x, y = crand(1, 4), crand(2, 4)
    close(D(x), v * x)
    close(D.H(y), v.conj() * y)
    close(D.N(x), np.abs(v) ** 2 * x)
    assert type(D.N).__name__ == "NormalFn"  # the class's own `normal_fn` is used
    close(P(x), x[perm])
    close(P.H(y), np.eye(4)[perm].T @ y)
    close(P.N(x), x)  # orthogonal
    shapes = (P.N.ishape, P.N.oshape, P.N.H.ishape, P.N.H.oshape)
    assert shapes == (("N",), ("N1",), ("N1",), ("N",))
    assert P.name == "perm" and P.shape.oshape == ("K",) and P.size("K") == 4
    assert P.arrays.keys() == {"perm", "inv_perm"}
    for op in (D, P, D.N, P.N, P.N.H, P @ D):
        jl.testing.assert_adjoint(op, crand(3, 4), crand(4, 4))
        jl.testing.assert_linear_transpose(op, crand(3, 4), crand(4, 4))


def test_custom_protocol_under_jit_grad_and_split():
    v = crand(0, 6)
    D = DiagScale(jnp.asarray(v), ("N",))
    x = crand(1, 6)
    apply = jax.jit(lambda op, x: op.N(op(x)))
    close(apply(D, x), np.abs(v) ** 2 * v * x)
    close(apply(DiagScale(jnp.asarray(2 * v), ("N",)), x), 8 * np.abs(v) ** 2 * v * x)
    assert apply._cache_size() == 1  # the weight is a leaf: no re-trace for new values
    grad = jax.grad(lambda op: jnp.sum(jnp.abs(op(x)) ** 2))(D)
    # jax.grad of a real f(w) is df/dRe(w) - i df/dIm(w): 2 |x|^2 conj(w) for |w x|^2
    close(grad.weight, 2 * np.abs(x) ** 2 * v.conj())
    tile = jl.split(D, {"N": slice(2, 5)})
    close(tile(x[2:5]), (v * x)[2:5])
    with pytest.raises(ValueError, match="cannot be split along dim 'K'"):
        jl.split(Permute(np.arange(3), "N", "K"), {"K": slice(0, 1)})


class Scale(jl.NamedLinop):
    """torchlinops' how-to minimal example: `forward` and `adjoint` overridden, `fn`
    without the operator argument."""

    def __init__(self, scale: float, ishape, oshape):
        super().__init__(NS(ishape, oshape))
        self.scale = scale

    @staticmethod
    def fn(x, /, scale: float):
        return scale * x

    @staticmethod
    def adj_fn(x, /, scale: float):
        return scale * x

    def forward(self, x):
        return self.fn(x, self.scale)

    def adjoint(self):
        return type(self)(self.scale, ishape=self._shape.oshape, oshape=self._shape.ishape)


def test_howto_minimal_example():
    A = Scale(3.0, ishape=jl.Dim("N"), oshape=jl.Dim("N"))
    x = crand(0, 5)
    close(A(x), 3 * x)
    close(A.H(A(x)), 9 * x)
    close(A.N(x), 9 * x)
    assert A.settings == (("scale", 3.0),)
    with pytest.raises(dataclasses.FrozenInstanceError, match=r"`Scale.scale = \.\.\.`"):
        A.scale = 2.0


# --------------------------------------------------------------- BreakpointLinop
def record(calls):
    def callback(x):
        calls.append(np.asarray(x))

    return callback


def test_breakpoint_linop_is_an_identity_that_calls_back_under_jit():
    calls = []
    B = jl.BreakpointLinop(("N",), callback=record(calls))
    x = crand(0, 3)
    f = jax.jit(lambda B, x: B.H(2 * B(x)))
    close(f(B, x), 2 * x)
    close(jl.NamedLinop.adj_fn(B, 3 * x), 3 * x)  # the adjoint application stops too
    jax.effects_barrier()
    assert len(calls) == 3
    for got, want in zip(calls, (x, 2 * x, 3 * x)):
        close(got, want)
    close(B.N(x), x)
    close(jl.split(B, {"N": slice(0, 2)})(x[:2]), x[:2])
    jl.testing.assert_adjoint(B, x, crand(1, 3))


def test_breakpoint_linop_calls_the_debugger(monkeypatch):
    """Without a callback it calls `jax.debug.breakpoint()` (patched here: the real one
    reads commands from stdin), eagerly and when traced, as torchlinops calls `pdb`."""
    stops = []
    monkeypatch.setattr(jax.debug, "breakpoint", lambda **kw: stops.append(kw))
    B = jl.BreakpointLinop()
    x = crand(0, (2, 3))
    close(B(x), x)
    close(jax.jit(lambda x: B.H(x))(x), x)
    assert len(stops) == 2


def test_breakpoint_linop_stops_in_jax_debugger_under_jit():
    """A real session: the jitted program stops, `p x` prints the operator's input, `c`
    continues to the result."""
    script = (
        "import jax, jax.numpy as jnp, jaxlinops as jl\n"
        "B = jl.BreakpointLinop('N')\n"
        "print('result', jax.jit(lambda x: 2 * B(x))(jnp.arange(3.0)))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script], input="p x\nc\n", capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "Entering jdb" in run.stdout and "Array([0., 1., 2.]" in run.stdout, run.stdout
    assert "result [0. 2. 4.]" in run.stdout


def test_breakpoint_linop_matches_torchlinops(monkeypatch):
    torch, tl = torch_libs()
    monkeypatch.setattr("builtins.breakpoint", lambda *a, **k: None)
    monkeypatch.setattr(jax.debug, "breakpoint", lambda **kw: None)
    J, T = jl.BreakpointLinop(("M", "N")), tl.BreakpointLinop(("M", "N"))
    x = crand(0, (2, 3))
    assert J.ishape == J.oshape == tuple(map(str, T.ishape))
    close(J(x), T(torch.tensor(x)).numpy())
    close(J.H(x), T.H(torch.tensor(x)).numpy())


# --------------------------------------------------------------- Sleep
def test_sleep_waits_in_the_forward_only(monkeypatch):
    import jaxlinops.linops._breakpoint as module

    waits = []
    monkeypatch.setattr(module.time, "sleep", waits.append)
    S = jl.Sleep(0.25, ioshape=("M",))
    x = crand(0, 3)
    for apply in (S, jax.jit(lambda x: S(x))):
        close(apply(x), x)
    close(S.H(x), x)
    close(S.N(x), x)
    jax.effects_barrier()
    assert waits == [0.25, 0.25]
    R = jl.Sleep(0.0, ioshape=("M",), oshape=("K",))
    assert R.ishape == ("M",) and R.oshape == ("K",)
    jl.testing.assert_adjoint(R, x, crand(1, 3))


def test_sleep_matches_torchlinops():
    torch, tl = torch_libs()
    J, T = jl.Sleep(0.01, ioshape=("M",)), tl.Sleep(0.01, ioshape=("M",))
    x = crand(0, 3)
    close(J(x), T(torch.tensor(x)).numpy())
    close(J.H(x), T.H(torch.tensor(x)).numpy())
    assert J.ishape == tuple(map(str, T.ishape)) and J.duration == T.duration


# --------------------------------------------------------------- reduce_identity_in_normal
@pytest.mark.parametrize("reduce", [True, False])
def test_reduce_identity_in_normal(monkeypatch, reduce):
    torch, tl = torch_libs()
    monkeypatch.setattr(jl.config, "reduce_identity_in_normal", reduce)
    monkeypatch.setattr(tl.config, "reduce_identity_in_normal", reduce)
    ja, ta, w = dense_pair(0)
    N, TN = ja.normal(jl.Identity(("M",))), ta.normal(tl.Identity(("M",)))
    x = crand(1, 4)
    close(N(x), TN(torch.tensor(x)).numpy())
    close(N(x), w.conj().T @ w @ x)
    kept = [type(op).__name__ for op in N.flatten()]
    assert ("Identity" in kept) == (not reduce), kept
