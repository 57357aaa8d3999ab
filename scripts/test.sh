#!/usr/bin/env bash
# Set up and run the test suite.
#
#   bash scripts/test.sh               .venv with `python3`, installed by uv (pip where uv
#                                      cannot be installed): torch==2.13.0 (CPU build),
#                                      `-e .[test,torch,docs,notebooks,finufft]` and
#                                      torchlinops (the reference for
#                                      interop.from_torchlinops: torch-named-linops without its
#                                      GPU dependencies, plus the four it imports); ruff and
#                                      pyright, then pytest on tests/ (which also runs the
#                                      notebooks and builds the docs). 10.5-12 minutes on 2
#                                      cores on a fast day (the machine's speed varies up to 2x),
#                                      about half on a rerun (tests/conftest.py: compiled
#                                      programs persist in .cache/jax).
#   bash scripts/test.sh --other-cpus  the numerically sensitive tests again with XLA's
#                                      defaults and its kernels for older CPUs (AVX2, SSE4.2),
#                                      in .venv as the first command left it. About 3 minutes.
#   bash scripts/test.sh --py312       the core tests again on Python 3.12 with the newest jax
#                                      and no torch, in .venv-py312 (torch tests skip; the
#                                      operator contract runs in complex128 only). Without a
#                                      Python 3.12 interpreter it prints a notice and exits 0.
#                                      About 3 minutes cold (uv and 2 minutes of tests).
#
# CI (.ci/run) runs all three and torchlinops' own test suite (scripts/conformance.sh).
# Further arguments go to pytest, e.g. `bash scripts/test.sh -k dense`.
# Virtual environments are reused when present; the first and third commands reinstall the
# project every time.
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

# pip_install PYTHON [--upgrade] ARGS...: `pip install ARGS` into PYTHON's venv, done by uv
# (installed there first): 30-55 s instead of pip's 105 s for the first command's packages,
# resolved to the same versions and compiled to bytecode as pip does (without it, where
# PYTHONDONTWRITEBYTECODE is set, each pytest worker, notebook and script imports jax and
# torch from source: 4 s more each). uv is given the indexes, wheel directories and
# constraints of pip's configuration (`pip config list`: its files and PIP_* variables,
# e.g. a directory or index holding torch's CPU build) and, like pip, takes the best
# version from any of them. Where uv cannot be installed or fails, pip installs ARGS, with
# a notice. `--upgrade` upgrades every requirement (pip's `-U --upgrade-strategy eager`).
pip_install() {
  local py=$1 uv_args=(--compile-bytecode --index-strategy unsafe-best-match) pip_up=()
  local line key value v
  shift
  if [[ ${1:-} == --upgrade ]]; then
    uv_args+=(--upgrade) pip_up=(-U --upgrade-strategy eager)
    shift
  fi
  while IFS= read -r line; do  # e.g. global.find-links='/opt/wheels'
    key=${line%%=*} value=${line#*=}
    value=${value#\'} value=${value%\'}
    case ${key##*.} in
      find-links) for v in $value; do uv_args+=(--find-links "$v"); done ;;
      index-url) uv_args+=(--index-url "$value") ;;
      extra-index-url) for v in $value; do uv_args+=(--extra-index-url "$v"); done ;;
      constraint) for v in $value; do uv_args+=(--constraint "$v"); done ;;
    esac
  done < <("$py" -m pip config list 2>/dev/null)
  if "$py" -m pip install -q uv >/dev/null 2>&1 \
    && "$py" -m uv pip install -q --python "$py" "${uv_args[@]}" "$@"; then
    return 0
  fi
  echo "test.sh: notice: uv could not install $*; pip installs it"
  "$py" -m pip install -q "${pip_up[@]}" "$@"
}

# run_pytest PYTHON [ARGS...]: the test suite, with a clear message when it collects nothing
# (exit 5). A test whose worker process crashed (a segfault in XLA's compiler or jax's
# cache writer, about once a run on jax 0.10) runs once more in a fresh process, with a
# notice naming it; the run passes only if every other test passed and the rerun does.
# pytest's summary line ("N passed ...") is the last line of a passing run.
run_pytest() {
  local rc=0 py=$1 log failed crashed=()
  shift
  log="$(mktemp)"
  "$py" -m pytest -q -n 2 "$@" 2>&1 | tee "$log" || rc=$?
  if [[ $rc -eq 5 ]]; then
    echo "test.sh: error: pytest collected no tests." >&2
  elif [[ $rc -eq 1 ]]; then
    mapfile -t crashed < <(sed -n "s/^worker '[^']*' crashed while running '\(.*\)'$/\1/p" "$log")
    failed="$(grep -c '^FAILED ' "$log" || true)"
    if [[ ${#crashed[@]} -gt 0 && $failed -eq ${#crashed[@]} ]]; then
      echo "test.sh: notice: a pytest worker crashed running ${crashed[*]}; running it again"
      rc=0
      "$py" -m pytest -q "${crashed[@]}" || rc=$?
    fi
  fi
  rm -f "$log"
  return "$rc"
}

# other_cpus [ARGS...]: the numerically sensitive tests again with XLA's defaults (no
# `-O0`, no compilation cache: tests/conftest.py) and its kernels for older CPUs (AVX2 and
# SSE4.2 instead of this machine's best), which round differently: the code paths a user's
# Intel or AMD machine may take.
SENSITIVE=(tests/test_alg.py tests/test_normal_folding.py tests/test_toeplitz.py
  tests/test_properties.py)
other_cpus() {
  local py=.venv/bin/python isa
  [[ -x $py ]] || { echo "test.sh: error: no .venv; run bash scripts/test.sh first" >&2; return 1; }
  for isa in AVX2 SSE4_2; do
    echo "test.sh: the numerically sensitive tests with XLA_FLAGS=--xla_cpu_max_isa=$isa"
    JAXLINOPS_TEST_XLA_DEFAULTS=1 XLA_FLAGS="--xla_cpu_max_isa=$isa" \
      run_pytest "$py" "${SENSITIVE[@]}" "$@"
  done
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
  pip_install "$py" "$TORCH_SPEC" -e ".[test,torch,docs,notebooks,finufft]" \
    "${TORCHLINOPS_IMPORTS[@]}"
  pip_install "$py" --no-deps "$TORCHLINOPS_SPEC"
  echo "test.sh: setup took $((SECONDS - start)) s; $("$py" -c "$VERSIONS"), torch" \
    "$("$py" -c 'import torch; print(torch.__version__)')"
  # Lint first, but run the tests even when lint fails, so one run reports both.
  local lint=0
  "$py" -m ruff check . || lint=1
  "$py" -m ruff format --check . || lint=1
  "$py" -m pyright --project pyproject.toml || lint=1  # not a pyrightconfig.json above
  run_pytest "$py" "$@"
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
  pip_install "$py" --upgrade -e ".[test,finufft]"
  echo "test.sh: setup took $((SECONDS - start)) s; $("$py" -c "$VERSIONS")"
  # API drift between jax releases shows in the calls jaxlinops makes, not in the sizes,
  # dtypes or combinations of the problems the main stage studies: here the files that
  # make those calls (PY312_FILES: the core and its containers, jit/vmap/grad through the
  # per-operator contract in complex128, the solvers' loops and custom derivatives, the
  # proxes and FISTA, jax.export, splitting and batching through shard_map, the
  # distributed FFT and halo exchange, the Pallas and finufft gridding), about 2 minutes
  # cold; everything else (the accuracy studies, the other dtypes, the scripts, notebooks,
  # docs and references) runs in the main stage.
  local skip="test_batched_along_every_dim or test_split_matches_a_block_of_the_operator"
  skip+=" or test_grad_wrt_operator_arrays"
  skip+=" or (test_operator_contract and (float32 or float64 or complex64))"
  run_pytest "$py" -k "not ($skip)" "${PY312_FILES[@]/#/tests/test_}" "$@"
}

PY312_FILES=(contract.py core.py algebra.py containers.py dims.py declarations.py alg.py
  solver_grad.py fista.py prox.py export.py split.py batched.py grid_split.py dfft.py
  halo.py fft.py pallas_gridding.py gridding_jit.py nufft_finufft.py)

case ${1:-} in
  --py312) py312_core "${@:2}" ;;
  --other-cpus) other_cpus "${@:2}" ;;
  *) main_suite "$@" ;;
esac
