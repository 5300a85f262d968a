#!/usr/bin/env bash
# The main job: on a fresh machine, set up, start a real local control plane,
# install the CRDs, start a model endpoint, a local pod executor and the
# operator, apply the demo agent (examples/demo/agent.yaml, one heartbeat a
# minute) plus one manual HeartbeatRun, and show the agents and their
# heartbeat runs until Ctrl-C; then stop all it started.
#
# Model: the scripted stand-in tools/fake_model (hb-fake-model) on
# 127.0.0.1, unless OPENAI_BASE_URL and OPENAI_API_KEY are set (any
# OpenAI-compatible endpoint; OPENAI_MODEL picks the model, default
# gpt-4o-mini).
# Pods: the control plane has no kubelet, so tools/local_kubelet
# (hb-local-kubelet) registers a node, binds the heartbeat Pods to it and runs
# heartbeat-runner and heartbeat-tools (its two containers) as local processes for each.
#
# --real-node (root): the same on a real node instead (tests/cluster/node.sh:
# kubelet, containerd + runc, kube-proxy, kube-scheduler), with the images
# built by scripts/images.sh and the operator installed in-cluster by the
# Helm chart; every heartbeat is a real Pod (`kubectl logs job/...`).
#
# Env: HB_DEMO_DIR (state, default build/demo), HB_DEMO_SECONDS (stop by
# itself after this many seconds; default: run until Ctrl-C), HB_BUILD_DIR
# (build tree, default build).
set -euo pipefail
real_node=0
case "${1:-}" in
  "") ;;
  --real-node) real_node=1 ;;
  *) echo "usage: scripts/demo.sh [--real-node]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
root="$PWD"
build="${HB_BUILD_DIR:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
state="${HB_DEMO_DIR:-$root/build/demo}"
mkdir -p "$state"
namespace=default

bash scripts/install-deps.sh
cmake -S . -B "$build" -G Ninja -DHB_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" \
  --target heartbeat-operator heartbeat-runner heartbeat-tools hb-local-kubelet hb-fake-model 2>&1 | tail -n 3
runner_bin="$build/runner/heartbeat-runner"
kubelet_bin="$build/tools/local_kubelet/hb-local-kubelet"
model_bin="$build/tools/fake_model/hb-fake-model"
operator_bin="$build/operator/heartbeat-operator"

# Processes we started, stopped in this order: the executor first (it stops
# the heartbeat processes it runs and reports them), then the operator, then
# the model.
kubelet_pid="" operator_pid="" model_pid=""
stop_pid() {  # stop_pid PID NAME: TERM, up to 15 s, then KILL
  local pid=$1 name=$2
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "demo: $name (pid $pid) did not stop; killing it"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  echo "demo: stopping"
  stop_pid "$kubelet_pid" hb-local-kubelet
  stop_pid "$operator_pid" heartbeat-operator
  stop_pid "$model_pid" hb-fake-model
  if [ "$real_node" = 1 ]; then
    bash tests/cluster/node.sh down "$state/node" || true
  else
    bash tests/e2e/control-plane.sh down "$state/control-plane" || true
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

model_address=127.0.0.1
if [ "$real_node" = 1 ]; then
  bash tests/cluster/node.sh preflight
  images="$(bash scripts/images.sh)"
  echo "$images"
  runner_image="$(awk '/heartbeat-runner:/ {print $1}' <<<"$images")"
  operator_image="$(awk '/heartbeat-operator:/ {print $1}' <<<"$images")"
  node_env="$(bash tests/cluster/node.sh up "$state/node" "$runner_image" "$operator_image")"
  eval "$node_env"
  model_address="$HB_NODE_HOST_ADDRESS"  # where the node's Pods reach the host
else
  eval "$(bash tests/e2e/control-plane.sh up "$state/control-plane")"
fi
kubectl_bin="$(command -v kubectl || echo "$(bash scripts/build-kube.sh | tail -n 1)/kubectl")"
k() { "$kubectl_bin" "$@"; }

k apply -f crds/
k wait --for condition=established --timeout=60s crd/agents.heartbeat.dev crd/heartbeatruns.heartbeat.dev

# --- the model endpoint ---
if [ -n "${OPENAI_BASE_URL:-}" ] && [ -n "${OPENAI_API_KEY:-}" ]; then
  base_url="$OPENAI_BASE_URL"
  model="${OPENAI_MODEL:-gpt-4o-mini}"
  api_key="$OPENAI_API_KEY"
  echo "demo: model: $model at $base_url (from OPENAI_BASE_URL/OPENAI_API_KEY; costs are real)"
else
  rm -f "$state/fake-model.port"
  "$model_bin" --address "$model_address" --port 0 --port-file "$state/fake-model.port" \
    >"$state/fake-model.out" 2>"$state/fake-model.log" &
  model_pid=$!
  for _ in $(seq 100); do [ -s "$state/fake-model.port" ] && break; sleep 0.1; done
  [ -s "$state/fake-model.port" ] || { echo "demo: hb-fake-model did not start:"; cat "$state/fake-model.log"; exit 1; }
  base_url="http://$model_address:$(cat "$state/fake-model.port")/v1"
  model="gpt-4o-mini"
  api_key="sk-local-stand-in"
  echo "demo: model: scripted stand-in (hb-fake-model) — set OPENAI_BASE_URL/OPENAI_API_KEY for a real endpoint"
  echo "demo:   stand-in at $base_url (log: $state/fake-model.log)"
fi

if [ "$real_node" = 1 ]; then
  # --- the operator in-cluster, from its image, by the Helm chart ---
  helm_bin="$(bash scripts/install-helm.sh | tail -n 1)"
  "$helm_bin" upgrade --install hb helm/heartbeat-operator -n heartbeat-system --create-namespace \
    --set image.repository="${operator_image%:*}" --set image.tag="${operator_image##*:}" \
    --set runner.image.repository="${runner_image%:*}" --set runner.image.tag="${runner_image##*:}" \
    --set logFormat=text --wait --timeout 180s >/dev/null
  echo "demo: operator running in-cluster on node $HB_NODE_NAME (kubectl -n heartbeat-system logs deploy/hb-heartbeat-operator)"
else
  # --- the local pod executor (plays the kubelet) ---
  "$kubelet_bin" --kubeconfig="$KUBECONFIG" --namespace="$namespace" --node-name=local-executor \
    --state-dir="$state/kubelet" --image=heartbeat-runner="$runner_bin" \
    >"$state/kubelet.log" 2>&1 &
  kubelet_pid=$!
  echo "demo: hb-local-kubelet running heartbeat-runner:local as $runner_bin (log: $state/kubelet.log, pod logs: $state/kubelet/pods/*/runner.log and tools.log)"

  # --- the operator ---
  free_port() { python3 scripts/free-port.py; }
  "$operator_bin" --kubeconfig="$KUBECONFIG" --leader-elect=false \
    --metrics-address="127.0.0.1:$(free_port)" --health-address="127.0.0.1:$(free_port)" \
    --wakeup-address="127.0.0.1:$(free_port)" --log-format=text \
    --runner-image=heartbeat-runner:local >"$state/operator.log" 2>&1 &
  operator_pid=$!
  echo "demo: operator running (log: $state/operator.log)"
fi

# --- the demo agent and a first heartbeat at once ---
k -n "$namespace" create secret generic example-llm --from-literal=api-key="$api_key" \
  --dry-run=client -o yaml | k -n "$namespace" apply -f - >/dev/null
sed -e "s#baseURL: http://127.0.0.1:8080/v1#baseURL: $base_url#" \
    -e "s#model: gpt-4o-mini#model: $model#" examples/demo/agent.yaml | k -n "$namespace" apply -f -
k -n "$namespace" create -f - <<'RUN'
apiVersion: heartbeat.dev/v1alpha1
kind: HeartbeatRun
metadata:
  generateName: demo-manual-
spec:
  agentRef:
    name: demo
  invocationSource: manual
  triggerDetail: First heartbeat, started by scripts/demo.sh.
RUN
echo "demo: agent 'demo' beats every minute (the first scheduled one a minute after creation); a manual run starts now"

deadline=$(( ${HB_DEMO_SECONDS:-0} > 0 ? SECONDS + ${HB_DEMO_SECONDS:-0} : 0 ))
while :; do
  echo "---- $(date -u +%H:%M:%S) ----"
  k -n "$namespace" get hba,hbr -o wide 2>&1 || true
  if [ "$deadline" -gt 0 ] && [ "$SECONDS" -ge "$deadline" ]; then break; fi
  if [ "$real_node" = 0 ]; then
    if ! kill -0 "$kubelet_pid" 2>/dev/null; then echo "demo: hb-local-kubelet exited; see $state/kubelet.log"; break; fi
    if ! kill -0 "$operator_pid" 2>/dev/null; then echo "demo: the operator exited; see $state/operator.log"; break; fi
  fi
  sleep 10
done

echo "---- summary ----"
k -n "$namespace" get hbr -o custom-columns='RUN:.metadata.name,SOURCE:.spec.invocationSource,PHASE:.status.phase,EXIT:.status.exitCode,COST_CENTS:.status.usage.costCents,TOKENS_IN:.status.usage.inputTokens,TOKENS_OUT:.status.usage.outputTokens,STOP:.status.stopReason' || true
k -n "$namespace" get hba demo -o jsonpath='agent demo: spend {.status.spend.cents} cents this month ({.status.spend.inputTokens} tokens in, {.status.spend.outputTokens} out); last heartbeat {.status.lastHeartbeatTime}{"\n"}' || true
k -n "$namespace" get hbr -o jsonpath='{range .items[?(@.status.output)]}{.metadata.name}: {.status.output}{"\n"}{end}' 2>/dev/null | tail -n 3 || true
