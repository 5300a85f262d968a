#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang with ASan+UBSan) into
# build-fuzz and runs each for SECONDS (default 20) on a scratch copy of its
# seed corpus (tests/fuzz/corpus/TARGET). A crash fails the script and leaves
# the input in build-fuzz/findings/. Prints executions per second per target.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-20}"; [ $# -gt 0 ] && shift
targets=("$@")
all=(watch_fuzz run_result_fuzz schedule_fuzz context_document_fuzz openai_reply_fuzz
     anthropic_reply_fuzz kubeconfig_fuzz tools_protocol_fuzz rfc3339_fuzz policy_fuzz
     request_target_fuzz)
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")
dir="$root/build-fuzz"

if ! command -v clang++ >/dev/null || [ -z "$(ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a 2>/dev/null)" ]; then
  echo "fuzz: clang and libFuzzer are missing; run scripts/install-deps.sh (packages clang, libclang-rt-14-dev)" >&2
  exit 1
fi
# clang may warn where GCC does not: the -Werror gate is the GCC build.
CC=clang CXX=clang++ HB_JOBS="${HB_JOBS:-$(nproc)}" bash "$root/scripts/build.sh" "$dir" "${targets[@]}" -- \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHB_FUZZ=ON -DHB_WERROR=OFF -DHB_BUILD_TESTS=OFF \
  -DHB_BUILD_BENCHMARKS=OFF

mkdir -p "$dir/findings"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
printf '%-24s %10s %12s\n' target seconds exec/s
for t in "${targets[@]}"; do
  work="$dir/corpus/$t"
  rm -rf "$work"; mkdir -p "$work"
  [ -d "$root/tests/fuzz/corpus/$t" ] && cp "$root/tests/fuzz/corpus/$t"/* "$work"/ 2>/dev/null || true
  log="$dir/$t.log"
  if ! "$dir/tests/fuzz/$t" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$dir/findings/$t-" -print_final_stats=1 "$work" >"$log" 2>&1; then
    echo "fuzz: $t found a crash; input in $dir/findings/, log $log" >&2
    tail -40 "$log" >&2
    exit 1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  printf '%-24s %10s %12s\n' "$t" "$seconds" "$(( ${runs:-0} / seconds ))"
done
