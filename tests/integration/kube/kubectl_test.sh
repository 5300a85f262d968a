#!/usr/bin/env bash
# kubectl on this machine against the local control plane: the CRDs and the
# examples apply, bad examples are refused naming the field, and
# `kubectl get hba,hbr` shows the printer columns.
set -euo pipefail
src="${HB_SOURCE_DIR:?run under ctest}"
kubectl_bin="$(command -v kubectl || true)"
if [ -z "$kubectl_bin" ]; then
  kubectl_bin="$("$src/scripts/build-kube.sh" | tail -n 1)/kubectl"
fi
k() { "$kubectl_bin" "$@"; }
ns="hb-it-kubectl-$RANDOM"
fail() { echo "FAIL: $*" >&2; exit 1; }
cleanup() { k delete namespace "$ns" --wait=false >/dev/null 2>&1 || true; }
trap cleanup EXIT

k apply -f "$src/crds/"
k wait --for condition=established --timeout=60s crd/agents.heartbeat.dev crd/heartbeatruns.heartbeat.dev
k create namespace "$ns"
k apply -n "$ns" -f "$src/crds/" -f "$src/examples/"
# A second manual run by `kubectl create` with generateName, as the example says.
sed 's/name: example-manual/generateName: example-manual-/' "$src/examples/manual-run.yaml" | k create -n "$ns" -f -

agents=$(k get hba -n "$ns")
echo "$agents"
header=$(echo "$agents" | head -1)
for col in NAME TYPE PHASE "NEXT HEARTBEAT" SPEND AGE; do
  grep -q "$col" <<<"$header" || fail "kubectl get hba lacks column $col"
done
grep -q memgpt_agent <<<"$agents" || fail "the example memgpt_agent is not listed"

runs=$(k get hbr -n "$ns")
echo "$runs"
header=$(echo "$runs" | head -1)
for col in NAME AGENT SOURCE PHASE EXIT COST DURATION AGE; do
  grep -q "$col" <<<"$header" || fail "kubectl get hbr lacks column $col"
done
grep -q manual <<<"$runs" || fail "the manual run is not listed"

k get heartbeat -n "$ns" >/dev/null || fail "category 'heartbeat' does not resolve"

# Each invalid example is refused, and the message names the field.
for f in "$src"/examples/invalid/*.yaml; do
  field=$(grep -m1 -o 'spec\.[a-zA-Z.]*' "$f" | head -1 || true)
  if out=$(k apply -n "$ns" -f "$f" 2>&1); then fail "$f was accepted"; fi
  if [ -n "$field" ]; then
    # The server names the path (spec.model); kubectl's own check may answer
    # first, naming the field and its parent (missing required field "model" in ...spec).
    grep -q -e "$field" -e "\"${field##*.}\"" <<<"$out" || fail "$f: the error does not name $field: $out"
  fi
  echo "refused as expected: $(basename "$f"): $(echo "$out" | head -c 300)"
done
echo "kubectl test: 1 passed, 0 failed"
