#!/usr/bin/env bash
# Compares the SASS of every kernel of a set compiled from the kernels/ tree of a git revision (default: where
# this branch left main, git merge-base HEAD main) and from this checkout's kernels/ (uncommitted edits
# included). Exit status: sass_diff's (0 = no difference).
#   tests/nvrtc/sass_diff.sh [--rev REV] [--bin path/to/dgtune_sass_diff] [sass_diff options: --set cover|all|tests, -j N]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
rev=
bin=$root/build/tests/dgtune_sass_diff
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --rev) rev=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
[ -n "$rev" ] || rev=$(git -C "$root" merge-base HEAD main)
source "$root/scripts/common.sh"
tool=$(ensure_cuobjdump)
[ -n "$tool" ] || { echo "no cuobjdump + nvdisasm (set DGT_CUOBJDUMP)" >&2; exit 2; }
old=$(mktemp -d "${TMPDIR:-/tmp}/dgtune-sass-old-XXXXXX")
trap 'rm -rf "$old"' EXIT
git -C "$root" archive "$rev" kernels | tar -x -C "$old"
echo "old: kernels/ of $rev ($(git -C "$root" rev-parse --short "$rev")), new: $root/kernels" >&2
PATH="$(nvdisasm_dir_for "$tool"):$PATH" DGT_CUOBJDUMP=$tool "$bin" --old "$old/kernels" --new "$root/kernels" "${args[@]}"
