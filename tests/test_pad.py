"""Pad/Crop, center_pad/center_crop and Truncate/PadDim against numpy and explicit rules."""

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close

import jaxlinops as jl
from jaxlinops.functional import center_crop, center_pad
from jaxlinops.functional._pad import pad_widths


def crand(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def torchlinops_rule(i, p):
    """The centering rule as torchlinops writes it."""
    t = p - i
    if t % 2 == 0:
        return (t // 2, t // 2)
    return (t // 2 + 1, t // 2) if i % 2 else (t // 2, t // 2 + 1)


# --------------------------------------------------------------------- the pad-width rule
def test_pad_widths_follow_the_rule_for_all_parities():
    for i in range(8):
        for p in range(i, i + 8):
            assert pad_widths((i,), (p,)) == (torchlinops_rule(i, p),), (i, p)


def test_pad_widths_examples():
    assert pad_widths((10, 10), (21, 21)) == ((5, 6), (5, 6))
    assert pad_widths((3, 4), (6, 7)) == ((2, 1), (1, 2))


def test_center_pad_example():
    x = jnp.arange(9.0).reshape(3, 3)
    y = np.asarray(center_pad(x, (3, 3), (6, 6)))
    np.testing.assert_array_equal(y[2:5, 2:5], np.arange(9.0).reshape(3, 3))
    assert np.count_nonzero(y) == 8


@pytest.mark.parametrize("im, pad", [((5,), (8,)), ((3, 4), (6, 7)), ((2, 3, 4), (3, 3, 7))])
def test_center_pad_and_crop_match_numpy(im, pad):
    rng = np.random.default_rng(0)
    x = crand(rng, (2, *im))
    widths = [(0, 0)] + [torchlinops_rule(i, p) for i, p in zip(im, pad)]
    want = np.pad(x, widths)
    assert_close(center_pad(jnp.asarray(x), im, pad), want, jnp.complex128)
    y = crand(rng, (2, *pad))
    index = (slice(None),) + tuple(slice(b, b + i) for (b, _), i in zip(widths[1:], im))
    assert_close(center_crop(jnp.asarray(y), pad, im), y[index], jnp.complex128)
    lhs = np.vdot(y, np.asarray(center_pad(jnp.asarray(x), im, pad)))
    rhs = np.vdot(np.asarray(center_crop(jnp.asarray(y), pad, im)), x)
    assert abs(lhs - rhs) <= 1e-10 * abs(lhs)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: center_pad(jnp.zeros((3, 4)), (3, 5), (6, 6)), r"`center_pad`: expected the "),
        (lambda: center_pad(jnp.zeros((3,)), (3, 3), (6, 6)), r"got an array of shape \(3,\)"),
        (lambda: center_pad(jnp.zeros((3,)), (3,), (2,)), r"`center_pad`: each padded size"),
        (lambda: center_pad(jnp.zeros((3,)), (3,), (4, 4)), r"the same number of axes"),
        (lambda: center_crop(jnp.zeros((3,)), (3,), (4,)), r"`center_crop`: each image size"),
        (lambda: pad_widths((-1,), (2,)), r"`pad_widths\(im_size=...\)` .* at least 0; got -1"),
    ],
)
def test_functional_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --------------------------------------------------------------------- Pad and Crop
def test_pad_shapes_and_sizes():
    P = jl.Pad((20, 20), (10, 10))
    assert (P.ishape, P.oshape) == (("...", "Nx", "Ny"), ("...", "Nx1", "Ny1"))
    assert (P.size("Nx"), P.size("Nx1"), P.size("C")) == (10, 20, None)
    Q = jl.Pad((7,), (4,), in_shape="T", out_shape="U", batch_shape="C")
    assert (Q.ishape, Q.oshape) == (("C", "T"), ("C", "U"))
    C = jl.Crop((2, 3), (5, 4))
    assert (C.ishape, C.oshape) == (("...", "Nx", "Ny"), ("...", "Nx1", "Ny1"))
    assert (C.size("Nx"), C.size("Nx1")) == (5, 2)


def test_pad_and_crop_values():
    rng = np.random.default_rng(1)
    x = crand(rng, (2, 3, 4))
    P = jl.Pad((6, 7), (3, 4), batch_shape="C")
    assert_close(P(jnp.asarray(x)), np.pad(x, [(0, 0), (2, 1), (1, 2)]), jnp.complex128)
    y = crand(rng, (2, 6, 7))
    assert_close(P.H(jnp.asarray(y)), y[:, 2:5, 1:5], jnp.complex128)
    C = jl.Crop((3, 4), (6, 7))
    assert_close(C(jnp.asarray(y)), y[:, 2:5, 1:5], jnp.complex128)


def test_pad_and_crop_are_adjoint_operator_classes():
    P = jl.Pad((6, 7), (3, 4), batch_shape="C")
    assert isinstance(P.H, jl.Crop) and isinstance(P.H.H, jl.Pad)
    assert eqx.tree_equal(P.H, jl.Crop((3, 4), (6, 7), "Nx1 Ny1", "Nx Ny", "C"))
    C = jl.Crop((2, 3), (5, 4))
    assert eqx.tree_equal(C, jl.Pad((5, 4), (2, 3), "Nx1 Ny1", "Nx Ny").H)
    assert eqx.tree_equal(C.H.H, C)


def test_pad_normal_is_identity_with_renamed_dims():
    x = crand(np.random.default_rng(2), (2, 3))
    N = jl.Pad((5, 6), (2, 3)).N
    assert isinstance(N, jl.Identity)
    assert (N.ishape, N.oshape) == (("...", "Nx", "Ny"), ("...", "Nx2", "Ny2"))
    assert_close(N(jnp.asarray(x)), x, jnp.complex128)


def test_crop_normal_masks_the_border():
    x = crand(np.random.default_rng(3), (5, 4))
    want = np.zeros_like(x)
    want[1:3, 1:4] = x[1:3, 1:4]  # crop 5 -> 2 starts at 1; 4 -> 3 at 1 (odd image)
    assert_close(jl.Crop((2, 3), (5, 4)).N(jnp.asarray(x)), want, jnp.complex128)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: jl.Pad((4, 4), (3, 5)), r"`Pad`: each padded size must be at least"),
        (lambda: jl.Pad((4,), (3, 3)), r"`Pad`: the image size and padded size need the same"),
        (lambda: jl.Crop((6,), (5,)), r"`Crop`: each image size must be at least the crop"),
        (lambda: jl.Pad((2,) * 4, (1,) * 4), r"`Pad`: default dim names exist for up to 3"),
        (lambda: jl.Pad((4, 4), (3, 3), in_shape="N"), r"`in_shape` must name 2 distinct"),
        (lambda: jl.Pad((4,), (3,), "N", "...")[0], r"`out_shape` must name 1 distinct"),
        (lambda: jl.Pad((4,), (3,), "N", "N"), r"dim 'N' would have size 3 in the input"),
        (lambda: jl.Crop((4,), (4,), "N", "M", "N"), r"dims \['N'\] are both batch and image"),
    ],
)
def test_pad_constructor_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_pad_accepts_same_dim_names_when_sizes_agree():
    P = jl.Pad((4, 6), (4, 3), "Nx Ny", "Nx Ky")
    assert P.oshape == ("...", "Nx", "Ky")


def test_pad_input_size_errors():
    P = jl.Pad((10, 10), (3, 9))
    with pytest.raises(ValueError, match=r"`Pad` expected dim Ny with size 9 .* \(3, 3, 10\)"):
        P(jnp.zeros((3, 3, 10)))
    with pytest.raises(ValueError, match=r"`Crop` expected dim Nx1 with size 10"):
        P.H(jnp.zeros((9, 10)))


# --------------------------------------------------------------------- Truncate and PadDim
def test_truncate_and_paddim_values():
    rng = np.random.default_rng(4)
    x = crand(rng, (2, 6, 3))
    T = jl.Truncate(1, 6, 4, "A N B", "A M B")
    assert_close(T(jnp.asarray(x)), x[:, :4, :], jnp.complex128)
    y = crand(rng, (2, 4, 3))
    assert_close(T.H(jnp.asarray(y)), np.pad(y, [(0, 0), (0, 2), (0, 0)]), jnp.complex128)
    P = jl.PadDim(-1, 3, 5, "...N", "...M")
    assert_close(P(jnp.asarray(x)), np.pad(x, [(0, 0), (0, 0), (0, 2)]), jnp.complex128)
    z = crand(rng, (4, 2, 5))
    assert_close(P.H(jnp.asarray(z)), z[..., :3], jnp.complex128)


def test_truncate_and_paddim_are_adjoint_of_each_other():
    T = jl.Truncate(-1, 6, 4, "AN", "AM")
    assert eqx.tree_equal(T.H, jl.PadDim(-1, 4, 6, "AM", "AN"))
    assert eqx.tree_equal(T.H.H, T)
    assert (T.size("N"), T.size("M"), T.size("A")) == (6, 4, None)
    rng = np.random.default_rng(5)
    x, y = crand(rng, (2, 6)), crand(rng, (2, 4))
    lhs = np.vdot(y, np.asarray(T(jnp.asarray(x))))
    rhs = np.vdot(np.asarray(T.H(jnp.asarray(y))), x)
    assert abs(lhs - rhs) <= 1e-10 * abs(lhs)


def test_truncate_and_paddim_normals():
    x = crand(np.random.default_rng(6), (5, 2))
    T = jl.Truncate(0, 5, 3, "NA", "MA")
    want = x.copy()
    want[3:] = 0
    assert_close(T.N(jnp.asarray(x)), want, jnp.complex128)
    assert T.N.oshape == ("N1", "A")
    N = jl.PadDim(0, 5, 7, "NA", "MA").N
    assert isinstance(N, jl.Identity) and (N.ishape, N.oshape) == (("N", "A"), ("N1", "A"))
    assert_close(N(jnp.asarray(x)), x, jnp.complex128)
    assert jl.PadDim(0, 5, 5, "N", "N").N.oshape == ("N",)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: jl.Truncate(0, 4, 5, "N", "M"), r"`Truncate.*needs 0 <= to_length <= from"),
        (lambda: jl.Truncate(0, 4, -1, "N", "M"), r"got from_length=4, to_length=-1"),
        (lambda: jl.PadDim(0, 5, 4, "N", "M"), r"`PadDim.*needs 0 <= from_length <= to_length"),
        (lambda: jl.PadDim(0, -1, 4, "N", "M"), r"got from_length=-1, to_length=4"),
        (lambda: jl.Truncate(2, 4, 2, "AN", "AM"), r"`dim` must index a named dim of ishape"),
        (lambda: jl.Truncate(0, 4, 2, "...N", "...M"), r"must index a named dim"),
        (lambda: jl.Truncate(1, 4, 2, "...NA", "...MA"), r"must count from the side of ishape"),
        (lambda: jl.PadDim(-2, 2, 4, "N...", "M..."), r"must count from the side of ishape"),
        (lambda: jl.Truncate(0, 4, 2, "AN", "A"), r"ishape and oshape need the same length"),
    ],
)
def test_truncate_and_paddim_constructor_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_truncate_and_paddim_size_errors():
    with pytest.raises(ValueError, match=r"`Truncate` expected dim N with size 6"):
        jl.Truncate(-1, 6, 4, "AN", "AM")(jnp.zeros((2, 5)))
    with pytest.raises(ValueError, match=r"`PadDim` expected dim N with size 3"):
        jl.PadDim(1, 3, 5, "AN", "AM")(jnp.zeros((2, 4)))


@pytest.mark.parametrize(
    "op", [jl.Truncate(1, 5, 3, "A N", "A N"), jl.PadDim(1, 3, 5, "A N", "A N")]
)
def test_truncate_and_paddim_keep_the_resized_name(op):
    """The resized dim may keep its name (torchlinops' `ishape == oshape`): it then has
    one size per side, so `size` reports none and the lengths are checked on application;
    the values match numpy, and the adjoint swaps the lengths."""
    rng = np.random.default_rng(7)
    n_in, n_out = op.from_length, op.to_length
    x, y = crand(rng, (2, n_in)), crand(rng, (2, n_out))
    keep = min(n_in, n_out)
    want = np.zeros((2, n_out), complex)
    want[:, :keep] = x[:, :keep]
    assert_close(op(jnp.asarray(x)), want, jnp.complex128)
    back = np.zeros((2, n_in), complex)
    back[:, :keep] = y[:, :keep]
    assert_close(op.H(jnp.asarray(y)), back, jnp.complex128)
    assert (op.size("N"), op.size("A")) == (None, None)
    assert (op.H.from_length, op.H.to_length) == (n_out, n_in)
    assert_close(op.N(jnp.asarray(x)), op.H(op(jnp.asarray(x))), jnp.complex128)
    name = op.name
    with pytest.raises(
        ValueError, match=rf"`{name}\(dim=1, .*\)` expected its input to have length {n_in}"
    ):
        op(jnp.zeros((2, n_in + 1)))
    with pytest.raises(ValueError, match=rf"expected its adjoint's input to have length {n_out}"):
        op.H.H.apply_adjoint(jnp.zeros((2, n_out + 1)))
    with pytest.raises(ValueError, match=r"Cannot slice along 'N', the dim it resizes"):
        op.split({"N": slice(0, 2)})
    assert eqx.tree_equal(op.split({"A": slice(0, 1)}), op)


# --------------------------------------------------------------------- torchlinops' pad lists
@pytest.mark.parametrize("grid, padded", [((10, 10), (20, 20)), ((10, 11), (21, 20)), ((7,), (8,))])
def test_pad_lists_match_torchlinops(grid, padded):
    """`pad_to_size` is torch's `F.pad` order (last axis first) of `pad_widths`, and
    `crop_slice_from_pad` undoes it; both as torchlinops' own functions."""
    ref = pytest.importorskip("torchlinops.linops.pad_last")
    from jaxlinops.linops.pad_last import crop_slice_from_pad, pad_to_scale, pad_to_size

    pad = pad_to_size(grid, padded)
    assert pad == ref.pad_to_size(grid, padded)
    assert crop_slice_from_pad(pad) == ref.crop_slice_from_pad(pad)
    assert pad_to_scale(grid, 1.5) == ref.pad_to_scale(grid, 1.5)
    x = np.arange(np.prod(grid)).reshape(grid)
    widths = [tuple(pad[2 * i : 2 * i + 2]) for i in range(len(grid))][::-1]
    assert np.array_equal(np.pad(x, widths)[tuple(crop_slice_from_pad(pad))], x)
    with pytest.raises(ValueError, match=r"`pad_to_size`: cannot pad from size"):
        pad_to_size(grid, (*padded, 3))


def test_pad_names_leading_batch_dims_in_in_shape():
    """torchlinops' `Pad((20, 20), (10, 10), Dim("AXY"))`: the dims before the image dims
    are batch dims (kept by name), so a tile along them is the same operator."""
    P = jl.Pad((20, 20), (10, 10), ("A", "X", "Y"))
    assert (P.ishape, P.oshape) == (("...", "A", "X", "Y"), ("...", "A", "X1", "Y1"))
    assert (P.in_im_shape, P.out_im_shape, P.in_im_size, P.out_im_size) == (
        ("X", "Y"),
        ("X1", "Y1"),
        (10, 10),
        (20, 20),
    )
    x = crand(np.random.default_rng(8), (2, 10, 10))
    assert_close(
        P.split({"A": slice(0, 1)})(jnp.asarray(x[:1])),
        np.pad(x[:1], [(0, 0), (5, 5), (5, 5)]),
        jnp.complex128,
    )
    assert jl.Pad((20, 20), (10, 10), "AXY", "ABC").oshape == ("...", "A", "B", "C")
    with pytest.raises(ValueError, match=r"`out_shape` must repeat them, got \(Z, B, C\)"):
        jl.Pad((20, 20), (10, 10), "AXY", "ZBC")
