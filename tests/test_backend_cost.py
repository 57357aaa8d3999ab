"""`backend="auto"` chooses the NUFFT's backend by the cost model `_backend_cost`: the
model agrees with the table it was fitted to, picks the JAX path wherever that measured
faster, says why (repr and a DEBUG log line), and runs jax-finufft when it picks it."""

from __future__ import annotations

import json
import logging
import math
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close, rand

import jaxlinops as jl
from jaxlinops.functional import _backend_cost as C, _finufft as FF

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
TABLES = ("nufft-backends-cpu-2core-2026-11-29.json", "nufft-backends-cpu-2core-2026-11-29b.json")
needs_finufft = pytest.mark.skipif(not FF.finufft_available(), reason="needs jax-finufft")


def rows() -> list[dict]:
    return [row for name in TABLES for row in json.loads((RESULTS / name).read_text())["rows"]]


def model_pick(row: dict) -> str:
    padded = tuple(int(n * 1.25) for n in row["grid"])
    feats = C.features(padded, 4.0, row["points"], 8)
    assert np.allclose(feats, row["features"])  # the table's features are the library's
    return C.cheapest("cpu", "jax", "finufft", feats)[0]


def test_the_model_picks_jax_wherever_jax_measured_faster():
    table = rows()
    assert len(table) == 44
    faster = [r for r in table if r["finufft"]["total"] >= r["jax"]["total"]]
    assert len(faster) >= 30
    assert [model_pick(r) for r in faster] == ["jax"] * len(faster)


def test_the_model_picks_finufft_where_both_runs_measured_it_faster():
    """3-D 96^3 with 110,592 points and 128^3 with 262,144 (finufft 0.75x to 0.86x)."""
    by_case: dict[tuple, list[float]] = {}
    for r in rows():
        key = (tuple(r["grid"]), r["points"])
        by_case.setdefault(key, []).append(r["finufft"]["total"] / r["jax"]["total"])
    clear = [key for key, ratios in by_case.items() if max(ratios) <= 0.87]
    assert sorted(clear) == [((96, 96, 96), 110592), ((128, 128, 128), 262144)]
    for grid, points in clear:
        padded = tuple(int(n * 1.25) for n in grid)
        assert C.cheapest("cpu", "jax", "finufft", C.features(padded, 4.0, points, 8))[0] == (
            "finufft"
        )


def test_a_near_tie_goes_to_the_default(monkeypatch):
    monkeypatch.setitem(C.COSTS, "test", {"jax": (10.0, 0, 0, 0), "finufft": (9.8, 0, 0, 0)})
    backend, reason = C.cheapest("test", "jax", "finufft", (0.0, 0.0, 0.0))
    assert backend == "jax" and reason == f"auto: predicted within {C.MARGIN}x of finufft"
    monkeypatch.setitem(C.COSTS, "test", {"jax": (10.0, 0, 0, 0), "finufft": (5.0, 0, 0, 0)})
    assert C.cheapest("test", "jax", "finufft", (0.0, 0.0, 0.0)) == (
        "finufft",
        "auto: predicted 2.00x faster than jax",
    )


def test_page_faults_count_only_above_glibc_threshold():
    """The `G_big` feature: three complex64 padded grids above 32 MiB (80^3 no, 120^3 yes);
    complex128 doubles the bytes."""
    assert C.features((80,) * 3, 4.0, 1, 8)[2] == 0
    assert C.features((120,) * 3, 4.0, 1, 8)[2] == pytest.approx(120**3 / 1e6)
    assert C.features((100,) * 3, 4.0, 1, 8)[2] == 0
    assert C.features((100,) * 3, 4.0, 1, 16)[2] > 0
    assert C.features((8, 8), 4.0, 10, 8)[0] == pytest.approx(10 * 16 / 1e6)
    assert C.features((8, 8), 3.5, 10, 8)[1] == pytest.approx(64 * math.log2(64) / 1e6)


def locs(grid, points, seed=0) -> np.ndarray:
    half = np.asarray(grid) / 2
    return np.random.default_rng(seed).uniform(-half, half, (points, len(grid))).astype("f4")


@pytest.mark.parametrize(("grid", "points"), [((256, 256), 65536), ((64,) * 3, 32768)])
def test_auto_is_the_jax_path_in_2d_and_small_3d(grid, points, caplog):
    with caplog.at_level(logging.DEBUG, logger="jaxlinops"):
        plan = jl.functional.nufft_plan(locs(grid, points), grid)
    assert plan.backend == "jax" and plan.auto is not None
    assert f"backend=jax ({plan.auto})" in caplog.text


@needs_finufft
def test_auto_is_finufft_at_128_cubed(caplog):
    with caplog.at_level(logging.DEBUG, logger="jaxlinops"):
        A = jl.NUFFT(locs((128,) * 3, 262144), (128,) * 3, "K")
    assert A.plan.backend == "finufft"
    assert "(auto: predicted 1.15x faster than jax)" in repr(A)
    assert "backend=finufft (auto: predicted 1.15x faster than jax)" in caplog.text
    # what the JAX path reads where it stands in, at the JAX path's promised error
    assert A.plan.order is not None and A.plan.apodize is not None
    assert A.plan.accuracy == pytest.approx(jl.functional.nufft_plan(
        locs((128,) * 3, 262144), (128,) * 3, backend="jax").accuracy)  # fmt: skip


@needs_finufft
def test_auto_cannot_pick_finufft_where_it_cannot_stand_in(monkeypatch):
    """Per-frame points and custom apodization stay on the JAX path, and say why."""
    monkeypatch.setitem(C.COSTS["cpu"], "finufft", (1e-6, 0.0, 0.0, 0.0))
    grid = (12, 10)
    stack = np.stack([locs(grid, 20), locs(grid, 20, 1)])
    assert jl.NUFFT(stack, grid, "T K").plan.backend == "finufft"  # one set of points
    A = jl.NUFFT(stack, grid, "T K", batch_shape="T")  # a set per frame T
    assert (
        A.plan.backend == "jax" and A.plan.auto == "auto: jax-finufft cannot take per-frame points"
    )
    weights = np.ones(grid, "f4")
    B = jl.NUFFT(locs(grid, 20), grid, "K", apodize_weights=weights)
    assert (
        B.plan.backend == "jax" and B.plan.auto == "auto: jax-finufft cannot take apodize_weights"
    )


@needs_finufft
def test_auto_finufft_runs_finufft_under_jit_and_the_jax_path_in_an_export(monkeypatch):
    """No silent slow path: the compiled program calls jax-finufft's custom call; only an
    exported one (and derivatives with respect to the points) runs the JAX path."""
    monkeypatch.setitem(C.COSTS["cpu"], "finufft", (1e-6, 0.0, 0.0, 0.0))
    grid = (12, 10)
    A = jl.NUFFT(locs(grid, 30), grid, "K")
    x = rand(0, grid, jnp.complex64)
    for fn in (lambda A, x: A(x), lambda A, x: A.H(A(x))):
        jitted = jax.jit(fn).lower(A, x).as_text()
        assert "custom_call" in jitted and "nufft" in jitted.lower()
        exported = jax.export.export(jax.jit(fn))(A, x).mlir_module()
        assert "custom_call" not in exported


def test_without_jax_finufft_auto_says_why(monkeypatch):
    monkeypatch.setitem(sys.modules, "jax_finufft", None)
    FF.finufft_available.cache_clear()
    try:
        plan = jl.functional.nufft_plan(locs((128,) * 3, 1000), (128,) * 3)
        assert plan.backend == "jax" and plan.auto == "auto: jax-finufft is not installed"
    finally:
        FF.finufft_available.cache_clear()


@needs_finufft
def test_a_jax_operator_keeps_the_jax_path_for_its_toeplitz_kernel():
    """`"auto"` picks once, for the operator: 64^3 with 262,144 points is the JAX path,
    and so is its Toeplitz kernel, although the embedded 128^3 grid with these points
    alone would pick finufft (torchlinops' `toeplitz_psf` test compares that kernel
    with sigpy's). finufft's kernel would differ by about its error, 1e-2, far above the
    single-precision tolerance."""
    grid, points = (64,) * 3, locs((64,) * 3, 262144)
    A, J = (jl.NUFFT(points, grid, "K", backend=b, toeplitz=True) for b in ("auto", "jax"))
    assert A.plan.backend == "jax"
    embedded = C.features((160,) * 3, 4.0, 262144, 8)
    assert C.cheapest("cpu", "jax", "finufft", embedded)[0] == "finufft"
    x = rand(1, grid, jnp.complex64)
    assert_close(A.N(x), J.N(x), jnp.complex64)
