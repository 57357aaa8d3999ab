"""Solvers for problems posed with jaxlinops operators: `jl.alg.conjugate_gradients`,
`power_method`, `singular_value_decomposition`, `polynomial_preconditioner` (with
`polynomial_coefficients`) and `to_lineax`.

Their arguments are torchlinops', in its order (jaxlinops' own are keyword-only), and they
return what torchlinops returns; `return_info=True` returns the whole record (`CGResult`,
`PowerMethodResult`, `SVDResult`), with the residual or eigenvalue history. torchlinops'
module paths (`alg.pcg`, `alg.poly`, `alg.powermethod`, `alg.svd`) re-export them.

All run inside `jax.jit` (their loops are `lax.while_loop`s), on complex data, and on
sharded operators and vectors; with `progress` (default: in a terminal or notebook, with
tqdm installed) a tqdm bar follows the iterations, also inside `jax.jit`.

They are differentiable (`jax.grad`, `jax.jvp`) w.r.t. their data and every array inside
the operator, without differentiating their loops: CG implicitly (`ImplicitAdjoint`, the
default: one more solve of the adjoint system) or through its unrolled iterations
(`UnrolledAdjoint`); the power method's eigenvalue and the SVD's singular values by
Hellmann–Feynman.
"""

from . import pcg as pcg, poly as poly, powermethod as powermethod, svd as svd
from ._adjoint import ImplicitAdjoint as ImplicitAdjoint, UnrolledAdjoint as UnrolledAdjoint
from ._admm import ADMMResult as ADMMResult, admm as admm
from ._cg import CGResult as CGResult, conjugate_gradients as conjugate_gradients
from ._fista import FISTAResult as FISTAResult, fista as fista
from ._lineax import to_lineax as to_lineax
from ._pdhg import PDHGResult as PDHGResult, pdhg as pdhg
from ._poly import (
    polynomial_coefficients as polynomial_coefficients,
    polynomial_preconditioner as polynomial_preconditioner,
)
from ._power import (
    PowerMethodResult as PowerMethodResult,
    SVDResult as SVDResult,
    power_method as power_method,
    singular_value_decomposition as singular_value_decomposition,
)
from ._prox import L1 as L1, Box as Box, L2Ball as L2Ball, NonNegative as NonNegative, NoOp as NoOp
from ._prox_base import AbstractProx as AbstractProx
from ._prox_combine import Scaled as Scaled, SeparableSum as SeparableSum
from ._prox_group import GroupL1 as GroupL1
from ._prox_llr import NuclearNormBlocks as NuclearNormBlocks

__all__ = [
    "ADMMResult",
    "AbstractProx",
    "Box",
    "FISTAResult",
    "GroupL1",
    "L1",
    "L2Ball",
    "NonNegative",
    "NuclearNormBlocks",
    "PDHGResult",
    "Scaled",
    "SeparableSum",
    "NoOp",
    "admm",
    "fista",
    "pdhg",
    "CGResult",
    "ImplicitAdjoint",
    "UnrolledAdjoint",
    "PowerMethodResult",
    "SVDResult",
    "conjugate_gradients",
    "to_lineax",
    "polynomial_coefficients",
    "polynomial_preconditioner",
    "power_method",
    "singular_value_decomposition",
]
