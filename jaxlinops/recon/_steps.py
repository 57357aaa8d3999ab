"""The command's log: one line when a step starts, one when it ends with its time, and a
summary table of all steps at the end."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

Say = Callable[[str], None]


class Timeline:
    """Named steps and their wall-clock seconds, in order, reported through `say`."""

    def __init__(self, say: Say = print):
        self.say = say
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        """Time the block as step `name`; say when it starts and how long it took."""
        self.say(f"[{len(self.seconds) + 1}] {name} ...")
        start = time.perf_counter()
        yield
        self.seconds[name] = time.perf_counter() - start
        self.say(f"    {name}: {self.seconds[name]:.2f} s")

    def summary(self) -> str:
        """A table of the steps and their times, with the total."""
        width = max(len(name) for name in [*self.seconds, "total"])
        rows = [f"  {name:<{width}}  {t:8.2f} s" for name, t in self.seconds.items()]
        total = sum(self.seconds.values())
        return "\n".join(["Steps:", *rows, f"  {'total':<{width}}  {total:8.2f} s"])
