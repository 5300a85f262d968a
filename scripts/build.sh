#!/usr/bin/env bash
# Configures and builds the project: one command shared by the Dockerfile,
# CI (scripts/test.sh) and people.
#
#   scripts/build.sh BUILD_DIR [TARGET ...] [-- CMAKE_ARG ...]
#
# Release with -Werror unless CMAKE_ARGs say otherwise (they come last, so
# -DCMAKE_BUILD_TYPE=Debug wins). No TARGET: everything. Ninja.
# Release is -O2 (CMake's default is -O3): the optimisation level the test
# build (RelWithDebInfo) is compiled and tested at, and GCC 12 at -O3 reports
# a false -Wrestrict inside std::string (GCC PR105329) that -Werror turns fatal.
# A unity build (16 files per compiler run): every file includes nlohmann/json,
# whose parse and instantiation cost each file 5-12 s, so batching them halves
# the compile time of CI's two builds and the image's; -DCMAKE_UNITY_BUILD=OFF
# builds file by file (an edit-compile loop; a plain cmake build is that too).
# RelWithDebInfo and Debug carry line-table debug info only (-g1): every stack
# trace (the sanitizers', gtest's, a core's) keeps file and line, and it
# compiles a quarter faster than -g.
# Env: HB_JOBS sets parallel jobs (default: nproc).
# Examples:
#   scripts/build.sh build heartbeat-operator heartbeat-runner
#   scripts/build.sh build-asan -- -DCMAKE_BUILD_TYPE=Debug -DHB_SANITIZE=ON
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

if [ $# -lt 1 ] || [ "$1" = "--" ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
  sed -n '2,22p' "$0" >&2
  exit 2
fi
dir="$1"; shift
targets=() cmake_args=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do targets+=("$1"); shift; done
[ $# -gt 0 ] && shift
cmake_args=("$@")
jobs="${HB_JOBS:-$(nproc)}"

cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DHB_WERROR=ON -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 "${cmake_args[@]}" >/dev/null
if [ ${#targets[@]} -gt 0 ]; then
  cmake --build "$dir" -j "$jobs" --target "${targets[@]}"
else
  cmake --build "$dir" -j "$jobs"
fi
