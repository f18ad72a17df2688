#!/usr/bin/env bash
# The run-time library as other projects use it (ctest cli_runtime_consumers; on the GPU machine the same script
# runs one verified GEMM per consumer):
#  1. `cmake --install` of this build into a fresh prefix; the shared library exports the public API alone (no
#     SQLite, fmt, spdlog, nlohmann/json or cudart symbol) and holds no tuner code;
#  2. tests/consumer/cpp with find_package(dgtune) against that prefix, and examples/ (the loader example) as a
#     project of its own against it; their link lines name libdgtune_runtime and CUDA, nothing of the tuner;
#  3. tests/consumer/cpp with add_subdirectory of this source tree (only the runtime is built there);
#  4. tests/consumer/c, a C program built with `pkg-config --cflags --libs dgtune`, through the C API.
# Each program must end with 0 (one GEMM verified) on a machine with an sm_90 GPU, or with 77 and the library's
# no-GPU error (dgt::Error kNoDevice / DGT_ERR_NO_DEVICE, "no CUDA device") without one.
# Usage: consumer_test.sh BUILD_DIR SOURCE_DIR
# With DGT_CONSUMER_PREFIX=DIR the package is installed there (kept) instead of a temporary folder, and with
# DGT_CONSUMER_KEEP=DIR the four programs are copied there: to run them on a GPU machine against that prefix.
set -u
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)  # absolute: both are handed to other CMake projects
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=${DGT_CONSUMER_PREFIX:-$tmp/prefix}
fail() { echo "FAIL: $*"; exit 1; }
if nvidia-smi -L >/dev/null 2>&1; then want=0; else want=77; fi
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

run_consumer() {  # run_consumer NAME PROGRAM: exit code and message as `want` says
  local name=$1 prog=$2 rc
  "$prog" >"$tmp/$name.out" 2>&1
  rc=$?
  cat "$tmp/$name.out"
  [ "$rc" = "$want" ] || fail "$name exited $rc, expected $want"
  if [ "$want" = 77 ]; then
    grep -q "no CUDA device" "$tmp/$name.out" || fail "$name: no 'no CUDA device' in its message"
  fi
  echo "ok: $name (exit $rc)"
}

# 1. Install and inspect the shared library.
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "cmake --install"; }
lib=$(ls "$prefix"/lib*/libdgtune_runtime.so 2>/dev/null | head -n 1)
[ -n "$lib" ] || fail "no libdgtune_runtime.so installed"
for f in include/dgtune/gemm.hpp include/dgtune/dgtune.h include/dgtune/error.hpp bin/dgtune; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done
ls "$prefix"/lib*/libdgtune_runtime.a >/dev/null 2>&1 || fail "no libdgtune_runtime.a installed"
ls "$prefix"/lib*/cmake/dgtune/dgtuneConfig.cmake "$prefix"/lib*/pkgconfig/dgtune.pc >/dev/null || fail "no package files"
readelf -d "$lib" | grep -q "SONAME.*libdgtune_runtime.so.0" || fail "the shared library has no soname libdgtune_runtime.so.0"
exported=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | c++filt)
foreign=$(printf '%s\n' "$exported" | grep -vE '^(dgt::|dgt_|typeinfo for dgt::|typeinfo name for dgt::|vtable for dgt::|DGTUNE_0$)')
[ -z "$foreign" ] || fail "libdgtune_runtime.so exports more than the public API:
$(printf '%s\n' "$foreign" | head -20)"
printf '%s\n' "$exported" | grep -q '^dgt::Gemm::run' || fail "dgt::Gemm::run is not exported"
printf '%s\n' "$exported" | grep -q '^dgt_gemm_create$' || fail "dgt_gemm_create is not exported"
tuner=$(nm -C "$lib" | grep -E 'dgt::(gate::|SweepLoop|ShapeComparer|Timer::|DeviceSides|TuningDb::put_|CompileQueue|WorkerMeasurer|SessionOptions|stats::)' | head -5)
[ -z "$tuner" ] || fail "libdgtune_runtime.so holds tuner code:
$tuner"
echo "ok: installed; $(printf '%s\n' "$exported" | wc -l) exported symbols, all dgt:: or dgt_"

# 2. find_package(dgtune): the consumer and the loader example.
cmake -S "$src/tests/consumer/cpp" -B "$tmp/found" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  >"$tmp/found.log" 2>&1 && cmake --build "$tmp/found" -j2 >>"$tmp/found.log" 2>&1 || { cat "$tmp/found.log"; fail "find_package consumer build"; }
link=$(cat "$tmp/found/CMakeFiles/consumer.dir/link.txt")
echo "$link" | grep -q "libdgtune_runtime.so" || fail "the consumer does not link libdgtune_runtime.so: $link"
echo "$link" | grep -qE "dgtune_core|sqlite|spdlog|fmt" && fail "the consumer's link line names tuner or private libraries: $link"
run_consumer find_package "$tmp/found/consumer"
cmake -S "$src/examples" -B "$tmp/example" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  >"$tmp/example.log" 2>&1 && cmake --build "$tmp/example" -j2 --target dgtune_loader_example >>"$tmp/example.log" 2>&1 ||
  { cat "$tmp/example.log"; fail "the loader example as a project of its own"; }
grep -qE "dgtune_core|sqlite" "$tmp/example/CMakeFiles/dgtune_loader_example.dir/link.txt" && fail "the loader example links tuner code"
run_consumer loader_example "$tmp/example/dgtune_loader_example"

# 3. add_subdirectory(dgtune) from a parent project: only the runtime is built.
cmake -S "$src/tests/consumer/cpp" -B "$tmp/subdir" -DCMAKE_BUILD_TYPE=Release -DDGTUNE_SOURCE_DIR="$src" "${launcher[@]}" \
  >"$tmp/subdir.log" 2>&1 && cmake --build "$tmp/subdir" -j2 --target consumer >>"$tmp/subdir.log" 2>&1 ||
  { tail -n 40 "$tmp/subdir.log"; fail "add_subdirectory consumer build"; }
[ -e "$tmp/subdir/dgtune/dgtune" ] && fail "add_subdirectory built the CLI although nobody asked for it"
run_consumer add_subdirectory "$tmp/subdir/consumer"

# 4. A C program through the C API, flags from pkg-config.
command -v pkg-config >/dev/null || fail "pkg-config is not installed"
pc=$(ls -d "$prefix"/lib*/pkgconfig | head -n 1)
flags=$(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs dgtune) || fail "pkg-config --cflags --libs dgtune"
cuda_lib=$(dirname "$(ls /usr/local/cuda/lib64/libcudart.so* 2>/dev/null | head -n 1)")
cc -std=c11 -Wall -Werror "$src/tests/consumer/c/consumer.c" $flags -L"$cuda_lib" -Wl,-rpath,"$cuda_lib" -lcudart \
  -o "$tmp/c_consumer" || fail "the C consumer does not build with: $flags"
run_consumer c_api "$tmp/c_consumer"
if [ -n "${DGT_CONSUMER_KEEP:-}" ]; then
  mkdir -p "$DGT_CONSUMER_KEEP"
  cp "$tmp/found/consumer" "$DGT_CONSUMER_KEEP/find_package"
  cp "$tmp/example/dgtune_loader_example" "$DGT_CONSUMER_KEEP/loader_example"
  cp "$tmp/subdir/consumer" "$DGT_CONSUMER_KEEP/add_subdirectory"
  # Its own build of the library (its RUNPATH names the temporary build folder): run it with
  # LD_LIBRARY_PATH=$DGT_CONSUMER_KEEP/add_subdirectory.lib
  mkdir -p "$DGT_CONSUMER_KEEP/add_subdirectory.lib"
  cp -P "$tmp"/subdir/dgtune/libdgtune_runtime.so* "$DGT_CONSUMER_KEEP/add_subdirectory.lib/"
  cp "$tmp/c_consumer" "$DGT_CONSUMER_KEEP/c_api"
fi
echo "runtime consumers: all passed"
