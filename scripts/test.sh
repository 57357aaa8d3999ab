#!/usr/bin/env bash
# Set up and run the whole test suite.
#
#   bash scripts/test.sh           .venv with `python3`: torch==2.13.0 (CPU build) first, then
#                                  `pip install -e .[test,torch,docs,notebooks]` and
#                                  torchlinops (the reference for interop.from_torchlinops:
#                                  torch-named-linops without its GPU dependencies, plus the
#                                  four it imports); ruff and pyright, then pytest on tests/
#                                  (which also runs the notebooks and builds the docs),
#                                  then torchlinops' own test suite on jaxlinops
#                                  (scripts/conformance.sh).
#   bash scripts/test.sh --py312   the tests again on Python 3.12 with the newest jax and no
#                                  torch, in .venv-py312 (torch tests skip; the operator
#                                  contract runs in complex128 only). Without a Python 3.12
#                                  interpreter it prints a notice and exits 0.
#
# Further arguments go to pytest, e.g. `bash scripts/test.sh -k dense`.
# Virtual environments are reused when present; the project is reinstalled every time.
set -euo pipefail
cd "$(dirname "$0")/.."

TORCH_SPEC="torch==2.13.0"
TORCHLINOPS_SPEC="torch-named-linops==0.8.3"
TORCHLINOPS_IMPORTS=(einops jaxtyping scipy tqdm)
PY_VERSION='import sys; print("%d.%d.%d" % sys.version_info[:3])'
IS_PY312='import sys, venv; assert sys.version_info[:2] == (3, 12)'
VERSIONS='import sys, jax; print(f"Python {sys.version.split()[0]}, jax {jax.__version__}")'

# make_venv DIR PYTHON: create DIR with PYTHON unless a working venv of the same Python
# version is already there.
make_venv() {
  local want have
  want="$("$2" -c "$PY_VERSION")"
  have="$("$1/bin/python" -c "$PY_VERSION" 2>/dev/null || true)"
  if [[ $have != "$want" ]]; then
    echo "test.sh: creating $1 with Python $want"
    rm -rf "$1"
    "$2" -m venv "$1"
  fi
}

# find_py312: print the path of a working Python 3.12 interpreter, or fail.
find_py312() {
  local candidates=() root
  command -v python3.12 >/dev/null && candidates+=("$(command -v python3.12)")
  if command -v pyenv >/dev/null; then
    root="$(pyenv root)"
    candidates+=("$root"/versions/3.12*/bin/python3.12)
  fi
  candidates+=(/root/.pyenv/versions/3.12*/bin/python3.12)
  candidates+=("${HOME:-}"/.pyenv/versions/3.12*/bin/python3.12)
  for py in "${candidates[@]}"; do
    # A pyenv shim exists but refuses to run when 3.12 is not selected: test each one.
    if [[ -x $py ]] && "$py" -c "$IS_PY312" 2>/dev/null; then
      echo "$py"
      return 0
    fi
  done
  if command -v pyenv >/dev/null; then
    for version in $(pyenv versions --bare 2>/dev/null | grep -E '^3\.12(\.[0-9]+)?$' || true); do
      if PYENV_VERSION="$version" python3.12 -c 'import venv' 2>/dev/null; then
        PYENV_VERSION="$version" python3.12 -c 'import sys; print(sys.executable)'
        return 0
      fi
    done
  fi
  return 1
}

# run_pytest PYTHON [ARGS...]: the test suite, with a clear message when it collects nothing
# (exit 5). pytest's summary line ("N passed ...") is the last line of a passing run.
run_pytest() {
  local rc=0 py=$1
  shift
  "$py" -m pytest -q -n 2 "$@" || rc=$?
  if [[ $rc -eq 5 ]]; then
    echo "test.sh: error: pytest collected no tests." >&2
  fi
  return "$rc"
}

# other_cpus PYTHON [ARGS...]: the numerically sensitive tests again with XLA's kernels for
# older CPUs (AVX2 and SSE4.2 instead of this machine's best), which round differently:
# the same code paths a user's Intel or AMD machine may take. Skipped when ARGS select tests.
SENSITIVE=(tests/test_alg.py tests/test_normal_folding.py tests/test_toeplitz.py
  tests/test_properties.py)
other_cpus() {
  local py=$1 isa
  shift
  [[ $# -eq 0 ]] || return 0
  for isa in AVX2 SSE4_2; do
    echo "test.sh: the numerically sensitive tests with XLA_FLAGS=--xla_cpu_max_isa=$isa"
    XLA_FLAGS="--xla_cpu_max_isa=$isa" run_pytest "$py" "${SENSITIVE[@]}"
  done
}

# conformance PYTHON [ARGS...]: torchlinops' own test suite on jaxlinops
# (scripts/conformance.sh, about 3 minutes). Skipped when ARGS select tests.
conformance() {
  [[ $# -le 1 ]] || return 0
  PYTHON=$1 bash scripts/conformance.sh
}

# install_chromium: Debian's headless Chromium for tests/test_site.py, which loads every
# page of the built site; where it cannot be installed (no apt-get, not root, no network)
# that test skips its browser check, and this says so.
install_chromium() {
  [[ -x /usr/bin/chromium ]] && return 0
  if command -v apt-get >/dev/null && [[ $(id -u) -eq 0 ]]; then
    { apt-get install -y -q chromium || { apt-get update -q && apt-get install -y -q chromium; }; } \
      >/dev/null 2>&1 && return 0
  fi
  echo "test.sh: notice: could not install chromium; tests/test_site.py skips its browser check"
}

main_suite() {
  local start=$SECONDS
  local py=.venv/bin/python
  make_venv .venv python3
  install_chromium
  echo "test.sh: installing $TORCH_SPEC, jaxlinops[test,torch,docs,notebooks,finufft] (editable)," \
    "$TORCHLINOPS_SPEC"
  "$py" -m pip install -q "$TORCH_SPEC"
  "$py" -m pip install -q -e ".[test,torch,docs,notebooks,finufft]"
  "$py" -m pip install -q "${TORCHLINOPS_IMPORTS[@]}"
  "$py" -m pip install -q --no-deps "$TORCHLINOPS_SPEC"
  echo "test.sh: setup took $((SECONDS - start)) s; $("$py" -c "$VERSIONS"), torch" \
    "$("$py" -c 'import torch; print(torch.__version__)')"
  # Lint first, but run the tests even when lint fails, so one run reports both.
  local lint=0
  "$py" -m ruff check . || lint=1
  "$py" -m ruff format --check . || lint=1
  "$py" -m pyright --project pyproject.toml || lint=1  # not a pyrightconfig.json above
  run_pytest "$py" "$@"
  other_cpus "$py" "$@"
  conformance "$py" "$@"
  if [[ $lint -ne 0 ]]; then
    echo "test.sh: error: ruff or pyright found problems (listed above the tests)." >&2
    return 1
  fi
}

py312_core() {
  local start=$SECONDS py312 py=.venv-py312/bin/python
  if ! py312="$(find_py312)"; then
    echo "test.sh: notice: no Python 3.12 interpreter found; skipping the Python 3.12 stage."
    return 0
  fi
  make_venv .venv-py312 "$py312"
  echo "test.sh: installing jaxlinops[test,finufft] (editable) with the newest jax, no torch"
  "$py" -m pip install -q -U --upgrade-strategy eager -e ".[test,finufft]"
  echo "test.sh: setup took $((SECONDS - start)) s; $("$py" -c "$VERSIONS")"
  # The main stage covers every dtype; here the per-operator contract runs in complex128
  # only, which exercises the same code paths on the newest jax at a third of the cost.
  # The per-operator split, batched and parameter-gradient checks are left to the main
  # stage (test_split.py, test_batched.py and test_multihost.py exercise splitting on the
  # newest jax, and the contract differentiates every operator), and so are the accuracy
  # studies of the gridding operators (their operators are in the contract), the docs and
  # the demo, tour and benchmark suite (applications of the same operators and solvers),
  # the GPU check's dry run (a script over the same tests), the property fuzz and the
  # planner's choices (the same operators and compiled calls, checked by the contract and
  # the split tests here) and the two-process test (the same mesh as the 8-device ones).
  # The notebooks need the notebooks extra, which this stage does not install.
  local skip="test_batched_matches_the_operator or test_split_matches_a_block_of_the_operator"
  skip+=" or test_grad_wrt_operator_arrays"
  local ignored=(--ignore=tests/test_toeplitz.py --ignore=tests/test_nufft.py
    --ignore=tests/test_interp.py --ignore=tests/test_conv.py --ignore=tests/test_docs.py
    --ignore=tests/test_demo.py --ignore=tests/test_tour.py
    --ignore=tests/test_benchmarks.py --ignore=tests/test_notebooks.py
    --ignore=tests/test_gpu_check.py --ignore=tests/test_properties.py
    --ignore=tests/test_planner.py --ignore=tests/test_planner_grid.py
    --ignore=tests/test_multihost.py)
  run_pytest "$py" -k "not (test_operator_contract and (float32 or complex64)) and not ($skip)" \
    "${ignored[@]}" "$@"
}

if [[ ${1:-} == --py312 ]]; then
  py312_core "${@:2}"
else
  main_suite "$@"
fi
