"""Bad inputs to operator constructors, dims parsing and the pad/blocks kernels."""

from __future__ import annotations

import importlib.util

import jax
import jax.numpy as jnp
import numpy as np

import jaxlinops as jl
from jaxlinops.functional import (
    array_to_blocks,
    blocks_to_array,
    center_crop,
    center_pad,
    get_nblocks,
)

from . import Raises

F32 = np.float32
X34 = np.ones((3, 4), F32)
MASK = np.array([True, False, True])


def dense():
    return jl.Dense(np.ones((2, 3), F32), "M N", "N", "M")


def cumsum(x):
    return jnp.cumsum(x, axis=-1)


def traced_pad(n):
    return jl.Pad((n,), (3,)).pad_im_size


def traced_blocks(n):
    return jl.ArrayToBlocks((n,), (2,)).grid_size


def _cases(prefix: str, rows) -> list[Raises]:
    return [Raises(f"{prefix}-{name}", call, exc, match) for name, call, exc, match in rows]


CASES = _cases(
    "construction",
    [
        # ---------------------------------------------------------------- Dim / as_dims
        ("dim-comma", lambda: jl.Dim("C, Nx"), ValueError, r"Invalid dim 'C,'.*dim name is"),
        ("dim-hyphen", lambda: jl.Dim("C Nx-1"), ValueError, r"Invalid dim 'Nx-1'.*'\(k\)'"),
        ("dim-digit-first", lambda: jl.Dim("1C Nx"), ValueError, r"Invalid dim '1C'"),
        ("dim-capitals-comma", lambda: jl.Dim("C,Nx"), ValueError, r"capital letter.*','"),
        ("dim-not-a-string", lambda: jl.Dim(3), TypeError, r"`Dim\(s\)` expects a string"),
        ("dim-two-ellipses", lambda: jl.Dim("... A ..."), ValueError, r"'\.\.\.' at most once"),
        ("dim-bad-wildcard", lambda: jl.Dim("(a) B"), ValueError, r"Invalid wildcard dim"),
        (
            "as-dims-sequence-comma",
            lambda: jl.Diagonal(np.ones(3), ("C,", "Nx")),
            ValueError,
            r"Invalid dim 'C,' in \('C,', 'Nx'\)",
        ),
        (
            "as-dims-not-a-string",
            lambda: jl.Identity(("A", 3)),
            TypeError,
            r"Each dim must be a non-empty string; got 3",
        ),
        # ---------------------------------------------------------------- Diagonal
        (
            "diagonal-weight-does-not-broadcast",
            lambda: jl.Diagonal(np.ones(3, F32))(X34),
            ValueError,
            r"`Diagonal\(\(\.\.\.\)\)`: the weight of shape \(3,\) does not broadcast to the "
            r"input of shape \(3, 4\)",
        ),
        (
            "diagonal-weight-larger-than-input-axis-one",
            lambda: jl.Diagonal(np.ones((3, 4), F32))(np.ones((3, 1), F32)),
            ValueError,
            r"weight of shape \(3, 4\) does not broadcast to the input of shape \(3, 1\)",
        ),
        (
            "diagonal-weight-more-axes-than-dims",
            lambda: jl.Diagonal(np.ones((2, 3)), "C ..."),
            ValueError,
            r"`Diagonal\(weight=...\)` has 2 axes .* names only 1 dims",
        ),
        (
            "diagonal-int8-overflow",
            lambda: jl.Diagonal(np.array([100], np.int8))(np.array([100], np.int8)),
            TypeError,
            r"`Diagonal` would compute in int8",
        ),
        (
            "diagonal-bool-data",
            lambda: jl.Diagonal(np.array([True, False]))(np.array([True, True])),
            TypeError,
            r"`Diagonal` would compute in bool",
        ),
        (
            "diagonal-broadcast-dim-not-size-one",
            lambda: jl.Diagonal(np.ones((3, 2)), "A B", broadcast_dims="B"),
            ValueError,
            r"broadcast dim 'B' needs a size-1 weight axis; got size 2",
        ),
        (
            "diagonal-broadcast-dim-unknown",
            lambda: jl.Diagonal(np.ones(3), "A", broadcast_dims="B"),
            ValueError,
            r"broadcast dim 'B' is not in ioshape \(A\)",
        ),
        (
            "diagonal-string-weight",
            lambda: jl.Diagonal(np.array(["a", "b"], object)),
            TypeError,
            r"`Diagonal\(weight=...\)` expects a numeric array",
        ),
        # ---------------------------------------------------------------- Dense
        (
            "dense-weight-rank",
            lambda: jl.Dense(np.ones((3, 4)), "M N K", "N K", "M"),
            ValueError,
            r"`Dense\(\(M, N, K\).*weight has 2 axes .* weightshape names 3 dims",
        ),
        (
            "dense-some-shapes-only",
            lambda: jl.Dense(np.ones((3, 4)), "M N"),
            ValueError,
            r"`Dense` takes weightshape, ishape and oshape together",
        ),
        (
            "dense-repeated-dim",
            lambda: jl.Dense(np.ones((3, 4)), "M N", "N N", "M"),
            ValueError,
            r"ishape repeats a dim",
        ),
        (
            "dense-stray-input-dim",
            lambda: jl.Dense(np.ones((3, 4)), "M N", "N K", "M"),
            ValueError,
            r"input dim 'K' is in neither weightshape nor oshape",
        ),
        (
            "dense-inferred-1d",
            lambda: jl.Dense(np.ones(3)),
            ValueError,
            r"`Dense\(weight\)` infers shapes only for a weight at least 2D",
        ),
        (
            "dense-einstr",
            lambda: jl.Dense.from_einstr(np.ones((3, 4)), "MN->M"),
            ValueError,
            r"`Dense.from_einstr` expects 'weightshape,ishape->oshape'",
        ),
        (
            "dense-int-overflow",
            lambda: jl.Dense(np.full((1, 2), 100, np.int8), "M N", "N", "M")(
                np.array([100, 100], np.int8)
            ),
            TypeError,
            r"`Dense` would compute in int8",
        ),
        (
            "dense-wrong-input-size",
            lambda: jl.Dense(np.ones((3, 4), F32), "M N", "N", "M")(np.ones(5, F32)),
            ValueError,
            r"`Dense` expected dim N with size 4",
        ),
        # ---------------------------------------------------------------- Scalar, Identity
        (
            "scalar-array-weight",
            lambda: jl.Scalar(np.ones(3)),
            ValueError,
            r"`Scalar\(weight=...\)` expects a 0-d weight",
        ),
        (
            "identity-wrong-rank",
            lambda: jl.Identity("A B")(np.ones(3, F32)),
            ValueError,
            r"`Identity` received incompatible input of shape .*: expected dims \(A, B\)",
        ),
        (
            "identity-shapes-of-different-lengths",
            lambda: jl.Identity("A B", "C"),
            ValueError,
            r"`Identity` maps each input dim to one output dim",
        ),
        (
            "shapespec-shapes-of-different-lengths",
            lambda: jl.ShapeSpec("A B", "C"),
            ValueError,
            r"ishape \(A, B\) and oshape \(C\) of different lengths",
        ),
        (
            "zero-unknown-size",
            lambda: jl.Zero("A N", "A M", sizes={"M": 3}),
            ValueError,
            r"`Zero\(\(A, N\) -> \(A, M\)\)` needs the sizes of dims \['N'\]",
        ),
        # ---------------------------------------------------------------- FFT
        ("fft-ndim-zero", lambda: jl.FFT(0), ValueError, r"`FFT\(ndim=...\)` must be a positive"),
        ("fft-ndim-float", lambda: jl.FFT(1.5), ValueError, r"`FFT\(ndim=...\)`.* got 1.5"),
        ("fft-norm", lambda: jl.FFT(2, norm="bogus"), ValueError, r"`FFT\(norm=...\)` must be"),
        (
            "fft-grid-shapes",
            lambda: jl.FFT(2, grid_shapes=("N", "K")),
            ValueError,
            r"`FFT\(ndim=2, grid_shapes=...\)` needs 2 primal and 2 dual dims",
        ),
        (
            "fft-input-rank",
            lambda: jl.FFT(2)(np.ones(3, F32)),
            ValueError,
            r"`FFT` received incompatible input of shape .*: "
            r"expected dims \(\.\.\., Nx, Ny\) \(at least 2 axes\)",
        ),
        # ---------------------------------------------------------------- Concat / Stack
        ("concat-empty", lambda: jl.Concat(idim="N"), ValueError, r"`Concat` needs at least one"),
        (
            "concat-not-a-linop",
            lambda: jl.Concat(dense(), 3, idim="N"),
            TypeError,
            r"`Concat` takes NamedLinops; argument 1 is a int",
        ),
        (
            "concat-unknown-idim",
            lambda: jl.Concat(dense(), dense(), idim="Q"),
            ValueError,
            r"`Concat`: dim 'Q' is not in the children's ishape",
        ),
        (
            "concat-no-dim",
            lambda: jl.Concat(dense(), dense()),
            ValueError,
            r"`Concat` needs `idim`, `odim` or both",
        ),
        (
            "concat-wrong-input-size",
            lambda: jl.Concat(dense(), dense(), idim="N")(np.ones(5, F32)),
            ValueError,
            r"`Concat` expected dim N with size 6",
        ),
        (
            "stack-index-out-of-range",
            lambda: jl.Stack(dense(), dense(), idim_and_idx=("L", 5)),
            ValueError,
            r"`Stack`: index 5 for the new dim 'L' is out of range",
        ),
        (
            "stack-existing-dim",
            lambda: jl.Stack(dense(), dense(), odim_and_idx=("M", 0)),
            ValueError,
            r"`Stack`: the children's shape \(M\) already contains the new dim 'M'",
        ),
        # ---------------------------------------------------------------- Pad / Crop
        (
            "pad-non-integral",
            lambda: jl.Pad((7.9,), (3,)),
            ValueError,
            r"`Pad\(pad_im_size=...\)` expects integer sizes; got 7.9, which is not integral",
        ),
        (
            "pad-traced-size",
            lambda: jax.jit(traced_pad)(8),
            TypeError,
            r"`Pad\(pad_im_size=...\)` needs concrete sizes known at trace time",
        ),
        (
            "pad-size-is-a-string",
            lambda: jl.Pad("8", (3,)),
            TypeError,
            r"`Pad\(pad_im_size=...\)` expects a sequence of integer sizes",
        ),
        (
            "pad-bool-size",
            lambda: jl.Pad((True,), (1,)),
            TypeError,
            r"`Pad\(pad_im_size=...\)` expects integer sizes; got True",
        ),
        (
            "pad-smaller-than-image",
            lambda: jl.Pad((2,), (3,)),
            ValueError,
            r"`Pad`: each padded size must be at least the image size",
        ),
        (
            "crop-non-integral",
            lambda: jl.Crop((2.5,), (5,)),
            ValueError,
            r"`Crop\(crop_im_size=...\)` expects integer sizes; got 2.5",
        ),
        (
            "crop-negative",
            lambda: jl.Crop((2,), (-5,)),
            ValueError,
            r"`Crop\(im_size=...\)` expects sizes of at least 0; got -5",
        ),
        (
            "center-pad-non-integral",
            lambda: center_pad(X34, (3, 4), (6, 4.5)),
            ValueError,
            r"`center_pad\(pad_im_size=...\)` expects integer sizes; got 4.5",
        ),
        (
            "center-crop-wrong-trailing-shape",
            lambda: center_crop(X34, (3, 5), (2, 2)),
            ValueError,
            r"`center_crop`: expected the last 2 axes of the input to have sizes \(3, 5\)",
        ),
        # ---------------------------------------------------------------- Truncate / PadDim
        (
            "truncate-non-integral",
            lambda: jl.Truncate(0, 5.5, 3, "N", "M"),
            ValueError,
            r"`Truncate\(from_length=...\)` expects integer sizes; got 5.5",
        ),
        (
            "paddim-non-integral-dim",
            lambda: jl.PadDim(0.5, 3, 5, "N", "M"),
            ValueError,
            r"`PadDim\(dim=...\)` expects integer sizes; got 0.5",
        ),
        (
            "paddim-shrinks",
            lambda: jl.PadDim(0, 5, 3, "N", "M"),
            ValueError,
            r"`PadDim.*needs 0 <= from_length <= to_length",
        ),
        # ---------------------------------------------------------------- blocks
        (
            "blocks-non-integral-grid",
            lambda: jl.ArrayToBlocks((4.5,), (2,)),
            ValueError,
            r"`ArrayToBlocks\(grid_size=...\)` expects integer sizes; got 4.5",
        ),
        (
            "blocks-traced-grid",
            lambda: jax.jit(traced_blocks)(8),
            TypeError,
            r"`ArrayToBlocks\(grid_size=...\)` needs concrete sizes",
        ),
        (
            "blocks-to-array-non-integral-stride",
            lambda: jl.BlocksToArray((5,), (2,), (1.5,)),
            ValueError,
            r"`BlocksToArray\(stride=...\)` expects integer sizes; got 1.5",
        ),
        (
            "blocks-mask-not-bool",
            lambda: jl.ArrayToBlocks((5,), (3,), mask=np.ones(3)),
            TypeError,
            r"`ArrayToBlocks`: `mask` must be a boolean array",
        ),
        (
            "blocks-block-larger-than-grid",
            lambda: jl.BlocksToArray((3,), (4,)),
            ValueError,
            r"`BlocksToArray`: the block size \(4,\) is larger than the array size \(3,\)",
        ),
        (
            "array-to-blocks-non-integral-block",
            lambda: array_to_blocks(X34, (2, 2.5)),
            ValueError,
            r"`array_to_blocks\(block_(size|shape)=...\)` expects integer sizes; got 2.5",
        ),
        (
            "array-to-blocks-scalar-block",
            lambda: array_to_blocks(X34, 2),
            TypeError,
            r"`array_to_blocks\(block_(size|shape)=...\)` expects a sequence of integer sizes",
        ),
        (
            "blocks-to-array-non-integral-size",
            lambda: blocks_to_array(np.ones((2, 3), F32), (4.5,), (3,)),
            ValueError,
            r"`blocks_to_array\(im_size=...\)` expects integer sizes; got 4.5",
        ),
        (
            "blocks-to-array-int8",
            lambda: blocks_to_array(np.ones((2, 3), np.int8), (4,), (3,)),
            TypeError,
            r"`blocks_to_array` would compute in int8",
        ),
        (
            "get-nblocks-zero-stride",
            lambda: get_nblocks((5,), (2,), (0,)),
            ValueError,
            r"`get_nblocks`: sizes and strides must be positive",
        ),
        # ---------------------------------------------------------------- Convolution
        (
            "conv-bad-padding-mode",
            lambda: jl.Convolution(np.ones(3), padding_mode="reflect"),
            ValueError,
            r"`Convolution\(padding_mode=...\)` must be one of",
        ),
        (
            "conv-normal-mode-needs-circular",
            lambda: jl.Convolution(np.ones(3), normal_mode="fft").N,
            ValueError,
            r"normal_mode='fft'\)`.N: FFT normal mode only supports circular padding",
        ),
        (
            "conv-4d-kernel",
            lambda: jl.Convolution(np.ones((2, 2, 2, 2))),
            ValueError,
            r"`Convolution\(kernel=...\)` must have 1 to 3 axes",
        ),
        (
            "conv-grid-dims-mismatch",
            lambda: jl.Convolution(np.ones((3, 3)), in_grid_shape="XYZ"),
            ValueError,
            r"one dim per trailing kernel axis \(at most 2\)",
        ),
        (
            "conv-int-overflow",
            lambda: jl.Convolution(np.full(3, 100, np.int8))(np.full(5, 100, np.int8)),
            TypeError,
            r"`Convolution` would compute in int8",
        ),
        (
            "conv-circular-kernel-larger-than-grid",
            lambda: jl.Convolution(np.ones(7, F32), padding_mode="circular")(np.ones(2, F32)),
            ValueError,
            r"`Convolution`: with circular padding the grid_sizes must be at least the kernel's",
        ),
        # ---------------------------------------------------------------- einops
        (
            "rearrange-non-integral-length",
            lambda: jl.Rearrange("(a b) c", "a b c", "AB C", "A B C", {"a": 2.5}),
            ValueError,
            r"`Rearrange\(axes_lengths=...\)` expects integer sizes; got 2.5",
        ),
        (
            "rearrange-bad-pattern",
            lambda: jl.Rearrange("a (b", "a b", "A B", "A B"),
            ValueError,
            r"`Rearrange\(ipattern=...\)`: unclosed '\('",
        ),
        (
            "sumreduce-not-a-subsequence",
            lambda: jl.SumReduce("A B", "B A"),
            ValueError,
            r"`SumReduce`: `oshape` must be `ishape` with at least one dim removed",
        ),
        (
            "sumreduce-non-integral-length",
            lambda: jl.SumReduce("A B", "A", {"B": 3.5}),
            ValueError,
            r"`SumReduce\(axes_lengths=...\)` expects integer sizes; got 3.5",
        ),
        (
            "repeat-non-integral",
            lambda: jl.Repeat({"C": 2.5}, "A", "A C"),
            ValueError,
            r"`Repeat\(n_repeats=...\)` expects integer sizes; got 2.5",
        ),
        (
            "repeat-missing-length",
            lambda: jl.Repeat({}, "A", "A C"),
            ValueError,
            r"`Repeat`: `n_repeats` must give the length of every new dim; missing \['C'\]",
        ),
        # ---------------------------------------------------------------- SimpleLinop
        (
            "simple-not-callable",
            lambda: jl.SimpleLinop("cumsum"),
            TypeError,
            r"`SimpleLinop\(forward=...\)` expects a function",
        ),
        (
            "simple-non-integral-size",
            lambda: jl.SimpleLinop(cumsum, ishape="N", oshape="M", sizes={"N": 4.5}),
            ValueError,
            r"`SimpleLinop\(sizes=...\)` expects integer sizes; got 4.5",
        ),
        (
            "simple-sizes-not-a-mapping",
            lambda: jl.SimpleLinop(cumsum, ishape="N", oshape="M", sizes=[("N", 4)]),
            TypeError,
            r"`SimpleLinop\(sizes=...\)` expects a mapping",
        ),
        (
            "simple-cannot-derive-adjoint",
            lambda: jl.SimpleLinop(cumsum, ishape="N", oshape="M"),
            ValueError,
            r"cannot derive its adjoint: the sizes of input dims \['N'\] are unknown",
        ),
        # ---------------------------------------------------------------- ToDevice
        (
            "todevice-string-device",
            lambda: jl.ToDevice("cpu", None),
            TypeError,
            r"`ToDevice\(idevice=...\)` expects a jax.Device",
        ),
        # ------------------------------------------- torchlinops call forms (compat)
        (
            "compat-fft-norm-at-centered-position",
            lambda: jl.FFT(2, None, None, "ortho"),
            TypeError,
            r"`FFT\(centered=...\)` expects a bool; got 'ortho'",
        ),
        (
            "compat-from-mask-dims-as-input-size",
            lambda: jl.Sampling.from_mask(MASK, "K"),
            TypeError,
            r"`Sampling.from_mask.*second argument is the grid size `input_size`",
        ),
        (
            "compat-from-mask-input-size-too-small",
            lambda: jl.Sampling.from_mask(MASK, (2,)),
            ValueError,
            r"`Sampling.from_mask`: `input_size` .* got input_size \(2,\)",
        ),
        (
            "compat-prep-locs-pad-mode",
            lambda: jl.NUFFT.prep_locs(np.zeros((3, 1)), (4,), (5,), "edge"),
            ValueError,
            r"`NUFFT.prep_locs`: Unrecognized padding mode 'edge'; expected 'circular' or 'zero'",
        ),
        (
            "compat-prep-locs-ndim",
            lambda: jl.SamplingNUFFT.prep_locs(np.zeros((3, 2)), (4,), (5,)),
            ValueError,
            r"`SamplingNUFFT.prep_locs`: locs must have shape \[..., D\]",
        ),
        (
            "compat-prep-locs-padded-size",
            lambda: jl.NUFFT.prep_locs(np.zeros((3, 1)), (4,), (5.5,)),
            ValueError,
            r"`NUFFT.prep_locs\(padded_size=...\)`",
        ),
        (
            "compat-skip-prep-locs-oversamp",
            lambda: jl.NUFFT(np.zeros((3, 1)), (4,), "K", oversamp="2", skip_prep_locs=True),
            TypeError,
            r"`NUFFT`: oversamp must be a real number",
        ),
        (
            "compat-fast-sampling-nufft-phase-placement",
            lambda: jl.FastSamplingNUFFT(np.zeros((3, 1)), (4,), "K", phase_placement="x"),
            ValueError,
            r"`FastSamplingNUFFT\(phase_placement=...\)` must be one of",
        ),
        (
            "compat-interpolate-spline-beta-not-a-number",
            lambda: jl.Interpolate(
                np.zeros((3, 1)), (4,), width=2.0, kernel="spline", kernel_params={"beta": None}
            ),
            TypeError,
            r"`Interpolate`: kernel_params\['beta'\] must be a real number",
        ),
        (
            "compat-interpolate-spline-unknown-param",
            lambda: jl.Interpolate(
                np.zeros((3, 1)), (4,), width=2.0, kernel="spline", kernel_params={"beat": 1.0}
            ),
            ValueError,
            r"`Interpolate`: unknown kernel_params \['beat'\] for kernel 'spline'",
        ),
        (
            "compat-dense-broadcast-dim-not-in-weight",
            lambda: jl.Dense.from_einstr(np.ones((2, 3)), "MN,N->M", broadcast_dims="B"),
            ValueError,
            r"`Dense\(.*\)`: broadcast_dim 'B' is not in weightshape",
        ),
        (
            "compat-dense-size-one-broadcast-dim-contracted",
            lambda: jl.Dense(np.ones((1, 3)), "CN", "CN", "N", broadcast_dims="C"),
            ValueError,
            r"broadcast dim 'C' \(weight size 1\) must be in weightshape, ishape and oshape",
        ),
    ],
)

if importlib.util.find_spec("torch") is not None:  # the Python 3.12 stage has no torch
    CASES.append(
        Raises(
            "construction-diagonal-torch-weight",
            lambda: jl.Diagonal(__import__("torch").ones(3)),
            TypeError,
            r"`Diagonal\(weight=...\)` got a torch.Tensor",
        )
    )
