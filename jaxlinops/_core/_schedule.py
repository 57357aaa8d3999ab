"""How a container runs its children: torchlinops' map-reduce `parallel_execute`, and the
options (`threaded`, `num_workers`, `accumulate`) that containers carry for it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._arrays import as_size


def parallel_execute(
    linops: Sequence[Callable],
    inputs: Sequence,
    context,
    reduce_fn: Callable,
    threaded: bool = False,
    num_workers: int | None = None,
    accumulate: bool = True,
    accumulate_fn: Callable | None = None,
) -> Any:
    r"""The map-reduce $\mathrm{reduce}([A_1 x_1, \dots, A_n x_n])$ over operators (or any
    callables of one array) `linops` and their `inputs`.

    With `accumulate`, the children run in batches of `num_workers` (default 1): each
    batch is reduced with `reduce_fn` and merged into the running result with
    `accumulate_fn(result, batch)` (default `reduce_fn([result, batch])`), so that outside
    `jit` at most one batch of outputs is alive at a time. A linear, order-preserving
    reduce (a sum, a concatenation) gives the same result either way, up to the order of
    floating-point sums.

    **Arguments:**

    - `linops`, `inputs`: the children and their inputs, of the same nonzero length.
    - `context`: torchlinops' CUDA synchronisation context; JAX orders device work
      itself, so it is accepted and not passed on (children are called as `A(x)`).
    - `reduce_fn`: combines a list of outputs into one (must be linear).
    - `threaded`: torchlinops' thread pool. Here the children always run one after
      another in the calling thread: JAX dispatches work asynchronously, inside `jit` XLA
      schedules independent children itself, and a JAX trace cannot be shared with other
      threads. Accepted so that code written for torchlinops runs unchanged.
    - `num_workers`: the batch size of `accumulate` (torchlinops' thread count).
    - `accumulate`, `accumulate_fn`: as above.
    """
    if len(linops) != len(inputs):
        raise ValueError(
            f"`parallel_execute` needs one input per operator: linops and inputs must have "
            f"the same length; got {len(linops)} operators and {len(inputs)} inputs."
        )
    if not linops:
        raise ValueError("`parallel_execute` needs at least one operator; got none.")
    check_schedule("parallel_execute", threaded, num_workers, accumulate)
    if not accumulate:
        return reduce_fn([op(x) for op, x in zip(linops, inputs)])
    merge = accumulate_fn if accumulate_fn is not None else lambda a, b: reduce_fn([a, b])
    size = num_workers or 1
    batches = [
        list(zip(linops[start : start + size], inputs[start : start + size]))
        for start in range(0, len(linops), size)
    ]
    result = reduce_fn([op(x) for op, x in batches[0]])
    for batch in batches[1:]:
        result = merge(result, reduce_fn([op(x) for op, x in batch]))
    return result


def check_schedule(owner: str, threaded, num_workers, accumulate) -> int | None:
    """Validate the scheduling options of `owner`; returns `num_workers` as an int."""
    for arg, value in (("threaded", threaded), ("accumulate", accumulate)):
        if not isinstance(value, bool):
            raise TypeError(f"`{owner}({arg}=...)` expects a bool; got {value!r}.")
    if num_workers is None:
        return None
    return as_size(num_workers, f"`{owner}(num_workers=...)`", 1)
