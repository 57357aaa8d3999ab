"""Progress bars (`jaxlinops._progress`): when they show, that the compiled loops move them
(under jit, vmap and jvp), and that they never change a result.

A recording stand-in replaces tqdm (`tqdm_class`), so that the tests see every bar's
updates without a terminal; no test depends on tqdm's output.
"""

import sys

import jax
import numpy as np
import pytest
from helpers import rand

import jaxlinops as jl
from jaxlinops import _progress

alg = jl.alg


class Recorder:
    """A tqdm stand-in: records each bar's arguments, position, postfixes and closing."""

    bars: list["Recorder"] = []

    def __init__(self, total=None, **kwargs):
        self.total, self.kwargs, self.n = total, kwargs, 0
        self.postfixes, self.closed = [], False
        Recorder.bars.append(self)

    def update(self, n=1):
        self.n += n

    def set_postfix(self, values):
        self.postfixes.append(values)

    def close(self):
        self.closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@pytest.fixture
def bars(monkeypatch):
    """The bars created during a test (tqdm replaced by `Recorder`)."""
    Recorder.bars = []
    monkeypatch.setattr(_progress, "tqdm_class", lambda: Recorder)
    return Recorder.bars


def spd(n=8):
    """A Dense operator with eigenvalues 1..4 and its matrix."""
    q, _ = np.linalg.qr(np.asarray(rand(0, (n, n), np.float64)))
    H = (q * np.linspace(1.0, 4.0, n)) @ q.T
    return jl.Dense(H, "M N", "N", "M"), H


def finished(bars):
    """Wait for the callbacks (they may run after the result is returned)."""
    jax.effects_barrier()
    return bars


def test_cg_progress_moves_one_bar_to_the_last_iteration_and_changes_nothing(bars):
    A, H = spd()
    y = rand(1, (8,), np.float64)
    want = alg.conjugate_gradients(A, y, max_num_iters=30, gtol=1e-10, return_info=True)
    got = alg.conjugate_gradients(
        A, y, max_num_iters=30, gtol=1e-10, progress=True, return_info=True,
        tqdm_kwargs={"desc": "solve"},
    )  # fmt: skip
    (bar,) = finished(bars)
    assert bar.total == 30 and bar.kwargs == {"desc": "solve", "leave": False}
    assert bar.n == int(got.num_iters) and bar.closed
    # the postfix is the residual norm after each step (a few digits suffice)
    np.testing.assert_allclose(
        bar.postfixes[-1]["residual"], got.residual_norms[int(got.num_iters)], rtol=1e-6
    )
    # the same compiled arithmetic as without a bar
    assert int(got.num_iters) == int(want.num_iters)
    np.testing.assert_allclose(got.x, want.x, rtol=1e-12)
    np.testing.assert_allclose(got.x, np.linalg.solve(H, y), rtol=1e-8)


def test_cg_progress_under_jit_vmap_and_jvp(bars):
    A, H = spd()
    Y = np.array(rand(2, (3, 8), np.float64))
    Y[1] = np.linalg.eigh(H)[1][:, :2].sum(axis=1)  # two eigenvectors: CG needs 2 steps

    def solve(y):
        return alg.conjugate_gradients(A, y, max_num_iters=30, gtol=1e-10, progress=True)

    # jit: a new bar per call of the compiled function, none left open
    f = jax.jit(solve)
    for y in Y[:2]:
        np.testing.assert_allclose(f(y), np.linalg.solve(H, y), rtol=1e-8)
    assert len(finished(bars)) == 2 and all(b.closed for b in bars)
    # vmap over the right-hand side: one bar for the batch (the callback runs per entry)
    bars.clear()
    X = jax.jit(jax.vmap(solve))(Y)
    np.testing.assert_allclose(X, np.linalg.solve(H, Y.T).T, rtol=1e-8)
    assert len(finished(bars)) == 1 and bars[0].closed
    # at the furthest entry's iteration count (each entry reports its own)
    iters = [
        alg.conjugate_gradients(A, y, max_num_iters=30, gtol=1e-10, return_info=True).num_iters
        for y in Y
    ]
    assert bars[0].n == max(map(int, iters)) and len(set(map(int, iters))) > 1
    # forward-mode derivative w.r.t. y: the solve is linear, so its tangent is H^-1 t
    t = Y[2]
    _, tangent = jax.jvp(solve, (Y[0],), (t,))
    np.testing.assert_allclose(tangent, np.linalg.solve(H, t), rtol=1e-8)


def test_cg_gradient_shows_the_adjoint_solve_only_on_request(bars, monkeypatch):
    """`jax.grad` runs the solve and the adjoint solve: with `progress=True`, one bar each
    (the adjoint's named after the solve's); when bars show by default (here: the config),
    only the forward solve's, so that a training loop is not flooded."""
    A, H = spd()
    y = rand(3, (8,), np.float64)

    def loss(y, progress):
        x = alg.conjugate_gradients(
            A, y, max_num_iters=30, gtol=1e-10, progress=progress, tqdm_kwargs={"desc": "fit"}
        )
        return (x**2).sum()

    g = jax.grad(loss)(y, True)
    np.testing.assert_allclose(g, 2 * np.linalg.solve(H, np.linalg.solve(H, y)), rtol=1e-8)
    assert sorted(b.kwargs["desc"] for b in finished(bars)) == ["fit", "fit (adjoint)"]
    bars.clear()
    monkeypatch.setattr(jl.config, "progress", True)
    jax.grad(loss)(y, None)
    assert [b.kwargs["desc"] for b in finished(bars)] == ["fit"]


def test_power_method_and_svd_progress(bars):
    A, H = spd()
    v0 = rand(3, (8,), np.float64)
    v, lam = alg.power_method(A, v0, 200, 0.0, 1e-12, progress=True)
    np.testing.assert_allclose(lam, 4.0, rtol=1e-8)
    (bar,) = finished(bars)
    assert bar.kwargs["desc"] == "Power Method" and bar.closed and bar.n > 1
    assert bar.postfixes[-1]["rdiff"] < 1e-12
    bars.clear()
    _, S, _ = alg.singular_value_decomposition(A, v0, 2, 300, 1e-12, progress=True)
    np.testing.assert_allclose(S, np.linalg.svd(H, compute_uv=False)[:2], rtol=1e-8)
    assert len(finished(bars)) == 2 and all(b.closed and b.n > 1 for b in bars)


def test_when_bars_show(bars, monkeypatch):
    """Default: only in a terminal (or a notebook); the config flag and the keyword turn
    it off and on; without tqdm, never (and no error)."""
    A, _ = spd()
    y = rand(1, (8,), np.float64)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    monkeypatch.delattr(jl.config, "progress", raising=False)
    assert not _progress.enabled(None) and _progress.enabled(True)
    alg.conjugate_gradients(A, y)
    assert not finished(bars)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert _progress.enabled(None) and not _progress.enabled(False)
    alg.conjugate_gradients(A, y)
    assert len(finished(bars)) == 1
    monkeypatch.setattr(jl.config, "progress", False, raising=False)
    assert not _progress.enabled(None) and _progress.enabled(True)
    monkeypatch.setattr(_progress, "tqdm_class", lambda: None)
    assert not _progress.enabled(True)
    x = alg.conjugate_gradients(A, y, progress=True)
    assert np.isfinite(x).all()


def test_python_loop_bars(bars):
    """`iterate` and `bar`, for loops that run in Python (benchmarks, plan builds)."""
    assert list(_progress.iterate(range(3), "cases", progress=True)) == [0, 1, 2]
    (bar,) = bars
    assert (bar.total, bar.n, bar.closed, bar.kwargs["desc"]) == (3, 3, True, "cases")
    with _progress.bar(5, "off", progress=False) as b:
        b.update(2)
    assert len(bars) == 1


def test_plan_build_bars(bars):
    """`create_batched_linop` (its own bar only: nested specs' inner builds show none),
    `shard` and `split_linop` move one bar per tile when asked (by keyword or by
    `jaxlinops.config`), show none when not, and build the same operator either way."""
    w = rand(2, (5, 3), np.float64)
    A = jl.Dense(w, "M N", "N", "M")
    x = rand(3, (3,), np.float64)
    specs = [jl.BatchSpec({"M": 2}), jl.BatchSpec({"N": 2})]
    quiet = jl.create_batched_linop(A, specs, progress=False)
    assert not bars
    with jl.config.using(progress=True):
        shown = jl.create_batched_linop(A, specs)
    (bar,) = bars
    assert (bar.total, bar.n, bar.closed) == (3, 3, True) and "Dense" in bar.kwargs["desc"]
    np.testing.assert_allclose(shown(x), quiet(x), rtol=1e-12)
    np.testing.assert_allclose(shown(x), np.asarray(w) @ np.asarray(x), rtol=1e-12)
    mesh = jax.make_mesh((2,), ("m",), devices=jax.devices()[:2])
    sharded = jl.shard(A, mesh, {"M": "m"}, progress=True)
    np.testing.assert_allclose(sharded(x), np.asarray(w) @ np.asarray(x), rtol=1e-12)
    tiles, _, _ = jl.split_linop(A, {"N": 2}, progress=True)
    assert [(b.total, b.n, b.closed) for b in bars[1:]] == [(2, 2, True), (2, 2, True)]
    np.testing.assert_allclose(tiles[1](x[2:]), np.asarray(w)[:, 2:] @ np.asarray(x[2:]))
