#!/usr/bin/env bash
# Create the benchmark environment: jaxlinops (editable) plus its peers: torchlinops (PyPI
# package `torch-named-linops`) on a CPU build of torch, sigpy and finufft.
#
# Usage: bash benchmarks/setup_env.sh [VENV_DIR]     (default: .venv-bench, gitignored)
#
# Environment:
#   PYTHON           interpreter for the venv (default: python3.11)
#   TORCH_SPEC       torch requirement (default: torch==2.13.0)
#   TORCH_INDEX_URL  optional index serving CPU-only torch wheels; without it pip must find a
#                    CPU wheel on its own (e.g. through a find-links folder): a plain PyPI
#                    torch on Linux pulls gigabytes of CUDA libraries.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-$repo/.venv-bench}"
python="${PYTHON:-python3.11}"
torch_spec="${TORCH_SPEC:-torch==2.13.0}"

"$python" -m venv "$venv"
pip="$venv/bin/pip"
"$pip" install --upgrade pip

if [[ -n "${TORCH_INDEX_URL:-}" ]]; then
    "$pip" install "$torch_spec" --index-url "$TORCH_INDEX_URL"
else
    "$pip" install "$torch_spec"
fi

"$pip" install -e "$repo"
# torchlinops pins torchvision/torchaudio/triton builds it does not use: skip its deps and
# install only those it imports.
"$pip" install --no-deps torch-named-linops
"$pip" install einops jaxtyping scipy tqdm pytest
"$pip" install sigpy finufft matplotlib

"$venv/bin/python" - <<'PY'
import finufft, jax, numpy, sigpy, torch, torchlinops
print("jax", jax.__version__, "| torch", torch.__version__, "| numpy", numpy.__version__,
      "| torchlinops", getattr(torchlinops, "__version__", "?"), "| sigpy", sigpy.__version__,
      "| finufft", finufft.__version__)
PY
