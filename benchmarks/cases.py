"""The benchmark cases: each builds jaxlinops' implementation and its peers' from the same
random data, and carries a model of its floating-point work and compulsory memory traffic.

Families (complex64 throughout):

- `NUFFT fwd/adj`, `Interp fwd/adj`, `ArrayToBlocks`, `BlocksToArray`: torchlinops' own
  benchmark set, at its sizes (NUFFT at oversampling 1.25, width 4; Kaiser–Bessel
  interpolation of width 4, beta 1; blocks 8³ with stride 4). Peers: torchlinops, finufft
  (at the tolerance that gives jaxlinops' accuracy) and sigpy.
- `SENSE fwd/normal`: a Cartesian chain, coil maps (`Dense`) @ centered 2-D `FFT` @ mask
  (`Diagonal`), 8 coils.
- `Normal Toeplitz/plain`: the non-Cartesian SENSE normal operator $A^H A$ of the demo's
  problem, by Toeplitz embedding and as $A^H(A x)$.
- `CG-SENSE`: the demo's reconstruction end to end, $A^H y$ and 20 CG iterations on the
  Toeplitz normal (each library's own CG).

Models: `flops` counts complex multiply-adds as 8 flops and an FFT of $n$ points as
$5 n \\log_2 n$; `bytes` is the traffic no implementation can avoid (reading inputs and
operator arrays, writing outputs, and one round trip of each FFT's grid). Both are lower
bounds, used only to say how far a time is from the machine's limits.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from functools import partial

import jax
import numpy as np
from harness import Impl, jax_impl, numpy_impl, torch_impl

import jaxlinops as jl
from jaxlinops.demo import radial_trajectory, ramp_dcf

# torchlinops' kernel on every platform, so that the peers compute the same operator
# (the finufft backend, with its own kernel, is compared in bench_nufft_peers.py; the
# Pallas kernels in gpu_bench.py)
NUFFT_BACKEND = "jax"
C64 = 8  # bytes per complex64
OVERSAMP, WIDTH = 1.25, 4.0
INTERP_BETA = 1.0
BLOCK, STRIDE = (8, 8, 8), (4, 4, 4)
POINT_SIZES = {
    2: (((64, 64), 4096), ((128, 128), 16384), ((256, 256), 65536)),
    3: (((32,) * 3, 4096), ((64,) * 3, 32768), ((128,) * 3, 262144)),
}
BLOCK_GRIDS = ((32,) * 3, (64,) * 3, (128,) * 3)
DEMO = dict(n=128, coils=8, spokes=37, readouts=256, oversamp=2.0, width=6.0, iters=20)


@dataclasses.dataclass
class Case:
    """One benchmark. `build(rng, peers)` returns `(impls, in_shape, reference)`: the
    implementations by library name (jaxlinops first), the input shape, and an exact
    reference function of the input (or None)."""

    family: str
    size: str
    flops: float
    bytes: float
    build: Callable

    @property
    def label(self) -> str:
        return f"{self.family} {self.size}"


@dataclasses.dataclass
class Peers:
    """The peer libraries importable in this run (None where missing) and where torch runs."""

    torch: object = None
    torchlinops: object = None
    sigpy: object = None
    finufft: object = None
    torch_device: object = None

    @classmethod
    def load(cls, names: set[str], gpu: bool) -> Peers:
        peers = cls()
        if "torchlinops" in names:
            try:
                import torch
                import torchlinops
            except ImportError:
                pass
            else:
                peers.torch, peers.torchlinops = torch, torchlinops
                cuda = gpu and torch.cuda.is_available()
                peers.torch_device = torch.device("cuda" if cuda else "cpu")
        if "sigpy" in names and not gpu:  # sigpy runs on GPUs through cupy only
            try:
                import sigpy
            except ImportError:
                pass
            else:
                peers.sigpy = sigpy
        if "finufft" in names and not gpu:
            try:
                import finufft
            except ImportError:
                pass
            else:
                peers.finufft = finufft
        return peers

    def tensor(self, a: np.ndarray):
        return self.torch.from_numpy(np.ascontiguousarray(a)).to(self.torch_device)


def _apply(op, x):
    return op(x)


def fft_flops(points: int) -> float:
    return 5 * points * math.log2(max(points, 2))


# --------------------------------------------------------------------------- NUFFT / Interp
def interior_locs(rng, npts: int, grid, width: float) -> np.ndarray:
    """Points `[npts, D]` in grid units, `ceil(width / 2)` away from the borders (the rule
    of torchlinops' benchmarks)."""
    margin = math.ceil(width / 2)
    low = np.full(len(grid), margin, np.float64)
    high = np.asarray(grid, np.float64) - 1 - margin
    return (low + rng.random((npts, len(grid))) * (high - low)).astype(np.float32)


def exact_nudft(locs: np.ndarray, grid, adjoint: bool, finufft) -> Callable | None:
    """The NUFFT's exact value (finufft in double precision at tolerance 1e-12), in
    jaxlinops' convention: $y_j = N^{-1/2} \\sum_n x_n e^{-2\\pi i\\, p_j \\cdot (n - N/2)/N}$."""
    if finufft is None:
        return None
    points = [np.asarray(2 * np.pi * locs[:, d] / n, np.float64) for d, n in enumerate(grid)]
    scale = 1 / math.sqrt(math.prod(grid))
    nd = len(grid)
    if adjoint:
        fn = getattr(finufft, f"nufft{nd}d1")
        return lambda y: scale * fn(*points, y.astype(np.complex128), grid, eps=1e-12, isign=1)
    fn = getattr(finufft, f"nufft{nd}d2")
    return lambda x: scale * fn(*points, x.astype(np.complex128), eps=1e-12, isign=-1)


def finufft_impl(finufft, locs, grid, adjoint: bool, eps: float) -> Impl:
    """A finufft plan (made outside the timing, like the other libraries' operators) at
    oversampling 1.25 and tolerance `eps`, in jaxlinops' convention and scaling."""
    plan = finufft.Plan(1 if adjoint else 2, grid, eps=eps, isign=1 if adjoint else -1,
                        dtype="complex64", upsampfac=OVERSAMP)  # fmt: skip
    plan.setpts(*[np.ascontiguousarray(2 * np.pi * locs[:, d] / n) for d, n in enumerate(grid)])
    scale = np.float32(1 / math.sqrt(math.prod(grid)))
    return numpy_impl(lambda a: plan.execute(a) * scale)


def nufft_case(
    grid, npts: int, adjoint: bool, finufft_eps: float, backend: str = NUFFT_BACKEND
) -> Case:
    nd, points = len(grid), math.prod(grid)
    padded = math.prod(round(OVERSAMP * n) for n in grid)
    flops = fft_flops(padded) + 8 * npts * WIDTH**nd + 8 * points
    traffic = C64 * (points + npts + 2 * padded) + 4 * nd * npts

    def build(rng, peers: Peers):
        locs = interior_locs(rng, npts, grid, WIDTH) - np.asarray(grid, np.float32) / 2
        op = jl.NUFFT(locs, grid, ("K",), oversamp=OVERSAMP, width=WIDTH, backend=backend)
        impls = {"jaxlinops": jax_impl(_apply, op.H if adjoint else op)}
        if peers.torchlinops is not None:
            tl = peers.torchlinops
            lin = tl.NUFFT(peers.tensor(locs), grid, ("K",), oversamp=OVERSAMP, width=WIDTH)
            lin = lin.to(peers.torch_device)
            impls["torchlinops"] = torch_impl(lin.H if adjoint else lin, peers.torch_device)
        if peers.finufft is not None:
            impls["finufft"] = finufft_impl(peers.finufft, locs, grid, adjoint, finufft_eps)
        if peers.sigpy is not None:
            sp, coord = peers.sigpy, locs.copy()
            if adjoint:
                fn = lambda y: sp.nufft_adjoint(y, coord, grid, oversamp=OVERSAMP, width=WIDTH)
            else:
                fn = lambda x: sp.nufft(x, coord, oversamp=OVERSAMP, width=WIDTH)
            impls["sigpy"] = numpy_impl(fn)
        shape = (npts,) if adjoint else grid
        return impls, shape, exact_nudft(locs, grid, adjoint, peers.finufft)

    direction = "adj" if adjoint else "fwd"
    size = f"{'x'.join(map(str, grid))}, {npts} pts"
    return Case(f"NUFFT {direction} {nd}D", size, flops, traffic, build)


def interp_case(grid, npts: int, adjoint: bool) -> Case:
    nd, points = len(grid), math.prod(grid)
    flops = 8 * npts * WIDTH**nd
    traffic = C64 * (points + npts) + 4 * nd * npts

    def build(rng, peers: Peers):
        locs = interior_locs(rng, npts, grid, WIDTH)
        options = dict(width=WIDTH, kernel="kaiser_bessel")
        op = jl.Interpolate(locs, grid, kernel_params={"beta": INTERP_BETA}, **options)
        impls = {"jaxlinops": jax_impl(_apply, op.H if adjoint else op)}
        if peers.torchlinops is not None:
            lin = peers.torchlinops.Interpolate(
                peers.tensor(locs), grid, kernel_params={"beta": INTERP_BETA}, **options
            ).to(peers.torch_device)
            impls["torchlinops"] = torch_impl(lin.H if adjoint else lin, peers.torch_device)
        return impls, ((npts,) if adjoint else grid), None

    direction = "adj" if adjoint else "fwd"
    size = f"{'x'.join(map(str, grid))}, {npts} pts"
    return Case(f"Interp {direction} {nd}D", size, flops, traffic, build)


def blocks_case(grid, to_array: bool) -> Case:
    nblocks = tuple((n - b) // s + 1 for n, b, s in zip(grid, BLOCK, STRIDE))
    block_entries = math.prod(nblocks) * math.prod(BLOCK)
    traffic = C64 * (math.prod(grid) + block_entries)

    def build(rng, peers: Peers):
        cls = jl.BlocksToArray if to_array else jl.ArrayToBlocks
        impls = {"jaxlinops": jax_impl(_apply, cls(grid, BLOCK, STRIDE))}
        if peers.torchlinops is not None:
            tl_cls = (
                peers.torchlinops.BlocksToArray if to_array else peers.torchlinops.ArrayToBlocks
            )
            lin = tl_cls(grid, BLOCK, STRIDE).to(peers.torch_device)
            impls["torchlinops"] = torch_impl(lin, peers.torch_device)
        if peers.sigpy is not None:
            sp = peers.sigpy
            if to_array:
                fn = lambda y: sp.blocks_to_array(y, grid, BLOCK, STRIDE)
            else:
                fn = lambda x: sp.array_to_blocks(x, BLOCK, STRIDE)
            impls["sigpy"] = numpy_impl(fn)
        return impls, (nblocks + BLOCK if to_array else grid), None

    name = "BlocksToArray" if to_array else "ArrayToBlocks"
    return Case(f"{name} 3D", "x".join(map(str, grid)), 0.0, traffic, build)


# --------------------------------------------------------------------------- SENSE chains
def sense_maps(rng, coils: int, n: int) -> np.ndarray:
    maps = rng.standard_normal((coils, n, n)) + 1j * rng.standard_normal((coils, n, n))
    return (maps / np.sqrt(np.sum(np.abs(maps) ** 2, axis=0))).astype(np.complex64)


def coil_maps(rng, peers: Peers, coils: int, n: int) -> dict:
    """The coil sensitivities $S$ (`sense_maps`, `(Nx, Ny) -> (C, Nx, Ny)`) as an operator in
    each library: the last factor of both SENSE operators."""
    maps = sense_maps(rng, coils, n)
    ops = {"jaxlinops": jl.Dense(maps, "C Nx Ny", "Nx Ny", "C Nx Ny")}
    if peers.torchlinops is not None:
        ops["torchlinops"] = peers.torchlinops.Dense(
            peers.tensor(maps), ("C", "Nx", "Ny"), ishape=("Nx", "Ny"), oshape=("C", "Nx", "Ny")
        )
    if peers.sigpy is not None:
        ops["sigpy"] = peers.sigpy.linop.Multiply((n, n), maps)
    return ops


def cartesian_sense(rng, peers: Peers, coils: int, n: int) -> dict:
    """$A = M F S$ (mask, centered FFT per coil, coil maps) in each library, from the same
    arrays."""
    S = coil_maps(rng, peers, coils, n)
    mask = (rng.random((n, n)) < 0.3).astype(np.float32)
    ops = {
        "jaxlinops": jl.Diagonal(mask, "C Kx Ky")
        @ jl.FFT(2, batch_shape="C", centered=True)
        @ S["jaxlinops"]
    }
    if peers.torchlinops is not None:
        tl = peers.torchlinops
        ops["torchlinops"] = (
            tl.Diagonal(peers.tensor(mask), ioshape=("C", "Kx", "Ky"))
            @ tl.FFT(2, batch_shape=("C",), centered=True)
            @ S["torchlinops"]
        ).to(peers.torch_device)
    if peers.sigpy is not None:
        sp = peers.sigpy
        ops["sigpy"] = (
            sp.linop.Multiply((coils, n, n), mask)
            * sp.linop.FFT((coils, n, n), axes=(-2, -1))
            * S["sigpy"]
        )
    return ops


def cartesian_sense_case(coils: int, n: int, normal: bool) -> Case:
    points = coils * n * n
    passes = 2 if normal else 1
    flops = passes * (fft_flops(n * n) * coils + 8 * points + 2 * points)
    traffic = C64 * (n * n + points + passes * 2 * points) + 4 * n * n

    def build(rng, peers: Peers):
        ops = {k: op.N if normal else op for k, op in cartesian_sense(rng, peers, coils, n).items()}
        impls = {"jaxlinops": jax_impl(_apply, ops["jaxlinops"])}
        if "torchlinops" in ops:
            impls["torchlinops"] = torch_impl(ops["torchlinops"], peers.torch_device)
        if "sigpy" in ops:
            impls["sigpy"] = numpy_impl(ops["sigpy"])
        return impls, (n, n), None

    return Case(f"SENSE {'normal' if normal else 'fwd'}", f"{coils} coils, {n}x{n}", flops,
                traffic, build)  # fmt: skip


def noncartesian_sense(
    rng, peers: Peers, toeplitz: bool, problem: dict, backend: str = NUFFT_BACKEND
) -> dict:
    """The demo's $A = \\sqrt{w}\\,\\mathrm{NUFFT}\\,S$ in each library (jaxlinops' NUFFT
    on `backend`)."""
    n, coils = problem["n"], problem["coils"]
    locs = radial_trajectory(n, problem["spokes"], problem["readouts"])
    weight = np.sqrt(ramp_dcf(locs))
    S = coil_maps(rng, peers, coils, n)
    nufft = dict(oversamp=problem["oversamp"], width=problem["width"])
    ops = {
        "jaxlinops": jl.Diagonal(weight[None], "C S R", broadcast_dims="C")
        @ jl.NUFFT(
            locs,
            (n, n),
            "S R",
            batch_shape="C",
            toeplitz=toeplitz,
            backend=backend,
            **nufft,
        )
        @ S["jaxlinops"]
    }
    if peers.torchlinops is not None:
        tl = peers.torchlinops
        ops["torchlinops"] = (
            tl.Diagonal(peers.tensor(weight), ioshape=("C", "S", "R"))
            @ tl.NUFFT(peers.tensor(locs), (n, n), ("S", "R"), batch_shape=("C",),
                       toeplitz=toeplitz, **nufft)
            @ S["torchlinops"]
        ).to(peers.torch_device)  # fmt: skip
    if peers.sigpy is not None:
        sp = peers.sigpy
        ops["sigpy"] = (
            sp.linop.Multiply((coils, *weight.shape), weight)
            * sp.linop.NUFFT((coils, n, n), locs, toeplitz=toeplitz, **nufft)
            * S["sigpy"]
        )
    return ops


def on_devices(op, devices: int):
    """`op` split by coils over the first `devices` devices (itself for one device), as the
    demo runs it: on a CPU, one simulated device per core."""
    if devices == 1:
        return op
    spec = jl.BatchSpec({"C": 1}, device_matrix=jax.devices()[:devices])
    return jl.create_batched_linop(op, spec)


def variant(family: str, devices: int) -> str:
    """The family's name for a run split over `devices` devices."""
    return family if devices == 1 else f"{family}, {devices} devices"


def variant_peers(peers: Peers, devices: int) -> Peers:
    """The peers of a split run: torchlinops only, as the reference (the others would
    repeat the one-device rows)."""
    return peers if devices == 1 else dataclasses.replace(peers, sigpy=None, finufft=None)


def normal_case(toeplitz: bool, problem: dict = DEMO, devices: int = 1) -> Case:
    n, coils = problem["n"], problem["coils"]
    npts = problem["spokes"] * problem["readouts"]
    if toeplitz:
        flops = coils * (2 * fft_flops(4 * n * n) + 8 * 4 * n * n + 16 * n * n)
        traffic = C64 * (2 * n * n + coils * n * n + 4 * n * n + coils * 2 * 2 * 4 * n * n)
    else:
        padded = round(problem["oversamp"] * n) ** 2
        per_coil = 2 * (fft_flops(padded) + 8 * npts * problem["width"] ** 2)
        flops = coils * (per_coil + 16 * n * n)
        traffic = C64 * (2 * n * n + coils * n * n + coils * (2 * npts + 4 * padded))

    def build(rng, peers: Peers):
        peers = variant_peers(peers, devices)
        ops = noncartesian_sense(rng, peers, toeplitz, problem)
        impls = {"jaxlinops": jax_impl(_apply, on_devices(ops["jaxlinops"], devices).N)}
        if "torchlinops" in ops:
            impls["torchlinops"] = torch_impl(ops["torchlinops"].N, peers.torch_device)
        if "sigpy" in ops:
            impls["sigpy"] = numpy_impl(ops["sigpy"].N)
        return impls, (n, n), None

    size = (f"{coils} coils, {n}x{n}, {problem['spokes']}x{problem['readouts']} pts, "
            f"os {problem['oversamp']:g} w {problem['width']:g}")  # fmt: skip
    family = variant(f"Normal {'Toeplitz' if toeplitz else 'plain'}", devices)
    return Case(family, size, flops, traffic, build)


def _jax_cg_sense(A, y, iters: int):
    return jl.alg.conjugate_gradients(A.N, A.H(y), max_num_iters=iters, gtol=0.0, progress=False)


def cg_sense_case(problem: dict = DEMO, devices: int = 1, backend: str = NUFFT_BACKEND) -> Case:
    n, coils, iters = problem["n"], problem["coils"], problem["iters"]
    npts = problem["spokes"] * problem["readouts"]
    normal = normal_case(True, problem)
    flops = iters * (normal.flops + 40 * n * n)
    traffic = iters * (normal.bytes + C64 * 10 * n * n) + C64 * coils * npts

    def build(rng, peers: Peers):
        peers = variant_peers(peers, devices)
        ops = noncartesian_sense(rng, peers, True, problem, backend)
        A = on_devices(ops["jaxlinops"], devices)
        impls = {"jaxlinops": jax_impl(partial(_jax_cg_sense, iters=iters), A)}
        if "torchlinops" in ops:
            T, cg = ops["torchlinops"], peers.torchlinops.alg.conjugate_gradients
            quiet = {"disable": True}

            def torch_cg(y):
                return cg(T.N, T.H(y), max_num_iters=iters, disable_tracking=True,
                          tqdm_kwargs=quiet)  # fmt: skip

            impls["torchlinops"] = torch_impl(torch_cg, peers.torch_device)
        if "sigpy" in ops:
            sp, S = peers.sigpy, ops["sigpy"]

            def sigpy_cg(y):
                b = S.H(y)
                alg = sp.alg.ConjugateGradient(S.N, b, np.zeros_like(b), max_iter=iters)
                while not alg.done():
                    alg.update()
                return alg.x

            impls["sigpy"] = numpy_impl(sigpy_cg)
        return impls, (coils, problem["spokes"], problem["readouts"]), None

    size = f"{coils} coils, {n}x{n}, {problem['spokes']}x{problem['readouts']} pts, {iters} it"
    return Case(variant("CG-SENSE", devices), size, flops, traffic, build)


# --------------------------------------------------------------------------- the suite
def all_cases(quick: bool, finufft_eps: float, devices: int = 1) -> list[Case]:
    """Every case in report order; `quick` keeps the smallest size of each family. With
    several `devices`, the Toeplitz normal and CG-SENSE run again split over them."""
    keep = slice(0, 1) if quick else slice(None)
    cases = []
    for nd in (2, 3):
        for adjoint in (False, True):
            cases += [nufft_case(g, m, adjoint, finufft_eps) for g, m in POINT_SIZES[nd][keep]]
    for nd in (2, 3):
        for adjoint in (False, True):
            cases += [interp_case(g, m, adjoint) for g, m in POINT_SIZES[nd][keep]]
    for to_array in (False, True):
        cases += [blocks_case(g, to_array) for g in BLOCK_GRIDS[keep]]
    for normal in (False, True):
        cases += [cartesian_sense_case(8, n, normal) for n in (128, 256)[keep]]
    small = {**DEMO, "n": 32, "spokes": 8, "readouts": 64, "iters": 3}
    problem = small if quick else DEMO
    cases += [normal_case(True, problem), normal_case(False, problem), cg_sense_case(problem)]
    if devices > 1:
        cases += [normal_case(True, problem, devices), cg_sense_case(problem, devices)]
    return cases
