"""Scenarios for torchlinops' "Explanations" pages, in our own words.

One scenario per page section that shows code: design_notes.md, faq.md,
copying_linops.md, why_this_package.md and the parts of multi_gpu.md that
`test_pages.py` does not cover. Each runs on jaxlinops and, where torchlinops is
installed, on torchlinops from the same random numbers (`scenario.run_scenario`).

Sections that only show torch internals (CUDA streams and events, `SyncContext`,
`nn.Module.__setattr__`, storage views, `cuda_trace`, which torchlinops 0.8.3 does not
ship) have no scenario. Where jaxlinops deliberately differs (docs/migration.md:
immutable operators, `jax.Device`s instead of torch devices), the jaxlinops run uses the
replacement idiom the guide gives and the scenario's docstring says so; both runs must
still return the same observable values.
"""

from __future__ import annotations

import copy
import pickle

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from torchlinops_examples import case
from torchlinops_examples.scenario import is_jax, run_scenario, sub


def _dense(L, T, m=3, n=4, dtype=None):
    """`Dense` on `N -> M` with a random weight, as the pages build it."""
    w = T.randn(m, n) if dtype is None else T.randn(m, n, dtype=dtype)
    return L.Dense(w, L.Dim("MN"), ishape=L.Dim("N"), oshape=L.Dim("M"))


def _devices(L, n, indexed=False):
    """`n` devices: distinct `jax.Device`s for jaxlinops; for torch, which has only the
    CPU here, `n` times `cpu` (or `cpu:0`, `cpu:1`, ... with `indexed`, for placement
    bookkeeping that never moves data)."""
    if is_jax(L):
        return jax.devices()[:n]
    import torch

    return [torch.device("cpu", i) if indexed else torch.device("cpu") for i in range(n)]


def _to(L, op, device):
    """`op.to(device)`; jaxlinops operators are pytrees: `jax.device_put(op, device)`."""
    return jax.device_put(op, device) if is_jax(L) else op.to(device)


# --- design_notes.md --------------------------------------------------------------


def design_notes_wildcards(L, T):
    """design_notes.md, "Shape matching with wildcards": `...` and `()` in
    `isequal`/`iscompatible`."""
    nd = sub(L, "nameddim")
    return {
        "ellipsis": nd.isequal(("A", "...", "C"), ("A", "B1", "B2", "C"))[0],
        "any": nd.iscompatible(("A", "()"), ("A", "B"))[0],
        "mismatch": nd.isequal(("A", "C"), ("A", "B"))[0],
    }


def design_notes_threading(L, T):
    """design_notes.md, "Parallel execution": `Add(A, B, C)` with `threaded` and
    `num_workers` (accepted and ignored by jaxlinops: XLA schedules) gives A+B+C."""
    A, B, C = (_dense(L, T) for _ in range(3))
    x = T.randn(4)
    return {
        "parallel": L.Add(A, B, C)(x),
        "sequential": L.Add(A, B, C, threaded=False)(x),
        "limited": L.Add(A, B, C, threaded=True, num_workers=2)(x),
        "sum": A(x) + B(x) + C(x),
    }


def design_notes_shared_children(L, T):
    """design_notes.md, "Shared linops are used directly": `Add(A, A)` holds `A` twice
    (torch's `weight.data_ptr()` equality is checked as `weight is weight`)."""
    A = _dense(L, T)
    add = L.Add(A, A)
    x = T.randn(4)
    return {
        "same": add.linops[0] is add.linops[1],
        "same_weight": add.linops[0].weight is add.linops[1].weight,
        "y": add(x),
    }


def design_notes_shared_weights(L, T):
    """design_notes.md, "Shallow copy shares weight data": zeroing the weight zeroes A
    and A.H. Deliberate difference: torchlinops fills `A.H.weight` in place; jaxlinops
    operators are immutable, so the guide's `eqx.tree_at(lambda op: op.weight, A, w)`
    builds the updated operator."""
    A = _dense(L, T)
    x, y = T.randn(4), T.randn(3)
    if is_jax(L):
        A = eqx.tree_at(lambda op: op.weight, A, jnp.zeros_like(A.weight))
    else:
        A.H.weight.data.fill_(0)
    return {"sum": A.weight.sum(), "A": A(x), "AH": A.H(y)}


def design_notes_deepcopy(L, T):
    """design_notes.md, "View relationships can break with deepcopy": an independent copy
    applies as the original. Deliberate difference: `memory_aware_deepcopy` is torch
    storage bookkeeping; jaxlinops operators are immutable pytrees, so `copy.deepcopy`
    (or the operator itself) is the copy."""
    A = _dense(L, T)
    x = T.randn(4)
    A_copy = copy.deepcopy(A) if is_jax(L) else sub(L, "utils").memory_aware_deepcopy(A)
    return {"copy": A_copy(x), "original": A(x)}


def design_notes_complex_adjoint(L, T):
    """design_notes.md, "Complex numbers: adjoint includes conjugate": `A.H(y)` is
    `W.conj().T @ y` for a complex Dense."""
    A = _dense(L, T, dtype=T.complex64)
    y = T.randn(3, dtype=T.complex64)
    expected = np.asarray(A.weight).conj().T @ np.asarray(y)
    got = A.H(y)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-5, atol=1e-6)
    return {"AH": got}


def _trainable_grad(L, T):
    """d/dW sum(A(x)^2) = 2 (W x) x^T of a Dense, and that reference. torchlinops 0.8.3
    wraps the weight in a new parameter (so the page's `weight.grad` stays None): the torch
    run sets `A.weight.requires_grad`. JAX has no `requires_grad`: `jax.grad` of a function
    of the operator (a pytree) gives the weight's gradient in `.weight`."""
    A = _dense(L, T)
    x = T.randn(4)
    if is_jax(L):
        grad = jax.grad(lambda op: jnp.sum(op(x) ** 2))(A).weight
    else:
        A.weight.requires_grad_(True)
        (A(x) ** 2).sum().backward()
        grad = A.weight.grad
    w, xv = (np.asarray(a.detach() if hasattr(a, "detach") else a) for a in (A.weight, x))
    np.testing.assert_allclose(np.asarray(grad), 2 * np.outer(w @ xv, xv), rtol=1e-5, atol=1e-5)
    return {"grad": grad}


def design_notes_trainable(L, T):
    """design_notes.md, "Linops are non-trainable by default": gradients through a
    Dense's weight (see `_trainable_grad` for the idioms)."""
    return _trainable_grad(L, T)


def design_notes_pickle(L, T):
    """design_notes.md, "Pickle requirements": an operator, its adjoint and its normal
    survive `pickle` and apply as before."""
    A = _dense(L, T)
    x, y = T.randn(4), T.randn(3)
    B = pickle.loads(pickle.dumps(A))
    return {"A": B(x), "AH": B.H(y), "AN": B.N(x), "ref": A(x)}


# --- faq.md ---------------------------------------------------------------------------


def faq_wildcards(L, T):
    """faq.md, "What are ... and () in shapes?": `("...", "K")` matches three dims,
    `("()", "K")` two but not three."""
    isequal = sub(L, "nameddim").isequal
    return {
        "ellipsis": isequal(("...", "K"), ("Batch", "Coil", "K"))[0],
        "any": isequal(("()", "K"), ("Batch", "K"))[0],
        "any_too_many": isequal(("()", "K"), ("Batch", "Coil", "K"))[0],
    }


def faq_adjoint_internals(L, T):
    """faq.md, "What does .H do internally?": shapes swap and `A.H.H` is `A` again.
    Deliberate difference: jaxlinops does not cache, so `A.H.H is A` and `A.H is A.H`
    become `A.H.H == A` and `A.H == A.H` (the guide's idiom)."""
    A = _dense(L, T)
    if is_jax(L):
        back, cached = A.H.H == A, A.H == A.H
    else:
        back, cached = A.H.H is A, A.H is A.H
    x = T.randn(4)
    return {
        "shapes": (A.H.ishape, A.H.oshape),
        "back": back,
        "cached": cached,
        "HH": A.H.H(x),
    }


def faq_normal_internals(L, T):
    """faq.md, "What does .N do internally?": FFT.N is an Identity, Diagonal.N multiplies
    by |w|^2, a Chain's normal applies A^H A."""
    F = L.FFT(ndim=2, grid_shapes=(L.Dim("NxNy"), L.Dim("KxKy")))
    w = T.randn(5, dtype=T.complex64)
    D = L.Diagonal(w, ioshape=L.Dim("N"))
    x = T.randn(5, dtype=T.complex64)
    A = D @ L.Dense(T.randn(5, 3, dtype=T.complex64), L.Dim("NK"), L.Dim("K"), L.Dim("N"))
    xk = T.randn(3, dtype=T.complex64)
    return {
        "fft_normal": type(F.N).__name__,
        "diag_normal": D.N(x),
        "diag_expected": w.conj() * w * x,
        "chain_normal": A.N(xk),
        "chain_expected": A.H(A(xk)),
    }


def faq_shape_mismatch(L, T):
    """faq.md, "Shape mismatch errors": `Diagonal(M) @ Dense(N -> M)` works, the reverse
    raises a ValueError."""
    A = L.Dense(T.randn(3, 4), weightshape=L.Dim("MN"), ishape=L.Dim("N"), oshape=L.Dim("M"))
    B = L.Diagonal(T.randn(3), ioshape=L.Dim("M"))
    C = B @ A
    with pytest.raises(ValueError):
        A @ B
    x = T.randn(4)
    return {"C": C(x), "shapes": (C.ishape, C.oshape)}


def faq_is_adjoint(L, T):
    """faq.md, "Adjoint test fails": `utils.is_adjoint` on complex64 vectors of 8 accepts
    a correct adjoint and rejects a wrong one."""
    is_adjoint = sub(L, "utils").is_adjoint
    A = L.Dense(T.randn(8, 8, dtype=T.complex64), L.Dim("MN"), L.Dim("N"), L.Dim("M"))
    wrong = L.SimpleLinop(forward=lambda v: 2 * v, adjoint=lambda v: 3 * v, ishape=("N",))
    x = T.randn(8, dtype=T.complex64)
    y = T.randn(8, dtype=T.complex64)
    return {"correct": bool(is_adjoint(A, x, y)), "wrong": bool(is_adjoint(wrong, x, y))}


def faq_to_device(L, T):
    """faq.md, "Create on CPU first, then move": deliberate difference, `linop.to(dev)`
    is `jax.device_put(linop, dev)` in jaxlinops; the moved operator computes there."""
    A = _dense(L, T)
    device = _devices(L, 2)[1]
    x = T.randn(4)
    moved = _to(L, A, device)
    y = moved(jax.device_put(x, device) if is_jax(L) else x)
    if is_jax(L):
        assert y.devices() == {device}
    return {"y": y, "ref": A(x)}


def faq_gradient(L, T):
    """faq.md, "Linop doesn't support gradient backpropagation": as design_notes'
    trainable weights (`_trainable_grad`)."""
    return _trainable_grad(L, T)


# --- copying_linops.md ----------------------------------------------------------------


def copying_linops_shallow(L, T):
    """copying_linops.md, "Basic shallow copy": `copy.copy` shares the data and applies as
    the original, and the adjoint uses the same weights."""
    A = _dense(L, T)
    B = copy.copy(A)
    x, y = T.randn(4), T.randn(3)
    return {"copy": B(x), "ref": A(x), "copy_H": B.H(y), "ref_H": A.weight.T @ y}


def copying_linops_device(L, T):
    """copying_linops.md, "Memory-aware device transfer": `linop.to(dev)` and
    `linop.to(dev, memory_aware=True)`. Deliberate difference: jaxlinops moves an operator
    with `jax.device_put` (JAX arrays share no storage views)."""
    A = _dense(L, T)
    device = _devices(L, 2)[1]
    x = T.randn(4)
    if is_jax(L):
        moved = jax.device_put(A, device)
        assert {d for leaf in jax.tree.leaves(moved) for d in leaf.devices()} == {device}
        return {"plain": moved(x), "aware": moved(x)}
    return {"plain": A.to(device)(x), "aware": A.to(device, memory_aware=True)(x)}


# --- why_this_package.md ---------------------------------------------------------------


def why_self_documenting(L, T):
    """why_this_package.md, "Self-documenting shapes" and "Automatic adjoints": the 2-D
    FFT's shapes, and those of `.H`, `.H.H` and `.N`."""
    F = L.FFT(ndim=2, grid_shapes=(L.Dim("NxNy"), L.Dim("KxKy")))
    x = T.randn(4, 4, dtype=T.complex64)
    return {
        "F": (F.ishape, F.oshape),
        "H": (F.H.ishape, F.H.oshape),
        "HH": (F.H.H.ishape, F.H.H.oshape),
        "N": (F.N.ishape, F.N.oshape),
        "y": F(x),
        "round_trip": F.H(F(x)),
    }


def _sfc(L, T):
    """The MRI-style chain S @ F @ C of why_this_package.md at 2 coils, 4x4."""
    C = L.Dense(
        T.randn(2, 4, 4, dtype=T.complex64),
        ("C", "Nx", "Ny"),
        ishape=("Nx", "Ny"),
        oshape=("C", "Nx", "Ny"),
    )
    F = L.FFT(ndim=2, batch_shape=("C",), grid_shapes=(("Nx", "Ny"), ("Kx", "Ky")))
    idx = (T.tensor(np.array([0, 1, 3, 2, 0])), T.tensor(np.array([0, 2, 3, 1, 3])))
    S = L.Sampling(idx, (4, 4), ("R",), ("Kx", "Ky"), ("C",))
    return S @ F @ C


def why_compositionality(L, T):
    """why_this_package.md, "Compositionality": `A = S @ F @ C`, its adjoint and normal."""
    A = _sfc(L, T)
    x = T.randn(4, 4, dtype=T.complex64)
    y = T.randn(2, 5, dtype=T.complex64)
    return {
        "shapes": (A.ishape, A.oshape),
        "A": A(x),
        "AH": A.H(y),
        "AN": A.N(x),
        "AH_shapes": (A.H.ishape, A.H.oshape),
    }


def why_splitting(L, T):
    """why_this_package.md, "Splitting and distributed computing": `create_batched_linop`
    with `BatchSpec(batch_sizes, device_matrix, base_device)` from `linops.split` (two
    `jax.Device`s for jaxlinops). The page's operator is unspecified and splits along Nx;
    this S @ F @ C has an FFT over Nx, which jaxlinops refuses to tile (it couples Nx),
    so it is split along the coils C, as a reconstruction would be."""
    split = sub(L, "linops.split")
    A = _sfc(L, T)
    d0, d1 = _devices(L, 2)
    spec = split.BatchSpec(batch_sizes={"C": 1}, device_matrix=[d0, d1], base_device=d0)
    A_distributed = split.create_batched_linop(A, spec)
    x = T.randn(4, 4, dtype=T.complex64)
    return {"A": A_distributed(x), "ref": A(x), "AN": A_distributed.N(x)}


# --- multi_gpu.md -----------------------------------------------------------------------


def multi_gpu_split_method(L, T):
    """multi_gpu.md, "split": `NamedLinop.split(A, {ND("Nx"): slice(0, 2)})` of a
    Diagonal on (Nx, Ny) reads and writes the first two rows. torchlinops 0.8.3's base
    `NamedLinop.split` ignores the tile of a Diagonal (a torchlinops bug, see the guide's
    "Splitting works for every operator"): the torch run calls `type(A).split`."""
    ND = sub(L, "nameddim").NamedDimension
    A = L.Diagonal(T.randn(4, 3), ioshape=("Nx", "Ny"))
    split = L.NamedLinop.split if is_jax(L) else type(A).split
    sub_linop = split(A, {ND("Nx"): slice(0, 2)})
    x = T.randn(4, 3)
    return {"sub": sub_linop(x[:2]), "ref": A(x)[:2]}


def multi_gpu_adj_split(L, T):
    """multi_gpu.md, "split": `adj_split(A, tile)` splits the adjoint along M and returns
    the adjoint of that piece: the rows M[0:2] of A."""
    ND = sub(L, "nameddim").NamedDimension
    A = _dense(L, T)
    piece = L.NamedLinop.adj_split(A, {ND("M"): slice(0, 2)})
    x = T.randn(4)
    return {"shapes": (piece.ishape, piece.oshape), "y": piece(x), "ref": A(x)[:2]}


def multi_gpu_split_linop_2d(L, T):
    """multi_gpu.md, "split_linop": chunks along Nx and Ny give a 2-D grid of tiles that
    reassemble to A(x)."""
    split_linop = sub(L, "linops.split").split_linop
    A = L.Diagonal(T.randn(4, 6), ioshape=("Nx", "Ny"))
    linops, ibatches, obatches = split_linop(A, {"Nx": 2, "Ny": 3})
    x = T.randn(4, 6)
    tiles = [op(x[tuple(i)]) for op, i in zip(linops.ravel(), ibatches.ravel(), strict=True)]
    return {"grid": linops.shape, "tiles": tuple(tiles), "ref": A(x)}


def multi_gpu_chain_split(L, T):
    """multi_gpu.md, "Chain splitting": each tile of a split chain is a chain of the split
    pieces; the tiles along M are the rows of the full output."""
    split_linop = sub(L, "linops.split").split_linop
    A = L.Diagonal(T.randn(4), ioshape=L.Dim("M")) @ _dense(L, T, 4, 3)
    linops, ibatches, obatches = split_linop(A, {"M": 2})
    x = T.randn(3)
    tiles = [op(x[tuple(i)]) for op, i in zip(linops.ravel(), ibatches.ravel(), strict=True)]
    return {
        "kinds": tuple(type(op).__name__ for op in linops.ravel()),
        "tiles": tuple(tiles),
        "ref": A(x),
    }


def multi_gpu_broadcast_device_matrix(L, T):
    """multi_gpu.md, "BatchSpec": two devices broadcast over four tiles, two tiles each.
    Deliberate difference (docs/migration.md): torchlinops deals the tiles out in turn
    (d0 d1 d0 d1), jaxlinops gives each device a contiguous run (d0 d0 d1 d1), the blocks
    of a `shard_map` mesh axis; both libraries give each device the same number of tiles."""
    devices = _devices(L, 2, indexed=True)
    spec = L.BatchSpec({"N": 1}, device_matrix=devices)
    matrix = spec.broadcast_device_matrix(_dense(L, T))
    order = tuple(devices.index(d) for d in np.asarray(matrix).ravel())
    if is_jax(L):
        assert order == (0, 0, 1, 1), order
    return {"tiles per device": tuple(order.count(i) for i in range(2))}


def multi_gpu_recursive(L, T):
    """multi_gpu.md, "Recursive batching": a list of BatchSpecs (across devices along N,
    then chunks along M) gives an operator equal to A, with its adjoint and normal."""
    A = _dense(L, T)
    specs = [L.BatchSpec({"N": 2}, device_matrix=_devices(L, 2)), L.BatchSpec({"M": 1})]
    B = L.create_batched_linop(A, specs)
    x, y = T.randn(4), T.randn(3)
    return {"A": B(x), "AH": B.H(y), "AN": B.N(x), "ref": A(x)}


def multi_gpu_todevice(L, T):
    """multi_gpu.md, "ToDevice": the adjoint of ToDevice(a -> b) moves back b -> a; the
    values pass unchanged (jaxlinops: the output is on the target `jax.Device`)."""
    d0, d1 = _devices(L, 2)
    op = L.ToDevice(d0, d1, ioshape=("N",))
    x = T.randn(4)
    y = op(x)
    back = op.H(y)
    if is_jax(L):
        assert y.devices() == {d1} and back.devices() == {d0}
    return {"y": y, "back": back, "shapes": (op.H.ishape, op.H.oshape)}


def _on_device(L, T):
    """multi_gpu.md's worked example at N=6: two `Sleep @ Dense` tiles, one kept on the
    base device and one moved, summed by `Add(..., threaded=True)`. Deliberate
    difference: `A1.to(gpu1)` is `jax.device_put(A1, gpu1)`."""
    ND = sub(L, "nameddim").NamedDimension
    base, gpu1 = _devices(L, 2)

    def slow_linop(n, sleep_duration=0.0):
        dense = L.Dense(T.randn(n, n), L.Dim("MN"), L.Dim("N"), L.Dim("M"))
        return L.Sleep(sleep_duration, ioshape=(ND("M"),)) @ dense

    A0, A1 = slow_linop(6), slow_linop(6)
    on_device = L.Add(
        L.Chain(
            L.ToDevice(base, base, ioshape=A0.ishape),
            _to(L, A0, base),
            L.ToDevice(base, base, ioshape=A0.oshape),
        ),
        L.Chain(
            L.ToDevice(base, gpu1, ioshape=A1.ishape),
            _to(L, A1, gpu1),
            L.ToDevice(gpu1, base, ioshape=A1.oshape),
        ),
        threaded=True,
    )
    return on_device, A0, A1, base


def multi_gpu_worked_example(L, T):
    """multi_gpu.md, "A complete worked example" (see `_on_device`): the sum of the two
    tiles, back on the base device."""
    on_device, A0, A1, base = _on_device(L, T)
    x = T.randn(6)
    y = on_device(x)
    if is_jax(L):
        assert y.devices() == {base}
    return {"y": y, "ref": A0(x) + A1(x)}


def multi_gpu_nested(L, T):
    """multi_gpu.md, "Nested composites": `Concat(Add(A, B), C, idim="M")`. The page
    writes `idim=('M',)`, which torchlinops 0.8.3 reads as a dim named `('M',)` and
    rejects; a dim name is what both libraries take."""
    A, B, C = (L.Dense(T.randn(2, 3), L.Dim("NM"), L.Dim("M"), L.Dim("N")) for _ in range(3))
    x = T.randn(6)
    return {"y": L.Concat(L.Add(A, B), C, idim="M")(x), "ref": A(x[:3]) + B(x[:3]) + C(x[3:])}


def multi_gpu_config(L, T):
    """multi_gpu.md, "Visualizing" and "Configuration": `config.using(
    log_device_transfers=True)` around a call, and setting the module flag (restored
    after). `log_cuda_events` and `cuda_trace` are not in torchlinops 0.8.3."""
    config = sub(L, "config")
    on_device, A0, A1, _ = _on_device(L, T)
    x = T.randn(6)
    with config.using(log_device_transfers=True):
        y = on_device(x)
    saved = config.log_device_transfers
    try:
        config.log_device_transfers = True
        flag = config.log_device_transfers
    finally:
        config.log_device_transfers = saved
    return {"y": y, "flag": flag, "ref": A0(x) + A1(x)}


SCENARIOS = {
    "page:design_notes::wildcards": design_notes_wildcards,
    "page:design_notes::threading": design_notes_threading,
    "page:design_notes::shared_children": design_notes_shared_children,
    "page:design_notes::shared_weights": design_notes_shared_weights,
    "page:design_notes::deepcopy": design_notes_deepcopy,
    "page:design_notes::complex_adjoint": design_notes_complex_adjoint,
    "page:design_notes::trainable": design_notes_trainable,
    "page:design_notes::pickle": design_notes_pickle,
    "page:faq::wildcards": faq_wildcards,
    "page:faq::adjoint_internals": faq_adjoint_internals,
    "page:faq::normal_internals": faq_normal_internals,
    "page:faq::shape_mismatch": faq_shape_mismatch,
    "page:faq::is_adjoint": faq_is_adjoint,
    "page:faq::to_device": faq_to_device,
    "page:faq::gradient": faq_gradient,
    "page:copying_linops::shallow": copying_linops_shallow,
    "page:copying_linops::device": copying_linops_device,
    "page:why_this_package::self_documenting": why_self_documenting,
    "page:why_this_package::compositionality": why_compositionality,
    "page:why_this_package::splitting": why_splitting,
    "page:multi_gpu::split_method": multi_gpu_split_method,
    "page:multi_gpu::adj_split": multi_gpu_adj_split,
    "page:multi_gpu::split_linop_2d": multi_gpu_split_linop_2d,
    "page:multi_gpu::chain_split": multi_gpu_chain_split,
    "page:multi_gpu::broadcast_device_matrix": multi_gpu_broadcast_device_matrix,
    "page:multi_gpu::recursive": multi_gpu_recursive,
    "page:multi_gpu::todevice": multi_gpu_todevice,
    "page:multi_gpu::worked_example": multi_gpu_worked_example,
    "page:multi_gpu::nested": multi_gpu_nested,
    "page:multi_gpu::config": multi_gpu_config,
}


@pytest.mark.parametrize("scenario", [case(k, f) for k, f in SCENARIOS.items()])
def test_page_scenario(scenario):
    """The scenario runs on jaxlinops and returns what torchlinops returns."""
    run_scenario(scenario)
