"""torchlinops' shape-matching helpers (`isequal`, `iscompatible`, `align`, ...).

jaxlinops operators match shapes with `jaxlinops._dims` (one `"..."` per shape, wildcards
bound by name); these helpers keep torchlinops' own rules for code that calls them: any
number of `"..."` per shape, each `"()"` matching one dim independently, and matches
reported as index assignments.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from .._dims import ELLIPSIS
from ._nameddim import NamedDimension as ND, is_any

__all__ = [
    "align",
    "coalesce",
    "iscompatible",
    "isequal",
    "max_shape",
    "resolve_wildcards",
]

Assignments = dict[int, list[int]]


def isequal(
    shape1: Sequence,
    shape2: Sequence,
    shape1_consume_all: bool = False,
    shape2_consume_all: bool = False,
) -> tuple[bool, Assignments | None]:
    """Whether `shape1` and `shape2` can denote the same dims, and how they match.

    A `"..."` on either side matches zero or more dims of the other, `"()"`/`"(k)"`
    one dim, a name itself. Returns `(True, {i: [j, ...]})` mapping indices of `shape1`
    to those of `shape2` they match, or `(False, None)`. The mapping is read back from
    the end of both shapes; it stops when either shape is exhausted, unless that
    shape's `*_consume_all` flag asks to keep going (then its `"..."` also takes the
    remaining dims of the other). `isequal(("A", "B"), ("A", "...", "B"))[0]` is True.
    Results, mappings included, are torchlinops 0.8.3's, with its one quirk: a shape
    that starts with `"..."` matches an empty shape whatever follows, so
    `isequal((), ("...", "A"))[0]` is True.
    """
    n1, n2 = len(shape1), len(shape2)
    # step[i][j]: how the prefixes shape1[:i], shape2[:j] were matched (None: they do not)
    step: list[list[tuple[int, int] | None]] = [[None] * (n2 + 1) for _ in range(n1 + 1)]
    step[0][0] = (0, 0)
    for i in range(1, n1 + 1):  # torchlinops' base case (see the docstring)
        step[i][0] = (-1, 0) if shape1[0] == ELLIPSIS else None
    for j in range(1, n2 + 1):
        step[0][j] = (0, -1) if shape2[0] == ELLIPSIS else None
    for i in range(1, n1 + 1):
        for j in range(1, n2 + 1):
            a, b = shape1[i - 1], shape2[j - 1]
            if step[i - 1][j - 1]:
                same = ELLIPSIS in (a, b) or a == b or is_any(a) or is_any(b)
                step[i][j] = (-1, -1) if same else None
            elif step[i - 1][j]:
                step[i][j] = (-1, 0) if b == ELLIPSIS else None
            elif step[i][j - 1]:
                step[i][j] = (0, -1) if a == ELLIPSIS else None
    if not step[n1][n2]:
        return False, None
    assignments: Assignments = defaultdict(list)
    i, j = n1, n2
    while (i or shape1_consume_all) and (j or shape2_consume_all) and (i or j):
        assignments[max(0, i - 1)].insert(0, max(0, j - 1))
        di, dj = step[i][j]  # type: ignore[misc]  # a matched prefix has a step
        i, j = i + di, j + dj
    return True, assignments


def iscompatible(shape1: Sequence, shape2: Sequence) -> tuple[bool, Assignments | None]:
    """Whether the shapes have compatible lengths (names ignored, `"..."` kept), with
    [`isequal`][]'s assignment, `shape1` consumed whole:
    `iscompatible(("B", "..."), ("A", "..."))[0]` is True."""
    if isinstance(shape1, str) or isinstance(shape2, str):
        warnings.warn(
            f"`iscompatible`: a string shape is read as one dim per character; got "
            f"{shape1!r}, {shape2!r} (use `Dim(...)` to parse a string into dims).",
            stacklevel=2,
        )
    return isequal(_lengths_only(shape1), _lengths_only(shape2), shape1_consume_all=True)


def _lengths_only(shape: Sequence) -> list[str]:
    return [ELLIPSIS if d == ELLIPSIS else "()" for d in shape]


def align(base_shape: Sequence, new_shape: Sequence) -> tuple:
    """`base_shape` with its dims replaced by those of `new_shape` they line up with
    ([`iscompatible`][]): a name takes the new name (a wildcard keeps the old one); a
    `"..."` of `base_shape` stays and takes the dims matched to it.
    `align(("...", "C", "Nx", "Ny"), ("...", "Nx1", "Ny1")) == ("...", "C", "Nx1", "Ny1")`.
    """
    compatible, assignments = iscompatible(base_shape, new_shape)
    if not compatible or assignments is None:
        raise ValueError(
            f"`align`: shape {tuple(base_shape)} cannot align with {tuple(new_shape)}."
        )
    aligned: list = []
    for i, old in enumerate(base_shape):
        matched = [new_shape[j] for j in assignments[i]]
        if old == ELLIPSIS:
            aligned += [old, *matched]
        elif len(matched) != 1:
            raise ValueError(
                f"`align`: dim {old!r} of {tuple(base_shape)} lines up with {matched} of "
                f"{tuple(new_shape)}; one dim expected."
            )
        else:
            aligned.append(old if matched[0] == ELLIPSIS or is_any(matched[0]) else matched[0])
    return tuple(coalesce(aligned, lambda d: d == ELLIPSIS))


def resolve_wildcards(shape: Sequence, target_shape: Sequence) -> tuple | Sequence:
    """`shape` with each `"..."` and `"()"` replaced by the dims of `target_shape` that
    [`isequal`][] matches to it; `shape` unchanged when it has no wildcard or does not
    match. `resolve_wildcards(("C", "..."), ("C", "Kx", "Ky")) == ("C", "Kx", "Ky")`."""
    if not any(d == ELLIPSIS or is_any(d) for d in shape):
        return shape
    match, assignments = isequal(shape, target_shape)
    if not match or assignments is None:
        return shape
    resolved: list = []
    for i, d in enumerate(shape):
        if d == ELLIPSIS or is_any(d):
            resolved += [target_shape[j] for j in assignments.get(i, [])]
        else:
            resolved.append(d)
    return tuple(resolved)


def max_shape(shapes: Sequence[Sequence]) -> tuple[ND, ...]:
    """The shape that covers all of `shapes` (as `NamedDimension`s): position by
    position, a wildcard yields to anything, and of two dims with the same letter the
    higher index wins. `max_shape([("N", "Q"), ("N", "Q1")]) == ("N", "Q1")`."""
    if not shapes:
        raise ValueError("`max_shape`: no shapes given.")
    normalized = [tuple(ND.infer(d) for d in shape) for shape in shapes]
    best = normalized[0]
    for shape in normalized[1:]:
        compatible, assignments = iscompatible(best, shape)
        if not compatible or assignments is None:
            raise ValueError(f"`max_shape`: shapes {best} and {shape} are incompatible.")
        merged: list[ND] = []
        for i, old in enumerate(best):
            new = [shape[j] for j in sorted(assignments[i])]
            if old == ELLIPSIS or is_any(old):
                merged += new
            elif any(d == ELLIPSIS or is_any(d) for d in new):
                merged.append(old)
            elif len(new) != 1 or new[0].name != old.name:
                raise ValueError(
                    f"`max_shape`: dim {old} of {best} lines up with {new} of {shape}; one dim "
                    "with the same letter expected."
                )
            else:
                merged.append(old if old.i >= new[0].i else new[0])
        best = tuple(merged)
    return best


def coalesce(lst: Sequence, cond: Callable[[Any], bool]) -> list:
    """`lst` with each run of consecutive entries satisfying `cond` cut to its first:
    `coalesce(["...", "...", "A"], lambda d: d == "...") == ["...", "A"]`."""
    out: list = []
    for x in lst:
        if not (out and cond(x) and cond(out[-1])):
            out.append(x)
    return out
