"""`create_batched_linop` and `shard`: build a `BatchedLinop` from an operator."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

import jax
import numpy as np
from jax.sharding import Mesh

from .._arrays import Device
from .._core import Coupling, NamedLinop, all_dims, tile_grid, user_split
from .._dims import fmt
from .._progress import iterate
from ._batched import BatchedLinop
from ._dim_split import BatchDim
from ._grid import GridBatch, GridSplitLinop, grid_split
from ._log import log_plan
from ._spec import BatchSpec, fit_devices, make_mesh
from ._tile_arrays import place, stack_tiles

_TORCH_OPTIONS = frozenset({"threaded", "num_workers", "accumulate"})


def create_batched_linop(
    linop: NamedLinop,
    batch_specs: BatchSpec | Sequence[BatchSpec],
    default_device: Device | None = None,
    _mmap: object = None,
    *,
    progress: bool | None = None,
    **options: object,
) -> BatchedLinop | GridSplitLinop:
    """`linop` as one operator run tile by tile: `create_batched_linop(A, BatchSpec({"C":
    1}, device_matrix=jax.devices()))` puts one coil per device.

    A dim that `linop` couples (an FFT's image dim) is split by domain decomposition
    instead of tiled: one slab per device, the FFTs distributed (`GridSplitLinop`; two
    such dims on a 2-D device matrix make pencils; with at most one dim applied entry by
    entry, such as coils, split with them on one more axis of the device matrix, whose
    axes follow the spec's dims, or looped over in blocks on each device by a second spec
    of that dim alone).

    A list of specs nests: the first tiles `linop` (across its devices), each tile is
    batched by the rest (e.g. readout chunks one after another, to bound memory); only the
    first spec may have a device matrix. The result behaves like `linop` (`.H`, `.N`, `@`,
    `jit`, `grad`, `vmap`); its outputs stay sharded unless the spec has a `base_device`.

    torchlinops' other arguments:

    - `default_device`: a `jax.Device` used as the first spec's `base_device` when it has
      none (where outputs are gathered), as torchlinops does. None (default): outputs
      stay sharded (torchlinops gathers them on the CPU).
    - `_mmap`: torchlinops' memory map of shared torch storage; operators here are
      immutable pytrees with nothing to share, so it is ignored.
    - `threaded`, `num_workers`, `accumulate` (in `options`): torchlinops' thread pool;
      JAX runs the tiles as one compiled program, so they are ignored. Other options
      raise a TypeError.

    jaxlinops only: `progress` (keyword) shows a bar over the tiles as they are split and
    built (default None: `jaxlinops.config.progress`, else only in a terminal or notebook;
    see `jaxlinops._progress.enabled`). The inner builds of nested specs show none.
    """
    unknown = sorted(set(options) - _TORCH_OPTIONS)
    if unknown:
        raise TypeError(
            f"`create_batched_linop`: unknown options {unknown}; the accepted (and ignored) "
            f"torchlinops options are {sorted(_TORCH_OPTIONS)}."
        )
    if default_device is not None and not isinstance(default_device, jax.Device):
        raise TypeError(
            f"`create_batched_linop(default_device=...)` must be a jax.Device; got "
            f"{type(default_device).__name__}."
        )
    specs = [batch_specs] if isinstance(batch_specs, BatchSpec) else list(batch_specs)
    if not specs or not all(isinstance(s, BatchSpec) for s in specs):
        raise TypeError(
            "`create_batched_linop` expects a BatchSpec or a non-empty list of BatchSpecs; "
            f"got {specs!r}."
        )
    if default_device is not None and specs[0].base_device is None:
        specs[0] = dataclasses.replace(specs[0], base_device=default_device)
    return batched(linop, specs, progress)


def batched(
    linop: NamedLinop, specs: list[BatchSpec], progress: bool | None, normal: bool = True
) -> BatchedLinop | GridSplitLinop:
    """`create_batched_linop` of checked arguments. With `normal` False, a grid split is
    built without its structured normal (see `grid_split`): the planner compiles only the
    forward of each candidate, so none computes a Toeplitz kernel it will not use."""
    spec, rest = specs[0], specs[1:]
    if any(s.device_matrix is not None for s in rest):
        raise ValueError(
            "`create_batched_linop`: only the first BatchSpec may have a device matrix; "
            "batch several dims across devices with one spec (a multi-axis device matrix)."
        )
    inner = (lambda t: batched(t, rest, progress=False)) if rest else None
    coupled = _grid_dims(linop, spec)
    if coupled:
        return _split_grid(linop, spec, coupled, rest, normal)
    sizes = checked_sizes(linop, spec.batch_sizes, "create_batched_linop")
    mesh = None
    if spec.device_matrix is not None:
        assert isinstance(spec.device_matrix, np.ndarray)  # BatchSpec converts the matrix
        grid = [None if n is None else -(-n // spec.batch_sizes[d]) for d, n in sizes.items()]
        mesh = make_mesh(fit_devices(spec.device_matrix, grid), tuple(sizes))
    axes = {d: d for d in sizes} if mesh is not None else {}
    return build(
        linop, dict(spec.batch_sizes), sizes, mesh, axes, inner, spec.base_device, progress
    )


def shard(
    A: NamedLinop,
    mesh: Mesh,
    axes: Mapping[str, str],
    batch_sizes: Mapping[str, int] | None = None,
    *,
    progress: bool | None = None,
) -> BatchedLinop:
    """`A` run across an existing `mesh`: `axes = {dim: mesh axis}` puts the tiles of
    each batched dim along that mesh axis. By default each device gets one tile
    ($\\lceil n / \\text{devices} \\rceil$ entries); `batch_sizes` gives smaller tiles,
    which each device then applies in turn. `progress`: a bar over the tiles as they are
    built, as `create_batched_linop`'s."""
    if not isinstance(mesh, Mesh):
        raise TypeError(f"`shard` expects a jax.sharding.Mesh; got {type(mesh).__name__}.")
    unknown = sorted(set(axes.values()) - set(mesh.axis_names))
    if unknown:
        raise ValueError(f"`shard`: mesh axes {unknown} are not in the mesh {mesh.axis_names}.")
    if len(set(axes.values())) < len(axes):
        raise ValueError(f"`shard`: each dim needs its own mesh axis; got {dict(axes)}.")
    tiles = dict(batch_sizes or {})
    extra = sorted(set(tiles) - set(axes))
    if extra:
        raise ValueError(f"`shard`: batch sizes given for dims {extra} that have no mesh axis.")
    for d, ax in axes.items():
        if d not in tiles:
            n = A.size(d)
            if n is None:
                raise ValueError(
                    f"`shard`: {A.name} does not fix the size of dim {d!r}; give its tile "
                    f"size in `batch_sizes`."
                )
            tiles[d] = -(-n // mesh.shape[ax])
    tiles = dict(BatchSpec(tiles).batch_sizes)  # checks the tile sizes
    sizes = checked_sizes(A, tiles, "shard")
    # an Auto copy of the mesh: shard_map then reshards plain inputs as needed
    auto = make_mesh(mesh.devices, mesh.axis_names)
    return build(A, tiles, sizes, auto, dict(axes), None, None, progress)


def _grid_dims(A: NamedLinop, spec: BatchSpec) -> list[str]:
    """The dims of `spec` that `A` couples (grid dims, split by domain decomposition);
    none when every batched dim is one `A` applies entry by entry (tiled)."""
    if not isinstance(A, NamedLinop) or spec.device_matrix is None:
        return []
    return [d for d in spec.batch_sizes if d in all_dims(A) and A.coupling(d) != Coupling.NONE]


def _split_grid(
    A: NamedLinop, spec: BatchSpec, grid: list[str], rest: list, normal: bool
) -> GridSplitLinop:
    """`A` split along its coupled dims `grid` across the devices of `spec`, one slab (a
    pencil: one block) each, over one axis of the device matrix per dim; with one more dim
    that `A` applies entry by entry (coils), that dim is split in one block per device
    along its axis of the matrix (see `grid_split`). The matrix's axes follow the order
    of the spec's dims."""
    where = f"`create_batched_linop`: splitting the grid dims {grid} of {A.name}"
    if spec.base_device is not None:
        raise ValueError(f"{where} takes a BatchSpec without a base_device, for now.")
    dims = list(spec.batch_sizes)
    loop = _loop(A, rest, where) if rest else None
    others = [d for d in dims if d not in grid]
    if loop is not None and others:
        raise ValueError(
            f"{where}: a loop over {loop[0]!r} within each device (a nested BatchSpec) "
            f"follows a spec of the grid dims alone; got {dims}."
        )
    if len(others) > 1:
        raise ValueError(
            f"{where}: the spec batches {dims}; a grid split takes the grid dims and at most "
            f"one dim the operator applies entry by entry (coils), on a device matrix with "
            f"one axis per dim."
        )
    matrix = spec.device_matrix
    assert isinstance(matrix, np.ndarray)  # BatchSpec converts the matrix
    matrix = matrix.reshape(-1) if len(dims) == 1 else matrix
    if matrix.ndim != len(dims):
        raise ValueError(
            f"{where}: the spec batches {dims}, so its device matrix needs {len(dims)} axes "
            f"(one per dim, in the spec's order); got shape {matrix.shape}."
        )
    if others:
        checked_sizes(A, {others[0]: spec.batch_sizes[others[0]]}, "create_batched_linop")
    counts = [_blocks(A, d, spec.batch_sizes[d], m, where) for d, m in zip(dims, matrix.shape)]
    matrix = matrix[tuple(slice(0, c) for c in counts)]
    order = [dims.index(d) for d in grid + others]  # the slab axes first
    mesh = jax.sharding.Mesh(np.transpose(matrix, order), tuple(grid + others))
    return grid_split(A, tuple(grid), mesh, normal=normal, loop=loop)


def _loop(A: NamedLinop, rest: list[BatchSpec], where: str) -> GridBatch:
    """The loop of a nested spec after a grid split: one dim `A` applies entry by entry
    (coils), in blocks of its tile, run one after another on each device."""
    if len(rest) > 1 or len(rest[0].batch_sizes) > 1:
        raise ValueError(
            f"{where}: a grid split takes at most one nested BatchSpec of one dim (a loop "
            f"over coils within each device); got {[dict(r.batch_sizes) for r in rest]}."
        )
    ((d, tile),) = rest[0].batch_sizes.items()
    checked_sizes(A, {d: tile}, "create_batched_linop")
    n = A.size(d)
    if n is None:
        raise ValueError(f"{where}: {A.name} does not fix the size of the looped dim {d!r}.")
    return d, BatchDim.blocks(n, -(-n // tile))


def _blocks(A: NamedLinop, d: str, tile: int, devices: int, where: str) -> int:
    """How many blocks (one per device) tiles of `tile` cut the dim `d` of `A` into; a
    grid dim whose size only the input fixes (an FFT or a `Convolution` alone), one slab
    on each of the `devices`."""
    n = A.size(d)
    if n is None and A.coupling(d) != Coupling.NONE and d in A.ishape:
        return devices
    if n is None:
        raise ValueError(f"{where}: {A.name} does not fix the size of dim {d!r}.")
    count, what = -(-n // tile), "slab" if A.coupling(d) != Coupling.NONE else "block"
    if count > devices:
        raise ValueError(
            f"{where}: dim {d!r} is split into one {what} per device; tiles of {tile} make "
            f"{count} {what}s for {devices} devices (use tiles of at least {-(-n // devices)})."
        )
    return count


def checked_sizes(A: NamedLinop, tiles: Mapping[str, int], what: str) -> dict[str, int | None]:
    """The size of each batched dim (None: only the input fixes it), checked: each must be
    a dim of `A` that it declares `Coupling.NONE` (see `NamedLinop.coupling`)."""
    if not isinstance(A, NamedLinop):
        raise TypeError(f"`{what}` expects a NamedLinop; got {type(A).__name__}.")
    known = all_dims(A)
    sizes = {}
    for d in tiles:
        if d not in known:
            raise ValueError(
                f"`{what}`: dim {d!r} is not a dim of {A.name} ({fmt(A.ishape)} -> "
                f"{fmt(A.oshape)})."
            )
        sizes[d] = A.size(d)
        if sizes[d] is None and d not in A.ishape:
            raise ValueError(
                f"`{what}`: {A.name} ({fmt(A.ishape)} -> {fmt(A.oshape)}) does not fix the "
                f"size of dim {d!r}, and it is not an input dim that the input could fix."
            )
        if sizes[d] is None:
            check_sized(A, d, what)
        coupling = A.coupling(d)
        if coupling != Coupling.NONE:
            raise ValueError(
                f"`{what}`: {A.name} ({fmt(A.ishape)} -> {fmt(A.oshape)}) cannot be split "
                f"along dim {d!r}: it couples the entries of that dim ({coupling}), and only "
                f"dims that an operator applies entry by entry are tiled."
            )
    return sizes


def check_sized(A: NamedLinop, d: str, what: str) -> None:
    """Raise a ValueError when an operator in `A` with its own `split` (torchlinops'
    protocol) has dim `d` without reporting its size: its tiles would need slicing, but a
    dim of unknown size is one the input sizes and every tile shares."""
    for op in jax.tree.leaves(A, is_leaf=user_split):
        if user_split(op) and d in op.dims and op.size(d) is None:
            raise ValueError(
                f"`{what}`: `{op.name}` ({fmt(op.ishape)} -> {fmt(op.oshape)}) has its own "
                f"`split` but does not report the size of dim {d!r}: define "
                f"`size(self, dim)` returning it, so that its tiles can be sliced."
            )


def _check_not_nested(A: NamedLinop, tile: NamedLinop, dims: tuple[str, ...]) -> None:
    """Raise a ValueError when a tile that would run across devices runs across devices
    itself (an operator batched across devices, split along another dim): device meshes
    do not nest."""
    batched = (BatchedLinop, GridSplitLinop)
    inside = jax.tree.leaves(tile, is_leaf=lambda o: isinstance(o, batched))
    meshed = [op for op in inside if isinstance(op, batched) and op.mesh is not None]
    if meshed:
        raise ValueError(
            f"`create_batched_linop`: {A.name} cannot be split along {dims} across devices: "
            f"its tiles hold {meshed[0].name}, which runs across devices already (device "
            f"meshes do not nest). Batch it along those dims without a device matrix, or "
            f"split the unbatched operator along all the dims in one BatchSpec."
        )


def build(
    A: NamedLinop,
    tiles: dict[str, int],
    sizes: dict[str, int | None],
    mesh: Mesh | None,
    axes: dict[str, str],
    inner: Callable[[NamedLinop], NamedLinop] | None,
    base_device: Device | None,
    progress: bool | None = None,
) -> BatchedLinop:
    """Split `A` into its (padded) tile grid, stack the tiles and place them on `mesh`
    (`sizes`: the batched dims' sizes from `checked_sizes`; `progress`: a bar over the
    tiles, see `jaxlinops._progress.enabled`)."""
    devices = {d: mesh.shape[ax] for d, ax in axes.items()} if mesh is not None else {}
    batch = {d: BatchDim(n, tiles[d], axes.get(d), devices.get(d, 1)) for d, n in sizes.items()}
    known = {d: n for d, n in sizes.items() if n is not None}
    stacked = tuple(known)
    shape, plan = tile_grid(known, tiles, {d: batch[d].count(n) for d, n in known.items()})
    counts = list(shape)
    grid = []
    for _, tile in iterate(plan, f"create_batched_linop: tiles of {A.name}", progress):
        tile = A.split(tile)
        grid.append(inner(tile) if inner is not None else tile)
    if mesh is not None:
        _check_not_nested(A, grid[0], tuple(tiles))
    tiles_op = stack_tiles(grid, tuple(counts))
    if tiles_op is None:
        tiles_op = place(tuple(grid), mesh, ())
    else:
        tiles_op = place(tiles_op, mesh, tuple(batch[d].axis for d in stacked))
    op_sizes = {d: A.size(d) for d in A.dims}
    out = BatchedLinop(
        tiles=tiles_op,
        ishape=A.ishape,
        oshape=A.oshape,
        batch=tuple(batch.items()),
        stacked=stacked,
        sizes=tuple((d, n) for d, n in op_sizes.items() if n is not None),
        mesh=mesh,
        base_device=base_device,
    )
    log_plan(out, counts)
    return out
