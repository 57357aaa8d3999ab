"""Behaviour of the core operators and compositions against numpy references."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import KeyGen, assert_close, rand

import jaxlinops as jl

C128 = jnp.complex128


@pytest.fixture
def key():
    return KeyGen(7)


# --------------------------------------------------------------------------- Dense
def test_dense_matches_einsum_with_batch_and_broadcast_dims(key):
    w = rand(key(), (3, 1, 2, 4))  # B C M N, C broadcast
    x = rand(key(), (5, 3, 4))  # C B N
    A = jl.Dense(w, "BCMN", "CBN", "CBM", broadcast_dims="C")
    want = np.einsum("bmn,cbn->cbm", np.asarray(w)[:, 0], np.asarray(x))
    assert_close(A(x), want, C128)
    assert A.size("B") == 3 and A.size("M") == 2 and A.size("C") is None


def test_dense_from_einstr_and_ellipsis(key):
    w, x = rand(key(), (5, 4)), rand(key(), (2, 3, 4))
    A = jl.Dense.from_einstr(w, "MN,...N->...M")
    assert A.ishape == ("...", "N") and A.oshape == ("...", "M")
    assert_close(A(x), np.einsum("mn,abn->abm", w, x), C128)


def test_dense_inferred_shapes_follow_torchlinops(key):
    A = jl.Dense(rand(key(), (5, 3)))
    assert A.weightshape == ("()", "(1)") and A.ishape == ("(1)",) and A.oshape == ("()",)
    B = jl.Dense(rand(key(), (2, 5, 3)))
    assert B.weightshape == ("()", "(1)", "(2)")
    assert B.ishape == ("()", "(2)") and B.oshape == ("()", "(1)")
    x = rand(key(), (2, 3))
    assert_close(B(x), np.einsum("bmn,bn->bm", B.weight, x), C128)


def test_dense_inferred_dims_are_named_dimensions_and_spell_einops_patterns(key):
    A = jl.Dense(rand(key(), (2, 5, 3)))
    # torchlinops' AnyDim(k): name "()", ordinal k
    assert [(d.name, d.i) for d in A.weightshape] == [("()", 0), ("()", 1), ("()", 2)]
    assert [d.name for d in A.ishape + A.oshape] == ["()"] * 4
    assert A.forward_einstr == "any0 any2,any0 any1 any2->any0 any1"
    assert A.adj_einstr == "any0 any1,any0 any1 any2->any0 any2"
    explicit = jl.Dense(rand(key(), (4, 3)), "M N", "... N", "... M")
    assert explicit.forward_einstr == "... N,M N->... M"


def test_dense_einstr_runs_in_einops(key):
    einops = pytest.importorskip("einops")
    w, x, y = rand(key(), (2, 5, 3)), rand(key(), (2, 3)), rand(key(), (2, 5))
    A = jl.Dense(w)
    assert_close(einops.einsum(x, w, A.forward_einstr), A(x), C128)
    assert_close(einops.einsum(y, np.conj(w), A.adj_einstr), A.H(y), C128)


def test_dense_normal_is_one_gram_dense(key):
    w = rand(key(), (10, 7, 7))
    A = jl.Dense(w, "BMN", "BN", "BM")
    N = A.N
    assert isinstance(N, jl.Dense)
    assert N.ishape == ("B", "N") and N.oshape == ("B", "N1")
    assert N.weightshape == ("B", "N1", "N") and N.weight.shape == (10, 7, 7)
    want = np.einsum("bmk,bmn->bkn", np.conj(w), w)
    assert_close(N.weight, want, C128)
    M = jl.Dense(rand(key(), (4, 3)), "MN", "N", "M").N
    assert M.weightshape == ("N1", "N") and (M.ishape, M.oshape) == (("N",), ("N1",))


def test_sense_maps_normal_sums_over_coils(key):
    maps = rand(key(), (4, 5, 6))
    S = jl.Dense(maps, "CNxNy", "NxNy", "CNxNy")
    assert S.N.ishape == S.N.oshape == ("Nx", "Ny")
    assert_close(S.N.weight, np.sum(np.abs(maps) ** 2, axis=0), C128)


@pytest.mark.parametrize(
    "args, match",
    [
        ((np.ones((2, 3)), "MN", "N", None), "together"),
        ((np.ones((2, 3)), "MNK", "N", "M"), "weight has 2 axes"),
        ((np.ones((2, 3)), "MN", "...N", "M"), "'...' may appear only in both"),
        ((np.ones((2, 3)), "MN", "NA", "M"), "input dim 'A' is in neither"),
        ((np.ones((2, 3)), "MN", "N", "MA"), "output dim 'A' is in neither"),
        ((np.ones((2, 3)), "MK", "N", "M"), "weight dim 'K' is in neither"),
        ((np.ones((2, 3)), "MM", "N", "M"), "repeats in weightshape with different sizes"),
        ((np.ones(3),), "at least 2D"),
    ],
)
def test_dense_bad_shapes(args, match):
    with pytest.raises(ValueError, match=match):
        jl.Dense(*args)


def test_dense_bad_broadcast_dim():
    with pytest.raises(ValueError, match="broadcast_dim 'X' is not in weightshape"):
        jl.Dense(np.ones((2, 3)), "CN", "CN", "C", broadcast_dims="X")
    with pytest.raises(ValueError, match="must be in weightshape, ishape and oshape"):
        jl.Dense(np.ones((1, 3)), "CN", "CN", "N", broadcast_dims="C")


def test_dense_from_einstr_bad_string():
    with pytest.raises(ValueError, match="weightshape,ishape->oshape"):
        jl.Dense.from_einstr(np.ones((2, 3)), "MN->M")


# --------------------------------------------------------------------------- Diagonal
def test_diagonal_broadcasts_right_aligned(key):
    w, x = rand(key(), (4, 5)), rand(key(), (3, 4, 5))
    D = jl.Diagonal(w, "CNxNy")
    assert_close(D(x), np.asarray(x) * np.asarray(w)[None], C128)
    assert D.size("Nx") == 4 and D.size("C") is None
    assert_close(jl.Diagonal(w, "...")(x), np.asarray(x) * np.asarray(w)[None], C128)


def test_diagonal_size_one_axes_broadcast(key):
    w = rand(key(), (10, 1, 1))
    D = jl.Diagonal(w, "MNP")
    assert D.size("M") == 10 and D.size("N") is None and D.size("P") is None
    x = rand(key(), (10, 3, 2))
    assert_close(D(x), np.asarray(w) * np.asarray(x), C128)


def test_diagonal_normal_power_and_adjoint(key):
    w = rand(key(), (6,))
    D = jl.Diagonal(w, "N")
    assert isinstance(D.N, jl.Diagonal) and D.N.ioshape == ("N",)
    assert_close(D.N.weight, np.abs(w) ** 2, C128)
    assert_close((D**0.5).weight, np.asarray(w) ** 0.5, C128)
    assert_close(D.H.weight, np.conj(w), C128)


@pytest.mark.parametrize(
    "weight, ioshape, bdims, match",
    [
        (np.ones((2, 3)), "N", None, "has 2 axes"),
        (np.ones((2, 3)), "AB", "B", "needs a size-1 weight axis"),
        (np.ones((2, 1)), "AB", "C", "not in ioshape"),
    ],
)
def test_diagonal_bad_input(weight, ioshape, bdims, match):
    with pytest.raises(ValueError, match=match):
        jl.Diagonal(weight, ioshape, bdims)


def test_diagonal_weight_with_more_axes_than_input():
    D = jl.Diagonal(np.ones((2, 3)), "...")
    with pytest.raises(ValueError, match="fewer axes"):
        D(jnp.ones(3))


# --------------------------------------------------------------------------- algebra
def test_scalar_multiplication_sides(key):
    w = rand(key(), (3, 2))
    A = jl.Dense(w, "MN", "N", "M")
    x = rand(key(), (2,))
    Ax = np.asarray(w) @ np.asarray(x)
    assert_close((2j * A)(x), 2j * Ax, C128)
    assert_close((A * 3.0)(x), 3 * Ax, C128)
    assert_close((-A)(x), -Ax, C128)
    assert_close((A / 4)(x), Ax / 4, C128)
    assert_close((A - 2 * A)(x), -Ax, C128)
    assert_close(sum([A, A, A])(x), 3 * Ax, C128)
    assert isinstance((2 * A).linops[-1], jl.Scalar)
    assert isinstance((A * 2).linops[0], jl.Scalar)


def test_matmul_applies_arrays_and_rejects_others(key):
    A = jl.Dense(rand(key(), (3, 2)), "MN", "N", "M")
    x = rand(key(), (2,))
    assert_close(A @ x, A(x), C128)
    with pytest.raises(TypeError):
        A @ 42
    with pytest.raises(TypeError, match="is not defined"):
        np.ones(3).tolist() @ A
    with pytest.raises(TypeError):
        A * "x"
    with pytest.raises(TypeError):
        A * np.ones(3)


def test_scalar_rejects_arrays():
    with pytest.raises(ValueError, match="0-d weight"):
        jl.Scalar(np.ones(3))


# --------------------------------------------------------------------------- Chain
def test_chain_execution_order_and_flattening(key):
    A = jl.Dense(rand(key(), (3, 2)), "MN", "N", "M")
    B = jl.Dense(rand(key(), (4, 3)), "KM", "M", "K")
    C = jl.Diagonal(rand(key(), (4,)), "K")
    x = rand(key(), (2,))
    chain = C @ (B @ A)
    assert len(chain.linops) == 3 and chain.linops[0] is A
    assert_close(jl.Chain(A, B, C)(x), C(B(A(x))), C128)
    assert_close(chain(x), C(B(A(x))), C128)


def test_chain_resolves_ellipsis_from_concrete_neighbour(key):
    S = jl.Dense(rand(key(), (2, 3, 4)), "CNxNy", "NxNy", "CNxNy")
    D = jl.Diagonal(rand(key(), (3, 4)), "...")
    chain = D @ S
    assert chain.linops[1].ioshape == ("C", "Nx", "Ny")
    assert (D @ S).oshape == ("C", "Nx", "Ny")
    left = S @ jl.Identity()
    assert left.ishape == ("Nx", "Ny")


def test_chain_mismatch_error_names_operators(key):
    A = jl.Dense(rand(key(), (3, 2)), "MN", "N", "M")
    with pytest.raises(ValueError, match=r"outputs dims \(M\) but operator 1 \(Dense\) expects"):
        A @ A
    with pytest.raises(ValueError, match="at least one"):
        jl.Chain()
    with pytest.raises(TypeError, match="argument 1 is a int"):
        jl.Chain(A, 3)


def test_chain_normal_folds_specialised_normals(key):
    S = jl.Dense(rand(key(), (2, 3, 4)), "CNxNy", "NxNy", "CNxNy")
    D = jl.Diagonal(rand(key(), (3, 4)), "CNxNy", broadcast_dims=None) ** 1
    N = (D @ S).N
    assert [type(op).__name__ for op in N.flatten()] == ["Dense", "Diagonal", "Dense"]
    assert N.ishape == N.oshape == ("Nx", "Ny")
    assert jl.Chain(S).N == S.N


def test_default_normal_renames_only_unshared_dims(key):
    blocks = [jl.Dense(rand(key(), (2, 1 + i, 3)), "BMN", "BN", "BM") for i in range(2)]
    A = jl.Concat(*blocks, odim="M")
    assert A.N.ishape == ("B", "N") and A.N.oshape == ("B", "N1")
    x = rand(key(), (2, 3))
    assert_close(A.N(x), A.H(A(x)), C128)


# --------------------------------------------------------------------------- Add
def test_add_checks_shapes(key):
    A = jl.Dense(rand(key(), (3, 2)), "MN", "N", "M")
    B = jl.Dense(rand(key(), (3, 2)), "KN", "N", "K")
    with pytest.raises(ValueError, match=r"share oshape; operator 1 \(Dense\) has \(K\)"):
        A + B
    D = jl.Diagonal(rand(key(), (2,)), "...")
    assert (D + jl.Identity("N")).ishape == ("N",)
    # an operator that keeps the input's dims adopts a normal's renamed output dims
    T = A.N + jl.Identity("N")
    x = rand(key(), (2,))
    assert (T.ishape, T.oshape) == (("N",), ("N1",))
    assert_close(T(x), A.H(A(x)) + x, jnp.complex128)
    # another renaming of the output still clashes, with a hint
    with pytest.raises(ValueError, match=r"has \(N2\) but .* has \(N1\)\. A normal renames"):
        A.N + jl.Identity("N", "N2")


# --------------------------------------------------------------------------- Concat / Stack
def test_concat_modes_match_block_matrices(key):
    ws = [rand(key(), (2, n)) for n in (1, 2, 3)]
    ops = [jl.Dense(w, "MN", "N", "M") for w in ws]
    x = rand(key(), (6,))
    assert_close(jl.Concat(*ops, idim="N")(x), np.hstack(ws) @ x, C128)
    vs = [rand(key(), (n, 3)) for n in (1, 2)]
    v = rand(key(), (3,))
    vert = jl.Concat(*[jl.Dense(w, "MN", "N", "M") for w in vs], odim="M")
    assert_close(vert(v), np.vstack(vs) @ v, C128)
    assert vert.size("M") == 3
    bd = jl.Concat(*ops, idim="N", odim="M")
    blockdiag = np.zeros((6, 6), complex)
    for i, w in enumerate(ws):
        cols = slice(sum(w.shape[1] for w in ws[:i]), sum(w.shape[1] for w in ws[: i + 1]))
        blockdiag[2 * i : 2 * i + 2, cols] = w
    assert_close(bd(x), blockdiag @ x, C128)


def test_concat_errors(key):
    A = jl.Dense(rand(key(), (3, 2)), "MN", "N", "M")
    with pytest.raises(ValueError, match="needs `idim`, `odim` or both"):
        jl.Concat(A, A)
    with pytest.raises(ValueError, match="'K' is not in the children's ishape"):
        jl.Concat(A, A, idim="K")
    with pytest.raises(ValueError, match="undefined size for the concatenated dim 'N'"):
        jl.Concat(jl.Identity("N"), jl.Identity("N"), idim="N")
    with pytest.raises(TypeError, match="expects a dim name"):
        jl.Concat(A, idim=0)


def test_stack_matches_numpy(key):
    ws = [rand(key(), (2, 3)) for _ in range(4)]
    ops = [jl.Dense(w, "MN", "N", "M") for w in ws]
    x = rand(key(), (4, 3))
    want = np.stack([w @ xi for w, xi in zip(ws, np.asarray(x))])
    S = jl.Stack(*ops, idim_and_idx=("L", 0), odim_and_idx=("L", 0))
    assert S.ishape == ("L", "N") and S.oshape == ("L", "M") and S.size("L") == 4
    assert_close(S(x), want, C128)
    assert_close(jl.Stack(*ops, idim_and_idx=("L", 0))(x), want.sum(0), C128)
    assert S.N.ishape == ("L", "N") and S.N.oshape == ("L", "N1")


def test_stack_errors(key):
    A = jl.Dense(rand(key(), (3, 2)), "MN", "N", "M")
    with pytest.raises(ValueError, match="already contains the new dim 'N'"):
        jl.Stack(A, idim_and_idx=("N", 0))
    with pytest.raises(ValueError, match="out of range"):
        jl.Stack(A, odim_and_idx=("L", 5))
    with pytest.raises(ValueError, match="needs `idim_and_idx`"):
        jl.Stack(A)
    # torchlinops' words for an input without one entry per block along the stacked dim
    horizontal = jl.Stack(A, A, idim_and_idx=("L", 0))
    match = r"Stack Linop expecting input of size 2 .* 'L' \(axis 0 of \(L, N\)\); got input"
    with pytest.raises(ValueError, match=match + r" of shape \(3, 2\), with 3 entries"):
        horizontal(jnp.ones((3, 2)))
    with pytest.raises(ValueError, match="Stack Linop expecting input of size 2"):
        jl.Stack(A, A, odim_and_idx=("L", 0)).H(jnp.ones((3, 3)))


def test_stack_split_data_selects_blocks_like_torchlinops(key):
    A = jl.Dense(rand(key(), (3, 2)), "MN", "N", "M")
    diagonal = jl.Stack(A, A, idim_and_idx=("I", 0), odim_and_idx=("L", 1))  # (I N) -> (M L)
    off_diagonal = ([slice(1, 2), slice(None)], [slice(None), slice(0, 1)])
    assert diagonal.split_data(*off_diagonal, ["a", "b"]) == 0.0
    # the outer stack's dim K is removed before its blocks see the slices: block 1 gets
    # (I=1, N) and (M, L=0), off its diagonal
    outer = jl.Stack(diagonal, diagonal, odim_and_idx=("K", 0))  # (I N) -> (K M L)
    ibatch, obatch = [slice(1, 2), slice(None)], [slice(1, 2), slice(None), slice(0, 1)]
    assert outer.split_data(ibatch, obatch, [["a", "b"], ["c", "d"]]) == [0.0]
    with pytest.raises(TypeError, match=r"block 0 \(Dense\) has no `split_data`"):
        diagonal.split_data([slice(0, 1), slice(None)], [slice(None), slice(0, 1)], ["a", "b"])
    with pytest.raises(ValueError, match=r"`obatch` needs one slice per dim of \(M, L\); got 1"):
        diagonal.split_data(off_diagonal[0], [slice(None)], ["a", "b"])
    with pytest.raises(ValueError, match=r"`data_list` needs one entry per block \(2\); got 1"):
        diagonal.split_data(*off_diagonal, ["a"])


# --------------------------------------------------------------------------- Identity / Zero
def test_identity_shapespec_zero(key):
    x = rand(key(), (3, 2))
    spec = jl.ShapeSpec("NxNy", "KxKy")
    assert spec.oshape == ("Kx", "Ky") and spec.H.oshape == ("Nx", "Ny")
    assert_close(spec(x), x, C128)
    Z = jl.Zero("AN", "AM", sizes={"M": 4, "N": 2})
    assert Z(x).shape == (3, 4) and Z.H(jnp.ones((3, 4))).shape == (3, 2)
    with pytest.raises(ValueError, match="needs the sizes of dims"):
        jl.Zero("N", "M")
    with pytest.raises(ValueError, match="different lengths"):
        jl.Identity("AB", "C")


# --------------------------------------------------------------------------- input checks
def test_wrong_input_rank_and_size(key):
    A = jl.Dense(rand(key(), (3, 2)), "MN", "N", "M")
    with pytest.raises(
        ValueError, match=r"`Dense` received incompatible input of shape .*: expected dims \(N\)"
    ):
        A(jnp.ones((2, 2)))
    with pytest.raises(ValueError, match=r"expected dim N with size 2 .* shape \(5,\)"):
        A(jnp.ones(5))
    with pytest.raises(ValueError, match="expected dim M with size 3"):
        A.H(jnp.ones(2))


def test_64bit_input_without_x64_is_an_error():
    A = jl.Diagonal(jnp.ones(3, jnp.float32), "N")
    jax.config.update("jax_enable_x64", False)
    try:
        with pytest.raises(ValueError, match="silently downcast"):
            A(np.ones(3, np.float64))
        with pytest.raises(ValueError, match="64-bit types are disabled"):
            jl.Diagonal(np.ones(3, np.complex128), "N")
    finally:
        jax.config.update("jax_enable_x64", True)


def test_non_array_input():
    with pytest.raises(TypeError, match="numeric array"):
        jl.Identity("N")(["a", object()])


# --------------------------------------------------------------------------- pytree, repr
def test_repr_prints_operator_tree(key):
    S = jl.Dense(rand(key(), (2, 3, 4)), "CNxNy", "NxNy", "CNxNy")
    text = repr(jl.Diagonal(rand(key(), (4,)), "...") @ S)
    assert text.splitlines() == [
        "Chain((Nx, Ny) -> (C, Nx, Ny))",
        "  Dense((Nx, Ny) -> (C, Nx, Ny))",
        "  Diagonal((C, Nx, Ny) -> (C, Nx, Ny))",
    ]
    assert repr(S.H) == "Dense((C, Nx, Ny) -> (Nx, Ny))"


def test_changing_dims_retraces_but_values_do_not(key):
    traces = []

    @jax.jit
    def f(op, x):
        traces.append(1)
        return op(x)

    x = rand(key(), (3,))
    f(jl.Diagonal(rand(key(), (3,)), "N"), x)
    f(jl.Diagonal(rand(key(), (3,)), "N"), rand(key(), (3,)))
    assert len(traces) == 1
    f(jl.Diagonal(rand(key(), (3,)), "M"), x)
    assert len(traces) == 2


def test_rename_and_structural_equality(key):
    A = jl.Dense(rand(key(), (3, 2)), "MN", "N", "M")
    B = jl.rename(A, {"N": "K"})
    assert B.ishape == ("K",) and B.weightshape == ("M", "K") and B.weight is A.weight
    assert eqx.tree_equal(A.H.H, A)
    assert A.dims == ("N", "M")


def test_private_annotations_are_kept_and_fields_stay_frozen():
    import dataclasses

    A = jl.Dense(np.ones((3, 4)), "M N", "N", "M")
    A._locs_orig = "kept"  # torch code tags its modules so
    assert A._locs_orig == "kept"
    with pytest.raises(dataclasses.FrozenInstanceError):
        A.weight = np.zeros((3, 4))
    with pytest.raises(dataclasses.FrozenInstanceError):
        A.ishape = ("Q",)
    assert not hasattr(jax.tree.map(lambda a: a, A), "_locs_orig")  # not in the pytree
