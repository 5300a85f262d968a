#!/usr/bin/env bash
# Dispatch side by side (issue 15): the CronJob controller v2 and the
# operator on one fresh local control plane at the same client QPS/burst.
# Runs bench/operator/dispatch_compare_bench.cpp on a private control plane
# whose kube-controller-manager has its cronjob controller
# (CronJobControllerV2 gate on) at --qps/--burst.
#   scripts/bench-dispatch.sh --objects=200 [--qps=20 --burst=30 --slots=2 --workers=4]
set -euo pipefail
cd "$(dirname "$0")/.."
qps=20 burst=30
for a in "$@"; do
  case "$a" in
    --qps=*) qps="${a#--qps=}" ;;
    --burst=*) burst="${a#--burst=}" ;;
  esac
done
export HB_KCM_API_QPS="$qps" HB_KCM_API_BURST="$burst"
export HB_KCM_EXTRA_CONTROLLERS=cronjob HB_KCM_FEATURE_GATES=CronJobControllerV2=true
exec bash scripts/bench-on-control-plane.sh bench-dispatch hb_dispatch_compare_bench "$@"
