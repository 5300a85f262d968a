#!/usr/bin/env bash
# Runs the deterministic simulation of the whole operator (tests/sim) for
# many seeds; a failing seed prints the one command that replays it.
#
#   scripts/simulate.sh [--seeds=N] [--seed=FIRST] [--hours=H] [--agents=K] [--no-faults]
#
# Builds heartbeat-sim into build/ first (RelWithDebInfo, as the tests).
# Example: scripts/simulate.sh --seeds=10000 --hours=1
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
case "${1:-}" in -h | --help) sed -n '2,9p' "$0" >&2; exit 2 ;; esac
HB_JOBS="${HB_JOBS:-$(nproc)}" bash "$root/scripts/build.sh" "$root/build" heartbeat-sim -- \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo
exec "$root/build/tests/sim/heartbeat-sim" --seeds=1000 "$@"
