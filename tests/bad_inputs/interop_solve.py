"""Bad inputs to `interop.torch_solve` and `interop.torch_function`: a wrong kind of
object or dtype is a `TypeError`, a wrong value or shape a `ValueError`, each naming the
function and the argument. (An integer tensor that requires grad cannot be built: torch
itself refuses `requires_grad` on integer dtypes; integer tensors pass as constants.)
Empty where torch is not installed."""

from __future__ import annotations

import importlib.util

import jax.numpy as jnp
import numpy as np

import jaxlinops as jl

from . import Raises

CASES: list[Raises] = []

if importlib.util.find_spec("torch") is not None:
    import torch

    import interop

    def normal(W, lam):
        N = jl.Dense(W, "K M", "M", "K").N
        return N + lam * jl.Identity("M", N.oshape)

    def W() -> torch.Tensor:
        return torch.ones(4, 3, dtype=torch.float64, requires_grad=True)

    def y(n=3, dtype=torch.float64) -> torch.Tensor:
        return torch.ones(n, dtype=dtype)

    def solve(*args, **kwargs):
        return interop.torch_solve(*args, **kwargs)

    CASES += [
        Raises(f"interop_solve-{name}", call, exc, match)
        for name, call, exc, match in [
            ("y-ndarray", lambda: solve(normal, np.ones(3), W(), 0.5), TypeError,
             r"`interop.torch_solve`: `y` must be a torch.Tensor; got ndarray"),
            ("y-jax-array", lambda: solve(normal, jnp.ones(3), W(), 0.5), TypeError,
             r"`interop.torch_solve`: `y` must be a torch.Tensor; got ArrayImpl"),
            ("y-integer", lambda: solve(normal, y(dtype=torch.int64), W(), 0.5), TypeError,
             r"`interop.torch_solve`: `y` must be a floating-point or complex tensor; "
             r"got torch.int64"),
            ("make-operator-ndarray", lambda: solve(np.eye(3), y(), W()), TypeError,
             r"`interop.torch_solve`: `make_operator` must be callable; got ndarray"),
            ("make-operator-tensor", lambda: solve(W(), y(), W()), TypeError,
             r"`interop.torch_solve`: `make_operator` must be callable; got Tensor"),
            ("param-ndarray", lambda: solve(normal, y(), np.ones((4, 3)), 0.5), TypeError,
             r"`interop.torch_solve`: params\[0\] must be a torch.Tensor .*got ndarray"),
            ("param-list", lambda: solve(normal, y(), W(), [0.5]), TypeError,
             r"`interop.torch_solve`: params\[1\] must be a torch.Tensor .*got list"),
            ("x0-requires-grad", lambda: solve(normal, y(), W(), 0.5, x0=W()[0]), ValueError,
             r"`interop.torch_solve`: `x0` is a constant of the solve.*requires grad"),
            ("y-wrong-size", lambda: solve(normal, y(4), W(), 0.5), ValueError,
             r"`Add` expected dim M with size 3 in its input \(M\); got .* shape \(4,\)"),
            ("function-not-callable", lambda: interop.torch_function(3),  # pyright: ignore[reportArgumentType]
             TypeError,
             r"`interop.torch_function` expects a callable; got int"),
            ("function-argument-ndarray",
             lambda: interop.torch_function(jnp.sin)(np.ones(3)), TypeError,
             r"`interop.torch_function\(sin\)`: argument 0 must be a torch.Tensor"),
            ("function-returns-float", lambda: interop.torch_function(lambda x: 1.0)(y()),
             TypeError, r"`interop.torch_function\(<lambda>\)`: the function must return a "
                        r"JAX array .*got float"),
            ("function-returns-str-with-grad",
             lambda: interop.torch_function(lambda x: (x, "s"))(W()), TypeError,
             r"`interop.torch_function\(<lambda>\)`: the function must return .*got str"),
        ]
    ]  # fmt: skip
