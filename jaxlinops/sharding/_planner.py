r"""`plan_batches`: choose the `BatchSpec`s of an operator from its compiled programs.

A candidate plan spreads one or two splittable dims over the devices (one tile of
$t_d = \lceil n_d / D_d \rceil$ entries per device along a mesh axis of $D_d$ devices),
optionally followed by a memory-only loop over smaller tiles of one dim, or splits one grid
dim (a dim the operator couples, such as an FFT's) by domain decomposition, one slab per
device (`jaxlinops.sharding._grid`), alone, with a dim it applies entry by entry (coils)
on a 2-D mesh, or with a loop over such a dim on each device. Each candidate the search
reaches is built with `create_batched_linop` and its application compiled
(`jax.jit(lambda B, x: B(x)).lower(B, x).compile()`); XLA's own figures decide:

- its per-device peak $M$: `memory_analysis()` arguments + output + temporaries (less
  buffers aliased between arguments and output);
- its collective bytes $K$ per application: `collective_bytes` of the compiled HLO, those
  in a loop's body once per iteration.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._arrays import Device, as_size
from .._core import Coupling, NamedLinop, all_dims, check_input
from .._dims import fmt, has_wildcards
from ._build import batched
from ._hlo import looped_collective_bytes
from ._log import logger
from ._spec import BatchSpec, device_matrix

DEFAULT_FRACTION = 0.8  # of a device's memory, when JAX reports it
MAX_COMPILES = 6  # candidates compiled per call, besides the unsplit operator


class Split(NamedTuple):
    """A dim cut into tiles of `tile` entries, spread over `devices` devices along one
    axis of the mesh."""

    dim: str
    tile: int
    devices: int


class Loop(NamedTuple):
    """A dim cut into tiles of `tile` entries, run one after another on each device."""

    dim: str
    tile: int


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One plan: the `outer` splits over a mesh, then an optional memory-only loop
    `inner`, with its first estimates; with `grid`, `outer` starts with a dim the operator
    couples, split into one slab per device (then, on a 2-D mesh, a dim it applies entry by
    entry, in one block per device, or with `pencil` a second dim it couples: one pencil
    per device)."""

    outer: tuple[Split, ...]
    inner: Loop | None
    devices: int
    tiles_per_device: int
    estimate: float  # per-device peak, bytes
    floor: float  # its arguments and output alone, bytes
    comm_estimate: float  # psum bytes of summed dims, bytes
    grid: bool = False
    pencil: bool = False

    def specs(self, devices: Sequence[Device]) -> list[BatchSpec]:
        shape = tuple(s.devices for s in self.outer)
        matrix = np.empty(self.devices, dtype=object)
        matrix[:] = list(devices[: self.devices])
        tiles = {s.dim: s.tile for s in self.outer}
        outer = BatchSpec(tiles, device_matrix=matrix.reshape(shape))
        inner = self.inner
        return [outer] if inner is None else [outer, BatchSpec({inner.dim: inner.tile})]

    def rank(self) -> tuple:
        """The ranking by what the estimates know well: whether it communicates, the
        collective bytes, the tiles per device (see `plan_batches`)."""
        communicates = self.grid or self.comm_estimate > 0
        return (communicates, self.comm_estimate, self.tiles_per_device)

    def key(self) -> tuple:
        """The ranking by the first estimates: `rank`, then the estimated peak."""
        return (*self.rank(), self.estimate)

    def __str__(self) -> str:
        parts = " x ".join(f"{s.dim}/{s.tile} over {s.devices}" for s in self.outer)
        mesh = " x ".join(str(s.devices) for s in self.outer)
        where = f"{self.devices} devices" + (f", a {mesh} mesh" if len(self.outer) > 1 else "")
        if self.grid:
            blocks = "".join(f" and a block of {s.dim}" for s in self.outer[1:])
            text = f"grid {parts} ({where}, one slab{blocks} each)"
            if self.pencil:
                text = f"grid {parts} ({where}, one pencil each)"
        else:
            text = f"{parts} ({where})"
        if self.inner is not None:
            text += f", then {self.inner.dim}/{self.inner.tile} in a loop"
        return text


@dataclasses.dataclass(frozen=True)
class Measured:
    """A compiled candidate: per-device peak bytes and collective bytes per application."""

    candidate: Candidate
    peak: int
    temporaries: int
    collectives: dict[str, float]

    @property
    def communicated(self) -> float:
        return sum(self.collectives.values())

    def rank(self) -> tuple:
        """`Candidate.rank` from the compiled figures."""
        return (self.communicated > 0, self.communicated, self.candidate.tiles_per_device)

    def key(self) -> tuple:
        """The ranking of `plan_batches`: `rank`, then the peak, then the devices used."""
        return (*self.rank(), self.peak, self.candidate.devices)


@dataclasses.dataclass(frozen=True)
class PlanReport:
    """What `plan_batches` compiled and chose; `str(report)` explains it. `free`: whether
    any candidate needs no communication; `grid_dims`: the dims of the grid candidates;
    `refused`: the grid candidates the sharding layer refused to build, with its reason."""

    operator: str
    budget: int | None
    budget_source: str
    devices: int
    unsplit_peak: int
    chosen: Measured
    compiled: tuple[Measured, ...]
    not_compiled: int
    free: bool
    grid_dims: tuple[str, ...]
    refused: tuple[tuple[Candidate, str], ...]

    def __str__(self) -> str:
        c = self.chosen
        budget = "none" if self.budget is None else _bytes(self.budget)
        lines = [
            f"plan_batches({self.operator}): {self.devices} devices, budget {budget} per "
            f"device ({self.budget_source}); unsplit, one device needs {_bytes(self.unsplit_peak)}",
            f"  chosen: {c.candidate}",
            f"    {_bytes(c.peak)} per device, {_comm(c)} per application, "
            f"{c.candidate.tiles_per_device} tile(s) per device",
            f"    why: {self._why()}",
            "  compiled candidates (peak per device, collectives per application, tiles per "
            "device):",
        ]
        for m in sorted(self.compiled, key=Measured.key):
            fits = self.budget is None or m.peak <= self.budget
            mark = " <- chosen" if m is c else ("" if fits else " (over budget)")
            lines.append(
                f"    {m.candidate}: {_bytes(m.peak)}, {_comm(m)}, "
                f"{m.candidate.tiles_per_device}{mark}"
            )
        lines += [f"  refused: {c}: {reason}" for c, reason in self.refused]
        if self.not_compiled:
            lines.append(
                f"  {self.not_compiled} other candidates not compiled (ranked lower, or a lower "
                f"bound of their peak is over the budget)"
            )
        return "\n".join(lines)

    def _why(self) -> str:
        c = self.chosen
        fits = "fits the budget" if self.budget is not None else "no budget"
        if c.communicated == 0:
            grid = ", ".join(repr(d) for d in self.grid_dims)
            also = f"; preferred to the grid splits along {grid}, which communicate" if grid else ""
            return f"{fits}; needs no communication (every split dim is concatenated){also}"
        if not self.free:
            free = "no split is communication-free (every dim is coupled or summed over)"
        elif self.budget is None:
            free = "no compiled candidate is communication-free"
        else:
            free = "no communication-free split fits (compiled, or by a lower bound of its peak)"
        if c.candidate.grid:
            first, *batch = c.candidate.outer
            dim, inner = first.dim, c.candidate.inner
            also = "".join(
                f" with {s.dim!r} on a {first.devices} x {s.devices} mesh" for s in batch
            )
            also += f" with a loop over {inner.dim!r}" if inner is not None else ""
            return (
                f"{fits}; {free}: grid split along {dim!r}{also} moves "
                f"{_bytes(c.communicated)} per application, the fewest collective bytes, then "
                f"the fewest tiles per device"
            )
        return f"{fits}; {free}: the fewest collective bytes, then the fewest tiles per device"


class Plan(list):
    """The `BatchSpec`s `plan_batches` chose (a list to pass to `create_batched_linop`),
    with `report`, a `PlanReport`; `print(plan)` prints the report."""

    report: PlanReport

    def __init__(self, specs: Sequence[BatchSpec], report: PlanReport):
        super().__init__(specs)
        self.report = report

    def __str__(self) -> str:
        return str(self.report)


def plan_batches(
    A: NamedLinop,
    *,
    devices: Sequence[Device] | None = None,
    memory_limit: int | None = None,
    x: jax.Array | jax.ShapeDtypeStruct | None = None,
) -> Plan:
    r"""The `BatchSpec`s to run `A` within `memory_limit` bytes per device:
    `jl.create_batched_linop(A, jl.plan_batches(A))`.

    **Candidates.** The dims `A` is tiled along: dims of `A` (internal ones included)
    that every operator in it applies entry by entry (`Coupling.NONE`), whose size
    $n_d > 1$ `A` fixes. With $D$ devices:

    - one dim over all $D$ devices, tiles of $t_d = \lceil n_d / D \rceil$ (using
      $\lceil n_d / t_d \rceil$ devices);
    - two dims on a 2-D mesh $D = D_1 D_2$ ($D_1, D_2 \ge 2$, each at most the dim's size),
      tiles $\lceil n_{d_i} / D_i \rceil$;
    - each of those followed by a memory-only loop (a second `BatchSpec` without
      devices) over one dim in tiles of $\lceil m / 2^j \rceil$, $m$ its per-device extent;
    - *grid candidates*: one input dim of known size $n_d > 1$ that `A` couples (an FFT's
      image dim, a `Pad`'s, a `Convolution`'s), split by domain decomposition into one slab
      of $t_d = \lceil n_d / D \rceil$ entries per device (on $\lceil n_d / t_d \rceil$
      devices; `create_batched_linop` builds a `GridSplitLinop`). When those slabs are
      ragged, also even slabs on the most devices $D' \ge 2$ that divide $n_d$: a ragged
      split holds its whole input and output on each device (the sharded dims of a
      `jax.Array` divide evenly), so fewer devices can need less. With a dim $c$ of the
      tiled ones (coils), also the grid on a 2-D mesh $D = D_g D_c$ ($D_g, D_c \ge 2$, each at
      most the dim's size; each device a slab of $\lceil n_d / D_g \rceil$ and a block of
      $\lceil n_c / D_c \rceil$ entries of $c$), and the grid split followed by a loop over
      $c$ in tiles of $\lceil n_c / 2^j \rceil$ (nested specs, the blocks one after another
      on each device); and, where `A` couples three or more input dims (a 3-D grid), two
      of them on a 2-D mesh (pencils: each device a block of both, laid out as the tiled
      pairs above). One the sharding layer refuses to build (a
      leaf whose coupling it cannot split: a ValueError building or tracing it) is dropped,
      its reason kept in the report.

    **First estimate** (no compile): from the unsplit operator's compiled input $i$,
    output $o$, other arguments $a$ (the operator's arrays) and temporaries $w$, the
    optimistic peak

    $$\hat M = i\, f_{\text{in}} + o\, f_{\text{out}} + a\, f + w\, f \prod_e s_e / t_e,$$

    with $f = \prod_d t_d / n_d$ over the split dims (the arrays and work shrink with the
    tile), $f_{\text{in}}$, $f_{\text{out}}$ the same over the split dims in `A.ishape`,
    `A.oshape` (the rest is replicated), and $s_e / t_e$ the loop's share of its dim; and
    the collective bytes $\hat K = 2 (k - 1) / k \cdot o\, f_{\text{out}}$ of the ring
    `psum` over the $k$ devices of the split dims not in `A.oshape` (their tiles are
    partial sums), 0 when every split dim is in the output (concatenated). A grid
    candidate's estimate is the same with the grid dim counted in $f_{\text{out}}$ too (its
    transposes leave the output split); its collective bytes depend on how each operator
    couples the dim (slab transposes, halos), so they are not estimated: it ranks first
    among the candidates that communicate ($\hat K = 0$, but not communication-free).

    **Search.** Candidates are compiled in the order of $(c, \hat K, \text{tiles per
    device}, \hat M)$, $c$ whether it communicates ($\hat K > 0$ or a grid split), those
    estimated no lower than one compiled over the budget last, and only while none fits (a
    layout that holds more than one over the budget, such as a grid split on a 2-D mesh or
    along another dim after a grid split over it, is unlikely to fit; the loops that hold
    less come first), skipping those whose lower bound exceeds the budget: the estimated
    arguments and output $i f_{\text{in}} + o f_{\text{out}} + a f$, or, for a loop over a
    layout already compiled without one, that program's peak less its temporaries (a loop
    shrinks only the work), and loops over a layout already compiled that fits (the same
    collectives in more tiles). Once one fits, the search stops at the next candidate that
    ranks lower on $(c, \hat K, \text{tiles})$ than the best fit's measured figures or whose
    lower bound is not below the best fit's peak, and after 6 compiles in any case.
    **Choice** among the compiled ones that fit ($M \le$ budget), by $(K > 0, K,
    \text{tiles per device}, M, \text{devices})$: no communication first, then the fewest
    collective bytes, then the least looping; then the lowest peak, which spreads over
    more devices (the headroom a budget estimate needs), then the fewest devices (the
    rest stay free).

    Arguments:

    - `devices`: the devices to use (a sequence of distinct `jax.Device`s; default
      `jax.devices()`).
    - `memory_limit`: bytes per device; default 0.8 of the smallest
      `memory_stats()["bytes_limit"]` of the devices where JAX reports it (GPUs, TPUs),
      else no limit (CPU devices).
    - `x`: an input (array or `jax.ShapeDtypeStruct`) when `A` does not fix its input's
      sizes or dtype; default: `A.ishape` at `A`'s sizes, complex at the precision of
      `A`'s arrays (complex64 when it has none).

    Returns a `Plan`: a list of `BatchSpec`s (the device split, then the loop, if any),
    whose `report` (`print(plan)`; also logged at INFO on the "jaxlinops" logger) gives the
    chosen plan's per-device peak, collective bytes per application and tiles per device,
    and every compiled candidate's. Raises a ValueError when no candidate fits, naming the
    smallest per-device peak among the compiled candidates: the smallest budget that fits.
    """
    if not isinstance(A, NamedLinop):
        raise TypeError(f"`plan_batches` expects a NamedLinop; got {type(A).__name__}.")
    devices = _devices(devices)
    budget, source = _budget(memory_limit, devices)
    x = _input(A, x)
    memory = _memory(_compile(A, x))
    unsplit_peak = _peak(memory)
    x_bytes = math.prod(x.shape) * x.dtype.itemsize
    candidates = sorted(_candidates(A, len(devices), memory, x_bytes), key=Candidate.key)
    compiled: list[Measured] = []
    refused: list[tuple[Candidate, str]] = []
    for c in _ordered(candidates, compiled, budget):
        fits = [m for m in compiled if budget is None or m.peak <= budget]
        best = min(fits, key=Measured.key, default=None)
        if best is not None and (c.rank() > best.rank() or _floor(c, compiled) >= best.peak):
            break
        if len(compiled) == MAX_COMPILES:
            break
        if any(m.candidate.outer == c.outer for m in fits):  # the same, in fewer tiles
            continue
        if budget is None or _floor(c, compiled) <= budget:  # else it cannot fit
            _measure(A, c, devices, x, compiled, refused)
    fits = [m for m in compiled if budget is None or m.peak <= budget]
    if not fits:
        _no_fit(A, budget, source, candidates, compiled, refused, devices, x)
    chosen = min(fits, key=Measured.key)
    report = PlanReport(
        operator=f"{A.name} {fmt(A.ishape)} -> {fmt(A.oshape)}",
        budget=budget,
        budget_source=source,
        devices=len(devices),
        unsplit_peak=unsplit_peak,
        chosen=chosen,
        compiled=tuple(compiled),
        not_compiled=len(candidates) - len(compiled) - len(refused),
        free=any(not c.rank()[0] for c in candidates),
        grid_dims=tuple(dict.fromkeys(c.outer[0].dim for c in candidates if c.grid)),
        refused=tuple(refused),
    )
    logger.info(str(report))
    return Plan(chosen.candidate.specs(devices), report)


def _devices(devices) -> list[Device]:
    if devices is None:
        return list(jax.devices())
    if isinstance(devices, (str, bytes, jax.Device)) or not isinstance(
        devices, (Sequence, np.ndarray)
    ):
        raise TypeError(
            f"`plan_batches(devices=...)` expects a sequence of jax.Device; got "
            f"{devices!r:.60} ({type(devices).__name__})."
        )
    return list(device_matrix(devices, "`plan_batches(devices=...)`").flat)


def _budget(memory_limit, devices: list[Device]) -> tuple[int | None, str]:
    """The budget in bytes per device (None: no limit) and where it comes from."""
    if memory_limit is not None:
        return as_size(memory_limit, "`plan_batches(memory_limit=...)`", 1), "memory_limit"
    stats = [d.memory_stats() for d in devices]
    if all(s is not None and "bytes_limit" in s for s in stats):
        limit = min(s["bytes_limit"] for s in stats)
        return int(DEFAULT_FRACTION * limit), f"{DEFAULT_FRACTION} of the device's bytes_limit"
    return None, "the devices report no memory limit"


def _input(A: NamedLinop, x) -> jax.ShapeDtypeStruct:
    """The input whose application is compiled: `x`'s shape and dtype, or `A.ishape` at
    `A`'s sizes, complex at the precision of `A`'s arrays."""
    if x is not None:
        if not (hasattr(x, "shape") and hasattr(x, "dtype")):
            raise TypeError(
                f"`plan_batches(x=...)` expects an array or a jax.ShapeDtypeStruct; got "
                f"{type(x).__name__}."
            )
        try:
            check_input(A, A.ishape, x)
        except ValueError as error:
            raise ValueError(f"`plan_batches(x=...)`: {error}") from None
        return jax.ShapeDtypeStruct(tuple(x.shape), x.dtype)
    sizes = [A.size(d) for d in A.ishape]
    if has_wildcards(A.ishape) or None in sizes:
        unknown = [d for d, n in zip(A.ishape, sizes) if n is None]
        raise ValueError(
            f"`plan_batches`: {A.name} ({fmt(A.ishape)} -> {fmt(A.oshape)}) does not fix the "
            f"size of its input dims {unknown}; pass `x=` (an input array or a "
            f"jax.ShapeDtypeStruct) to plan for."
        )
    arrays = [a.dtype for a in jax.tree.leaves(A) if eqx.is_inexact_array(a)]
    dtype = np.result_type(np.complex64, *arrays) if arrays else np.dtype(np.complex64)
    return jax.ShapeDtypeStruct(tuple(sizes), jnp.dtype(dtype))


def _splittable(A: NamedLinop) -> dict[str, int]:
    """`{dim: size}` of the dims `A` can be split along today (see `plan_batches`)."""
    order = list(A.dims) + sorted(all_dims(A) - set(A.dims))
    sizes = {d: A.size(d) for d in order}
    return {
        d: n for d, n in sizes.items() if n is not None and n > 1 and A.coupling(d) == Coupling.NONE
    }


def _candidates(A: NamedLinop, devices: int, memory, x_bytes: int) -> list[Candidate]:
    """Every candidate plan with its first estimates (see `plan_batches`)."""
    sizes = _splittable(A)
    layouts: list[tuple[Split, ...]] = []
    for d, n in sizes.items():
        t = -(-n // devices)
        layouts.append((Split(d, t, -(-n // t)),))
    for (d1, n1), (d2, n2) in itertools.combinations(sizes.items(), 2):
        layouts += _meshes(d1, n1, d2, n2, devices)
    if devices == 1:
        layouts = layouts[:1]  # the whole operator on the device, whichever dim names it
    out = []
    for g, n in _grid(A, devices):
        grid = {**sizes, g: n}
        for t, m in _grid_layouts(n, devices):
            out += [
                _candidate(A, grid, (Split(g, t, m),), inner, memory, x_bytes, loops, grid=g)
                for inner, loops in _loops((Split(g, t, m),), sizes)
            ]
        for c, n_c in sizes.items():
            out += [
                _candidate(A, grid, outer, None, memory, x_bytes, grid=g)
                for outer in _meshes(g, n, c, n_c, devices)
            ]
    grids = _grid(A, devices)  # pencils: of a 3-D grid (a 2-D FFT has no dim to trade)
    for (g1, n1), (g2, n2) in itertools.combinations(grids if len(grids) > 2 else [], 2):
        grid = {**sizes, g1: n1, g2: n2}
        out += [
            _candidate(A, grid, outer, None, memory, x_bytes, grid=g1)
            for outer in _meshes(g1, n1, g2, n2, devices)
        ]
    for outer in layouts:
        out += [
            _candidate(A, sizes, outer, inner, memory, x_bytes, loops)
            for inner, loops in _loops(outer, sizes)
        ]
    return out


def _meshes(d1: str, n1: int, d2: str, n2: int, devices: int) -> list[tuple[Split, Split]]:
    """The layouts of dims `d1`, `d2` (of `n1`, `n2` entries) on 2-D meshes of `devices`
    (see `plan_batches`)."""
    out = []
    for m1 in range(2, devices // 2 + 1):
        m2 = devices // m1
        if m1 * m2 == devices and m1 <= n1 and m2 <= n2:
            t1, t2 = -(-n1 // m1), -(-n2 // m2)
            out.append((Split(d1, t1, -(-n1 // t1)), Split(d2, t2, -(-n2 // t2))))
    return out


def _loops(outer: tuple[Split, ...], sizes: dict[str, int]):
    """`(inner, tiles per device)` of `outer` alone (`inner` None), then of its loops over
    each of `sizes`' dims in tiles of $\\lceil m / 2^j \\rceil$, $m$ its per-device extent."""
    yield None, 1
    extent = {s.dim: s.tile for s in outer}
    for d, n in sizes.items():
        m = tile = extent.get(d, n)
        while tile > 1:
            tile = -(-tile // 2)
            yield Loop(d, tile), -(-m // tile)


def _grid(A: NamedLinop, devices: int) -> list[tuple[str, int]]:
    """`(dim, size)` of the input dims `A` couples, of known size > 1: those of its grid
    candidates (none on one device)."""
    if devices == 1:
        return []
    sizes = [(d, A.size(d)) for d in dict.fromkeys(A.ishape)]
    return [(d, n) for d, n in sizes if n is not None and n > 1 and A.coupling(d) != Coupling.NONE]


def _grid_layouts(n: int, devices: int) -> list[tuple[int, int]]:
    """`(tile, devices)` of the grid candidates along a dim of `n` entries (see
    `plan_batches`)."""
    t = -(-n // devices)
    m = -(-n // t)
    even = max((k for k in range(2, m) if n % k == 0), default=None)
    return [(t, m)] if t * m == n or even is None else [(t, m), (n // even, even)]


def _candidate(
    A, sizes, outer, inner, memory, x_bytes: int, loops: int = 1, grid: str | None = None
) -> Candidate:
    """The candidate `outer`, then `inner`, with its first estimates (see `plan_batches`):
    with `grid`, the coupled dim `outer` starts with (`sizes` has its size)."""

    def share(dims) -> float:
        return math.prod(s.tile / sizes[s.dim] for s in outer if s.dim in dims)

    work = share(sizes)
    if inner is not None:
        extent = next((s.tile for s in outer if s.dim == inner.dim), sizes[inner.dim])
        work *= inner.tile / extent
    output = memory.output_size_in_bytes
    arrays = memory.argument_size_in_bytes - x_bytes
    coupled = {s.dim for s in outer if A.coupling(s.dim) != Coupling.NONE}
    floor = x_bytes * share(A.ishape) + output * share({*A.oshape, *coupled})
    floor += arrays * share(sizes)
    estimate = floor + memory.temp_size_in_bytes * work
    k = math.prod(s.devices for s in outer if s.dim not in A.oshape)
    comm = 0.0 if grid else 2 * (k - 1) / k * output * share(A.oshape)
    devices = math.prod(s.devices for s in outer)
    pencil = len(coupled) > 1
    return Candidate(outer, inner, devices, loops, estimate, floor, comm, grid is not None, pencil)


def _ordered(candidates: list[Candidate], compiled: list[Measured], budget: int | None):
    """`candidates` in their order, but those estimated no lower than a candidate compiled
    (so far, as the search appends to `compiled`) over the budget after the others, and
    only while none fits."""
    if budget is None:
        yield from candidates
        return
    later = []
    for c in candidates:
        if any(m.peak > budget and m.candidate.estimate <= c.estimate for m in compiled):
            later.append(c)
        else:
            yield c
    for c in later:
        if any(m.peak <= budget for m in compiled):
            return
        yield c


def _floor(c: Candidate, compiled: list[Measured]) -> float:
    """A lower bound of `c`'s peak: its layout's measured peak less its temporaries (a loop
    shrinks only the work) where that layout was compiled without a loop, else the
    estimated arguments and output."""
    plain = (m for m in compiled if m.candidate.outer == c.outer and m.candidate.inner is None)
    m = next(plain, None)
    return c.floor if m is None else m.peak - m.temporaries


def _compile(op: NamedLinop, x: jax.ShapeDtypeStruct):
    return jax.jit(lambda B, v: B(v)).lower(op, x).compile()


def _memory(compiled):
    """The compiled program's `memory_analysis()`, which planning needs."""
    memory = compiled.memory_analysis()
    if memory is None:
        raise RuntimeError(
            "`plan_batches`: this backend reports no memory analysis of compiled programs, "
            "which the plan is measured by; give the BatchSpecs by hand."
        )
    return memory


def _peak(memory) -> int:
    """Per-device peak bytes of a compiled program: arguments + output + temporaries, less
    the buffers shared by arguments and output."""
    return int(
        memory.argument_size_in_bytes
        + memory.output_size_in_bytes
        + memory.temp_size_in_bytes
        - memory.alias_size_in_bytes
    )


def _measure(A: NamedLinop, c: Candidate, devices, x, compiled: list, refused: list) -> None:
    """Build and compile `c`, appending its figures to `compiled`; a grid candidate the
    sharding layer refuses (a ValueError building or tracing it) goes to `refused`, with
    the reason."""
    try:
        # (without a structured normal: that is built when the plan is used)
        program = _compile(batched(A, c.specs(devices), False, normal=False), x)
    except ValueError as error:
        if not c.grid:
            raise
        refused.append((c, str(error)))
        return
    comm = looped_collective_bytes(program.as_text() or "", c.devices)
    memory = _memory(program)
    compiled.append(Measured(c, _peak(memory), memory.temp_size_in_bytes, comm))


def _no_fit(A, budget, source, candidates, compiled, refused, devices, x) -> None:
    """Raise the ValueError of `plan_batches` when no compiled candidate fits: first
    compile the candidates of smallest estimate not yet tried (up to 2 more compiled), so
    that the smallest budget named is that of the plans most likely to be smallest."""
    compiled, refused = list(compiled), list(refused)
    done = {m.candidate for m in compiled} | {c for c, _ in refused}
    extra = len(compiled) + 2
    for c in sorted((c for c in candidates if c not in done), key=lambda c: c.estimate):
        if len(compiled) == extra:
            break
        _measure(A, c, devices, x, compiled, refused)
    if not compiled:
        reasons = "".join(f" {c}: {reason}" for c, reason in refused)
        raise ValueError(
            f"`plan_batches`: {A.name} ({fmt(A.ishape)} -> {fmt(A.oshape)}) has no dim that "
            f"can be split (entry by entry, or a grid dim by domain decomposition, of known "
            f"size > 1); nothing to plan.{reasons}"
        )
    best = min(compiled, key=lambda m: m.peak)
    raise ValueError(
        f"`plan_batches`: no plan for {A.name} ({fmt(A.ishape)} -> {fmt(A.oshape)}) fits "
        f"the budget of {budget} bytes per device ({source}) on {len(devices)} devices; "
        f"the smallest budget that fits is {best.peak} bytes per device ({best.candidate}), "
        f"the smallest compiled peak of {len(compiled)} candidates."
    )


def _bytes(n: float) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit} ({int(n)} bytes)"
    return f"{int(n)} bytes"


def _comm(m: Measured) -> str:
    if not m.collectives:
        return "no collectives"
    kinds = ", ".join(f"{k} {_bytes(v)}" for k, v in sorted(m.collectives.items()))
    return f"collectives {kinds}"
