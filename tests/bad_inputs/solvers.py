"""Bad inputs to the solvers in `jl.alg`: CG, the power method, the SVD, the polynomial
preconditioner and the lineax wrapper."""

from __future__ import annotations

import jax
import numpy as np

import jaxlinops as jl

from . import NaNOrError, Raises

alg = jl.alg
CG = alg.conjugate_gradients
W = np.diag(np.linspace(1.0, 2.0, 4))
A = jl.Dense(W, "M N", "N", "M")  # square: N -> M, as A.N
RECT = jl.Dense(np.ones((3, 4)), "M N", "N", "M")
Y = np.ones(4)


def with_inf(v: np.ndarray, value: float = np.inf) -> np.ndarray:
    v = np.array(v, dtype=float)
    v[1] = value
    return v


def cg_with_traced_iters(n):
    return CG(A, Y, max_num_iters=n)


ROWS = [
    # conjugate_gradients: the operators
    ("cg-A-not-callable", lambda: CG(W, Y), TypeError, r"`A` must be a NamedLinop or a callable"),
    (
        "cg-A-not-square",
        lambda: CG(RECT, Y),
        ValueError,
        r"`A` must be square .*`Dense` maps \(N\) to \(M\) \(sizes \[4\] to \[3\]\)",
    ),
    (
        "cg-A-not-square-y-of-its-output",  # names the operator, not the size of y
        lambda: CG(RECT, np.ones(3)),
        ValueError,
        r"`conjugate_gradients`: `A` must be square",
    ),
    (
        "cg-callable-not-square",
        lambda: CG(lambda v: v[:2], Y),
        ValueError,
        r"`A` must map its input shape to itself; it maps \(4,\) to \(2,\)",
    ),
    ("cg-P-not-callable", lambda: CG(A, Y, P=2.0), TypeError, r"`P` must be a NamedLinop"),
    (
        "cg-P-wrong-shape",
        lambda: CG(A, Y, P=lambda v: v[:2]),
        ValueError,
        r"`P` must map its input shape to itself; it maps \(4,\) to \(2,\)",
    ),
    # the vectors
    ("cg-y-scalar", lambda: CG(A, 1.0), ValueError, r"`y` must have at least one axis"),
    ("cg-y-string", lambda: CG(A, "abcd"), TypeError, r"`y` must be a numeric array; got str"),
    ("cg-y-wrong-size", lambda: CG(A, np.ones(5)), ValueError, r"`Dense` expected dim N "),
    (
        "cg-y-integer",
        lambda: CG(lambda v: 2 * v, np.arange(4)),
        TypeError,
        r"`conjugate_gradients` works in floating point; got dtype int",
    ),
    (
        "cg-x0-wrong-shape",
        lambda: CG(A, Y, x0=np.ones(3)),
        ValueError,
        r"x0 has shape \(3,\); y has shape \(4,\)",
    ),
    ("cg-x0-string", lambda: CG(A, Y, x0="zero"), TypeError, r"`x0` must be a numeric array"),
    # the settings
    (
        "cg-max-iters-zero",
        lambda: CG(A, Y, max_num_iters=0),
        ValueError,
        r"conjugate_gradients\(max_num_iters=...\)` expects sizes of at least 1; got 0",
    ),
    (
        "cg-max-iters-fractional",
        lambda: CG(A, Y, max_num_iters=2.5),
        ValueError,
        r"max_num_iters=...\)` expects integer sizes; got 2.5",
    ),
    (
        "cg-max-iters-bool",
        lambda: CG(A, Y, max_num_iters=True),
        TypeError,
        r"max_num_iters=...\)` expects integer sizes; got True",
    ),
    (
        "cg-max-iters-traced",
        lambda: jax.jit(cg_with_traced_iters)(3),
        TypeError,
        r"max_num_iters=...\)` needs concrete sizes",
    ),
    (
        "cg-gtol-negative",
        lambda: CG(A, Y, gtol=-1e-6),
        ValueError,
        r"conjugate_gradients\(gtol=...\)` expects a tolerance >= 0; got -1e-06",
    ),
    (
        "cg-gtol-string",
        lambda: CG(A, Y, gtol="1e-6"),
        TypeError,
        r"gtol=...\)` expects a real number; got '1e-6'",
    ),
    (
        "cg-atol-nan",
        lambda: CG(A, Y, atol=float("nan")),
        ValueError,
        r"atol=...\)` expects a finite real number; got nan",
    ),
    (
        "cg-atol-complex",
        lambda: CG(A, Y, atol=1e-3j),
        TypeError,
        r"atol=...\)` expects a real number; got 0.001j",
    ),
    (
        "cg-batch-dims-unknown",
        lambda: CG(A, Y, batch_dims="T"),
        ValueError,
        r"dim 'T' is not in the operator's ishape",
    ),
    (
        "cg-batch-dims-float",
        lambda: CG(A, Y, batch_dims=0.5),
        TypeError,
        r"`conjugate_gradients`: dims are names or axis numbers; got 0.5",
    ),
    (
        "cg-batch-dims-out-of-range",
        lambda: CG(A, Y, batch_dims=3),
        ValueError,
        r"axis 3 is out of range for 1 axes",
    ),
    (
        "cg-batch-dims-name-on-a-callable",
        lambda: CG(lambda v: v, Y, batch_dims="N"),
        TypeError,
        r"dim 'N' is a name, but the operator is a plain callable",
    ),
    (
        "cg-ltol-negative",
        lambda: CG(A, Y, ltol=-1e-5),
        ValueError,
        r"conjugate_gradients\(ltol=...\)` expects a tolerance >= 0; got -1e-05",
    ),
    (
        "cg-disable-tracking-string",
        lambda: CG(A, Y, disable_tracking="yes"),
        TypeError,
        r"conjugate_gradients\(disable_tracking=...\)` expects True or False; got 'yes'",
    ),
    (
        "cg-return-info-int",
        lambda: CG(A, Y, return_info=1),
        TypeError,
        r"conjugate_gradients\(return_info=...\)` expects True or False; got 1",
    ),
    (
        "cg-progress-string",
        lambda: CG(A, Y, progress="on"),
        TypeError,
        r"conjugate_gradients\(progress=...\)` expects True or False; got 'on'",
    ),
    (
        "cg-tqdm-kwargs-list",
        lambda: CG(A, Y, tqdm_kwargs=["desc"]),
        TypeError,
        r"conjugate_gradients\(tqdm_kwargs=...\)` expects a dict of tqdm keyword arguments",
    ),
    (
        "cg-P-positional-is-ltol",  # torchlinops' order: P is keyword-only
        lambda: CG(A, Y, None, 20, 1e-6, A),
        TypeError,
        r"conjugate_gradients\(ltol=...\)` expects a real number",
    ),
    # power_method
    (
        "power-A-not-square",
        lambda: alg.power_method(RECT, Y),
        ValueError,
        r"`power_method`: `A` must be square",
    ),
    (
        "power-max-iters-zero",
        lambda: alg.power_method(A, Y, max_iters=0),
        ValueError,
        r"`power_method\(max_iters=...\)` expects sizes of at least 1; got 0",
    ),
    (
        "power-tol-string",
        lambda: alg.power_method(A, Y, tol="small"),
        TypeError,
        r"`power_method\(tol=...\)` expects a real number",
    ),
    (
        "power-v-init-scalar",
        lambda: alg.power_method(A, 1.0),
        ValueError,
        r"`power_method`: `v_init` must have at least one axis",
    ),
    (
        "power-dim-bool",
        lambda: alg.power_method(A, Y, dim=True),
        TypeError,
        r"`power_method`: dims are names or axis numbers; got True",
    ),
    (
        "power-eps-negative",
        lambda: alg.power_method(A, Y, eps=-1.0),
        ValueError,
        r"`power_method\(eps=...\)` expects a tolerance >= 0; got -1.0",
    ),
    (
        "power-return-info-string",
        lambda: alg.power_method(A, Y, return_info="yes"),
        TypeError,
        r"`power_method\(return_info=...\)` expects True or False",
    ),
    # singular_value_decomposition
    (
        "svd-A-callable",
        lambda: alg.singular_value_decomposition(lambda v: v, Y, 1),
        TypeError,
        r"`singular_value_decomposition` needs a NamedLinop",
    ),
    (
        "svd-too-many-values",
        lambda: alg.singular_value_decomposition(RECT, Y, 5),
        ValueError,
        r"at most 4 singular values",
    ),
    (
        "svd-count-string",
        lambda: alg.singular_value_decomposition(RECT, Y, "2"),
        TypeError,
        r"`singular_value_decomposition\(num_singular_values=...\)` expects integer sizes",
    ),
    (
        "svd-max-iters-zero",
        lambda: alg.singular_value_decomposition(RECT, Y, 2, max_iters=0),
        ValueError,
        r"`singular_value_decomposition\(max_iters=...\)` expects sizes of at least 1",
    ),
    (
        "svd-tol-negative",
        lambda: alg.singular_value_decomposition(RECT, Y, 2, tol=-1.0),
        ValueError,
        r"`singular_value_decomposition\(tol=...\)` expects a tolerance >= 0",
    ),
    (
        "svd-x-init-wrong-size",
        lambda: alg.singular_value_decomposition(RECT, np.ones(3), 1),
        ValueError,
        r"`Dense` expected dim N ",
    ),
    (
        "svd-eps-nan",
        lambda: alg.singular_value_decomposition(RECT, Y, 1, eps=float("nan")),
        ValueError,
        r"`singular_value_decomposition\(eps=...\)` expects a finite real number",
    ),
    (
        "svd-dim-batch-not-in-output",
        lambda: alg.singular_value_decomposition(
            jl.Dense(np.ones((2, 3, 4)), "B M N", "B N", "M"), np.ones((2, 4)), 1, dim="N"
        ),
        ValueError,
        r"`singular_value_decomposition`: with `dim`, the other \(batch\) dims of x_init",
    ),
    (
        "svd-too-many-values-per-batch",
        lambda: alg.singular_value_decomposition(
            jl.Dense(np.ones((2, 3, 4)), "B M N", "B N", "B M"), np.ones((2, 4)), 5, dim="N"
        ),
        ValueError,
        r"at most 4 singular values for vectors of shape \(4,\)",
    ),
    # polynomial preconditioners
    (
        "poly-degree-fractional",
        lambda: alg.polynomial_coefficients(1.5),
        ValueError,
        r"`polynomial_coefficients\(degree=...\)` expects integer sizes; got 1.5",
    ),
    (
        "poly-degree-string",
        lambda: alg.polynomial_preconditioner(A, "3"),
        TypeError,
        r"`polynomial_preconditioner\(degree=...\)` expects integer sizes; got '3'",
    ),
    (
        "poly-norm-unknown",
        lambda: alg.polynomial_coefficients(2, "l_1"),
        ValueError,
        r"norm must be one of .* got 'l_1'",
    ),
    (
        "poly-eigs-reversed",
        lambda: alg.polynomial_coefficients(2, "l_2", 1.0, 0.5),
        ValueError,
        r"need 0 <= lower_eig < upper_eig; got 1.0 and 0.5",
    ),
    (
        "poly-eig-string",
        lambda: alg.polynomial_coefficients(2, "l_2", "0", 1.0),
        TypeError,
        r"`polynomial_coefficients\(lower_eig=...\)` expects a real number; got '0'",
    ),
    (
        "poly-eig-inf",
        lambda: alg.polynomial_coefficients(2, "l_2", 0.0, float("inf")),
        ValueError,
        r"`polynomial_coefficients\(upper_eig=...\)` expects a finite real number",
    ),
    (
        "poly-T-callable",
        lambda: alg.polynomial_preconditioner(lambda v: v, 2),
        TypeError,
        r"`polynomial_preconditioner` needs a NamedLinop T",
    ),
    (
        "poly-not-positive",
        lambda: alg.polynomial_coefficients(1, "ifista", 0.0, 2.0),
        ValueError,
        r"degree-1 ifista polynomial is not positive on \[0.0, 2.0\]",
    ),
    # to_lineax
    (
        "lineax-A-callable",
        lambda: alg.to_lineax(lambda v: v, Y),
        TypeError,
        r"`to_lineax` expects a NamedLinop",
    ),
    (
        "lineax-structure-not-an-array",
        lambda: alg.to_lineax(A, 4),
        TypeError,
        r"`to_lineax`: `input_structure` must be an array or a jax.ShapeDtypeStruct",
    ),
    (
        "lineax-structure-wrong-shape",
        lambda: alg.to_lineax(A, np.ones(5)),
        ValueError,
        r"`Dense` expected dim N ",
    ),
]

CASES: list[Raises | NaNOrError] = [
    Raises(f"solvers-{name}", call, exc, match) for name, call, exc, match in ROWS
]

# under jit no Python check sees the values: non-finite data comes back as NaN (the
# solution alone, as CG returns by default: its residual history holds NaN after it stops)
cg_jit = jax.jit(lambda y, x0: CG(A, y, x0=x0))
power_jit = jax.jit(lambda v: alg.power_method(A, v))
CASES += [
    NaNOrError("solvers-cg-y-inf-under-jit", lambda: cg_jit(with_inf(Y), Y), r"NaN"),
    NaNOrError("solvers-cg-y-nan-under-jit", lambda: cg_jit(with_inf(Y, np.nan), Y), r"NaN"),
    NaNOrError("solvers-cg-x0-inf-under-jit", lambda: cg_jit(Y, with_inf(Y)), r"NaN"),
    NaNOrError(
        "solvers-cg-operator-nan-under-jit",
        lambda: jax.jit(lambda d, y: CG(lambda v: d * v, y))(with_inf(Y, np.nan), Y),
        r"NaN",
    ),
    NaNOrError("solvers-power-v-init-inf-under-jit", lambda: power_jit(with_inf(Y)), r"NaN"),
    NaNOrError(
        "solvers-svd-x-init-nan-under-jit",
        lambda: jax.jit(lambda x: alg.singular_value_decomposition(RECT, x, 2))(
            with_inf(Y, np.nan)
        ),
        r"NaN",
    ),
]
