#!/usr/bin/env bash
# What the benchmarks on a local control plane share: builds the bench and
# the operator, starts a private control plane (its state in build/NAME, or
# HB_BENCH_DIR), installs the CRDs, runs the bench with the remaining args
# and stops the control plane however the bench ends. kube-controller-
# manager's settings (HB_KCM_*) come from the caller's environment.
# HB_BENCH_KEEP=1 leaves the control plane (and what the bench made) running
# afterwards and starts on it if it is up, for a bench that can reuse it
# (bench-rss.sh --namespace=NS); `tests/e2e/control-plane.sh down DIR` ends it.
#   scripts/bench-on-control-plane.sh NAME TARGET [bench args...]
set -euo pipefail
cd "$(dirname "$0")/.."
name="$1" target="$2"
shift 2
state="${HB_BENCH_DIR:-$PWD/build/$name}"
bash scripts/install-deps.sh
kube_bin="$(bash scripts/build-kube.sh | tail -n 1)"
export PATH="$kube_bin:$PATH"
cmake -S . -B build -G Ninja >/dev/null
cmake --build build -j "$(nproc)" --target "$target" heartbeat-operator | tail -n 1
if [ "${HB_BENCH_KEEP:-0}" != 1 ]; then
  bash tests/e2e/control-plane.sh down "$state" >/dev/null 2>&1 || true
  trap 'bash tests/e2e/control-plane.sh down "$state" >/dev/null 2>&1 || true' EXIT
fi
eval "$(bash tests/e2e/control-plane.sh up "$state")"
kubectl apply -f crds/ >/dev/null
kubectl wait --for condition=established --timeout=60s \
  crd/agents.heartbeat.dev crd/heartbeatruns.heartbeat.dev crd/heartbeatpolicies.heartbeat.dev >/dev/null
# HB_BUILD_DIR: where the bench finds the operator (a wrapper, e.g. for heaptrack).
HB_CONTROL_PLANE_DIR="$state" HB_BUILD_DIR="${HB_BUILD_DIR:-$PWD/build}" "build/bench/operator/$target" "$@"
