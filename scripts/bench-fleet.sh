#!/usr/bin/env bash
# The operator at fleet scale: builds, starts a private local control plane,
# installs the CRDs, runs bench/operator/fleet_bench.cpp (1,000 agents at
# 1-minute intervals by default) and stops the control plane. Extra args go
# to the bench, e.g. scripts/bench-fleet.sh --agents=300 --minutes=2.
# kube-controller-manager gets 300 QPS / 600 burst here (HB_KCM_API_QPS,
# HB_KCM_API_BURST): at its default 20 QPS its Job controller cannot create
# 1,000 Pods a minute, and every heartbeat queues behind the previous one.
set -euo pipefail
cd "$(dirname "$0")/.."
state="${HB_BENCH_DIR:-$PWD/build/bench-fleet}"
bash scripts/install-deps.sh
kube_bin="$(bash scripts/build-kube.sh | tail -n 1)"
export PATH="$kube_bin:$PATH"
cmake -S . -B build -G Ninja >/dev/null
cmake --build build -j "$(nproc)" --target hb_operator_fleet_bench heartbeat-operator | tail -n 1
bash tests/e2e/control-plane.sh down "$state" >/dev/null 2>&1 || true
trap 'bash tests/e2e/control-plane.sh down "$state" >/dev/null 2>&1 || true' EXIT
export HB_KCM_API_QPS="${HB_KCM_API_QPS:-300}" HB_KCM_API_BURST="${HB_KCM_API_BURST:-600}"
eval "$(bash tests/e2e/control-plane.sh up "$state")"
kubectl apply -f crds/ >/dev/null
kubectl wait --for condition=established --timeout=60s \
  crd/agents.heartbeat.dev crd/heartbeatruns.heartbeat.dev crd/heartbeatpolicies.heartbeat.dev >/dev/null
HB_CONTROL_PLANE_DIR="$state" HB_BUILD_DIR="$PWD/build" build/bench/operator/hb_operator_fleet_bench "$@"
