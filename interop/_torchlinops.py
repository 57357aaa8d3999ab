"""`from_torchlinops`: a torchlinops operator rebuilt as the equivalent jaxlinops operator.

The operator's tensors come over through `to_jax` (zero-copy where the layout allows, so
the jaxlinops operator shares memory with the torchlinops one: do not modify those
tensors in place afterwards). Every dim keeps its name.

torchlinops builds adjoints and normals in two ways, both recognised:

- its default `adjoint()` copies the operator and swaps its `fn` and `adj_fn` (e.g.
  `Crop` is a `Pad` built this way): converted as the jaxlinops adjoint of the operator;
- its default `normal()` replaces `fn` by a lookup table holding the operator: converted as
  the jaxlinops normal, its dims renamed to torchlinops' names where they differ.

Operators with their own adjoint or normal (`Dense`, `Diagonal`, `Truncate`, `NUFFT`, a
Toeplitz normal, ...) build ordinary torchlinops operators, which convert as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import jaxlinops as jl

from ._tensors import to_jax

if TYPE_CHECKING:
    import torchlinops


def from_torchlinops(A: torchlinops.NamedLinop) -> jl.NamedLinop:
    """The jaxlinops operator equivalent to the torchlinops operator `A`: same dims, same
    forward, adjoint and normal.

    Supported: `Dense`, `Diagonal`, `Scalar`, `Identity`, `ShapeSpec`, `Zero`, `FFT`,
    `Pad`/`Crop`, `Truncate`/`PadDim`, `Sampling`, `Interpolate`, `NUFFT`,
    `SamplingNUFFT` and `FastSamplingNUFFT` (with their Toeplitz settings),
    `ArrayToBlocks`/`BlocksToArray`, `Rearrange`, `Repeat`, `SumReduce`, `Chain`, `Add`,
    `Concat`, `Stack`, and the adjoints and normals of these. Anything else is a
    `TypeError` naming the class. 64-bit tensors need `jax_enable_x64` (see `interop.to_jax`).
    """
    from torchlinops import NamedLinop

    if not isinstance(A, NamedLinop):
        raise TypeError(
            f"`interop.from_torchlinops` expects a torchlinops NamedLinop; got {type(A).__name__}."
        )
    return _convert(A)


def _convert(A) -> jl.NamedLinop:
    from torchlinops.linops.namedlinop import NormalFunctionLookup

    fn = vars(A).get("fn")
    if isinstance(getattr(fn, "__self__", None), NormalFunctionLookup):
        op = _convert(fn.__self__.linop).N
    elif fn is not None and fn is type(A).adj_fn:
        op = _convert(A.adjoint()).H
    else:
        convert = _CONVERTERS.get(type(A).__name__)
        if convert is None or not type(A).__module__.startswith("torchlinops."):
            raise TypeError(
                f"`interop.from_torchlinops` cannot convert the torchlinops operator "
                f"`{type(A).__name__}`; supported: {', '.join(sorted(_CONVERTERS))}, and "
                f"their adjoints and normals."
            )
        op = convert(A)
    return _relabel(op, _dims(A.ishape), _dims(A.oshape))


def _relabel(op: jl.NamedLinop, ishape: tuple, oshape: tuple) -> jl.NamedLinop:
    """`op` with torchlinops' names for its input and output dims (renaming identities
    where jaxlinops names them differently, e.g. the output dims of a normal). Where
    torchlinops leaves dims unnamed that jaxlinops must name (`"..."` for the array dims
    of `ArrayToBlocks`), jaxlinops' default names stay."""
    if op.ishape != ishape and _renamable(op.ishape, ishape):
        op = op @ jl.Identity(ishape, op.ishape)
    if op.oshape != oshape and _renamable(op.oshape, oshape):
        op = jl.Identity(op.oshape, oshape) @ op
    return op


def _renamable(ours: tuple, theirs: tuple) -> bool:
    return len(ours) == len(theirs) and ("..." in ours) == ("..." in theirs)


def _dims(shape) -> tuple[str, ...]:
    return tuple(str(d) for d in shape)


def _children(A) -> list[jl.NamedLinop]:
    return [_convert(child) for child in A.linops]


def _dense(A):
    """A `Dense`. A dim repeated in torchlinops' weightshape (its Toeplitz kernels name a
    batch dim twice, with size 1) means the weight's diagonal there, as in `torch.einsum`;
    a size-1 diagonal broadcasts."""
    weight, shape = A.weight.detach(), list(_dims(A._shape.weightshape))
    broadcast = list(_dims(A._shape.broadcast_dims))
    for d in dict.fromkeys(shape):
        while shape.count(d) > 1:
            i, j = [k for k, e in enumerate(shape) if e == d][:2]
            weight = weight.diagonal(dim1=i, dim2=j)
            shape = [e for k, e in enumerate(shape) if k not in (i, j)] + [d]
            if weight.shape[-1] == 1 and d not in broadcast:
                broadcast.append(d)
    return jl.Dense(to_jax(weight), tuple(shape), _dims(A.ishape), _dims(A.oshape), broadcast)


def _diagonal(A):
    ioshape = _dims(A.ishape)
    if "..." in ioshape[1:]:
        # torchlinops broadcasts the weight against the input's trailing axes whatever the
        # dims say; jaxlinops aligns it with the named dims, so the two would differ.
        raise ValueError(
            f"`interop.from_torchlinops`: a Diagonal with ioshape {ioshape} ('...' after a "
            f"named dim) applies its weight to the input's trailing axes in torchlinops, "
            f"which jaxlinops does not express; write its ioshape with '...' first."
        )
    return jl.Diagonal(to_jax(A.weight), ioshape, _dims(A._shape.broadcast_dims))


def _fft(A):
    n, ishape, oshape = A.ndim, _dims(A.ishape), _dims(A.oshape)
    return jl.FFT(
        n, batch_shape=ishape[:-n], grid_shapes=(ishape[-n:], oshape[-n:]), centered=A.centered
    )


def _pad(A):
    n, ishape, oshape = len(A.im_size), _dims(A.ishape), _dims(A.oshape)
    return jl.Pad(A.pad_im_size, A.im_size, ishape[-n:], oshape[-n:], ishape[:-n])


def _sampling(A):
    s = A._shape
    return jl.Sampling(
        tuple(to_jax(i) for i in A.idx), A.input_size, _dims(s.output_shape),
        _dims(s.input_shape), _dims(s.batch_shape),
    )  # fmt: skip


def _interpolate(A):
    s, params = A._shape, A.interp_params
    return jl.Interpolate(
        to_jax(A.locs), A.grid_size, _dims(s.batch_shape), _dims(s.locs_batch_shape),
        _dims(s.grid_shape), **params,
    )  # fmt: skip


def _nufft(cls) -> Callable:
    def convert(A):
        options = A.options
        shapes = [_dims(s) for s in (A.output_shape, A.input_shape, A.input_kshape)]
        kwargs = {}
        if cls is jl.NUFFT:
            kwargs = dict(
                width=options.get("width", 4.0),
                skip_prep_locs=options.get("skip_prep_locs", False),
                backend="jax",
            )  # torchlinops' kernel (finufft has its own)
        elif cls is jl.FastSamplingNUFFT:
            kwargs = dict(phase_placement=options.get("phase_placement", "auto"))
        op = cls(
            to_jax(A.locs), A.grid_size, *shapes, batch_shape=_dims(A.batch_shape),
            oversamp=options["oversamp"], toeplitz=options.get("toeplitz", False),
            toeplitz_oversamp=options.get("toeplitz_oversamp", 2.0), **kwargs,
        )  # fmt: skip
        # torchlinops' NUFFT adjoint is a NUFFT whose shape is flipped
        return op if _dims(A.ishape) == op.ishape else op.H

    return convert


def _blocks(cls) -> Callable:
    def convert(A):
        mask = None if A.mask is None else to_jax(A.mask)
        named = {
            role: None if _dims(shape) == ("...",) else _dims(shape)
            for role, shape in (("array_shape", A.array_shape), ("blocks_shape", A.blocks_shape))
        }
        return cls(A.grid_size, A.block_size, A.stride, mask, _dims(A.batch_shape), **named)

    return convert


def _lengths(A) -> dict[str, int]:
    return {str(k): v for k, v in A.axes_lengths.items()}


def _repeat(A):
    broadcast = getattr(A._shape, "broadcast_dims", None)
    return jl.Repeat(_lengths(A), _dims(A.ishape), _dims(A.oshape), broadcast and _dims(broadcast))


def _name(dim) -> str | None:
    return None if dim is None else str(dim)


def _stack_dim(dim, idx) -> tuple[str, int] | None:
    return None if dim is None else (str(dim), idx)


_CONVERTERS: dict[str, Callable] = {
    "Dense": _dense,
    "Diagonal": _diagonal,
    "Scalar": lambda A: jl.Scalar(to_jax(A.weight), _dims(A.ishape)),
    "Identity": lambda A: jl.Identity(_dims(A.ishape), _dims(A.oshape)),
    "ShapeSpec": lambda A: jl.Identity(_dims(A.ishape), _dims(A.oshape)),
    "Zero": lambda A: jl.Zero(_dims(A.ishape), _dims(A.oshape)),
    "FFT": _fft,
    "Pad": _pad,
    "Truncate": lambda A: jl.Truncate(
        A.dim, A.from_length, A.to_length, _dims(A.ishape), _dims(A.oshape)
    ),
    "PadDim": lambda A: jl.PadDim(
        A.dim, A.from_length, A.to_length, _dims(A.ishape), _dims(A.oshape)
    ),
    "Sampling": _sampling,
    "Interpolate": _interpolate,
    "NUFFT": _nufft(jl.NUFFT),
    "SamplingNUFFT": _nufft(jl.SamplingNUFFT),
    "FastSamplingNUFFT": _nufft(jl.FastSamplingNUFFT),
    "ArrayToBlocks": _blocks(jl.ArrayToBlocks),
    "BlocksToArray": _blocks(jl.BlocksToArray),
    "Rearrange": lambda A: jl.Rearrange(
        A.ipattern, A.opattern, _dims(A.ishape), _dims(A.oshape), _lengths(A)
    ),
    "Repeat": _repeat,
    "SumReduce": lambda A: jl.SumReduce(_dims(A.ishape), _dims(A.oshape)),
    "Chain": lambda A: jl.Chain(*_children(A)),
    "Add": lambda A: jl.Add(*_children(A)),
    "Concat": lambda A: jl.Concat(*_children(A), idim=_name(A.idim), odim=_name(A.odim)),
    "Stack": lambda A: jl.Stack(
        *_children(A),
        idim_and_idx=_stack_dim(A.idim, A.idim_idx),
        odim_and_idx=_stack_dim(A.odim, A.odim_idx),
    ),
}
