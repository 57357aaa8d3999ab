"""`to_lineax`: a NamedLinop as a lineax operator (lineax is an optional extra)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import numpy as np

from .._core import NamedLinop

if TYPE_CHECKING:
    import lineax as lx


def to_lineax(
    A: NamedLinop,
    input_structure: jax.Array | np.ndarray | jax.ShapeDtypeStruct,
    tags: object = (),
) -> lx.FunctionLinearOperator:
    """`A` as a `lineax.FunctionLinearOperator`, so that lineax's solvers (`lx.CG`,
    `lx.GMRES`, `lx.LSMR`, ...) run on it: `lx.linear_solve(to_lineax(A.N, x, tags=
    lx.positive_semidefinite_tag), y, lx.CG(rtol, atol))`.

    - `input_structure`: an example input (array) or a `jax.ShapeDtypeStruct`, laid out by
      `A.ishape`; lineax needs the shape and dtype up front.
    - `tags`: lineax tags (e.g. `lx.positive_semidefinite_tag` for CG); they are promises
      that lineax does not check.

    lineax transposes the operator with `jax.linear_transpose`, which jaxlinops operators
    support. Install with `pip install jaxlinops[lineax]`.
    """
    try:
        import lineax as lx
    except ImportError as error:
        raise ImportError(
            "`jl.alg.to_lineax` needs lineax: `pip install lineax` (or jaxlinops[lineax])."
        ) from error
    if not isinstance(A, NamedLinop):
        raise TypeError(f"`to_lineax` expects a NamedLinop; got {type(A).__name__}.")
    if not isinstance(input_structure, jax.ShapeDtypeStruct):
        if not hasattr(input_structure, "shape") or not hasattr(input_structure, "dtype"):
            raise TypeError(
                f"`to_lineax`: `input_structure` must be an array or a jax.ShapeDtypeStruct "
                f"laid out by A.ishape; got {type(input_structure).__name__}."
            )
        input_structure = jax.ShapeDtypeStruct(input_structure.shape, input_structure.dtype)
    # A's own shape checks, now rather than inside lineax's first solve
    jax.eval_shape(A, input_structure)
    # A is a pytree already (its arrays are leaves): no closure conversion needed, and the
    # result passes through `jax.jit`
    return lx.FunctionLinearOperator(A, input_structure, tags, closure_convert=False)
