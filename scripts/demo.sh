#!/usr/bin/env bash
# The main job: on a fresh machine, set up, start a real local control plane,
# install the CRDs, run the operator, apply examples/agent.yaml and show the
# agents and their heartbeat runs until Ctrl-C; then stop all it started.
#
# Env: HB_DEMO_DIR (state, default build/demo), HB_DEMO_SECONDS (stop by
# itself after this many seconds; default: run until Ctrl-C).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
state="${HB_DEMO_DIR:-$root/build/demo}"
mkdir -p "$state"

bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DHB_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build -j "$(nproc)" --target heartbeat-operator heartbeat-runner 2>&1 | tail -n 3

pids=()
cleanup() {
  echo "demo: stopping"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  bash tests/e2e/control-plane.sh down "$state/control-plane" || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

eval "$(bash tests/e2e/control-plane.sh up "$state/control-plane")"
kubectl_bin="$(command -v kubectl || echo "$(bash scripts/build-kube.sh | tail -n 1)/kubectl")"
k() { "$kubectl_bin" "$@"; }

k apply -f crds/
k wait --for condition=established --timeout=60s crd/agents.heartbeat.dev crd/heartbeatruns.heartbeat.dev

free_port() { for _ in $(seq 100); do p=$((20000 + RANDOM % 40000)); (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo $p; return; }; done; }
build/operator/heartbeat-operator --kubeconfig="$KUBECONFIG" --leader-elect=false \
  --metrics-address="127.0.0.1:$(free_port)" --health-address="127.0.0.1:$(free_port)" \
  --wakeup-address="127.0.0.1:$(free_port)" --log-format=text \
  --runner-image=heartbeat-runner:local >"$state/operator.log" 2>&1 &
pids+=($!)
echo "demo: operator running (log: $state/operator.log)"

k apply -f examples/agent.yaml
k apply -f examples/manual-run.yaml

cat <<'NOTE'
demo: there is no kubelet in this control plane, so heartbeat Pods stay
Pending: the operator schedules runs and creates their Jobs, but nothing
executes them yet. (The local pod executor that runs heartbeat-runner as a
local process, and the scripted stand-in model server, come with the
"Ship it" work.)
NOTE

deadline=$(( ${HB_DEMO_SECONDS:-0} > 0 ? SECONDS + ${HB_DEMO_SECONDS:-0} : 0 ))
while :; do
  echo "---- $(date -u +%H:%M:%S) ----"
  k get hba,hbr -o wide 2>&1 || true
  k get jobs 2>&1 | head -n 5 || true
  if [ "$deadline" -gt 0 ] && [ "$SECONDS" -ge "$deadline" ]; then break; fi
  sleep 10
done
