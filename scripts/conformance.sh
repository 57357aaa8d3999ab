#!/usr/bin/env bash
# torchlinops 0.8.3's own test suite, run on jaxlinops (conformance/run.py; about 5
# minutes): in JAX mode (the suite's torch arrays handed over as JAX arrays, torchlinops ->
# jaxlinops), then in torch mode (torchlinops -> interop.torchlinops, torch tensors
# throughout).
#
# Uses .venv (set up by scripts/test.sh: jaxlinops, torch, torchlinops) and adds sigpy, the
# reference two of the upstream test files import. Prints the counts per upstream file and
# the deliberate differences (conformance/differences.py); fails on an unexpected pass of
# a listed failure, or when fewer tests pass than the floors below (raise them as the
# counts grow). Further arguments go to conformance/run.py.
set -euo pipefail
cd "$(dirname "$0")/.."

JAX_FLOOR=974
TORCH_FLOOR=1070
py=${PYTHON:-.venv/bin/python}
"$py" -m pip install -q sigpy
sdist_dir="$(mktemp -d)"
trap 'rm -rf "$sdist_dir"' EXIT
"$py" -m pip download -q --no-deps --no-binary :all: torch-named-linops==0.8.3 -d "$sdist_dir"
sdist=("$sdist_dir"/torch_named_linops-*.tar.gz)
"$py" conformance/run.py --mode jax --sdist "${sdist[0]}" --min-passed "$JAX_FLOOR" "$@"
"$py" conformance/run.py --mode torch --sdist "${sdist[0]}" --min-passed "$TORCH_FLOOR" "$@"
