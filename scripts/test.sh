#!/usr/bin/env bash
# The project's one test command (README and .ci/run call exactly this):
# installs what is missing, builds with -Werror, runs every test (unit,
# integration and e2e on a real local control plane), then builds again with
# ASan+UBSan and runs the tests there too.
#
#   scripts/test.sh            everything
#   scripts/test.sh -L unit    only tests with that ctest label (no control plane)
#
# Env: HB_TEST_SANITIZE=0 skips the sanitizer pass; HB_TEST_FUZZ_SECONDS sets
# each fuzzer's time (default 10, 0 skips); HB_JOBS sets build jobs.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
jobs="${HB_JOBS:-$(nproc)}"

bash scripts/install-deps.sh
# The e2e suite runs the runner and tools binaries from the build tree as
# their own users (65532, 65533), like a Pod's containers: every directory
# above the checkout must let them pass (search only, not read). A clone in
# `mktemp -d` (mode 0700) does not; open just the search bit on its parents.
dir="$root"
while [ "$dir" != / ]; do
  case "$(stat -c %A "$dir" | cut -c10)" in x | t) ;; *) chmod o+x "$dir" ;; esac
  dir="$(dirname "$dir")"
done
# Build the control-plane and node binaries up front (cached after the first
# time), so the time goes to the build log rather than a test's timeout.
bash scripts/build-kube.sh node >/dev/null

run_suite() {  # run_suite BUILD_DIR CMAKE_ARGS... -- CTEST_ARGS...
  local dir=$1; shift
  local cmake_args=() ctest_args=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do cmake_args+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  ctest_args=("$@")
  # The same build script the Dockerfile uses, so the two cannot drift.
  HB_JOBS="$jobs" bash scripts/build.sh "$dir" -- "${cmake_args[@]}"
  # The control plane fixture is per build dir; a stale one from a killed run is replaced.
  bash tests/e2e/control-plane.sh down "$dir/control-plane" >/dev/null 2>&1 || true
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" "${ctest_args[@]}"
}

# ctest labels that run in the normal pass only (a regex for -LE): building
# the images, the real node, the long simulation and the e2e suite (about
# 5 minutes under the sanitizers; the operator's and runner's code it drives
# is exercised under them by the integration suites already).
heavy_labels='^(images|cluster|sim|e2e)$'

run_suite "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -- "$@"
# Every parser's fuzzer for a short while, once (they run under ASan+UBSan
# already), so a parser regression shows up; 0 skips. Not with a label filter.
fuzz_seconds="${HB_TEST_FUZZ_SECONDS:-10}"
if [ "$fuzz_seconds" != 0 ] && [ $# -eq 0 ]; then
  echo "== every parser's fuzzer for ${fuzz_seconds}s (scripts/fuzz.sh) =="
  HB_JOBS="$jobs" bash scripts/fuzz.sh "$fuzz_seconds"
fi
if [ "${HB_TEST_SANITIZE:-1}" = "1" ]; then
  echo "== the same tests under AddressSanitizer + UndefinedBehaviorSanitizer =="
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  # Leaks inside OpenSSL's process-wide state are not ours.
  export LSAN_OPTIONS="suppressions=$root/tests/lsan.supp:print_suppressions=0"
  # The heaviest suites run once, in the pass above (heavy_labels).
  run_suite "$root/build-asan" -DCMAKE_BUILD_TYPE=Debug -DHB_SANITIZE=ON -DHB_BUILD_BENCHMARKS=OFF -- \
    -LE "$heavy_labels" "$@"
fi
