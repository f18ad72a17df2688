# Shared by the README's scripts: dependency install and build. Source it; do not run it.
# Policy: build from source when the build dependencies are present (installing them with apt-get
# when possible); on a machine without them (the GPU machine has no package registry) reuse a
# prebuilt build/ carried from a build machine, since the binaries need only the CUDA driver, NVRTC
# and cuBLASLt at run time.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${DGTUNE_BUILD_DIR:-$ROOT/build}
DEB_PACKAGES="cmake g++ libcli11-dev libspdlog-dev libfmt-dev nlohmann-json3-dev libsqlite3-dev libgtest-dev python3 pkg-config ccache"

say() { echo "[dgtune] $*" >&2; }

have_build_deps() {
  [ -f /usr/include/CLI/CLI.hpp ] && [ -f /usr/include/spdlog/spdlog.h ] && [ -f /usr/include/fmt/format.h ] &&
    [ -f /usr/include/nlohmann/json.hpp ] && [ -f /usr/include/sqlite3.h ] && [ -f /usr/include/gtest/gtest.h ] &&
    ls /usr/lib/*/libsqlite3.a >/dev/null 2>&1 && command -v cmake >/dev/null && command -v g++ >/dev/null &&
    command -v pkg-config >/dev/null && command -v ccache >/dev/null &&
    { command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; }
}

install_build_deps() {
  have_build_deps && return 0
  if ! command -v apt-get >/dev/null; then say "apt-get not available"; return 1; fi
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  say "installing build dependencies: $DEB_PACKAGES"
  timeout 120 $sudo apt-get update -qq >/dev/null 2>&1 || return 1
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $DEB_PACKAGES >/dev/null || return 1
  have_build_deps
}

prebuilt_usable() { [ -x "$BUILD/dgtune" ]; }

# Builds dgtune (Release) into $BUILD, or reuses a prebuilt one when it cannot build here.
build() {
  export PATH="$PATH:/usr/local/cuda/bin"
  if ! have_build_deps && prebuilt_usable; then
    # The GPU machine: no registry, no -dev packages, a build carried from the build machine.
    say "build dependencies are missing here; using the prebuilt $BUILD (runtime needs only the CUDA driver, NVRTC, cuBLASLt)"
    link_prebuilt_source_dir
  elif install_build_deps; then
    if [ -f "$BUILD/CMakeCache.txt" ] && ! grep -q "^CMAKE_HOME_DIRECTORY:INTERNAL=$ROOT\$" "$BUILD/CMakeCache.txt"; then
      say "$BUILD was configured for another source directory; reconfiguring from scratch"
      rm -rf "$BUILD"
    fi
    # ccache: the runtime-consumer test builds the runtime a second time through add_subdirectory, from the
    # same sources with the same flags; with a compiler cache that second build costs little.
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
    cmake --build "$BUILD" -j"$(nproc)" >&2
  else
    say "cannot build: dependencies missing ($DEB_PACKAGES) and no prebuilt $BUILD/dgtune"
    exit 1
  fi
}

# CTest files of a carried build hold the absolute source path of the build machine; when this
# checkout lives elsewhere, make that path point here so ctest and the test scripts resolve.
link_prebuilt_source_dir() {
  local src
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD/CMakeCache.txt" 2>/dev/null || true)
  local bld
  bld=$(sed -n 's/^CMAKE_CACHEFILE_DIR:INTERNAL=//p' "$BUILD/CMakeCache.txt" 2>/dev/null || true)
  [ -n "$src" ] || return 0
  if [ "$src" != "$ROOT" ]; then
    if [ ! -e "$src" ]; then
      mkdir -p "$(dirname "$src")" && ln -s "$ROOT" "$src"
      say "linked $src -> $ROOT so the prebuilt CTest files find their sources"
    elif [ "$(cd "$src" && pwd -P)" != "$(cd "$ROOT" && pwd -P)" ]; then
      say "warning: prebuilt build refers to $src, which is another checkout"
    fi
  fi
  [ -n "$bld" ] && [ "$bld" != "$BUILD" ] && [ ! -e "$bld" ] && ln -s "$BUILD" "$bld" || true
}

gpu_present() { nvidia-smi -L >/dev/null 2>&1; }

# numpy for the cost-model tests (tools/cost_model/tests/cost_model_test_support.py also looks in
# $DGT_TOOLS_DIR/python): when python3 lacks it, pip installs it there (CI's machine reaches PyPI); without a registry
# those tests skip (exit 77).
ensure_numpy() {
  command -v python3 >/dev/null || return 0
  python3 -c 'import numpy' 2>/dev/null && return 0
  PYTHONPATH="$DGT_TOOLS_DIR/python" python3 -c 'import numpy' 2>/dev/null && return 0
  say "installing numpy (pip) into $DGT_TOOLS_DIR/python for the cost-model tests"
  mkdir -p "$DGT_TOOLS_DIR/python"
  timeout 300 python3 -m pip install -q --disable-pip-version-check --target "$DGT_TOOLS_DIR/python" numpy >&2 ||
    say "numpy could not be installed: the cost-model tests will report SKIPPED"
  return 0
}

# jsonschema (tests/cli/json_schemas_test.py validates every `--format json` output against docs/schemas/) and
# matplotlib (tests/cli/plot_scripts_test.py runs the plot scripts): pip installs the missing ones into
# $DGT_TOOLS_DIR/python like numpy. Those tests fail, never skip, when a package is missing, so a CI machine that
# cannot install them shows it.
ensure_test_python_packages() {
  command -v python3 >/dev/null || return 0
  local missing="" pkg
  for pkg in jsonschema matplotlib; do
    python3 -c "import $pkg" 2>/dev/null && continue
    PYTHONPATH="$DGT_TOOLS_DIR/python" python3 -c "import $pkg" 2>/dev/null && continue
    missing="$missing $pkg"
  done
  [ -n "$missing" ] || return 0
  say "installing$missing (pip) into $DGT_TOOLS_DIR/python for the JSON schema and plot tests"
  mkdir -p "$DGT_TOOLS_DIR/python"
  # shellcheck disable=SC2086
  timeout 600 python3 -m pip install -q --disable-pip-version-check --target "$DGT_TOOLS_DIR/python" $missing >&2 ||
    say "could not install$missing: cli_json_schemas / cli_plot_scripts will fail"
  return 0
}

# Prints the path of a working cuobjdump whose `-sass` works, i.e. with nvdisasm next to it or on PATH
# (for the SASS test, tests/nvrtc/sass_check.sh): $DGT_CUOBJDUMP, PATH, the CUDA toolkit, a previous
# install under $DGT_TOOLS_DIR, else installs the PyPI wheels nvidia-cuda-cuobjdump and
# nvidia-cuda-nvdisasm there with pip. Prints nothing when none can be obtained. The caller puts
# nvdisasm_dir_for's answer on PATH.
DGT_TOOLS_DIR=${DGT_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dgtune-tools}
nvdisasm_dir_for() {  # nvdisasm_dir_for CUOBJDUMP: a directory holding nvdisasm, or nothing
  local c=$1 d
  for d in "$(dirname "$c")" "$(dirname "$(command -v nvdisasm 2>/dev/null || echo /x/x)")" /usr/local/cuda/bin \
    "$(dirname "$(find "$DGT_TOOLS_DIR" -path '*/bin/nvdisasm' -type f 2>/dev/null | head -n 1)" 2>/dev/null)"; do
    [ -n "$d" ] && [ -x "$d/nvdisasm" ] && { echo "$d"; return 0; }
  done
  return 0
}
ensure_cuobjdump() {
  local c
  for c in "${DGT_CUOBJDUMP:-}" "$(command -v cuobjdump 2>/dev/null)" /usr/local/cuda/bin/cuobjdump \
    "$(find "$DGT_TOOLS_DIR" -path '*/bin/cuobjdump' -type f 2>/dev/null | head -n 1)"; do
    [ -n "$c" ] && [ -x "$c" ] && "$c" --version >/dev/null 2>&1 && [ -n "$(nvdisasm_dir_for "$c")" ] && { echo "$c"; return 0; }
  done
  command -v python3 >/dev/null || return 0
  say "installing cuobjdump and nvdisasm (pip: nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm) into $DGT_TOOLS_DIR"
  mkdir -p "$DGT_TOOLS_DIR"
  timeout 300 python3 -m pip install -q --disable-pip-version-check --upgrade --target "$DGT_TOOLS_DIR" \
    nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm >&2 || true
  c=$(find "$DGT_TOOLS_DIR" -path '*/bin/cuobjdump' -type f 2>/dev/null | head -n 1)
  [ -n "$c" ] || return 0
  chmod +x "$c" "$(dirname "$c")/nvdisasm" 2>/dev/null || true
  "$c" --version >/dev/null 2>&1 && [ -n "$(nvdisasm_dir_for "$c")" ] && echo "$c"
  return 0
}

# The PyTorch package's tests (tests/python/package_test.sh) need a Python with torch (>= 2.10; 2.11.0, the GPU
# machine's), scikit-build-core and pytest: a virtual environment at $DGT_TOOLS_DIR/torch-venv, made with pip when
# CI=true or DGTUNE_TORCH_TESTS=1 (PyPI's Linux torch wheel is the CUDA build: about 4.6 GB installed, a minute or two
# on CI's machine; torch imports and runs its meta/fake tensors without a GPU). Otherwise that test reports SKIPPED.
DGT_TORCH_VERSION=${DGT_TORCH_VERSION:-2.11.0}
ensure_torch_env() {
  local venv="$DGT_TOOLS_DIR/torch-venv"
  [ "${CI:-}" = true ] || [ "${DGTUNE_TORCH_TESTS:-}" = 1 ] || [ -x "$venv/bin/python" ] || return 0
  command -v python3 >/dev/null || return 0
  if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import torch, scikit_build_core, pytest' 2>/dev/null; then
    return 0
  fi
  say "installing torch==$DGT_TORCH_VERSION, scikit-build-core, pytest (pip) into $venv for the PyTorch package tests"
  mkdir -p "$DGT_TOOLS_DIR"
  { [ -x "$venv/bin/python" ] || python3 -m venv "$venv"; } >&2 &&
    timeout 1200 "$venv/bin/python" -m pip install -q --disable-pip-version-check "torch==$DGT_TORCH_VERSION" \
      "scikit-build-core>=0.10" pytest numpy >&2 ||
    say "could not install torch: python_package will fail in CI (skip elsewhere)"
  return 0
}
