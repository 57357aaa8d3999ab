"""Bad inputs to the operator algebra, containers, renaming, splitting and batching."""

from __future__ import annotations

import jax
import numpy as np

import jaxlinops as jl
from jaxlinops.nameddim import NamedDimension as ND, NamedShape as NS

from . import Raises

_W = np.arange(12.0).reshape(3, 4)


def _dense():
    return jl.Dense(_W, "M N", "N", "M")


def _nufft():
    locs = np.random.default_rng(0).uniform(-4, 4, (10, 2))
    return jl.NUFFT(locs, (8, 8), "K", batch_shape="C", toeplitz=True)


def _devices(n):
    return np.array(jax.devices()[:n])


def _same(linop, x, /):
    return x


def _custom(init, **methods):
    """A class written to torchlinops' protocol with this `__init__` (built, not called)."""
    body = {"__init__": init, "fn": staticmethod(_same), "adj_fn": staticmethod(_same)}
    return type("Custom", (jl.NamedLinop,), {**body, **methods})


def _init_with(named_shape=NS(("N",)), **attributes):
    def __init__(self):
        super(type(self), self).__init__(named_shape)
        for name, value in attributes.items():
            setattr(self, name, value)

    return __init__


def _assign_after_init():
    op = _custom(_init_with(scale=2.0))()
    op.scale = 3.0


CASES = [
    # the algebra
    Raises(
        "core-scale-by-string", lambda: _dense() * "x", TypeError, r"`Dense \* c` needs a number"
    ),
    Raises(
        "core-scale-by-string-left",
        lambda: "x" * _dense(),
        TypeError,
        r"`c \* Dense` needs a number",
    ),
    Raises(
        "core-scale-by-array",
        lambda: 2 * np.ones(3) * _dense(),
        TypeError,
        r"needs a scalar c; got an array of shape \(3,\)",
    ),
    Raises("core-scale-by-bool", lambda: _dense() * True, TypeError, r"needs a number c; got bool"),
    Raises(
        "core-scale-by-none", lambda: _dense() * None, TypeError, r"needs a number c; got NoneType"
    ),
    Raises(
        "core-multiply-operators",
        lambda: _dense() * _dense(),
        TypeError,
        r"compose operators with `@`",
    ),
    Raises(
        "core-matmul-int",
        lambda: _dense() @ 3,
        TypeError,
        r"`Dense @ x` composes with a NamedLinop",
    ),
    Raises("core-matmul-list", lambda: _dense() @ [1.0, 2.0], TypeError, r"`Dense @ x` composes"),
    Raises(
        "core-rmatmul", lambda: np.float64(3) @ _dense(), TypeError, r"`x @ Dense` is not defined"
    ),
    Raises(
        "core-add-number",
        lambda: _dense() + 1,
        TypeError,
        r"`Dense \+ B` needs a NamedLinop B; got int",
    ),
    Raises(
        "core-radd-number",
        lambda: 1 + _dense(),
        TypeError,
        r"`Dense \+ B` needs a NamedLinop B; got int",
    ),
    Raises(
        "core-sub-array",
        lambda: _dense() - np.ones(3),
        TypeError,
        r"`Dense - B` needs a NamedLinop",
    ),
    Raises(
        "core-apply-string",
        lambda: _dense()("abc"),
        TypeError,
        r"`Dense\(x\)` expects a numeric array",
    ),
    Raises("core-apply-object", lambda: _dense()(object()), TypeError, r"`Dense\(x\)` expects"),
    Raises(
        "core-apply-wrong-rank",
        lambda: _dense()(np.ones((2, 4))),
        ValueError,
        r"`Dense` received incompatible input of shape .*: expected dims \(N\)",
    ),
    Raises(
        "core-apply-wrong-size",
        lambda: _dense()(np.ones(5)),
        ValueError,
        r"expected dim N with size 4",
    ),
    Raises(
        "core-adjoint-wrong-size",
        lambda: _dense().H(np.ones(4)),
        ValueError,
        r"expected dim M with size 3",
    ),
    # containers
    Raises(
        "core-chain-mismatch",
        lambda: _dense() @ _dense(),
        ValueError,
        r"`Chain`: Mismatched shapes: operator 0 \(Dense\) outputs dims \(M\)",
    ),
    Raises(
        "core-chain-empty", lambda: jl.Chain(), ValueError, r"`Chain` needs at least one operator"
    ),
    Raises(
        "core-chain-non-operator",
        lambda: jl.Chain(_dense(), 3),
        TypeError,
        r"`Chain` takes NamedLinops; argument 1 is a int",
    ),
    Raises(
        "core-add-mismatch",
        lambda: _dense() + _dense().H,
        ValueError,
        r"`Add` requires all operators to share ishape",
    ),
    Raises("core-add-empty", lambda: jl.Add(), ValueError, r"`Add` needs at least one operator"),
    Raises(
        "core-concat-no-dims",
        lambda: jl.Concat(_dense(), _dense()),
        ValueError,
        r"`Concat` needs `idim`, `odim` or both",
    ),
    Raises(
        "core-concat-unknown-dim",
        lambda: jl.Concat(_dense(), _dense(), idim="Q"),
        ValueError,
        r"`Concat`: dim 'Q' is not in",
    ),
    Raises(
        "core-stack-no-dims",
        lambda: jl.Stack(_dense(), _dense()),
        ValueError,
        r"`Stack` needs `idim_and_idx`",
    ),
    Raises(
        "core-stack-existing-dim",
        lambda: jl.Stack(_dense(), _dense(), odim_and_idx=("M", 0)),
        ValueError,
        r"`Stack`: the children's shape \(.*\) already contains the new dim 'M'",
    ),
    # normals and renaming
    Raises(
        "core-normal-inner-on-other-dims",
        lambda: _nufft().normal(jl.Diagonal(np.ones(5), "Q")),
        ValueError,
        r"`NUFFT.normal\(inner\)` needs `inner` to take",
    ),
    Raises(
        "core-rename-merges-dims",
        lambda: jl.rename(_dense(), {"N": "M"}),
        ValueError,
        r"would merge its distinct dims 'M' and 'N'",
    ),
    Raises(
        "core-rename-not-operator",
        lambda: jl.rename(_W, {"N": "M"}),
        TypeError,
        r"`rename\(op, mapping\)` expects a NamedLinop",
    ),
    Raises(
        "core-rename-not-mapping",
        lambda: jl.rename(_dense(), [("N", "M")]),
        TypeError,
        r"expects a mapping",
    ),
    Raises(
        "core-rename-invalidates", lambda: jl.rename(_nufft(), {"K": "C"}), ValueError, r"distinct"
    ),
    # splitting
    Raises(
        "core-split-not-operator",
        lambda: jl.split(_W, {"M": slice(0, 1)}),
        TypeError,
        r"`split` expects a NamedLinop",
    ),
    Raises(
        "core-split-not-mapping",
        lambda: jl.split(_dense(), [("M", slice(0, 1))]),
        TypeError,
        r"`split` expects a mapping",
    ),
    Raises(
        "core-split-int-tile",
        lambda: jl.split(_dense(), {"M": 1}),
        TypeError,
        r"the tile of dim 'M' must be a slice",
    ),
    Raises(
        "core-split-step", lambda: jl.split(_dense(), {"M": slice(0, 3, 2)}), TypeError, r"step 1"
    ),
    Raises(
        "core-split-empty",
        lambda: jl.split(_dense(), {"M": slice(2, 2)}),
        ValueError,
        r"the tile slice\(2, 2, None\) of dim 'M' \(size 3\) is empty",
    ),
    Raises(
        "core-split-unknown-dim",
        lambda: jl.split(_dense(), {"Q": slice(0, 1)}),
        ValueError,
        r"dims \['Q'\] are not dims of Dense",
    ),
    Raises(
        "core-split-linop-zero-size",
        lambda: jl.split_linop(_dense(), {"M": 0}),
        ValueError,
        r"`split_linop`: the tile size of dim 'M' must be a positive",
    ),
    # batching
    Raises(
        "core-batchspec-empty",
        lambda: jl.BatchSpec({}),
        ValueError,
        r"`BatchSpec` needs at least one batched dim",
    ),
    Raises(
        "core-batchspec-dim-type",
        lambda: jl.BatchSpec({3: 1}),
        TypeError,
        r"`BatchSpec`: dims are names \(str\)",
    ),
    Raises(
        "core-batchspec-duplicate-device",
        lambda: jl.create_batched_linop(
            _dense(), jl.BatchSpec({"M": 1}, device_matrix=[jax.devices()[0]] * 2)
        ),
        ValueError,
        r"every device may appear only once",
    ),
    Raises(
        "core-batched-not-operator",
        lambda: jl.create_batched_linop(_W, jl.BatchSpec({"M": 1})),
        TypeError,
        r"expects a NamedLinop",
    ),
    Raises(
        "core-batched-unknown-dim",
        lambda: jl.create_batched_linop(
            _dense(), jl.BatchSpec({"Q": 1}, device_matrix=_devices(2))
        ),
        ValueError,
        r"'Q'",
    ),
    # dtypes and small constructors
    Raises(
        "core-apply-float8",
        lambda: _dense()(jax.numpy.ones(4, jax.numpy.float8_e4m3fn)),
        TypeError,
        r"`Dense\(x\)` got an array of dtype float8_e4m3fn",
    ),
    Raises(
        "core-scalar-int8-overflow",
        lambda: jl.Scalar(np.int8(100))(np.array([100], np.int8)),
        TypeError,
        r"`Scalar` would compute in int8",
    ),
    Raises(
        "core-zero-sizes-list",
        lambda: jl.Zero("A", "B", sizes=[3]),
        TypeError,
        r"`Zero\(sizes=...\)` expects a mapping",
    ),
    Raises(
        "core-zero-size-fraction",
        lambda: jl.Zero("A", "B", sizes={"A": 2, "B": 2.5}),
        ValueError,
        r"`Zero\(sizes=\{'B': ...\}\)` expects integer sizes",
    ),
    Raises(
        "core-stack-fractional-index",
        lambda: jl.Stack(_dense(), _dense(), idim_and_idx=("L", 0.5)),
        ValueError,
        r"`Stack\(idim_and_idx=...\)` index expects integer",
    ),
    Raises(
        "core-stack-not-a-pair",
        lambda: jl.Stack(_dense(), _dense(), odim_and_idx="L"),
        TypeError,
        r"`Stack\(odim_and_idx=...\)` expects a pair",
    ),
    Raises(
        "core-fft-centered-string",
        lambda: jl.FFT(1, centered="yes"),
        TypeError,
        r"`FFT\(centered=...\)` expects a bool",
    ),
    # torchlinops' call forms: names, the custom protocol, splits, debugging identities
    Raises(
        "core-chain-name-int",
        lambda: jl.Chain(_dense(), name=3),
        TypeError,
        r"`Chain\(name=...\)` expects a string",
    ),
    Raises(
        "core-add-name-list",
        lambda: jl.Add(_dense(), _dense(), name=["sum"]),
        TypeError,
        r"`Add\(name=...\)` expects a string",
    ),
    Raises(
        "core-simple-name-int",
        lambda: jl.SimpleLinop(np.negative, np.negative, name=1),
        TypeError,
        r"`SimpleLinop\(name=...\)` expects a string",
    ),
    Raises(
        "core-custom-without-adjoint",
        lambda: type("OnlyFn", (jl.NamedLinop,), {"fn": staticmethod(_same)}),
        TypeError,
        r"`OnlyFn` defines `fn` but not its adjoint",
    ),
    Raises(
        "core-custom-without-super-init",
        lambda: _custom(lambda self: None)(),
        TypeError,
        r"`Custom.__init__` must call `super\(\).__init__\(NamedShape",
    ),
    Raises(
        "core-custom-shape-not-namedshape",
        lambda: _custom(_init_with(("N",)))(),
        TypeError,
        r"`Custom`: `super\(\).__init__\(shape\)` expects a `NamedShape",
    ),
    Raises(
        "core-custom-unhashable-setting",
        lambda: _custom(_init_with(axes=[0, 1]))(),
        TypeError,
        r"`Custom.axes = ...`: an attribute without arrays .* must be hashable; got a list",
    ),
    Raises(
        "core-custom-hides-attribute",
        lambda: _custom(_init_with(shape=(4,)))(),
        TypeError,
        r"`Custom.shape = ...` would hide the operator's own `shape`",
    ),
    Raises(
        "core-custom-assign-after-init",
        _assign_after_init,
        AttributeError,  # dataclasses.FrozenInstanceError
        r"`Custom.scale = ...`: an operator is immutable once built",
    ),
    Raises(
        "core-split-named-dim-strided",
        lambda: jl.NamedLinop.split(_dense(), {ND("N"): slice(0, 4, 2)}),
        TypeError,
        r"`split`: the tile of dim 'N' must be a slice .* step 1",
    ),
    Raises(
        "core-adj-split-unknown-dim",
        lambda: _dense().adj_split({ND("K"): slice(0, 1)}),
        ValueError,
        r"`split`: dims \['K'\] are not dims of Dense",
    ),
    Raises(
        "core-breakpoint-callback-string",
        lambda: jl.BreakpointLinop("N", callback="print"),
        TypeError,
        r"`BreakpointLinop\(callback=...\)` expects a function",
    ),
    Raises(
        "core-sleep-negative",
        lambda: jl.Sleep(-1.0),
        ValueError,
        r"`Sleep\(duration=...\)` expects a non-negative number",
    ),
    Raises(
        "core-sleep-string",
        lambda: jl.Sleep("1s"),
        TypeError,
        r"`Sleep\(duration=...\)` expects a number of seconds",
    ),
    Raises(
        "core-sleep-rank",
        lambda: jl.Sleep(0.0, ioshape="M", oshape="KL"),
        ValueError,
        r"`Sleep` maps each input dim to one output dim",
    ),
]
