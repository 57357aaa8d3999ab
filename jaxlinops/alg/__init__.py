"""Solvers for problems posed with jaxlinops operators: `jl.alg.conjugate_gradients`,
`power_method`, `singular_value_decomposition`, `polynomial_preconditioner` (with
`polynomial_coefficients`) and `to_lineax`.

All run inside `jax.jit` (their loops are `lax.while_loop`s), on complex data, and on
sharded operators and vectors.
"""

from ._cg import CGResult as CGResult, conjugate_gradients as conjugate_gradients
from ._lineax import to_lineax as to_lineax
from ._poly import (
    polynomial_coefficients as polynomial_coefficients,
    polynomial_preconditioner as polynomial_preconditioner,
)
from ._power import (
    power_method as power_method,
    singular_value_decomposition as singular_value_decomposition,
)

__all__ = [
    "CGResult",
    "conjugate_gradients",
    "to_lineax",
    "polynomial_coefficients",
    "polynomial_preconditioner",
    "power_method",
    "singular_value_decomposition",
]
