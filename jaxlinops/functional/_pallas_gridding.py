"""Spreading and interpolation as Pallas kernels for GPU (Triton lowering).

Both kernels read a point layout computed once at plan time: `starts` `[P, D]` (integer),
each point's window origin on a periodic grid of sizes `N = (N_1, ..., N_D)`, and
`weights` `[P, D, L]` (real), the per-axis kernel factors, whose outer product is the
window's weight. With $c_d(p, l) = (s_{p,d} + l_d) \\bmod N_d$:

- interpolate (`pallas_ungrid`): $y_{b,p} = \\sum_{l \\in [0,L)^D} \\prod_d w_{p,d,l_d}\\,
  x_{b, c(p, l)}$, grid `[B, *N]` -> `[B, P]`;
- spread (`pallas_grid`), its transpose: $x_{b,n} = \\sum_p \\sum_l [n = c(p, l)]
  \\prod_d w_{p,d,l_d}\\, y_{b,p}$, values `[B, P]` -> `[B, *N]`.

Design. One program handles a block of `block_size` points (a power of two: Triton tensors
need power-of-two sizes) of one real plane: the grid is flattened to `[R, prod(N)]`, and
complex data are split into real and imaginary planes (`R = 2B`, Triton has no complex
type; the weights are real, so each plane is mapped independently). The program loops over
the `L^D` window offsets with one `fori_loop` per axis (the index and weight partial sums of
the outer axes are computed once per outer offset) and, per offset, handles all its points
as one vector: interpolation gathers `grid[index]` (flattened index, wrapped modulo `N_d`)
and accumulates; spreading adds `weight * value` into the flattened output with
`jax.ref.addupdate`, which the Triton lowering emits as an atomic add (`tt.atomic_rmw
fadd`), so programs may write the same cell concurrently. Points sorted by grid cell (as
the plan does) give each program's window a compact footprint, hence cache locality for the
gathers and the atomics. The output of spreading starts as a zero grid aliased to it.

`jax.ref.addupdate`, not `pallas.triton.atomic_add`: both lower to the same atomic add on
GPU, but in interpret mode `atomic_add` keeps only one of several updates to the same cell
within one call (it discharges to a scatter-set), while `addupdate` discharges to a
scatter-add, so interpret-mode tests check what the GPU computes.

Points are padded to a multiple of the block with weight 0 (they add 0 to cell 0 and
their interpolated values are dropped). Window origins are reduced modulo `N` in the
wrapper, so every memory access is in bounds whatever `starts` holds (a start outside
`[0, N)` means the same periodic cell). Flattened indices are int32: `prod(N) < 2**31`.

Autodiff: both functions are `jax.custom_vjp`: the cotangent of the data is the other
kernel (the transpose); the cotangent of `weights` (which carry the dependence on the
point locations) is the VJP of a plain-JAX gather of the windows, computed only when the
weights are differentiated (it holds `B x P x L^D` window values). No forward mode (jvp).
`vmap` goes through `pallas_call`'s batching rule (one more grid axis).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import jax
import jax.experimental.pallas as pl
import jax.experimental.pallas.triton as plgpu
import jax.numpy as jnp
from jax import lax, ref
from jax.custom_derivatives import SymbolicZero

from .._arrays import as_size, as_sizes, vary_alike

_DTYPES = (jnp.float32, jnp.float64, jnp.complex64, jnp.complex128)
_MAX_CELLS = 2**31  # flattened indices are int32


class _Static(NamedTuple):
    """The static arguments: grid sizes `N`, interpret mode, points per program."""

    sizes: tuple[int, ...]
    interpret: bool
    block: int


def pallas_ungrid(
    grid: jax.Array,
    starts: jax.Array,
    weights: jax.Array,
    *,
    interpret: bool = False,
    block_size: int = 128,
) -> jax.Array:
    """Interpolate `grid` `[B, *N]` (real or complex) at `P` points: `[B, P]`.

    `starts` `[P, D]` (integer) are the window origins on the periodic grid, `weights`
    `[P, D, L]` (the real dtype of `grid`) the per-axis kernel factors; see the module
    docstring for the formula. `interpret=True` runs the kernel on any backend (CPU
    tests); `block_size` (a power of two) is the number of points per program.
    """
    name = "pallas_ungrid"
    grid, starts, weights = jnp.asarray(grid), jnp.asarray(starts), jnp.asarray(weights)
    dims, block = _check_layout(name, starts, weights, block_size, interpret)
    _check_data(name, "grid", grid, 1 + dims, weights)
    sizes = _check_sizes(name, "grid", grid.shape[1:])
    # inside `shard_map`, the kernels' arguments (and so their derivatives) share one type
    return _ungrid(*vary_alike(grid, starts, weights), _Static(sizes, interpret, block))


def pallas_grid(
    vals: jax.Array,
    starts: jax.Array,
    weights: jax.Array,
    grid_size: Sequence[int],
    *,
    interpret: bool = False,
    block_size: int = 128,
) -> jax.Array:
    """Spread `vals` `[B, P]` (real or complex) onto a zero grid of sizes `grid_size`:
    `[B, *grid_size]`, the transpose of [`pallas_ungrid`][] (same `starts`, `weights`)."""
    name = "pallas_grid"
    vals, starts, weights = jnp.asarray(vals), jnp.asarray(starts), jnp.asarray(weights)
    dims, block = _check_layout(name, starts, weights, block_size, interpret)
    _check_data(name, "vals", vals, 2, weights)
    if vals.shape[1] != starts.shape[0]:
        raise ValueError(
            f"`{name}(vals=...)` must have one value per point, shape [B, {starts.shape[0]}] "
            f"(`starts` has {starts.shape[0]} points); got shape {vals.shape}."
        )
    sizes = _check_sizes(name, "grid_size", as_sizes(grid_size, f"`{name}(grid_size=...)`", 1))
    if len(sizes) != dims:
        raise ValueError(
            f"`{name}(grid_size=...)` must have one size per axis of `starts` ({dims}); "
            f"got {sizes}."
        )
    return _grid(*vary_alike(vals, starts, weights), _Static(sizes, interpret, block))


@functools.partial(jax.custom_vjp, nondiff_argnums=(3,))
def _ungrid(grid, starts, weights, static: _Static):
    batch, points = grid.shape[0], starts.shape[0]
    if points == 0:
        return jnp.zeros((batch, 0), grid.dtype)
    planes = _to_planes(grid.reshape((batch, -1)))
    out = _ungrid_call(planes, *_layout(starts, weights, static), static)
    return _from_planes(out[:, :points], grid.dtype)


@functools.partial(jax.custom_vjp, nondiff_argnums=(3,))
def _grid(vals, starts, weights, static: _Static):
    batch, points = vals.shape
    if points == 0:
        return jnp.zeros((batch, *static.sizes), vals.dtype)
    planes = _to_planes(jnp.pad(vals, ((0, 0), (0, -points % static.block))))
    out = _grid_call(planes, *_layout(starts, weights, static), static)
    return _from_planes(out, vals.dtype).reshape((batch, *static.sizes))


def _ungrid_fwd(grid, starts, weights, static):
    out = _ungrid(grid.value, starts.value, weights.value, static)
    return out, (grid.value if weights.perturbed else None, starts.value, weights.value)


def _ungrid_bwd(static, residuals, ct):
    grid, starts, weights = residuals
    if isinstance(ct, SymbolicZero):
        return None, None, None
    ct_weights = None if grid is None else _weights_cotangent(grid, ct, starts, weights)
    return _grid(ct, starts, weights, static), None, ct_weights


def _grid_fwd(vals, starts, weights, static):
    out = _grid(vals.value, starts.value, weights.value, static)
    return out, (vals.value if weights.perturbed else None, starts.value, weights.value)


def _grid_bwd(static, residuals, ct):
    """`<grid(v; w), G> = <v, ungrid(G; w)>` (bilinear): the weights' cotangent of
    spreading `v` under the cotangent `G` is that of interpolating `G` under `v`."""
    vals, starts, weights = residuals
    if isinstance(ct, SymbolicZero):
        return None, None, None
    ct_weights = None if vals is None else _weights_cotangent(ct, vals, starts, weights)
    return _ungrid(ct, starts, weights, static), None, ct_weights


_ungrid.defvjp(_ungrid_fwd, _ungrid_bwd, symbolic_zeros=True)
_grid.defvjp(_grid_fwd, _grid_bwd, symbolic_zeros=True)


def _weights_cotangent(grid, ct, starts, weights):
    """The VJP w.r.t. `weights` `[P, D, L]` of interpolating `grid` `[B, *N]`, for the
    cotangent `ct` `[B, P]`, by a plain-JAX gather of the `[B, P, L, ..., L]` windows."""
    dims, length = weights.shape[1:]
    offsets = jnp.arange(length, dtype=starts.dtype)
    index = tuple(
        ((starts[:, d, None] + offsets[None]) % n).reshape(_axis_shape(d, dims, length))
        for d, n in enumerate(grid.shape[1:])
    )  # D arrays [P, 1.., L, 1..]
    windows = grid[(slice(None), *index)]

    def interpolate(w):
        factors = [w[:, d].reshape(_axis_shape(d, dims, length)) for d in range(dims)]
        window = functools.reduce(jnp.multiply, factors).astype(grid.dtype)
        return jnp.sum(windows * window[None], axis=tuple(range(2, dims + 2)))

    return jax.vjp(interpolate, weights)[1](ct)[0]


def _axis_shape(d: int, dims: int, length: int) -> tuple[int, ...]:
    """`[P, 1.., L, 1..]`: a per-point factor of axis `d` aligned for the window product."""
    return (-1,) + (1,) * d + (length,) + (1,) * (dims - d - 1)


def _layout(starts, weights, static: _Static) -> tuple[jax.Array, jax.Array]:
    """Window origins wrapped into the grid, `[D, P']` int32, and weights `[D, L, P']`,
    points last (contiguous loads per axis and offset), zero-padded to a multiple of the
    block (padded points: origin 0, weight 0)."""
    pad = -starts.shape[0] % static.block
    wrapped = jnp.remainder(starts, jnp.asarray(static.sizes, starts.dtype)[None]).astype(jnp.int32)
    starts = jnp.pad(wrapped.T, ((0, 0), (0, pad)))
    weights = jnp.pad(jnp.transpose(weights, (1, 2, 0)), ((0, 0), (0, 0), (0, pad)))
    return starts, weights


def _ungrid_call(planes, starts, weights, static: _Static) -> jax.Array:
    """`[R, M]` grid planes -> `[R, P']` values."""
    dims, length, points = weights.shape
    kernel = functools.partial(_ungrid_kernel, sizes=static.sizes, length=length)
    return pl.pallas_call(
        kernel,
        out_shape=_like(planes, (planes.shape[0], points)),
        grid=(points // static.block, planes.shape[0]),
        in_specs=[*_layout_specs(dims, length, static.block), _plane_spec(planes.shape[1])],
        out_specs=_points_spec(static.block),
        interpret=static.interpret,
        compiler_params=plgpu.CompilerParams(num_warps=4),
        name="jaxlinops_ungrid",
    )(starts, weights, planes)


def _grid_call(planes, starts, weights, static: _Static) -> jax.Array:
    """`[R, P']` value planes -> `[R, M]` grid planes."""
    dims, length, points = weights.shape
    cells = math.prod(static.sizes)
    kernel = functools.partial(_grid_kernel, sizes=static.sizes, length=length)
    zeros = jnp.zeros((planes.shape[0], cells), planes.dtype)
    (zeros,) = vary_alike(zeros, planes)[:1]
    return pl.pallas_call(
        kernel,
        out_shape=_like(planes, (planes.shape[0], cells)),
        grid=(points // static.block, planes.shape[0]),
        in_specs=[
            *_layout_specs(dims, length, static.block),
            _points_spec(static.block),
            _plane_spec(cells),
        ],
        out_specs=_plane_spec(cells),
        input_output_aliases={3: 0},  # the zero grid becomes the output
        interpret=static.interpret,
        compiler_params=plgpu.CompilerParams(num_warps=4),
        name="jaxlinops_grid",
    )(starts, weights, planes, zeros)


def _like(planes: jax.Array, shape: tuple[int, ...]) -> jax.ShapeDtypeStruct:
    """The output of a kernel on `planes`: `shape`, their dtype, and inside `jax.shard_map`
    their type (varying over the same mesh axes), which `pallas_call` needs spelled out."""
    return jax.ShapeDtypeStruct(shape, planes.dtype, manual_axis_type=jax.typeof(planes).mat)


def _layout_specs(dims: int, length: int, block: int) -> list[pl.BlockSpec]:
    """Program `(i, r)` reads block `i` of the starts `[D, P']` and weights `[D, L, P']`."""
    return [
        pl.BlockSpec((dims, block), lambda i, r: (0, i)),
        pl.BlockSpec((dims, length, block), lambda i, r: (0, 0, i)),
    ]


def _points_spec(block: int) -> pl.BlockSpec:
    """Program `(i, r)` sees block `i` of plane `r` of a `[R, P']` array as `[block]`."""
    return pl.BlockSpec((None, block), lambda i, r: (r, i))


def _plane_spec(cells: int) -> pl.BlockSpec:
    """Program `(i, r)` sees the whole plane `r` of a `[R, M]` grid as `[M]`."""
    return pl.BlockSpec((None, cells), lambda i, r: (r, 0))


def _ungrid_kernel(starts_ref, weights_ref, grid_ref, out_ref, *, sizes, length):
    def gather(index, weight, acc):
        return acc + weight * grid_ref[index]

    zero = jnp.zeros(out_ref.shape, out_ref.dtype)
    out_ref[...] = _window_loop(starts_ref, weights_ref, sizes, length, gather, zero)


def _grid_kernel(starts_ref, weights_ref, vals_ref, zeros_ref, out_ref, *, sizes, length):
    del zeros_ref  # aliased to out_ref
    vals = vals_ref[...]

    def scatter(index, weight, carry):
        ref.addupdate(out_ref, index, weight * vals)  # an atomic add on GPU
        return carry

    _window_loop(starts_ref, weights_ref, sizes, length, scatter, ())


def _window_loop(starts_ref, weights_ref, sizes, length, body: Callable, carry):
    """`carry = body(index, weight, carry)` for each window offset `l` in `[0, L)^D`, with
    the block's flattened cell `index = sum_d ((s_d + l_d) mod N_d) * stride_d` and
    `weight = prod_d w[d, l_d]` (both `[block]`), one `fori_loop` per axis."""
    starts = [starts_ref[d, :] for d in range(len(sizes))]

    def level(d, index, weight, carry):
        if d == len(sizes):
            return body(index, weight, carry)

        stride = math.prod(sizes[d + 1 :])

        def step(l, carry):
            cell = _wrap(starts[d] + l, sizes[d], length)
            factor = weights_ref[d, l, :]
            factor = factor if weight is None else weight * factor
            return level(d + 1, index + cell * stride, factor, carry)

        return lax.fori_loop(jnp.int32(0), jnp.int32(length), step, carry)

    return level(0, 0, None, carry)


def _wrap(cell: jax.Array, size: int, length: int) -> jax.Array:
    """`cell mod size` for `cell = start + l` in `[0, size + length - 1)`: one compare and
    subtract when the window fits in the grid (`length <= size`), else a remainder."""
    if length <= size:
        return jnp.where(cell >= size, cell - size, cell)
    return lax.rem(cell, jnp.int32(size))


def _to_planes(x: jax.Array) -> jax.Array:
    """`[B, ...]` -> real `[R, ...]`: the real then the imaginary parts if complex."""
    if jnp.iscomplexobj(x):
        return jnp.concatenate([x.real, x.imag])
    return x


def _from_planes(x: jax.Array, dtype) -> jax.Array:
    """The inverse of [`_to_planes`][] for data of `dtype`."""
    if jnp.issubdtype(dtype, jnp.complexfloating):
        half = x.shape[0] // 2
        return lax.complex(x[:half], x[half:])
    return x


def _check_layout(name: str, starts, weights, block_size, interpret) -> tuple[int, int]:
    """Check `starts` `[P, D]` and `weights` `[P, D, L]`, and the options; return `D` and
    the block size."""
    if not jnp.issubdtype(starts.dtype, jnp.integer):
        raise TypeError(f"`{name}(starts=...)` must be integers; got dtype {starts.dtype}.")
    if starts.ndim != 2 or not 1 <= starts.shape[1] <= 3:
        raise ValueError(
            f"`{name}(starts=...)` must have shape [P, D], D in 1..3; got {starts.shape}."
        )
    if weights.dtype not in (jnp.float32, jnp.float64):
        raise TypeError(f"`{name}(weights=...)` must be float32 or float64; got {weights.dtype}.")
    if weights.ndim != 3 or weights.shape[:2] != starts.shape or weights.shape[2] < 1:
        raise ValueError(
            f"`{name}(weights=...)` must have shape [P, D, L] = [{starts.shape[0]}, "
            f"{starts.shape[-1]}, L] (from `starts`), L >= 1; got {weights.shape}."
        )
    block = as_size(block_size, f"`{name}(block_size=...)`", 1)
    if block & (block - 1):
        raise ValueError(f"`{name}(block_size=...)` must be a power of two; got {block}.")
    if not isinstance(interpret, bool):
        raise TypeError(f"`{name}(interpret=...)` must be a bool; got {interpret!r}.")
    return starts.shape[1], block


def _check_data(name: str, arg: str, x, ndim: int, weights) -> None:
    """Check the data `x` has `ndim` axes and a dtype whose real part is the weights'."""
    if x.dtype not in _DTYPES or jnp.finfo(x.dtype).dtype != weights.dtype:
        raise TypeError(
            f"`{name}({arg}=...)` must be real or complex with the precision of the weights "
            f"({weights.dtype}); got dtype {x.dtype}."
        )
    if x.ndim != ndim:
        raise ValueError(f"`{name}({arg}=...)` must have {ndim} axes; got shape {x.shape}.")


def _check_sizes(name: str, arg: str, sizes: tuple[int, ...]) -> tuple[int, ...]:
    if not all(n >= 1 for n in sizes) or math.prod(sizes) >= _MAX_CELLS:
        raise ValueError(
            f"`{name}({arg}=...)` needs grid sizes >= 1 with fewer than 2**31 cells in all "
            f"(flattened indices are int32); got {sizes}."
        )
    return tuple(sizes)
