#!/usr/bin/env bash
# The operator at fleet scale: bench/operator/fleet_bench.cpp (1,000 agents
# at 1-minute intervals by default) on a private local control plane. Extra
# args go to the bench, e.g. scripts/bench-fleet.sh --agents=300 --minutes=2.
# kube-controller-manager gets 300 QPS / 600 burst here (HB_KCM_API_QPS,
# HB_KCM_API_BURST): at its default 20 QPS its Job controller cannot create
# 1,000 Pods a minute, and every heartbeat queues behind the previous one.
set -euo pipefail
export HB_KCM_API_QPS="${HB_KCM_API_QPS:-300}" HB_KCM_API_BURST="${HB_KCM_API_BURST:-600}"
exec bash "$(dirname "$0")/bench-on-control-plane.sh" bench-fleet hb_operator_fleet_bench "$@"
