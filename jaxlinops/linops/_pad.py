"""`Pad` and `Crop`: centered zero padding of the trailing image dims, and its adjoint."""

from collections.abc import Sequence

import equinox as eqx
import jax

from .._core import NamedLinop, Resize, Tiling, dims_field, identity_normal
from .._default_dims import GRID_DIMS
from .._dims import ELLIPSIS, Dims, DimsLike, as_dims, fmt, next_unused, size_of
from ..functional._pad import center_crop, center_pad, check_sizes, pad_widths


class AbstractCenterResize(NamedLinop):
    """Shared shape logic of [`Pad`][] and [`Crop`][]: `batch_shape + in_shape ->
    batch_shape + out_shape`, where the trailing image dims change size from
    `in_size` to `out_size` (properties of the subclass)."""

    in_shape: eqx.AbstractVar[Dims]
    out_shape: eqx.AbstractVar[Dims]
    batch_shape: eqx.AbstractVar[Dims]
    in_size: eqx.AbstractVar[tuple[int, ...]]
    out_size: eqx.AbstractVar[tuple[int, ...]]

    def __check_init__(self):
        check_image_shapes(self, (self.in_size, self.out_size))

    @property
    def ishape(self) -> Dims:
        return self.batch_shape + self.in_shape

    @property
    def oshape(self) -> Dims:
        return self.batch_shape + self.out_shape

    @property
    def in_im_shape(self) -> Dims:
        """torchlinops' name for `in_shape`, the image dims of the input."""
        return self.in_shape

    @property
    def out_im_shape(self) -> Dims:
        """torchlinops' name for `out_shape`, the image dims of the output."""
        return self.out_shape

    @property
    def in_im_size(self) -> tuple[int, ...]:
        """torchlinops' name for `in_size`, the image sizes of the input."""
        return self.in_size

    @property
    def out_im_size(self) -> tuple[int, ...]:
        """torchlinops' name for `out_size`, the image sizes of the output."""
        return self.out_size

    def size(self, dim: str) -> int | None:
        return size_of(dim, (self.in_shape, self.in_size), (self.out_shape, self.out_size))

    def tiling(self) -> Tiling:
        return Tiling(batch=self.batch_shape)

    def grid_form(self) -> Resize:
        """Each image dim resized on its own, the shorter side centered in the longer."""
        pairs = tuple(zip(self.in_size, self.out_size))
        widths = pad_widths([min(p) for p in pairs], [max(p) for p in pairs])
        axes = tuple(range(-len(pairs), 0))
        return Resize(self.ishape, self.oshape, axes, pairs, tuple(w[0] for w in widths))


class Pad(AbstractCenterResize):
    r"""Centered zero padding of the last $D$ dims from `im_size` to `pad_im_size`.

    Dims: `batch_shape + in_shape -> batch_shape + out_shape`, by default
    `(..., Nx, Ny) -> (..., Nx1, Ny1)`. The image sample `i // 2` of each axis lands on
    the padded sample `p // 2` (see `jaxlinops.functional.center_pad`). Adjoint: [`Crop`][];
    normal: the identity, as $\mathrm{Crop}\,\mathrm{Pad} = I$.
    """

    pad_im_size: tuple[int, ...] = eqx.field(static=True)
    im_size: tuple[int, ...] = eqx.field(static=True)
    in_shape: Dims = dims_field()
    out_shape: Dims = dims_field()
    batch_shape: Dims = dims_field()

    def __init__(
        self,
        pad_im_size: Sequence[int],
        im_size: Sequence[int],
        in_shape: DimsLike = None,
        out_shape: DimsLike = None,
        batch_shape: DimsLike = None,
    ):
        """**Arguments:**

        - `pad_im_size`: the padded sizes of the last $D$ axes (given **first**).
        - `im_size`: the image sizes of the last $D$ axes.
        - `in_shape`: the $D$ image dims of the input (default `("Nx", "Ny", "Nz")[:D]`),
          optionally after further batch dims (see `image_shapes`).
        - `out_shape`: the $D$ padded dims of the output (default: each input dim renamed,
          `Nx -> Nx1`).
        - `batch_shape`: leading dims, shared by input and output (default `"..."`).
        """
        self.im_size, self.pad_im_size = check_sizes("Pad", im_size, pad_im_size)
        self.batch_shape, self.in_shape, self.out_shape = image_shapes(
            "Pad", in_shape, out_shape, self.im_size, as_dims(batch_shape, ELLIPSIS)
        )

    @property
    def in_size(self) -> tuple[int, ...]:
        return self.im_size

    @property
    def out_size(self) -> tuple[int, ...]:
        return self.pad_im_size

    def apply(self, x: jax.Array) -> jax.Array:
        return center_pad(x, self.im_size, self.pad_im_size)

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return center_crop(y, self.pad_im_size, self.im_size)

    def adjoint(self) -> NamedLinop:
        return Crop(self.im_size, self.pad_im_size, self.out_shape, self.in_shape, self.batch_shape)

    def _normal(self, inner: NamedLinop | None) -> NamedLinop | None:
        return identity_normal(self) if inner is None else None


class Crop(AbstractCenterResize):
    r"""Keep the centered `crop_im_size` block of the last $D$ dims (of size `im_size`).

    Dims: `batch_shape + in_shape -> batch_shape + out_shape`, by default
    `(..., Nx, Ny) -> (..., Nx1, Ny1)`. `Crop(c, i, s_in, s_out, b)` equals
    `Pad(i, c, s_out, s_in, b).H`; its adjoint is that [`Pad`][].
    """

    crop_im_size: tuple[int, ...] = eqx.field(static=True)
    im_size: tuple[int, ...] = eqx.field(static=True)
    in_shape: Dims = dims_field()
    out_shape: Dims = dims_field()
    batch_shape: Dims = dims_field()

    def __init__(
        self,
        crop_im_size: Sequence[int],
        im_size: Sequence[int],
        in_shape: DimsLike = None,
        out_shape: DimsLike = None,
        batch_shape: DimsLike = None,
    ):
        """**Arguments:**

        - `crop_im_size`: the cropped sizes of the last $D$ axes (given **first**).
        - `im_size`: the input sizes of the last $D$ axes.
        - `in_shape`: the $D$ image dims of the input (default `("Nx", "Ny", "Nz")[:D]`),
          optionally after further batch dims (see `image_shapes`).
        - `out_shape`: the $D$ cropped dims of the output (default: each input dim
          renamed, `Nx -> Nx1`).
        - `batch_shape`: leading dims, shared by input and output (default `"..."`).
        """
        labels = ("crop size", "image size")
        self.crop_im_size, self.im_size = check_sizes("Crop", crop_im_size, im_size, labels)
        self.batch_shape, self.in_shape, self.out_shape = image_shapes(
            "Crop", in_shape, out_shape, self.im_size, as_dims(batch_shape, ELLIPSIS)
        )

    @property
    def in_size(self) -> tuple[int, ...]:
        return self.im_size

    @property
    def out_size(self) -> tuple[int, ...]:
        return self.crop_im_size

    def apply(self, x: jax.Array) -> jax.Array:
        return center_crop(x, self.im_size, self.crop_im_size)

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return center_pad(y, self.crop_im_size, self.im_size)

    def adjoint(self) -> NamedLinop:
        return Pad(self.im_size, self.crop_im_size, self.out_shape, self.in_shape, self.batch_shape)


def image_shapes(
    name: str, in_shape: DimsLike, out_shape: DimsLike, im_size: tuple, batch_shape: Dims
) -> tuple[Dims, Dims, Dims]:
    """`(batch_shape, in_shape, out_shape)` with torchlinops' defaults: `Nx, Ny, Nz` and
    `Nx1, Ny1, Nz1`.

    An `in_shape` naming more than the $D$ image dims (torchlinops' `Pad((20, 20), (10,
    10), Dim("AXY"))`) names batch dims first: they join `batch_shape` and keep their
    names in the output (torchlinops renames them, `A -> A1`; here they stay batch dims, so
    a tile along them is the same operator). An `out_shape` naming them too must repeat
    them.
    """
    ndim = len(im_size)
    if in_shape is None and ndim > len(GRID_DIMS):
        raise ValueError(
            f"`{name}`: default dim names exist for up to {len(GRID_DIMS)} image axes; pass "
            f"`in_shape` for {ndim} axes."
        )
    in_shape = as_dims(in_shape, GRID_DIMS[:ndim])
    extra = in_shape[: max(len(in_shape) - ndim, 0)] if ELLIPSIS not in in_shape else ()
    batch_shape, in_shape = batch_shape + extra, in_shape[len(extra) :]
    if out_shape is None:
        avoid = in_shape + batch_shape
        return batch_shape, in_shape, tuple(next_unused(d, avoid) for d in in_shape)
    out_shape = as_dims(out_shape)
    if extra and len(out_shape) > ndim:
        if out_shape[: len(out_shape) - ndim] != extra:
            raise ValueError(
                f"`{name}`: `in_shape` {fmt(extra + in_shape)} names the batch dims "
                f"{fmt(extra)} before its {ndim} image dims; `out_shape` must repeat them, "
                f"got {fmt(out_shape)}."
            )
        out_shape = out_shape[len(out_shape) - ndim :]
    return batch_shape, in_shape, out_shape


def check_image_shapes(op, sizes: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
    """Raise unless in/out image dims are D plain dims each, consistent with the sizes."""
    where = f"`{op.name}({fmt(op.ishape)} -> {fmt(op.oshape)})`"
    ndim = len(sizes[0])
    for role, shape in (("in_shape", op.in_shape), ("out_shape", op.out_shape)):
        if len(shape) != ndim or ELLIPSIS in shape or len(set(shape)) != ndim:
            raise ValueError(
                f"{where}: `{role}` must name {ndim} distinct image dims (no '...'); got "
                f"{fmt(shape)}."
            )
    clash = set(op.batch_shape) & set(op.in_shape + op.out_shape)
    if clash:
        raise ValueError(f"{where}: dims {sorted(clash)} are both batch and image dims.")
    for d in set(op.in_shape) & set(op.out_shape):
        n_in, n_out = sizes[0][op.in_shape.index(d)], sizes[1][op.out_shape.index(d)]
        if n_in != n_out:
            raise ValueError(
                f"{where}: dim {d!r} would have size {n_in} in the input and {n_out} in the "
                f"output; name the resized dims differently in `in_shape` and `out_shape`."
            )


PadLast = Pad
"""torchlinops' name for [`Pad`][] (an alias there too)."""
