"""Bad inputs to the operator algebra, containers, renaming, splitting and batching."""

from __future__ import annotations

import jax
import numpy as np

import jaxlinops as jl

from . import Raises

_W = np.arange(12.0).reshape(3, 4)


def _dense():
    return jl.Dense(_W, "M N", "N", "M")


def _nufft():
    locs = np.random.default_rng(0).uniform(-4, 4, (10, 2))
    return jl.NUFFT(locs, (8, 8), "K", batch_shape="C", toeplitz=True)


def _devices(n):
    return np.array(jax.devices()[:n])


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
        r"`Dense` expected an input with dims \(N\)",
    ),
    Raises(
        "core-apply-wrong-size",
        lambda: _dense()(np.ones(5)),
        ValueError,
        r"expected dim 'N' of size 4",
    ),
    Raises(
        "core-adjoint-wrong-size",
        lambda: _dense().H(np.ones(4)),
        ValueError,
        r"expected dim 'M' of size 3",
    ),
    # containers
    Raises(
        "core-chain-mismatch",
        lambda: _dense() @ _dense(),
        ValueError,
        r"`Chain`: operator 0 \(Dense\) outputs dims \(M\)",
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
        r"`Stack`: the new dim 'M' is already in",
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
]
