#!/usr/bin/env bash
# The operator's RSS at fleet size: bench/operator/fleet_rss_bench.cpp (N
# agents with their history made through the API server, then the operator
# started on them) on a private local control plane. Extra args go to the
# bench, e.g. scripts/bench-rss.sh --agents=10000 --minutes=2 (10,000 agents
# take about half an hour to make on 2 cores).
# kube-controller-manager gets 300 QPS / 600 burst (HB_KCM_API_QPS,
# HB_KCM_API_BURST) so the Pods of the runs in flight are made in seconds.
set -euo pipefail
export HB_KCM_API_QPS="${HB_KCM_API_QPS:-300}" HB_KCM_API_BURST="${HB_KCM_API_BURST:-600}"
exec bash "$(dirname "$0")/bench-on-control-plane.sh" bench-rss hb_operator_fleet_rss_bench "$@"
