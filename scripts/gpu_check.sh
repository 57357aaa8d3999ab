#!/usr/bin/env bash
# The prepared GPU check, one command on a GPU machine: the GPU test subset, then the GPU
# benchmark (benchmarks/gpu_bench.py), one Markdown table and one JSON.
#
#   bash scripts/gpu_check.sh            on a GPU (about 5 minutes on an H100/H200)
#   bash scripts/gpu_check.sh --cpu      the dry run CI does: the same steps on a CPU, the
#                                        test subset collected (its GPU tests run, and skip),
#                                        the benchmark at small sizes (Pallas interpreted)
#
# Options: --wheels DIR (default .whl): wheels installed with --no-deps into a temporary
# site, never into the system (torchlinops and nufftax are pure Python and small); --out
# DIR (default $OUT, else out/gpu-check): where tests.log, tests.xml, gpu_check.md and
# gpu_check.json go; --tests-only, --bench-only. Further arguments go to pytest (-k ...).
# PYTHON picks the interpreter (default python3). The machine needs jax (CUDA), equinox,
# numpy, pytest, pytest-xdist, hypothesis; torch (CUDA) for the bridge tests and the
# torchlinops rows. Exit status: non-zero if a test failed or the benchmark did not finish.
set -uo pipefail
cd "$(dirname "$0")/.."

MODE=gpu WHEELS=.whl OUT_DIR=${OUT:-out/gpu-check} STEPS=both
PYTEST_ARGS=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --cpu) MODE=cpu ;;
    --wheels) WHEELS=$2; shift ;;
    --out) OUT_DIR=$2; shift ;;
    --tests-only) STEPS=tests ;;
    --bench-only) STEPS=bench ;;
    *) PYTEST_ARGS+=("$1") ;;
  esac
  shift
done
PY=${PYTHON:-python3}
mkdir -p "$OUT_DIR"

# The GPU subset: gridding (NUFFT, Interpolate, blocks; every backend, Pallas compiled on a
# GPU), Toeplitz normals, solvers and their gradients, the PyTorch bridge (CUDA tensors in
# tests/test_gpu.py), splitting on the one GPU (tiles on a one-device mesh).
TESTS=(
  tests/test_gpu.py tests/test_pallas_gridding.py tests/test_nufft.py tests/test_nufft_gridding.py
  tests/test_interp.py tests/test_blocks.py tests/test_gridding_jit.py tests/test_gridding_chunks.py
  tests/test_gridding_reference.py tests/test_per_frame.py tests/test_sampling.py
  tests/test_toeplitz.py tests/test_alg.py tests/test_solver_grad.py tests/test_trajectory_grad.py
  tests/test_interop_tensors.py tests/test_interop_linop.py tests/test_interop_solve.py
  tests/test_batched.py
)

SITE=$(mktemp -d)
trap 'rm -rf "$SITE"' EXIT
if compgen -G "$WHEELS/*.whl" >/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" \
    "$WHEELS"/*.whl || { echo "gpu_check: error: could not install $WHEELS/*.whl" >&2; exit 2; }
  echo "gpu_check: installed into a temporary site: $(cd "$WHEELS" && echo *.whl)"
else
  echo "gpu_check: notice: no wheels in $WHEELS; peers that are not installed are skipped"
fi
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
# the tests with XLA's defaults, as a user runs them (tests/conftest.py otherwise compiles
# at -O0 with a persistent cache, for a short CPU run)
export JAXLINOPS_TEST_XLA_DEFAULTS=1
command -v nvidia-smi >/dev/null && nvidia-smi -L
"$PY" -c 'import jax; print("gpu_check: jax", jax.__version__, jax.devices())' || exit 2
if [[ $MODE == gpu ]] && [[ $("$PY" -c 'import jax; print(jax.default_backend())') != gpu ]]; then
  echo "gpu_check: error: jax has no GPU backend here (use --cpu for a dry run)" >&2
  exit 2
fi

status=0
if [[ $STEPS != bench ]]; then
  start=$SECONDS
  pytest_cmd=("$PY" -m pytest -q -p no:cacheprovider -p no:benchmark -o junit_family=xunit1)
  if [[ $MODE == gpu ]]; then
    # workers share the GPU (and torch): no preallocation; SIGINT at the limit still
    # writes the JUnit file, so the summary lists what ran
    XLA_PYTHON_CLIENT_PREALLOCATE=false timeout -s INT "${GPU_CHECK_TEST_S:-240}" \
      "${pytest_cmd[@]}" -n "${GPU_CHECK_WORKERS:-8}" --durations=15 --junitxml="$OUT_DIR/tests.xml" \
      "${TESTS[@]}" "${PYTEST_ARGS[@]}" 2>&1 | tee "$OUT_DIR/tests.log"
    status=${PIPESTATUS[0]}
  else
    "${pytest_cmd[@]}" --collect-only "${TESTS[@]}" >"$OUT_DIR/collect.log" 2>&1 \
      || { cat "$OUT_DIR/collect.log"; status=1; }
    tail -n 1 "$OUT_DIR/collect.log"
    "${pytest_cmd[@]}" --junitxml="$OUT_DIR/tests.xml" tests/test_gpu.py "${PYTEST_ARGS[@]}" \
      2>&1 | tee "$OUT_DIR/tests.log"
    [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
  fi
  echo "gpu_check: tests took $((SECONDS - start)) s (exit $status)"
fi

if [[ $STEPS != tests ]]; then
  bench=(benchmarks/gpu_bench.py --json "$OUT_DIR/gpu_check.json" --markdown "$OUT_DIR/gpu_check.md"
    --junit "$OUT_DIR/tests.xml")
  [[ $MODE == cpu ]] && bench+=(--cpu)
  XLA_PYTHON_CLIENT_MEM_FRACTION=0.5 "$PY" "${bench[@]}" --deadline-s "${GPU_CHECK_BENCH_S:-150}" \
    || status=1
fi
exit "$status"
