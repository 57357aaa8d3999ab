#!/usr/bin/env bash
# torchlinops 0.8.3's own test suite, run on jaxlinops in JAX mode (conformance/run.py:
# the suite's torch arrays handed over as JAX arrays, torchlinops -> jaxlinops; about 3
# minutes).
#
# Uses .venv (set up by scripts/test.sh: jaxlinops, torch, torchlinops) and adds sigpy, the
# reference two of the upstream test files import. Prints the counts per upstream file and
# the deliberate differences (conformance/differences.py); fails on an unexpected pass of
# a deliberate difference, or when fewer tests pass than the floor below (raise it as the
# count grows). Further arguments go to conformance/run.py.
set -euo pipefail
cd "$(dirname "$0")/.."

JAX_FLOOR=600
py=${PYTHON:-.venv/bin/python}
"$py" -m pip install -q sigpy
"$py" conformance/run.py --mode jax --min-passed "$JAX_FLOOR" "$@"
