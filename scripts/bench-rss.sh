#!/usr/bin/env bash
# The operator's RSS at fleet size: builds, starts a private local control
# plane, installs the CRDs, runs bench/operator/fleet_rss_bench.cpp (N
# agents with their history made through the API server, then the operator
# started on them) and stops the control plane. Extra args go to the bench,
# e.g. scripts/bench-rss.sh --agents=10000 --minutes=2.
# kube-controller-manager gets 300 QPS / 600 burst (HB_KCM_API_QPS,
# HB_KCM_API_BURST) so the Pods of the runs in flight are made in seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
state="${HB_BENCH_DIR:-$PWD/build/bench-rss}"
bash scripts/install-deps.sh
kube_bin="$(bash scripts/build-kube.sh | tail -n 1)"
export PATH="$kube_bin:$PATH"
cmake -S . -B build -G Ninja >/dev/null
cmake --build build -j "$(nproc)" --target hb_operator_fleet_rss_bench heartbeat-operator | tail -n 1
bash tests/e2e/control-plane.sh down "$state" >/dev/null 2>&1 || true
trap 'bash tests/e2e/control-plane.sh down "$state" >/dev/null 2>&1 || true' EXIT
export HB_KCM_API_QPS="${HB_KCM_API_QPS:-300}" HB_KCM_API_BURST="${HB_KCM_API_BURST:-600}"
eval "$(bash tests/e2e/control-plane.sh up "$state")"
kubectl apply -f crds/ >/dev/null
kubectl wait --for condition=established --timeout=60s \
  crd/agents.heartbeat.dev crd/heartbeatruns.heartbeat.dev crd/heartbeatpolicies.heartbeat.dev >/dev/null
HB_CONTROL_PLANE_DIR="$state" HB_BUILD_DIR="${HB_BUILD_DIR:-$PWD/build}" build/bench/operator/hb_operator_fleet_rss_bench "$@"
