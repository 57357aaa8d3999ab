"""einops-style axis patterns (`"a (b c) ..."`) and the rearrangement between two of them.

A pattern lists the axes of an array, separated by spaces. A parenthesised group is one
array axis made of several elementary axes, merged in row-major order; `"()"` is an axis
of size 1 and `"..."` stands for any number of whole axes. Rearranging is a reshape into
the elementary axes, a transpose, and a reshape into the groups of the other pattern.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Literal

import jax
import jax.numpy as jnp

from ._dims import ELLIPSIS, Dims, fmt

Group = tuple[str, ...]
Pattern = tuple[Group | Literal["..."], ...]  # a Group per array axis, or "..." for any number

_TOKEN = re.compile(r"\.\.\.|[()]|[^\s()]+")


def parse_pattern(pattern: str, what: str) -> Pattern:
    """Parse `"a (b c) ..."` into `(("a",), ("b", "c"), "...")`.

    `what` names the argument in error messages, e.g. "`Rearrange(ipattern=...)`".
    """
    if not isinstance(pattern, str):
        raise TypeError(f"{what} expects a pattern string; got {type(pattern).__name__}.")
    groups: list[Group | Literal["..."]] = []
    current: list[str] | None = None
    for tok in _TOKEN.findall(pattern):
        if tok == "(":
            if current is not None:
                raise ValueError(f"{what}: nested parentheses in {pattern!r}.")
            current = []
        elif tok == ")":
            if current is None:
                raise ValueError(f"{what}: unmatched ')' in {pattern!r}.")
            groups.append(tuple(current))
            current = None
        elif tok == ELLIPSIS:
            if current is not None:
                raise ValueError(f"{what}: '...' cannot be inside parentheses in {pattern!r}.")
            groups.append(ELLIPSIS)
        elif not tok.isidentifier():
            raise ValueError(
                f"{what}: axis names must be identifiers (letters, digits, '_'); got {tok!r} "
                f"in {pattern!r}."
            )
        elif current is None:
            groups.append((tok,))
        else:
            current.append(tok)
    if current is not None:
        raise ValueError(f"{what}: unclosed '(' in {pattern!r}.")
    _check_unique(tuple(groups), pattern, what)
    return tuple(groups)


def _check_unique(groups: Pattern, pattern: str, what: str) -> None:
    names = axis_names(groups)
    repeated = sorted({a for a in names if names.count(a) > 1})
    if repeated:
        raise ValueError(f"{what}: axes {repeated} appear more than once in {pattern!r}.")
    if groups.count(ELLIPSIS) > 1:
        raise ValueError(f"{what}: '...' may appear at most once in {pattern!r}.")


def axis_names(groups: Pattern) -> list[str]:
    """The elementary axis names of a pattern, in order, without `"..."`."""
    return [a for g in groups if g != ELLIPSIS for a in g]


def check_patterns(
    ipattern: str, opattern: str, ishape: Dims, oshape: Dims, lengths: Sequence[tuple[str, int]]
) -> None:
    """Validate a `Rearrange`: same axes on both sides, known `lengths`, one dim per axis,
    and a dim in both shapes standing for the same axes."""
    src = parse_pattern(ipattern, "`Rearrange(ipattern=...)`")
    dst = parse_pattern(opattern, "`Rearrange(opattern=...)`")
    names = set(axis_names(src))
    if names != set(axis_names(dst)) or (ELLIPSIS in src) != (ELLIPSIS in dst):
        raise ValueError(
            f"`Rearrange`: both patterns must have the same axes; got {ipattern!r} -> {opattern!r}."
        )
    unknown = sorted({a for a, _ in lengths} - names)
    if unknown:
        raise ValueError(
            f"`Rearrange`: `axes_lengths` names axes {unknown} that are not in the pattern "
            f"{ipattern!r}."
        )
    sides = ((src, ishape, "ipattern", "ishape"), (dst, oshape, "opattern", "oshape"))
    (ibatch, imap), (obatch, omap) = (_aligned(*side) for side in sides)
    if ibatch != obatch:
        raise ValueError(
            f"`Rearrange`: the dims standing for '...' must be the same in ishape and oshape; "
            f"got {fmt(ibatch)} and {fmt(obatch)}."
        )
    for d, group in imap.items():
        if d != "()" and d in omap and omap[d] != group:
            raise ValueError(
                f"`Rearrange`: dim {d!r} is in ishape and oshape but stands for different "
                f"pattern axes in {ipattern!r} and {opattern!r}; rename it."
            )


def dim_groups(groups: Pattern, shape: Dims) -> tuple[Dims, dict[str, Group]] | None:
    """Align a pattern with the dims of `shape`: the dims that `"..."` stands for, and the
    group of every other dim; None if they do not align.

    `"..."` in the pattern stands for any number of dims of `shape` (after a Chain has
    resolved the wildcard), which must include the shape's own `"..."`, if any.
    """
    axes = [g for g in groups if g != ELLIPSIS]  # the groups of the dims besides "..."
    if ELLIPSIS not in groups:
        ok = len(groups) == len(shape) and ELLIPSIS not in shape
        return ((), dict(zip(shape, axes))) if ok else None
    p = groups.index(ELLIPSIS)
    n_batch = len(shape) - len(groups) + 1
    rest = shape[:p] + shape[p + n_batch :]
    if n_batch < 0 or ELLIPSIS in rest:
        return None
    return shape[p : p + n_batch], dict(zip(rest, axes))


def _aligned(groups: Pattern, shape: Dims, pname: str, sname: str) -> tuple[Dims, dict[str, Group]]:
    found = dim_groups(groups, shape)
    if found is None:
        shown = " ".join(ELLIPSIS if g == ELLIPSIS else "(" + " ".join(g) + ")" for g in groups)
        raise ValueError(
            f"`Rearrange`: {sname} {fmt(shape)} must have one dim per axis of {pname} "
            f"{shown!r}, with '...' at the same positions."
        )
    return found


def group_size(group: Group, lengths: Sequence[tuple[str, int]]) -> int | None:
    """The size of an array axis made of `group`, if `lengths` fix it."""
    known = dict(lengths)
    if all(a in known for a in group):
        return math.prod(known[a] for a in group)
    return None


def rearrange(
    x: jax.Array, src: Pattern, dst: Pattern, lengths: Mapping[str, int], name: str
) -> jax.Array:
    """Rearrange `x`, laid out by `src`, into the layout `dst` (same elementary axes)."""
    sizes, batch = _elementary_sizes(tuple(x.shape), src, lengths, name)
    src_axes = _expanded(src, batch)
    x = x.reshape(tuple(sizes[a] if isinstance(a, str) else batch[a] for a in src_axes))
    position = {a: i for i, a in enumerate(src_axes)}
    x = jnp.transpose(x, tuple(position[a] for a in _expanded(dst, batch)))
    out = []
    for g in dst:
        out.extend(batch if g == ELLIPSIS else (math.prod(sizes[a] for a in g),))
    return x.reshape(tuple(out))


def _expanded(groups: Pattern, batch: tuple[int, ...]) -> list[str | int]:
    """Elementary axes in order; the axes of `"..."` are numbered 0, 1, ..."""
    out: list[str | int] = []
    for g in groups:
        out.extend(range(len(batch)) if g == ELLIPSIS else g)
    return out


def _elementary_sizes(
    shape: tuple[int, ...], src: Pattern, lengths: Mapping[str, int], name: str
) -> tuple[dict[str, int], tuple[int, ...]]:
    """The size of every elementary axis of `src`, and the sizes that `"..."` absorbs."""
    sizes = dict(lengths)
    n_batch = len(shape) - (len(src) - (ELLIPSIS in src))
    batch: tuple[int, ...] = ()
    i = 0
    for g in src:
        if g == ELLIPSIS:
            batch, i = shape[i : i + n_batch], i + n_batch
            continue
        _split(shape[i], g, sizes, name)
        i += 1
    return sizes, batch


def _split(n: int, group: Group, sizes: dict[str, int], name: str) -> None:
    """Record the sizes of the axes of `group`, an array axis of size `n`."""
    unknown = [a for a in group if a not in sizes]
    known = math.prod(sizes[a] for a in group if a in sizes)
    shown = "(" + " ".join(group) + ")"
    if len(unknown) > 1:
        raise ValueError(
            f"`{name}`: cannot split an axis of size {n} into {shown}: pass the lengths of "
            f"all but one of the axes {unknown} in `axes_lengths`."
        )
    if unknown and n % known == 0:
        sizes[unknown[0]] = n // known
    elif unknown or known != n:
        raise ValueError(
            f"`{name}`: an axis of size {n} cannot be split into {shown} with "
            f"`axes_lengths` {dict((a, sizes[a]) for a in group if a in sizes)}."
        )
