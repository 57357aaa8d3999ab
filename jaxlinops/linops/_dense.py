"""`Dense`: a tensor contraction (matrix multiplication over named dims)."""

from __future__ import annotations

import string

import jax
import jax.numpy as jnp

from .._arrays import as_array, as_inexact, promote_inexact
from .._core import NamedLinop, Tiling, dims_field, normal_renaming
from .._dims import ELLIPSIS, Dim, Dims, DimsLike, as_dims, fmt, is_wildcard, unique
from ..nameddim import AnyDim

_LETTERS = string.ascii_letters


class Dense(NamedLinop):
    r"""$y[\mathrm{oshape}] = \sum W[\mathrm{weightshape}]\, x[\mathrm{ishape}]$.

    The sum runs over the dims of `weightshape` that are in `ishape` but not `oshape`;
    dims in all three shapes are batch dims (one matrix per entry). A dim repeated in
    `weightshape` takes the diagonal of those axes, as in `einsum`: weightshape (M, M)
    with ishape and oshape (M) is $y_m = W_{mm} x_m$. Example: a matrix
    `W` of shape (M, N) is `Dense(W, "MN", "N", "M")`; coil maps `S` of shape
    (C, Nx, Ny) are `Dense(S, "CNxNy", "NxNy", "CNxNy")`.

    `Dense(W)` infers shapes as torchlinops does: the last weight axis is the input dim,
    the second-to-last the output dim, leading axes batch dims, all named by ordinal
    wildcards, torchlinops' `AnyDim(k)` (`NamedDimension`s named `()`, printed `()`,
    `(1)`, ...): a matrix is `Dense(W, ("()", "(1)"), ("(1)",), ("()",))`.

    The contraction runs in the common dtype of weight and input: an integer weight on
    floating-point data is fine, but integer or bool weight and data together raise a
    TypeError (sums of products overflow silently in integers). The normal's Gram weight
    of an integer weight is computed in floating point (at least float32).
    """

    weight: jax.Array
    weightshape: Dims = dims_field()
    ishape: Dims = dims_field()
    oshape: Dims = dims_field()
    broadcast_dims: Dims = dims_field()

    def __init__(
        self,
        weight,
        weightshape: DimsLike = None,
        ishape: DimsLike = None,
        oshape: DimsLike = None,
        broadcast_dims: DimsLike = None,
    ):
        """**Arguments:**

        - `weight`: the array $W$, one axis per dim of `weightshape`.
        - `weightshape`, `ishape`, `oshape`: dims of the weight, the input and the output;
          give all three or none (then they are inferred from `weight.ndim`).
        - `broadcast_dims`: weight dims that a split does not slice (torchlinops' meaning).
          Stored with size 1, such a dim broadcasts over input and output (it must then be
          in both `ishape` and `oshape`); stored with its full size, it is an ordinary
          dim of the weight (sliced by a split, as the result requires).
        """
        self.weight = as_array(weight, "`Dense(weight=...)`")
        given = [s is not None for s in (weightshape, ishape, oshape)]
        if any(given) and not all(given):
            raise ValueError(
                "`Dense` takes weightshape, ishape and oshape together, or none of them "
                f"(all must be None, to infer them); got weightshape={weightshape!r}, "
                f"ishape={ishape!r}, oshape={oshape!r}."
            )
        if any(given):
            weightshape, ishape, oshape = (as_dims(s) for s in (weightshape, ishape, oshape))
        else:
            weightshape, ishape, oshape = _inferred_shapes(self.weight.ndim)
        self.weightshape, self.ishape, self.oshape = weightshape, ishape, oshape
        self.broadcast_dims = as_dims(broadcast_dims)

    @classmethod
    def from_einstr(cls, weight, einstr: str, broadcast_dims: DimsLike = None) -> Dense:
        """`Dense.from_einstr(W, "MN,N->M")`: shapes given as `"weight,input->output"`."""
        try:
            lhs, oshape = einstr.split("->")
            weightshape, ishape = lhs.split(",")
        except ValueError:
            raise ValueError(
                f"`Dense.from_einstr` expects 'weightshape,ishape->oshape'; got {einstr!r}."
            ) from None
        return cls(weight, Dim(weightshape), Dim(ishape), Dim(oshape), broadcast_dims)

    def __check_init__(self):
        _check_shapes(self)

    @property
    def forward_einstr(self) -> str:
        """torchlinops' pattern of $A x$ for `einops.einsum(x, W, ...)`:
        `"ishape,weightshape->oshape"`, dims separated by spaces and the wildcards `()`
        and `(k)` spelled `any0` and `anyk` (einops takes no parentheses); for a matrix
        `Dense(W)`, `"any1,any0 any1->any0"`."""
        return _einstr(self.ishape, self.weightshape, self.oshape)

    @property
    def adj_einstr(self) -> str:
        r"""The pattern of $A^H y$ for `einops.einsum(y, conj(W), ...)`:
        `"oshape,weightshape->ishape"`, spelled as `forward_einstr`."""
        return _einstr(self.oshape, self.weightshape, self.ishape)

    def size(self, dim: str) -> int | None:
        if dim in self.weightshape and dim not in self._broadcasting():
            return self.weight.shape[self.weightshape.index(dim)]
        return None

    def _broadcasting(self) -> Dims:
        """The broadcast dims stored with size 1 (the others are ordinary weight dims)."""
        shape = dict(zip(self.weightshape, self.weight.shape))
        return tuple(d for d in self.broadcast_dims if shape.get(d) == 1)

    def tiling(self) -> Tiling:
        batch = tuple(d for d in self.ishape if d in self.oshape)
        return Tiling([(lambda o: o.weight, self.weightshape)], batch)

    def _weight(self) -> tuple[jax.Array, Dims]:
        """The weight with broadcast axes dropped and a repeated dim reduced to its
        diagonal ($W_{mm}$ for weightshape (M, M)), and its dims (each once)."""
        broadcasting = self._broadcasting()
        axes = tuple(i for i, d in enumerate(self.weightshape) if d in broadcasting)
        dims = tuple(d for d in self.weightshape if d not in broadcasting)
        w = jnp.squeeze(self.weight, axes)
        once = unique(dims)
        if once != dims:
            letters = _letters(dims)
            w = jnp.einsum(f"{letters(dims)}->{letters(once)}", w)
        return w, once

    def _contract(self, x: jax.Array, conj: bool, src: Dims, dst: Dims) -> jax.Array:
        w, wdims = self._weight()
        w = jnp.conj(w) if conj else w
        letters = _letters(src + wdims + dst)
        spec = f"{letters(src)},{letters(wdims)}->{letters(dst)}"
        x, w = promote_inexact("Dense", x, w)
        return jnp.einsum(spec, x, w, precision=jax.lax.Precision.HIGHEST)

    def apply(self, x: jax.Array) -> jax.Array:
        return self._contract(x, False, self.ishape, self.oshape)

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return self._contract(y, True, self.oshape, self.ishape)

    def adjoint(self) -> NamedLinop:
        return Dense(
            jnp.conj(self.weight),
            self.weightshape,
            self.oshape,
            self.ishape,
            self.broadcast_dims,
        )

    def _normal(self, inner: NamedLinop | None) -> NamedLinop | None:
        r"""Without `inner`: one Dense with the Gram weight $\sum_{out} \bar W W$."""
        if inner is not None:
            return None
        rn = normal_renaming(self)
        w, wdims = self._weight()
        w = as_inexact(w)
        contracted = [d for d in wdims if d in self.ishape and d not in self.oshape]
        batch = [d for d in wdims if d in self.ishape and d in self.oshape]
        left = tuple(rn[d] if d in contracted else d for d in wdims)
        gram_dims = tuple(batch) + tuple(rn[d] for d in contracted) + tuple(contracted)
        letters = _letters(left + wdims + gram_dims)
        spec = f"{letters(left)},{letters(wdims)}->{letters(gram_dims)}"
        gram = jnp.einsum(spec, jnp.conj(w), w, precision=jax.lax.Precision.HIGHEST)
        oshape = tuple(rn[d] if d in contracted else d for d in self.ishape)
        return Dense(gram, gram_dims, self.ishape, oshape)


def _inferred_shapes(ndim: int) -> tuple[Dims, Dims, Dims]:
    if ndim < 2:
        raise ValueError(
            f"`Dense(weight)` infers shapes only for a weight at least 2D; got {ndim}D. "
            f"Pass weightshape, ishape and oshape."
        )
    wdims = tuple(AnyDim(k) for k in range(ndim))
    batch = wdims[:-2]
    return wdims, batch + wdims[-1:], batch + wdims[-2:-1]


def _einstr(x: Dims, w: Dims, y: Dims) -> str:
    """`"x,w->y"` in einops' spelling: dims separated by spaces, `(k)` as `anyk`."""

    def spell(shape: Dims) -> str:
        return " ".join(
            f"any{d[1:-1] or 0}" if d != ELLIPSIS and is_wildcard(d) else d for d in shape
        )

    return f"{spell(x)},{spell(w)}->{spell(y)}"


def _letters(dims: Dims):
    """A function mapping a dims tuple to an einsum subscript string."""
    table: dict[str, str] = {}
    for d in dims:
        if d != ELLIPSIS and d not in table:
            if len(table) == len(_LETTERS):
                raise ValueError(f"`Dense`: too many distinct dims ({len(_LETTERS)} max).")
            table[d] = _LETTERS[len(table)]
    return lambda shape: "".join("..." if d == ELLIPSIS else table[d] for d in shape)


def _check_shapes(op: Dense) -> None:
    ws, ish, osh = op.weightshape, op.ishape, op.oshape
    where = f"`Dense({fmt(ws)}: {fmt(ish)} -> {fmt(osh)})`"
    if op.weight.ndim != len(ws):
        raise ValueError(
            f"{where}: weight has {op.weight.ndim} axes (shape {tuple(op.weight.shape)}) "
            f"but weightshape names {len(ws)} dims."
        )
    if ELLIPSIS in ws or (ELLIPSIS in ish) != (ELLIPSIS in osh):
        raise ValueError(f"{where}: '...' may appear only in both ishape and oshape.")
    for name, shape in (("ishape", ish), ("oshape", osh)):
        if len(set(shape)) != len(shape):
            raise ValueError(f"{where}: {name} repeats a dim.")
    for d in ws:
        sizes = {n for e, n in zip(ws, op.weight.shape) if e == d}
        if len(sizes) > 1:
            raise ValueError(
                f"{where}: dim {d!r} repeats in weightshape with different sizes "
                f"{sorted(sizes)} (weight shape {tuple(op.weight.shape)}); a repeated dim "
                f"takes the diagonal of its axes, which must have equal sizes."
            )
    rules = (
        (ws, set(ish) | set(osh), "weight dim {} is in neither ishape nor oshape"),
        (ish, set(ws) | set(osh), "input dim {} is in neither weightshape nor oshape"),
        (osh, set(ws) | set(ish), "output dim {} is in neither weightshape nor ishape"),
    )
    for shape, allowed, msg in rules:
        for d in shape:
            if d != ELLIPSIS and d not in allowed:
                raise ValueError(f"{where}: {msg.format(repr(d))}.")
    for d in op.broadcast_dims:
        if d not in ws:
            raise ValueError(f"{where}: broadcast_dim {d!r} is not in weightshape.")
        if op.weight.shape[ws.index(d)] == 1 and (d not in ish or d not in osh):
            raise ValueError(
                f"{where}: broadcast dim {d!r} (weight size 1) must be in weightshape, "
                f"ishape and oshape."
            )
