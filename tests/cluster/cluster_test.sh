#!/usr/bin/env bash
# Heartbeats as real Pods on a real node (tests/cluster/node.sh: kubelet,
# containerd + runc, kube-proxy, kube-scheduler): the chart installed with
# Helm, the operator running in-cluster from its image, every heartbeat in
# the runner image (two containers) talking to the stand-in model on the
# host. What the local pod executor cannot prove:
#   - the pod spec as a kubelet applies it: the runner as 65532 and the tools
#     as 65533, no token and no key in the tools container, no shared process
#     namespace, read-only root filesystems; the transcript in `kubectl logs`;
#   - a scheduled run, a manual run, pause_heartbeats, a budget stop, a
#     timeout, a cancel (SIGTERM reaches the runner in its container and the
#     result is still written), a runner frozen with SIGSTOP (Stalled), the
#     operator's Pod deleted mid-run (no duplicate, cost counted once);
#   - a run's whole transcript stored on the agent's archival claim (a
#     hostPath PersistentVolume), its size and digest in the run's status,
#     trimmed with its run;
#   - and it prints Pod create -> the runner's first model request.
set -eEuo pipefail
# A command that fails outside an explicit check still says where.
trap 'echo "FAIL: line $LINENO: $BASH_COMMAND" >&2' ERR
src="${HB_SOURCE_DIR:?run under ctest}"
build="${HB_BUILD_DIR:?run under ctest}"
here="$src/tests/cluster"
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

bash "$here/node.sh" preflight || fail "no real node on this machine (see above)"

images_out="$(bash "$src/scripts/images.sh")" || fail "scripts/images.sh failed"
runner_image="$(awk '/heartbeat-runner:/ {print $1}' <<<"$images_out")"
operator_image="$(awk '/heartbeat-operator:/ {print $1}' <<<"$images_out")"
[ -n "$runner_image" ] && [ -n "$operator_image" ] || fail "images.sh did not name both images"

state="$build/Testing/cluster"
mkdir -p "$state"
bash "$here/node.sh" down "$state" 2>/dev/null || true  # a killed run's leftovers
# What teardown must give back (checked at the end).
host_snapshot() {
  sysctl -n vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops \
    kernel.keys.root_maxkeys kernel.keys.root_maxbytes | tr '\n' ' '
  # Our own names only: podman (the images test, maybe running beside) adds its own.
  echo "links=$(ip -o link | grep -c ' hbh-' || true) netns=$(ip netns list | grep -c '^hb-node-' || true) kube_chains=$(iptables-save | grep -c '^:KUBE' || true)"
  echo "pod_logs=$(ls /var/log/pods 2>/dev/null | wc -l) mounts=$(grep -c "$state" /proc/self/mountinfo || true)"
}
before_up="$(host_snapshot)"
# Set before `up`, so a node that fails half way is torn down too.
kubectl_bin="$(bash "$src/scripts/build-kube.sh" | tail -1)/kubectl"
helm_bin="$(bash "$src/scripts/install-helm.sh" | tail -1)"
k() { "$kubectl_bin" "$@"; }
ns=agents
release_ns=heartbeat-system

on_exit() {
  local status=$?
  if [ $status -ne 0 ]; then
    echo "--- diagnostics"
    k get hbr,jobs,pods -A -o wide 2>&1 | tail -40
    # Why a Pod stays Pending: the node's conditions and taints, and the disk.
    k get nodes -o jsonpath='{range .items[*]}{.metadata.name}{" taints="}{.spec.taints}{"\n"}{range .status.conditions[*]}{"  "}{.type}={.status}{" "}{.message}{"\n"}{end}{end}' 2>&1 || true
    df -h "$state" 2>&1 | tail -1 || true
    k -n "$release_ns" logs deploy/hb-heartbeat-operator --tail=30 2>&1 || true
    grep -E '^[EW][0-9]{4}' "$state/node/logs/kubelet.log" 2>/dev/null | tail -n 10 || true
    tail -n 10 "$state/model.log" 2>/dev/null || true
  fi
  [ -n "${model_pid:-}" ] && kill "$model_pid" 2>/dev/null
  [ "${HB_CLUSTER_KEEP:-0}" = 1 ] || bash "$here/node.sh" down "$state" || true
  exit $status
}
trap on_exit EXIT
node_up_started=$SECONDS
node_env="$(bash "$here/node.sh" up "$state" "$runner_image" "$operator_image")" ||
  fail "the node did not come up (its logs: $state/node/logs)"
eval "$node_env"
echo "node up in $((SECONDS - node_up_started)) s (control plane, containerd, kubelet, kube-proxy, images imported)"

# --- the stand-in model where Pods can reach it ------------------------------
rm -f "$state/model.port"
"$build/tools/fake_model/hb-fake-model" --address "$HB_NODE_HOST_ADDRESS" --port 0 \
  --port-file "$state/model.port" >/dev/null 2>"$state/model.log" &
model_pid=$!
for _ in $(seq 50); do [ -s "$state/model.port" ] && break; sleep 0.1; done
[ -s "$state/model.port" ] || fail "hb-fake-model did not start"
model_url="http://$HB_NODE_HOST_ADDRESS:$(cat "$state/model.port")/v1"

# --- the chart, with the images built above ----------------------------------
step "helm install (operator in-cluster from $operator_image)"
repo_of() { echo "${1%:*}"; }
tag_of() { echo "${1##*:}"; }
"$helm_bin" upgrade --install hb "$src/helm/heartbeat-operator" -n "$release_ns" --create-namespace \
  --set image.repository="$(repo_of "$operator_image")" --set image.tag="$(tag_of "$operator_image")" \
  --set runner.image.repository="$(repo_of "$runner_image")" \
  --set runner.image.tag="$(tag_of "$runner_image")" \
  --set operator.stallTimeoutSeconds=15 --set logFormat=text \
  --wait --timeout 180s >/dev/null || fail "helm install did not become ready"
k -n "$release_ns" get pods -o wide

source "$here/cluster_lib.sh"
k create namespace "$ns" >/dev/null
k -n "$ns" create secret generic llm --from-literal=api-key=sk-cluster-stand-in >/dev/null

source "$here/cluster_scenarios.sh"
scenario_first_model_request
scenario_pod_as_the_kubelet_runs_it
scenario_lifecycle
scenario_attacks_from_the_tools_container
scenario_stall
scenario_runner_killed
scenario_stored_transcript
scenario_zoned_schedule
scenario_operator_pod_deleted

step "teardown gives everything back"
kill "$model_pid" 2>/dev/null || true
model_pid=""
bash "$here/node.sh" down "$state"
after_down="$(host_snapshot)"
[ "$after_down" = "$before_up" ] || fail "the host differs after teardown: before: $before_up; after: $after_down"
if pgrep -f -- "$state/" >/dev/null; then fail "processes of the node outlived teardown: $(pgrep -af -- "$state/")"; fi
if ls -d /sys/fs/cgroup/*/"hb-node-$(cat "$state/node-id")" >/dev/null 2>&1; then fail "the node's cgroups outlived teardown"; fi
echo "ok: after teardown: $after_down"
HB_CLUSTER_KEEP=1  # nothing left for on_exit to remove
echo "cluster test: passed"
