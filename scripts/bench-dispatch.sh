#!/usr/bin/env bash
# Dispatch side by side (issue 15): the CronJob controller v2 and the
# operator on one fresh local control plane at the same client QPS/burst.
# Builds, starts the control plane with kube-controller-manager's cronjob
# controller (CronJobControllerV2 gate on) at --qps/--burst, runs
# bench/operator/dispatch_compare_bench.cpp and stops the control plane.
#   scripts/bench-dispatch.sh --objects=200 [--qps=20 --burst=30 --slots=2 --workers=4]
set -euo pipefail
cd "$(dirname "$0")/.."
state="${HB_BENCH_DIR:-$PWD/build/bench-dispatch}"
qps=20 burst=30
for a in "$@"; do
  case "$a" in
    --qps=*) qps="${a#--qps=}" ;;
    --burst=*) burst="${a#--burst=}" ;;
  esac
done
bash scripts/install-deps.sh
kube_bin="$(bash scripts/build-kube.sh | tail -n 1)"
export PATH="$kube_bin:$PATH"
cmake -S . -B build -G Ninja >/dev/null
cmake --build build -j "$(nproc)" --target hb_dispatch_compare_bench heartbeat-operator | tail -n 1
bash tests/e2e/control-plane.sh down "$state" >/dev/null 2>&1 || true
trap 'bash tests/e2e/control-plane.sh down "$state" >/dev/null 2>&1 || true' EXIT
export HB_KCM_API_QPS="$qps" HB_KCM_API_BURST="$burst"
export HB_KCM_EXTRA_CONTROLLERS=cronjob HB_KCM_FEATURE_GATES=CronJobControllerV2=true
eval "$(bash tests/e2e/control-plane.sh up "$state")"
kubectl apply -f crds/ >/dev/null
kubectl wait --for condition=established --timeout=60s \
  crd/agents.heartbeat.dev crd/heartbeatruns.heartbeat.dev >/dev/null
HB_CONTROL_PLANE_DIR="$state" HB_BUILD_DIR="$PWD/build" build/bench/operator/hb_dispatch_compare_bench "$@"
