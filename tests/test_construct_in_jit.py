"""Every operator factory can run inside `jax.jit`, and give what it gives eagerly.

Writing a whole reconstruction as one jitted function is the first thing a JAX user does,
so operators must be constructible there:

- *constant arrays*: the factory runs inside `jit`, so the library's computations on its
  arrays (checks, precomputed kernels) are traced although the arrays themselves are
  constants;
- *traced arrays*: every array the factory passes to an operator's constructor is an
  argument of the jitted function (a tracer), as when an operator is built from data
  inside `jit`. An argument that must be concrete (a boolean mask that fixes the number of
  outputs) may be refused, with a jaxlinops TypeError or ValueError naming it.

The results of `A` and `A.H` inside `jit` are compared with the eagerly built operator's.
"""

import inspect

import factories  # noqa: F401  (registers the operators)
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import OPERATOR_FACTORIES, KeyGen, assert_close, rand

import jaxlinops as jl

C128 = jnp.complex128
# every operator class of the public namespace, whose constructor arguments get traced
CLASSES = sorted(
    n for n, v in vars(jl).items() if inspect.isclass(v) and issubclass(v, jl.NamedLinop)
)


def build(name, dtype=C128):
    """The factory's operator and random input and output arrays (as test_contract)."""
    getkey = KeyGen(0)
    op, xshape = OPERATOR_FACTORIES[name](getkey, dtype)
    x = rand(getkey(), xshape, dtype)
    out = jax.eval_shape(op, x)
    return op, x, rand(getkey(), out.shape, out.dtype)


@pytest.mark.parametrize("name", sorted(OPERATOR_FACTORIES))
def test_factory_inside_jit_equals_eager(name):
    op, x, y = build(name)

    @jax.jit
    def inside(v, w):
        A, _ = OPERATOR_FACTORIES[name](KeyGen(0), C128)
        return A(v), A.H(w)

    got = inside(x, y)
    assert_close(got[0], op(x), C128)
    assert_close(got[1], op.H(y), C128)


class Recorder:
    """Stands in for an operator class: records (`replay is None`) or replaces (from
    `replay`) every array argument of its constructor, in call order."""

    def __init__(self, cls, arrays: list, replay: list | None):
        self.cls, self.arrays, self.replay = cls, arrays, replay

    def __call__(self, *args, **kwargs):
        swap = lambda v: self.swap(v) if isinstance(v, (np.ndarray, jax.Array)) else v  # noqa: E731
        args = [swap(a) for a in args]
        kwargs = {k: swap(v) for k, v in kwargs.items()}
        return self.cls(*args, **kwargs)

    def swap(self, array):
        if self.replay is None:
            self.arrays.append(array)
            return array
        return self.replay.pop(0)

    def __getattr__(self, attr):  # classmethods such as `Sampling.from_mask`
        return getattr(self.cls, attr)


def build_recorded(monkeypatch, name, replay=None):
    """The factory's operator, with the constructors' array arguments recorded (returned)
    or taken from `replay`."""
    arrays = []
    with monkeypatch.context() as m:
        for cls in CLASSES:
            m.setattr(jl, cls, Recorder(getattr(jl, cls), arrays, replay))
        op, _ = OPERATOR_FACTORIES[name](KeyGen(0), C128)
    return op, arrays


# Factories whose constructor arrays must be concrete: tracing them must give a jaxlinops
# TypeError or ValueError whose message matches the pattern given here.
CONCRETE = {"blocks_1d_mask": r"ArrayToBlocks.*mask", "blocks_to_array": r"BlocksToArray.*mask"}
CASES = [(name, mode) for name in sorted(OPERATOR_FACTORIES) for mode in ("constant", "traced")]


@pytest.mark.parametrize("name, mode", CASES, ids=[f"{n}-{m}" for n, m in CASES])
def test_factory_with_jax_arrays_equals_eager(name, mode, monkeypatch):
    """The constructors' array arguments as `jax.Array`s inside `jit`: constants closed
    over (`constant`), or arguments of the jitted function (`traced`)."""
    op, x, y = build(name)
    _, arrays = build_recorded(monkeypatch, name)
    if not arrays:
        pytest.skip("the factory passes no arrays to a constructor")
    leaves = [jnp.asarray(a) for a in arrays]

    @jax.jit
    def inside(traced, v, w):
        A, _ = build_recorded(monkeypatch, name, replay=list(traced or leaves))
        return A(v), A.H(w)

    traced = leaves if mode == "traced" else None
    if mode == "traced" and name in CONCRETE:
        with pytest.raises((TypeError, ValueError), match=CONCRETE[name]) as info:
            inside(traced, x, y)
        assert "jaxlinops" in info.traceback[-1].path.parts, info.traceback[-1].path
        return
    got = inside(traced, x, y)
    assert_close(got[0], op(x), C128)
    assert_close(got[1], op.H(y), C128)
