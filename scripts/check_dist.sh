#!/usr/bin/env bash
# Build and check the release archives, then smoke-test the wheel outside the source tree.
#
#   bash scripts/check_dist.sh [OUTDIR]
#
# 1. A throwaway venv with `build` and `twine`; `python -m build` makes the sdist, then
#    the wheel FROM the sdist (so a complete wheel shows the sdist holds what a build needs).
# 2. `twine check --strict` on both (metadata, README rendering).
# 3. The archives' contents: the wheel holds exactly the source tree's jaxlinops/ and
#    interop/ Python files plus its .dist-info (no tests, no stray files), and the sdist
#    exactly those plus pyproject.toml, README.md, PKG-INFO, .gitignore and any LICENSE*; the version
#    in both names is jaxlinops/_version.py's.
# 4. A fresh venv (no --system-site-packages) gets torch, then the wheel with its runtime
#    dependencies from the package index, and runs scripts/smoke_test.py with `python -I`
#    from an empty directory, so nothing from the source tree can be imported.
#
# torch: $CHECK_DIST_TORCH (default torch==2.13.0, the version scripts/test.sh uses), with
# the extra pip arguments in $CHECK_DIST_TORCH_ARGS. Where pip's configuration offers the
# CPU build (a local wheel), the default installs it; elsewhere the package index's build
# of torch on Linux pulls in CUDA (gigabytes): set
# CHECK_DIST_TORCH_ARGS="--index-url https://download.pytorch.org/whl/cpu" there.
# The archives are left in OUTDIR (default: a temporary directory, removed at the end).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
start=$SECONDS

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
dist="${1:-$work/dist}"
mkdir -p "$dist"
dist="$(cd "$dist" && pwd)"
rm -f "$dist"/jaxlinops-*.whl "$dist"/jaxlinops-*.tar.gz

echo "check_dist: building the sdist and wheel into $dist"
python3 -m venv "$work/tools"
"$work/tools/bin/python" -m pip install -q build twine
"$work/tools/bin/python" -m build --outdir "$dist" . | grep -v "^\*"
"$work/tools/bin/python" -m twine check --strict "$dist"/*

echo "check_dist: checking the archives' contents"
"$work/tools/bin/python" - "$dist" <<'EOF'
import pathlib, re, sys, tarfile, zipfile

dist = pathlib.Path(sys.argv[1])
version = re.search(r'__version__ = "(.+)"', pathlib.Path("jaxlinops/_version.py").read_text())[1]
(wheel,), (sdist,) = dist.glob("*.whl"), dist.glob("*.tar.gz")
if wheel.name != f"jaxlinops-{version}-py3-none-any.whl":
    sys.exit(f"check_dist: wheel {wheel.name}: expected version {version}, pure Python")
sources = {
    str(p) for pkg in ("jaxlinops", "interop") for p in pathlib.Path(pkg).rglob("*.py")
    if "__pycache__" not in p.parts
}

def compare(what, names, expected):
    missing, stray = sorted(expected - names), sorted(names - expected)
    if missing or stray:
        sys.exit(f"check_dist: {what}: missing {missing}, unexpected {stray}")

info = f"jaxlinops-{version}.dist-info"
names = set(zipfile.ZipFile(wheel).namelist())
compare(wheel.name, {n for n in names if not n.startswith(info + "/")}, sources)
licenses = {str(p) for p in pathlib.Path().glob("LICENSE*")}
meta = {f"{info}/{n}" for n in ("METADATA", "WHEEL", "RECORD", "entry_points.txt")}
compare(f"{wheel.name} {info}", {n for n in names if n.startswith(info + "/")},
        meta | {f"{info}/licenses/{n}" for n in licenses})
root = f"jaxlinops-{version}/"
members = {m.name for m in tarfile.open(sdist).getmembers() if m.isfile()}
if not all(m.startswith(root) for m in members):
    sys.exit(f"check_dist: {sdist.name}: members outside {root}")
compare(sdist.name, {m[len(root):] for m in members},
        sources | licenses | {"pyproject.toml", "README.md", "PKG-INFO", ".gitignore"})
print(f"check_dist: {wheel.name}: {len(names)} files; {sdist.name}: {len(members)} files"
      + ("" if licenses else "; notice: no LICENSE file in the repository to ship"))
EOF

echo "check_dist: installing ${CHECK_DIST_TORCH:=torch==2.13.0} and the wheel into a fresh venv"
python3 -m venv "$work/smoke"
# shellcheck disable=SC2086  # CHECK_DIST_TORCH_ARGS is a list of pip arguments
"$work/smoke/bin/python" -m pip install -q --no-compile ${CHECK_DIST_TORCH_ARGS:-} \
  "$CHECK_DIST_TORCH"
"$work/smoke/bin/python" -m pip install -q --no-compile "$dist"/*.whl
mkdir "$work/run"
(cd "$work/run" && env -u PYTHONPATH "$work/smoke/bin/python" -I "$repo/scripts/smoke_test.py")
echo "check_dist: passed in $((SECONDS - start)) s"
