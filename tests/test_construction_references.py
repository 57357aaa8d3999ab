"""Every construction operator's forward and adjoint against an independent numpy reference,
at exactly the option sets of the contract factories (tests/factories/).

Each reference replays the factory's random draws (same `KeyGen` order) and computes the
operator with plain numpy (loops, slicing, `np.pad`, `np.einsum`); the adjoint is checked
against the conjugate transpose of the reference's matrix, built column by column.
"""

import itertools

import jax.numpy as jnp
import numpy as np
import pytest
from factories.conv_simple import MATRIX
from helpers import OPERATOR_FACTORIES, KeyGen, assert_close, rand, real_dtype


def widths(i, p):
    """torchlinops' centering rule: the image's centre `i // 2` lands on `p // 2`."""
    t = p - i
    if t % 2 == 0:
        return (t // 2, t // 2)
    return (t // 2 + 1, t // 2) if i % 2 else (t // 2, t // 2 + 1)


def center_slices(small, big):
    return tuple(slice(widths(s, b)[0], widths(s, b)[0] + s) for s, b in zip(small, big))


def crop(x, small, big):
    return x[(Ellipsis, *center_slices(small, big))]


def pad(x, small, big):
    out = np.zeros(x.shape[: x.ndim - len(big)] + tuple(big), x.dtype)
    out[(Ellipsis, *center_slices(small, big))] = x
    return out


def unfold(x, block, stride, mask=None):
    """Blocks by explicit loops: out[..., k, p] = x[..., k * stride + p]."""
    d = len(block)
    im = x.shape[-d:]
    nb = tuple((i - b) // s + 1 for i, b, s in zip(im, block, stride))
    out = np.zeros(x.shape[:-d] + nb + tuple(block), x.dtype)
    for k in itertools.product(*map(range, nb)):
        for p in itertools.product(*map(range, block)):
            src = tuple(kk * s + pp for kk, s, pp in zip(k, stride, p))
            out[(Ellipsis, *k, *p)] = x[(Ellipsis, *src)]
    return out if mask is None else out[..., mask]


def fold(y, im, block, stride, mask=None):
    d = len(block)
    if mask is not None:
        full = np.zeros(y.shape[:-1] + tuple(block), y.dtype)
        full[..., mask] = y
        y = full
    nb = y.shape[y.ndim - 2 * d : y.ndim - d]
    out = np.zeros(y.shape[: y.ndim - 2 * d] + tuple(im), y.dtype)
    for k in itertools.product(*map(range, nb)):
        for p in itertools.product(*map(range, block)):
            dst = tuple(kk * s + pp for kk, s, pp in zip(k, stride, p))
            out[(Ellipsis, *dst)] += y[(Ellipsis, *k, *p)]
    return out


def conv(x, h, circular, adjoint=False):
    r"""$y[n] = \sum_j h[j]\, x[n - j + c]$, $c = k // 2$ after padding even axes to odd,
    by loops; with `adjoint`, the transposed loop with $\bar h$."""
    h = np.pad(h, [(0, 1 - k % 2) for k in h.shape])
    d = h.ndim
    grid = x.shape[-d:]
    y = np.zeros(x.shape, np.result_type(x, h))
    for n in itertools.product(*map(range, grid)):
        for j in itertools.product(*map(range, h.shape)):
            src = [nn - jj + k // 2 for nn, jj, k in zip(n, j, h.shape)]
            if circular:
                src = [s % g for s, g in zip(src, grid)]
            elif any(s < 0 or s >= g for s, g in zip(src, grid)):
                continue
            if adjoint:
                y[(Ellipsis, *src)] += np.conj(h[j]) * x[(Ellipsis, *n)]
            else:
                y[(Ellipsis, *n)] += h[j] * x[(Ellipsis, *src)]
    return y


def matrix(ref, xshape):
    """The reference's matrix, column by column, and its output shape."""
    cols = []
    for j in range(int(np.prod(xshape))):
        e = np.zeros(int(np.prod(xshape)), complex)
        e[j] = 1
        out = np.asarray(ref(e.reshape(xshape)))
        cols.append(out.ravel())
    return np.stack(cols, axis=1), out.shape


# name -> (getkey, dtype) -> numpy reference of the factory's operator.
# Each replays the factory's `getkey()` draws in order.
REFERENCES = {
    # -- fft_pad.py
    "pad": lambda g, t: lambda x: pad(x, (3, 4), (6, 5)),
    "crop": lambda g, t: lambda x: crop(x, (2, 3), (5, 4)),
    "crop_normal": lambda g, t: lambda x: pad(crop(x, (2, 3), (5, 4)), (2, 3), (5, 4)),
    "truncate": lambda g, t: lambda x: x[..., :2, :],
    "truncate_normal": lambda g, t: lambda x: np.concatenate([x[:3], 0 * x[3:]]),
    "paddim": lambda g, t: lambda x: np.pad(x, [(0, 0), (0, 2)]),
    # -- blocks.py
    "blocks_1d_mask": lambda g, t: lambda x: unfold(x, (3,), (2,), np.array([1, 0, 1], bool)),
    "blocks_2d_batch": lambda g, t: lambda x: unfold(x, (2, 2), (2, 1)),
    "blocks_to_array": lambda g, t: (
        lambda y: fold(y, (4, 4), (2, 2), (1, 1), np.array([[1, 0], [1, 1]], bool))
    ),
    # -- compat.py: torchlinops' call forms
    "blocks_to_array_torch_order": lambda g, t: lambda y: fold(y, (5, 4), (3, 2), (2, 2)),
    "pad_last": lambda g, t: lambda x: pad(x, (3, 4), (6, 7)),
    "sumreduce_H_no_lengths": lambda g, t: lambda y: y[:, None, :],
    "sumreduce_N_no_lengths": lambda g, t: (
        lambda x: np.repeat(x.sum(-2, keepdims=True), x.shape[-2], axis=-2)
    ),
    "dense_full_broadcast_dim": lambda g, t: _einsum("bmn,bn->bm", rand(g(), (2, 3, 4), t)),
    "breakpoint_callback": lambda g, t: lambda x: x,
    "sleep_renamed": lambda g, t: lambda x: x,
    "custom_scale": lambda g, t: _times(rand(g(), (2, 5), t)),
    "custom_scale_normal": lambda g, t: _times(np.abs(np.asarray(rand(g(), (2, 5), t))) ** 2),
    # -- conv_simple.py: Convolution
    "conv_zeros_1d": lambda g, t: _conv(rand(g(), (3,), t), False),
    "conv_zeros_2d_batch": lambda g, t: _conv(rand(g(), (3, 2), t), False),
    "conv_circular_2d_real_kernel": lambda g, t: _conv(rand(g(), (3, 3), real_dtype(t)), True),
    "conv_normal_mode_conv": lambda g, t: _conv(rand(g(), (3, 2), t), True),
    "conv_normal_mode_fft": lambda g, t: _conv(rand(g(), (2, 3), t), True),
    "conv_normal_conv_operator": lambda g, t: _conv(rand(g(), (4,), t), True, normal=True),
    "conv_normal_fft_operator": lambda g, t: _conv(
        rand(g(), (3, 2), real_dtype(t)), True, normal=True
    ),
    "conv_adjoint": lambda g, t: _conv(rand(g(), (2, 3), t), False, adjoint=True),
    # -- conv_simple.py: SimpleLinop and ToDevice
    "simple_given_adjoint": lambda g, t: lambda x: np.cumsum(x, -1),
    "simple_given_normal": lambda g, t: lambda x: np.cumsum(x, -1),
    "simple_derived_adjoint": lambda g, t: lambda x: np.cumsum(x, -1),
    "simple_derived_adjoint_sizes": lambda g, t: lambda x: x[..., 1:] - x[..., :-1],
    "simple_adjoint_of_derived": lambda g, t: lambda y: y @ MATRIX.conj(),
    "to_device": lambda g, t: lambda x: x,
    "to_device_adjoint_default": lambda g, t: lambda x: x,
    # -- sampling_einops.py: einops operators
    "rearrange_merge": lambda g, t: lambda x: x.reshape(2, 12),
    "rearrange_split_transpose": lambda g, t: lambda x: x.reshape(2, 3, 4).transpose(2, 1, 0),
    "rearrange_ellipsis": lambda g, t: lambda x: np.swapaxes(x, -1, -2)[..., None, :],
    "rearrange_H": lambda g, t: lambda y: y.transpose(2, 1, 0).reshape(6, 4),
    "sumreduce": lambda g, t: lambda x: x.sum(1),
    "sumreduce_ellipsis": lambda g, t: lambda x: x.sum((-3, -1)),
    "sumreduce_H": lambda g, t: lambda y: np.repeat(y[:, None, :], 3, axis=1),
    "repeat": lambda g, t: lambda x: np.repeat(x[..., None], 3, axis=-1),
    "repeat_ellipsis": lambda g, t: lambda x: np.tile(x[:, :, None, :, None], (1, 1, 2, 1, 3)),
    "repeat_broadcast": lambda g, t: lambda x: np.repeat(x[:, None, :, None], 2, axis=1),
    "repeat_H": lambda g, t: lambda y: y.sum(-1),
    # -- core.py: Dense and Diagonal
    "dense": lambda g, t: _matmul(np.asarray(rand(g(), (5, 4), t))),
    "dense_batched": lambda g, t: _einsum("bmn,cbn->cbm", rand(g(), (3, 1, 2, 4), t)[:, 0]),
    "dense_inferred": lambda g, t: _einsum("bmn,bn->bm", rand(g(), (2, 3, 4), t)),
    "dense_sense": lambda g, t: _einsum("cxy,xy->cxy", rand(g(), (3, 4, 5), t)),
    "dense_repeated_dim": lambda g, t: _einsum("cmm,m->cm", rand(g(), (2, 3, 3), t)),
    "diagonal": lambda g, t: _times(rand(g(), (3, 4), t)),
    "diagonal_broadcast": lambda g, t: _times(rand(g(), (3, 1), t)),
    "diagonal_real_weight": lambda g, t: _times(rand(g(), (6,), real_dtype(t))),
}


def _conv(h, circular, adjoint=False, normal=False):
    h = np.asarray(h)
    if normal:
        return lambda x: conv(conv(x, h, circular), h, circular, adjoint=True)
    return lambda x: conv(x, h, circular, adjoint)


def _matmul(w):
    return lambda x: w @ x


def _einsum(spec, w):
    w = np.asarray(w)
    return lambda x: np.einsum(spec, w, x)


def _times(w):
    w = np.asarray(w)  # numpy broadcasting: the weight right-aligns with the input
    return lambda x: w * x


def test_every_construction_factory_has_a_reference():
    mine = ("pad", "crop", "truncate", "paddim", "blocks", "conv", "simple", "to_device")
    mine += ("rearrange", "sumreduce", "repeat", "dense", "diagonal")
    mine += ("breakpoint", "sleep", "custom")
    names = {n for n in OPERATOR_FACTORIES if n.startswith(mine)}
    assert names == set(REFERENCES), names ^ set(REFERENCES)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.complex128], ids=lambda d: jnp.dtype(d).name)
@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_forward_and_adjoint_match_the_numpy_reference(name, dtype):
    op, xshape = OPERATOR_FACTORIES[name](KeyGen(0), dtype)
    ref = REFERENCES[name](KeyGen(0), dtype)
    x = rand(1, xshape, dtype)
    want = ref(np.asarray(x).astype(complex))
    assert_close(op(x), want, dtype)
    M, oshape = matrix(ref, xshape)
    y = rand(2, oshape, dtype)
    want = (M.conj().T @ np.asarray(y).ravel()).reshape(xshape)
    assert_close(op.H(y), want, dtype)
    assert_close(op.apply_adjoint(y), want, dtype)  # the raw method, which chains call
