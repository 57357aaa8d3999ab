"""`partition_slices`: a slice cut along the blocks of a partition (torchlinops'
`torchlinops.linops.concat.partition_slices`)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from .._arrays import as_size


def partition_slices(partition: Sequence[int], slc: slice) -> list[tuple[int, slice]]:
    """The pieces of `slc` in each interval of `partition`, as `(interval, local slice)`.

    `partition = [0, b_1, ..., b_n]` cuts `range(b_n)` into the intervals
    $[b_{i}, b_{i+1})$ (the blocks of a Concat along its dim); each interval that `slc`
    selects entries from comes with the slice selecting them relative to the interval's
    start. A positive step is kept: entries stay those of `slc`.

    !!! Example

        `partition_slices([0, 5, 10, 15, 20], slice(3, 11))` is
        `[(0, slice(3, 5)), (1, slice(0, 5)), (2, slice(0, 1))]`.
    """
    bounds = [as_size(b, "`partition_slices(partition=...)`", None) for b in partition]
    if not bounds or bounds[0] != 0:
        raise ValueError(
            f"`partition_slices`: the first boundary in the partition must be 0; got "
            f"partition={list(partition)!r}."
        )
    if any(a > b for a, b in itertools.pairwise(bounds)):
        raise ValueError(
            f"`partition_slices`: partition boundaries must be non-decreasing; got "
            f"partition={list(partition)!r}."
        )
    if slc.stop is not None and slc.stop > bounds[-1]:
        raise ValueError(
            f"`partition_slices`: slice {slc} is out of range for a partition of length "
            f"{bounds[-1]}."
        )
    if slc.step is not None and slc.step < 1:
        raise ValueError(
            f"`partition_slices`: slice {slc} has step {slc.step}; only a positive step "
            f"keeps the intervals in order."
        )
    start, stop, step = slc.indices(bounds[-1])
    pieces = []
    for i, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        first = start + max(0, -(-(lo - start) // step)) * step  # first entry >= lo
        end = min(stop, hi)
        if first < end:
            local_step = None if step == 1 else step
            pieces.append((i, slice(first - lo, end - lo, local_step)))
    return pieces
