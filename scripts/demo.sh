#!/usr/bin/env bash
# Set up and run the main job: create .venv with `python3` (or reuse it), install jaxlinops
# (editable, with the `demo` extra: matplotlib for the figure, tqdm for the progress bars,
# h5py/ismrmrd/nibabel for the scanner-file path) and run `python -m jaxlinops.demo`: CG-SENSE
# reconstruction of synthetic radial multi-coil MRI, split by coils across the devices (8
# simulated ones on a CPU-only machine), with a report and a figure (recon.png in the
# directory this script is run from, or where `--out` says). Extra arguments go to the
# demo, e.g. `bash scripts/demo.sh --size 64 --devices 4 --out figures/` (`--help` lists
# the defaults).
set -euo pipefail
here="$PWD"  # the demo runs here, so that its figure and a relative --out land here
cd "$(dirname "$0")/.."
root="$PWD"

PY_VERSION='import sys; print("%d.%d.%d" % sys.version_info[:3])'
want="$(python3 -c "$PY_VERSION")"
have="$(.venv/bin/python -c "$PY_VERSION" 2>/dev/null || true)"
if [[ $have != "$want" ]]; then
  echo "demo.sh: creating .venv with Python $want"
  rm -rf .venv
  python3 -m venv .venv
fi
echo "demo.sh: installing jaxlinops[demo] (editable)"
.venv/bin/python -m pip install -q -e ".[demo]"
cd "$here"
exec "$root/.venv/bin/python" -m jaxlinops.demo "$@"
