"""torchlinops' module path `torchlinops.alg.poly`: a re-export of
`jaxlinops.alg.polynomial_preconditioner` (and `polynomial_coefficients`)."""

from ._poly import (
    polynomial_coefficients as polynomial_coefficients,
    polynomial_preconditioner as polynomial_preconditioner,
)

__all__ = ["polynomial_preconditioner"]
