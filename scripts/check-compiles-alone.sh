#!/usr/bin/env bash
# Compiles every product .cpp and .h alone (-fsyntax-only, warnings as errors; a
# header through a one-line TU that includes it) and fails listing each file
# that does not. The CMake build is a unity build: a file that uses a name
# without including its header still builds there, because an earlier file of
# the same unity TU included it, until the files are regrouped.
#
#   scripts/check-compiles-alone.sh [-j N]    (N files at a time; default nproc)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
jobs="$(nproc)"
if [ "${1:-}" = -j ] && [ $# -ge 2 ]; then jobs="$2"; shift 2; fi
[ $# -eq 0 ] || { echo "usage: $0 [-j N]" >&2; exit 2; }

# What the product targets compile with: CMakeLists.txt's options and the
# definitions date-tz and spdlog bring. The product folders are those the top
# CMakeLists.txt adds (tests, tools and bench are not product code).
folders=(api controllers http kube operator otlp runner)
export flags="-std=c++20 -Wall -Wextra -Wno-restrict -Werror -fsyntax-only -I$root
  -DHAS_STRING_VIEW=1 -DONLY_C_LOCALE=1 -DUSE_OS_TZDB=1 -DSPDLOG_COMPILED_LIB
  -DSPDLOG_SHARED_LIB -DSPDLOG_FMT_EXTERNAL -DFMT_SHARED -DBOOST_ALL_NO_LIB"
export logs; logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT

cd "$root"
# Each file's diagnostics go to its own log, kept only when it fails.
find "${folders[@]}" \( -name '*.cpp' -o -name '*.h' \) -print0 | sort -z |
  xargs -0 -n 1 -P "$jobs" bash -c '
    log="$logs/${1//\//%}"
    case "$1" in
      *.h) printf "#include \"%s\"\n" "$1" | c++ $flags -x c++ - ;;
      *) c++ $flags "$1" ;;
    esac >"$log" 2>&1 && rm "$log"' _ || true

failed=0
for log in "$logs"/*; do
  [ -e "$log" ] || continue
  cat "$log"; failed=$((failed + 1))
done
for log in "$logs"/*; do
  [ -e "$log" ] && f="${log#"$logs"/}" && echo "FAILED: ${f//%//}"
done
total="$(find "${folders[@]}" \( -name '*.cpp' -o -name '*.h' \) | wc -l)"
echo "compiles alone: $((total - failed)) of $total files"
[ "$failed" -eq 0 ]
