"""Named dimensions: parsing, wildcards, matching and renaming.

A shape is a tuple of dim names, e.g. `("C", "Nx", "Ny")`. Three wildcard tokens exist:

- `"..."` matches zero or more leading batch dims (at most one per shape);
- `"()"` matches exactly one dim;
- `"(k)"` (k a positive integer) matches exactly one dim and keeps its identity, so the
  same `"(1)"` in two shapes of one operator denotes the same dim.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final

Dims = tuple[str, ...]
DimsLike = str | Sequence[str] | None
# a wildcard's binding: `"..."` to a tuple of dims, a single-dim wildcard to one dim
Binding = dict[str, str | Dims]

ELLIPSIS: Final = "..."
ANY = "()"

_ORDINAL = re.compile(r"^\((\d*)\)$")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_SYNTAX = (
    "a dim name is ASCII letters, digits and underscores starting with a letter (e.g. 'Nx', "
    "'coil_2'); the wildcards are '...', '()' and '(k)' for an integer k"
)


def Dim(s: str | None = None) -> Dims:
    """Parse a dim string into a tuple of names.

    Two forms are accepted:

    - the torchlinops form, where each capital letter starts a dim and lowercase letters
      and digits extend it: `Dim("CNxNy") == ("C", "Nx", "Ny")`,
      `Dim("A1B2Kx1Ky2") == ("A1", "B2", "Kx1", "Ky2")`;
    - the whitespace form, taken verbatim: `Dim("C Nx Ny") == ("C", "Nx", "Ny")`,
      `Dim("... coil x") == ("...", "coil", "x")`.

    A dim name is ASCII letters, digits and underscores starting with a letter; the
    wildcards `"..."`, `"()"` and `"(k)"` are tokens of their own:
    `Dim("...CNx") == ("...", "C", "Nx")`. Anything else (`Dim("C, Nx")`) raises a
    ValueError that states this syntax. `Dim()`, `Dim("")` and `Dim(None)` give `()`
    (as in torchlinops).
    """
    if s is None:
        return ()
    if not isinstance(s, str):
        raise TypeError(f"`Dim(s)` expects a string, got {type(s).__name__} {s!r}.")
    s = s.strip()
    if not s:
        return ()
    if any(c.isspace() for c in s):
        return _validated(tuple(s.split()), s)
    return _validated(_split_capitals(s), s)


def _split_capitals(s: str) -> Dims:
    tokens: list[str] = []
    i = 0
    while i < len(s):
        c = s[i]
        if s.startswith(ELLIPSIS, i):
            tokens.append(ELLIPSIS)
            i += len(ELLIPSIS)
        elif c == "(":
            end = s.find(")", i)
            if end < 0:
                raise ValueError(f"`Dim({s!r})`: unclosed '(' at position {i}.")
            tokens.append(s[i : end + 1])
            i = end + 1
        elif c.isupper():
            tokens.append(c)
            i += 1
        elif (c.islower() or c.isdigit() or c == "_") and tokens and _extendable(tokens[-1]):
            tokens[-1] += c
            i += 1
        else:
            raise ValueError(
                f"`Dim({s!r})`: each dim must start with a capital letter (or be '...', '()' "
                f"or '(k)'); got {c!r} at position {i}. Use the whitespace form, e.g. "
                f"Dim('c nx ny'), for other names."
            )
    return tuple(tokens)


def _extendable(token: str) -> bool:
    return token != ELLIPSIS and not token.startswith("(")


def _validated(dims: Dims, source: object) -> Dims:
    """`dims` if every entry is a name or a wildcard and `"..."` appears at most once."""
    for d in dims:
        if d != ELLIPSIS and d.startswith("(") and not _ORDINAL.match(d):
            raise ValueError(f"Invalid wildcard dim {d!r} in {source!r}: use '()' or '(k)'.")
        if d != ELLIPSIS and not _ORDINAL.match(d) and not _NAME.match(d):
            raise ValueError(f"Invalid dim {d!r} in {source!r}: {_SYNTAX}.")
    if dims.count(ELLIPSIS) > 1:
        raise ValueError(f"A shape may contain '...' at most once; got {dims} from {source!r}.")
    return dims


def as_dims(shape: DimsLike, default: DimsLike = None) -> Dims:
    """Convert a dims argument (string, sequence of names, or None) to a tuple of names.

    A string is parsed by `Dim`; each entry of a sequence must be one name or wildcard
    (the syntax of `Dim`), or a ValueError says what is allowed.
    """
    if shape is None:
        if default is None:
            return ()
        shape = default
    if isinstance(shape, str):
        return Dim(shape)
    if not isinstance(shape, Iterable):
        raise TypeError(
            f"Expected dims as a string or a sequence of names, got {type(shape).__name__}."
        )
    dims = tuple(shape)
    for d in dims:
        if not isinstance(d, str) or not d:
            raise TypeError(f"Each dim must be a non-empty string; got {d!r} in {shape!r}.")
    # plain str: a `jaxlinops.nameddim.NamedDimension` (a str subclass) becomes its name
    return _validated(tuple(map(str, dims)), shape)


def is_wildcard(dim: str) -> bool:
    """True for `"..."`, `"()"` and `"(k)"`."""
    return dim == ELLIPSIS or bool(_ORDINAL.match(dim))


def has_wildcards(shape: Dims) -> bool:
    return any(is_wildcard(d) for d in shape)


def next_unused(dim: str, avoid: Iterable[str] = ()) -> str:
    """The next name after `dim` that is not in `avoid`: `N -> N1 -> N2`, `(1) -> (2)`.

    Trailing digits are incremented (`Kx1 -> Kx2`), so renaming twice never produces
    `Kx11`. `"..."` is returned unchanged.
    """
    if dim == ELLIPSIS:
        return dim
    avoid = set(avoid) | {dim}
    ordinal = _ORDINAL.match(dim)
    if ordinal:
        k = int(ordinal.group(1) or 0) + 1
        while f"({k})" in avoid:
            k += 1
        return f"({k})"
    base = dim.rstrip("0123456789")
    k = int(dim[len(base) :] or 0) + 1
    while f"{base}{k}" in avoid:
        k += 1
    return f"{base}{k}"


def shapes_match(a: Dims, b: Dims) -> bool:
    """Whether two shapes can denote the same dims, wildcards on either side allowed."""
    return _match(tuple(a), tuple(b)) is not None


def _match(a: Dims, b: Dims) -> Binding | None:
    """Match shape `a` (whose wildcards get bound) against `b`; return the binding or None.

    The binding maps `"..."` to a tuple of dims of `b` and each single-dim wildcard of `a`
    to one dim of `b`. Wildcards of `b` match anything of `a` without binding.
    """
    memo: dict[tuple[int, int], Binding | None] = {}

    def go(i: int, j: int) -> Binding | None:
        if (i, j) in memo:
            return memo[i, j]
        result = None
        if i == len(a) and j == len(b):
            result = {}
        elif i < len(a) and a[i] == ELLIPSIS:
            result = _bind_ellipsis(go, a, b, i, j)
        elif j < len(b) and b[j] == ELLIPSIS:
            for k in range(i, len(a) + 1):
                if ELLIPSIS in a[i:k]:
                    break
                rest = go(k, j + 1)
                if rest is not None:
                    result = rest
                    break
        elif i < len(a) and j < len(b) and _one_matches(a[i], b[j]):
            rest = go(i + 1, j + 1)
            if rest is not None and (not is_wildcard(a[i]) or _bind(rest, a[i], b[j])):
                result = rest
        memo[i, j] = result
        return result

    found = go(0, 0)
    return None if found is None else dict(found)


def _bind_ellipsis(
    go: Callable[[int, int], Binding | None], a: Dims, b: Dims, i: int, j: int
) -> Binding | None:
    """Bind `a[i] == "..."` to a span `b[j:k]`.

    A wildcard stays a wildcard: first try spans that end with a `"..."` of `b`, which
    may then also absorb the dims after `a[i]` (fewest first), so matching `("...", "N")`
    against `("...",)` binds `"..." -> ("...",)` instead of dropping it; then any span,
    longest first.
    """
    for absorb in (True, False):
        for k in range(len(b), j - 1, -1):
            span = b[j:k]
            if absorb and not span[-1:] == (ELLIPSIS,):
                continue
            for m in range(i + 1, len(a) + 1) if absorb else (i + 1,):
                rest = go(m, k)
                if rest is not None and _bind(rest, ELLIPSIS, span):
                    return rest
    return None


def _one_matches(x: str, y: str) -> bool:
    return x == y or is_wildcard(x) or is_wildcard(y)


def _bind(binding: Binding, key: str, value: str | Dims) -> bool:
    if key in binding and binding[key] != value:
        return False
    binding[key] = value
    return True


def resolve(pattern: Dims, target: Dims) -> Binding | None:
    """The substitution that turns the wildcards of `pattern` into dims of `target`.

    Returns None when the shapes do not match, `{}` when nothing needs substituting.
    Wildcards bound to themselves are dropped. Example:
    `resolve(("...", "Kx"), ("C", "Kx")) == {"...": ("C",)}`.
    """
    binding = _match(tuple(pattern), tuple(target))
    if binding is None:
        return None
    return {
        k: v
        for k, v in binding.items()
        if v != k and v != (k,) and not (isinstance(v, str) and is_wildcard(v))
    }


def substitute(shape: Dims, mapping: Mapping[str, str | Dims]) -> Dims:
    """Apply a renaming / wildcard substitution to a shape.

    `mapping` maps a dim to a new name, or `"..."` to a tuple of dims spliced in its place.
    """
    out: list[str] = []
    for d in shape:
        new = mapping.get(d, d)
        if isinstance(new, tuple):
            out.extend(new)
        else:
            out.append(new)
    return tuple(out)


def axis_of(shape: Dims, dim: str) -> int:
    """The array axis of `dim` in an array laid out by `shape`.

    Negative when `"..."` precedes `dim` (then only the trailing position is fixed).
    """
    i = shape.index(dim)
    if ELLIPSIS in shape[:i]:
        return i - len(shape)
    return i


def size_of(dim: str, *layouts: tuple[Dims, Sequence[int]]) -> int | None:
    """The size of `dim` from the first `(dims, sizes)` layout that names it, else None.

    `size_of("Nx", (("K",), locs_shape), (("Nx", "Ny"), grid_size)) == grid_size[0]`.
    """
    for dims, sizes in layouts:
        if dim in dims:
            return sizes[dims.index(dim)]
    return None


def is_suffix(a: Dims, b: Dims) -> bool:
    """Whether the named dims of `a` (a leading `"..."` dropped) end the named dims of `b`:
    `is_suffix(("K",), ("C", "K"))`."""
    core_a = tuple(d for d in a if d != ELLIPSIS)
    core_b = tuple(d for d in b if d != ELLIPSIS)
    return a[1:] == core_a if ELLIPSIS in a else bool(core_a) and core_b[-len(core_a) :] == core_a


def unique(dims: Iterable[str]) -> Dims:
    """Dims in first-seen order without repeats."""
    return tuple(dict.fromkeys(dims))


class ShapeAssertionError(ValueError, AssertionError):
    """Dims that do not fit together (operators summed with different shapes, `SumReduce`
    dims that are not nested): a ValueError, as every shape error here, and an
    AssertionError, as torchlinops' shape assertions raise."""


def fmt(shape: Dims) -> str:
    """`("C", "Nx")` -> `"(C, Nx)"`, as printed in reprs and errors."""
    return "(" + ", ".join(shape) + ")"
