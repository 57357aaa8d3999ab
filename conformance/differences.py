"""torchlinops 0.8.3 tests that jaxlinops fails on purpose, and tests not counted.

`DELIBERATE` maps a test id (relative to the suite's `tests/` folder; a key ending in
`::` or `[` covers every test below it) to the modes it applies to (`"jax"`, `"torch"`)
and the reason, which `docs/migration.md` explains with the idiomatic replacement. The
stage reports these as expected failures; one that passes fails the stage.

`OUT_OF_SCOPE` lists tests of torch itself or of hardware this stage does not have:
they are not run and not counted.
"""

from __future__ import annotations

BOTH = ("jax", "torch")

DELIBERATE: dict[str, tuple[tuple[str, ...], str]] = {}

OUT_OF_SCOPE: dict[str, str] = {}
