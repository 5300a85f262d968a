#!/usr/bin/env bash
# The Helm chart against the local control plane:
#  1. the chart's crds/ are byte-identical to the canonical crds/;
#  2. `helm lint --strict` is clean (no warning, no error) for several value sets;
#  3. bad values fail with a clear message (schema, namespace names, metrics auth,
#     the metrics certificate's Secret name);
#  4. renders with default values, with watchNamespaces=[one] + replicaCount=2
#     (+ serviceMonitor off), with watchNamespaces=[two, one of them repeated]
#     with the wakeup endpoint, and with NetworkPolicies on are accepted by
#     `kubectl apply --dry-run=server`, and the server's objects have the
#     restricted securityContext and least-privilege RBAC without wildcards
#     (check_render.py: --namespace=<the list in order>, a Role and RoleBinding
#     in each watched namespace, no ClusterRole but the metrics reviews' and
#     the scraper's, no Secret access beyond the wakeup tokens by name;
#     NetworkPolicies on by default: the operator's admits metrics only from
#     the monitoring namespace and selects the operator's Pods, heartbeat Pods
#     admit nothing and reach only DNS, the API server and the model
#     endpoints, never 169.254.0.0/16 nor an operator port, and those policies
#     select the labels controllers/model/names.h gives heartbeat Pods and no other
#     Pod); the two-namespace RBAC, applied, lets the chart's ServiceAccount
#     act in both namespaces only; the metrics edge: HTTPS by default, the
#     cert Secret's volume and flags with metrics.certSecret (server dry-run),
#     the FlowSchemas (the leader Lease in leader-election, the rest in the
#     operator's own level) in the newest flowcontrol version the control
#     plane serves, v1 when every version is, each version's field names,
#     and the ServiceMonitor's port, scheme and tlsConfig for the self-signed
#     default, metrics.certSecret and metrics.secure=false (helm's render:
#     the control plane has no ServiceMonitor kind);
#  5. live: the one-namespace render is applied, then the real operator binary
#     runs as the chart's ServiceAccount (its token, the rendered args) and
#     takes an Agent's manual run to a Job: proof the RBAC is enough,
#     including the per-agent Role it must be allowed to grant; /metrics
#     is served over HTTPS only (a plain-HTTP request gets no answer) and
#     answers 401 without a token, 403 to the operator's own token and 200 to
#     a scraper bound to <release>-metrics-reader (TokenReview and
#     SubjectAccessReview as the chart's ServiceAccount); a wakeup with the
#     namespace's heartbeat-wakeup token makes a run (201), another token 404.
#     Skipped (said so) when the operator binary is not built.
set -euo pipefail
src="${HB_SOURCE_DIR:?run under ctest}"
build="${HB_BUILD_DIR:-$src/build}"
chart="$src/helm/heartbeat-operator"
here="$(cd "$(dirname "$0")" && pwd)"
operator_bin="${HB_OPERATOR_BIN:-$build/operator/heartbeat-operator}"

fail() { echo "FAIL: $*" >&2; exit 1; }
command -v python3 >/dev/null || fail "python3 is needed to check the rendered objects"

helm_bin="$(bash "$src/scripts/install-helm.sh" | tail -n 1)"
[ -x "$helm_bin" ] || fail "scripts/install-helm.sh printed no helm binary"
# kubectl of the control plane's own version (build-kube.sh caches it).
kubectl_bin="$(bash "$src/scripts/build-kube.sh" 2>/dev/null | tail -n 1)/kubectl"
[ -x "$kubectl_bin" ] || kubectl_bin="$(command -v kubectl)" || fail "no kubectl"
helm() { "$helm_bin" "$@"; }
k() { "$kubectl_bin" "$@"; }

id="$RANDOM$RANDOM"
release="hbh$id"
rel_ns="hb-it-helm-$id"
watch_ns="hb-it-helm-$id-a"
# The two-namespace render, given in non-alphabetical order (c before b).
watch_ns_c="hb-it-helm-$id-c"
watch_ns_b="hb-it-helm-$id-b"
tmp="$(mktemp -d)"
operator_pid=""
cleanup() {
  if [ -n "$operator_pid" ]; then
    kill -TERM "$operator_pid" 2>/dev/null || true
    wait "$operator_pid" 2>/dev/null || true
  fi
  k delete namespace "$rel_ns" "$watch_ns" "$watch_ns_c" "$watch_ns_b" --wait=false >/dev/null 2>&1 || true
  k delete clusterrole,clusterrolebinding -l "app.kubernetes.io/instance=$release" \
    >/dev/null 2>&1 || true
  k delete clusterrolebinding "$release-scraper" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

echo "== 1. chart CRDs are the canonical CRDs"
diff -r "$src/crds" "$chart/crds" ||
  fail "helm/heartbeat-operator/crds/ differs from crds/: cp crds/*.yaml helm/heartbeat-operator/crds/"

echo "== 2. helm lint --strict"
lint() {
  local out
  out="$(helm lint --strict "$chart" "$@" 2>&1)" || { echo "$out"; fail "helm lint $* failed"; }
  echo "$out"
  if echo "$out" | grep -E '\[(WARNING|ERROR)\]'; then fail "helm lint $* reported the lines above"; fi
}
lint
lint --set "watchNamespaces={$watch_ns}" --set replicaCount=2
lint --set "watchNamespaces={$watch_ns_c,$watch_ns_b}"
lint --set wakeup.enabled=true --set wakeup.clusterTokenSecret=wakeup-token --set serviceMonitor.enabled=true
lint --set serviceMonitor.enabled=true --set serviceMonitor.bearerTokenSecret.name=prom-token \
  --set serviceMonitor.bearerTokenSecret.key=token --set metrics.auth=none --set networkPolicy.enabled=false
lint --set networkPolicy.enabled=true --set "watchNamespaces={$watch_ns}"
lint --set metrics.certSecret=hb-metrics-tls --set serviceMonitor.enabled=true
lint --set metrics.secure=false --set serviceMonitor.enabled=true

echo "== 3. bad values are refused, naming the problem"
expect_refused() {  # expect_refused TEXT HELM_ARGS...
  local text="$1" out; shift
  if out="$(helm template "$release" "$chart" "$@" 2>&1)"; then fail "helm template $* was accepted"; fi
  grep -qF -- "$text" <<<"$out" || fail "helm template $*: the error does not say '$text': $out"
  echo "refused as expected ($*): $(echo "$out" | grep -F -- "$text" | head -n 1)"
}
expect_refused "watchNamespaces.1: Does not match pattern" --set 'watchNamespaces={team-a,Team-B}'
expect_refused 'metrics.auth must be one of the following: "kubernetes", "none"' --set metrics.auth=open
expect_refused "metrics.certSecret: Does not match pattern" --set metrics.certSecret=Bad_Name
expect_refused "serviceMonitor.scraperServiceAccount.namespace" \
  --set serviceMonitor.scraperServiceAccount.name=prom
expect_refused 'logFormat must be one of the following: "json", "text"' --set logFormat=xml
expect_refused 'logLevel must be one of the following' --set logLevel=verbose
expect_refused 'replicaCount: Must be greater than or equal to 1' --set replicaCount=0
expect_refused 'Additional property replicas is not allowed' --set replicas=2
expect_refused 'operator.maxConcurrentRuns: Must be greater than or equal to 0' \
  --set operator.maxConcurrentRuns=-1
expect_refused 'Additional property volumes is not allowed' --set 'runner.podDefaults.volumes[0].name=x'

echo "== 4. server dry-run of the rendered chart"
helm template "$release" "$chart" -n "$rel_ns" >"$tmp/default.yaml"
grep -qF -- '--max-concurrent-runs=0' "$tmp/default.yaml" ||
  fail "the default render does not pass --max-concurrent-runs=0 (no cap)"
helm template "$release" "$chart" -n "$rel_ns" --set operator.maxConcurrentRuns=25 |
  grep -F -- '--max-concurrent-runs=25' >/dev/null ||
  fail "operator.maxConcurrentRuns=25 does not reach the operator's --max-concurrent-runs"
helm template "$release" "$chart" -n "$rel_ns" --set otel.semconvStabilityOptIn=gen_ai_latest_experimental |
  grep -A1 -F 'name: OTEL_SEMCONV_STABILITY_OPT_IN' | grep -F 'value: "gen_ai_latest_experimental"' >/dev/null ||
  fail "otel.semconvStabilityOptIn does not reach the operator's OTEL_SEMCONV_STABILITY_OPT_IN"
if grep -qF OTEL_SEMCONV_STABILITY_OPT_IN "$tmp/default.yaml"; then
  fail "the default render sets OTEL_SEMCONV_STABILITY_OPT_IN"
fi
if grep -qF -- '--otel-endpoint' "$tmp/default.yaml"; then
  fail "the default render turns the operator's spans on"
fi
helm template "$release" "$chart" -n "$rel_ns" --set otel.endpoint=http://c.obs:4318 \
  --set otel.headersSecret=otlp-headers >"$tmp/otel.yaml"
grep -qF -- '--otel-endpoint=http://c.obs:4318' "$tmp/otel.yaml" ||
  fail "otel.endpoint does not send the operator's spans there too"
grep -A3 -F 'name: OTEL_EXPORTER_OTLP_HEADERS' "$tmp/otel.yaml" | grep -F 'name: otlp-headers' >/dev/null ||
  fail "otel.headersSecret does not reach the operator's OTEL_EXPORTER_OTLP_HEADERS"
helm template "$release" "$chart" -n "$rel_ns" --set otel.endpoint=http://c.obs:4318 \
  --set otel.operatorEndpoint=http://op.obs:4318 | grep -F -- '--otel-endpoint=http://op.obs:4318' >/dev/null ||
  fail "otel.operatorEndpoint does not reach --otel-endpoint"
if helm template "$release" "$chart" -n "$rel_ns" --set otel.endpoint=http://c.obs:4318 \
  --set otel.operatorTraces=false | grep -F -- '--otel-endpoint' >/dev/null; then
  fail "otel.operatorTraces=false leaves the operator's spans on"
fi
if grep -q 'kind: ServiceMonitor' "$tmp/default.yaml"; then fail "a ServiceMonitor is rendered by default"; fi
grep -qF -- '--metrics-auth=kubernetes' "$tmp/default.yaml" || fail "the default render serves plain metrics"
# The labels check_render.py expects on heartbeat Pods are the ones the code sets.
# (The managed-by pair is one definition both binaries share, in api/agent_objects.h.)
grep -qF 'kLabelRun = "heartbeat.dev/run"' "$src/controllers/model/names.h" &&
  grep -qF 'kLabelManagedBy = "app.kubernetes.io/managed-by"' "$src/api/agent_objects.h" &&
  grep -qF 'kManagedByValue = "heartbeat-operator"' "$src/api/agent_objects.h" &&
  grep -qF 'kLabelManagedBy = api::kLabelManagedBy' "$src/controllers/model/names.h" ||
  fail "controllers/model/names.h and api/agent_objects.h no longer name the heartbeat Pod labels the NetworkPolicies select"
helm template "$release" "$chart" -n "$rel_ns" --set serviceMonitor.enabled=true \
  --show-only templates/servicemonitor.yaml >"$tmp/sm.yaml"
{ grep -q '^apiVersion: monitoring.coreos.com/v1$' "$tmp/sm.yaml" && grep -q 'port: https' "$tmp/sm.yaml"; } ||
  fail "serviceMonitor.enabled=true renders no monitoring.coreos.com/v1 ServiceMonitor on port https"
# The scrape's TLS (ServiceMonitor is no kind the control plane knows, so
# check_render.py sees it from helm's own output here).
sm_check() {  # sm_check NAME CHECK_ARGS -- HELM_ARGS...
  local name=$1; shift
  local check=()
  while [ "$1" != "--" ]; do check+=("$1"); shift; done
  shift
  helm template "$release" "$chart" -n "$rel_ns" --set serviceMonitor.enabled=true "$@" |
    python3 -c 'import json,sys,yaml; print(json.dumps({"items": [o for o in yaml.safe_load_all(sys.stdin) if o]}))' \
    >"$tmp/sm-$name.json"
  python3 "$here/check_render.py" "$tmp/sm-$name.json" --release-namespace="$rel_ns" \
    --leader-elect=false "${check[@]}" || fail "the $name ServiceMonitor render does not pass check_render.py"
  echo "ok: ServiceMonitor $name"
}
sm_check self-signed --
sm_check cert-secret --metrics-cert-secret=hb-metrics-tls -- --set metrics.certSecret=hb-metrics-tls
sm_check plain --metrics-secure=false -- --set metrics.secure=false
grep -qF -- '--metrics-secure=true' "$tmp/default.yaml" || fail "the default render serves /metrics without TLS"
grep -qF 'bearerTokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token' "$tmp/sm.yaml" ||
  fail "the ServiceMonitor sends no bearer token though /metrics asks for one"
helm template "$release" "$chart" -n "$rel_ns" --set serviceMonitor.enabled=true \
  --set serviceMonitor.bearerTokenSecret.name=prom-token --set serviceMonitor.bearerTokenSecret.key=token \
  --show-only templates/servicemonitor.yaml | grep -A4 'authorization:' | grep -F 'name: prom-token' >/dev/null ||
  fail "serviceMonitor.bearerTokenSecret does not become the endpoint's authorization credentials"

k apply -f "$src/crds/" >/dev/null
k wait --for condition=established --timeout=60s crd/agents.heartbeat.dev crd/heartbeatruns.heartbeat.dev >/dev/null
# Server dry-runs of namespaced objects need their namespaces.
k create namespace "$rel_ns" >/dev/null
for ns in "$watch_ns" "$watch_ns_c" "$watch_ns_b"; do k create namespace "$ns" >/dev/null; done

dry_run() {  # dry_run NAME CHECK_ARGS -- HELM_ARGS...
  local name=$1; shift
  local check=()
  while [ "$1" != "--" ]; do check+=("$1"); shift; done
  shift
  helm template "$release" "$chart" -n "$rel_ns" --include-crds --set "flowControl.apiVersion=$flowcontrol_served" "$@" >"$tmp/$name.yaml"
  k apply --dry-run=server -f "$tmp/$name.yaml" -o json >"$tmp/$name.json" ||
    fail "kubectl apply --dry-run=server refused the $name render"
  python3 -c 'import json,sys; [print(" ", i["kind"], i["metadata"]["name"], "(server dry run)") for i in json.load(open(sys.argv[1]))["items"]]' "$tmp/$name.json"
  python3 "$here/check_render.py" "$tmp/$name.json" --release-namespace="$rel_ns" "${check[@]}" ||
    fail "the $name render does not pass check_render.py (lines above)"
  echo "ok: $name"
}
# The newest flowcontrol version this control plane serves (v1beta1 on 1.20),
# as helm install would find it (helm template offline assumes every one).
# Read into a file first: grep -q closing the pipe early fails kubectl under pipefail.
k api-versions >"$tmp/api-versions" || fail "kubectl api-versions failed"
flowcontrol_served=""
for v in v1 v1beta3 v1beta2 v1beta1; do
  if grep -qx "flowcontrol.apiserver.k8s.io/$v" "$tmp/api-versions"; then flowcontrol_served=$v; break; fi
done
[ -n "$flowcontrol_served" ] || fail "the control plane serves no flowcontrol.apiserver.k8s.io version"
dry_run default --leader-elect=false --
grep -q '^kind: FlowSchema$' "$tmp/default.yaml" || fail "the default render has no FlowSchema"
# Each version's field names: v1beta1/v1beta2 assuredConcurrencyShares, later nominalConcurrencyShares.
for want in v1 v1beta3 v1beta2 v1beta1; do
  helm template "$release" "$chart" -n "$rel_ns" --set "flowControl.apiVersion=$want" \
    --show-only templates/flowcontrol.yaml >"$tmp/fc-$want.yaml"
  grep -q "^apiVersion: flowcontrol.apiserver.k8s.io/$want$" "$tmp/fc-$want.yaml" ||
    fail "with flowcontrol $want served the FlowSchemas are not rendered in $want"
  case "$want" in v1beta1|v1beta2) field=assuredConcurrencyShares ;; *) field=nominalConcurrencyShares ;; esac
  grep -q "$field: 30" "$tmp/fc-$want.yaml" || fail "the $want PriorityLevelConfiguration lacks $field"
done
helm template "$release" "$chart" -n "$rel_ns" --show-only templates/flowcontrol.yaml >"$tmp/fc-all.yaml"
grep -q '^apiVersion: flowcontrol.apiserver.k8s.io/v1$' "$tmp/fc-all.yaml" ||
  fail "with every version served, v1 is not chosen"
dry_run one-namespace --leader-elect=true --watch-namespace="$watch_ns" -- \
  --set "watchNamespaces={$watch_ns}" --set replicaCount=2 --set serviceMonitor.enabled=false \
  --set wakeup.enabled=true
dry_run two-namespaces --leader-elect=false --watch-namespaces="$watch_ns_c,$watch_ns_b" -- \
  --set "watchNamespaces={$watch_ns_c,$watch_ns_b,$watch_ns_c}"
grep -qxF -- "            - --namespace=$watch_ns_c,$watch_ns_b" "$tmp/two-namespaces.yaml" ||
  fail "the two-namespace render lacks --namespace=$watch_ns_c,$watch_ns_b (in the order given, once each)"
dry_run wakeup --leader-elect=false -- \
  --set wakeup.enabled=true --set wakeup.clusterTokenSecret=wakeup-token
dry_run network-policies --leader-elect=false --watch-namespaces="$watch_ns_c,$watch_ns_b" \
  --wakeup-from='[{"namespaceSelector":{"matchLabels":{"team":"ci"}}}]' -- \
  --set "watchNamespaces={$watch_ns_c,$watch_ns_b}" \
  --set wakeup.enabled=true --set wakeup.clusterTokenSecret=wakeup-token \
  --set 'networkPolicy.wakeupFrom[0].namespaceSelector.matchLabels.team=ci'
grep -q 'team: ci' "$tmp/network-policies.yaml" || fail "networkPolicy.wakeupFrom is not rendered"
dry_run no-egress --leader-elect=false --watch-namespaces="$watch_ns_b" --heartbeat-egress=false -- \
  --set "watchNamespaces={$watch_ns_b}" --set networkPolicy.heartbeatEgress.enabled=false
dry_run egress-given --leader-elect=false --watch-namespaces="$watch_ns_b" -- \
  --set "watchNamespaces={$watch_ns_b}" \
  --set 'networkPolicy.heartbeatEgress.apiServer[0].cidr=10.0.0.1/32' \
  --set 'networkPolicy.heartbeatEgress.apiServer[0].ports={6443}' \
  --set 'networkPolicy.heartbeatEgress.modelEndpoints[0].cidr=203.0.113.0/24' \
  --set 'networkPolicy.heartbeatEgress.modelEndpoints[0].ports={443}'
grep -qF 'cidr: "203.0.113.0/24"' "$tmp/egress-given.yaml" && grep -qF 'cidr: "10.0.0.1/32"' "$tmp/egress-given.yaml" ||
  fail "the egress render lacks the API server and model endpoints given"
dry_run plain --leader-elect=false --network-policy=false --metrics-auth=none --metrics-secure=false \
  --flow-control=false -- \
  --set networkPolicy.enabled=false --set metrics.auth=none --set metrics.secure=false \
  --set flowControl.enabled=false
dry_run cert-secret --leader-elect=false --metrics-cert-secret=hb-metrics-tls -- \
  --set metrics.certSecret=hb-metrics-tls
grep -q -- '--wakeup-token-secret=wakeup-token' "$tmp/wakeup.yaml" || fail "the wakeup render lacks --wakeup-token-secret"
if grep -q -- '--wakeup-token-secret' "$tmp/default.yaml"; then fail "the default render has a cluster-wide wakeup token"; fi
# Fleet-wide Pod settings reach the operator as one JSON flag it checks at start.
helm template "$release" "$chart" -n "$rel_ns" --set runner.podDefaults.nodeSelector.pool=agents \
  --set 'runner.podDefaults.imagePullSecrets[0].name=registry' \
  --show-only templates/deployment.yaml >"$tmp/pod-defaults.yaml"
grep -qF -- '- --pod-defaults={"imagePullSecrets":[{"name":"registry"}],"nodeSelector":{"pool":"agents"}}' \
  "$tmp/pod-defaults.yaml" || fail "runner.podDefaults is not rendered as --pod-defaults: $(grep -- --pod "$tmp/pod-defaults.yaml")"
if grep -q -- '- --pod-defaults=' "$tmp/default.yaml"; then fail "--pod-defaults is rendered without podDefaults"; fi

echo "== 4b. the two-namespace RBAC, applied: both namespaces, nothing else"
helm template "$release" "$chart" -n "$rel_ns" --set "watchNamespaces={$watch_ns_c,$watch_ns_b}" \
  --show-only templates/rbac.yaml >"$tmp/two-namespaces-rbac.yaml"
k apply -f "$tmp/two-namespaces-rbac.yaml" >/dev/null
sa2="$(python3 -c 'import json,sys
for i in json.load(open(sys.argv[1]))["items"]:
    if i["kind"] == "Deployment": print(i["spec"]["template"]["spec"]["serviceAccountName"])' "$tmp/two-namespaces.json")"
as_sa2=(--as="system:serviceaccount:$rel_ns:$sa2")
for ns in "$watch_ns_c" "$watch_ns_b"; do
  for allowed in "watch agents.heartbeat.dev" "create heartbeatruns.heartbeat.dev" "create jobs.batch" \
    "patch leases.coordination.k8s.io" "create roles.rbac.authorization.k8s.io"; do
    # shellcheck disable=SC2086
    k auth can-i $allowed -n "$ns" "${as_sa2[@]}" >/dev/null 2>&1 ||
      fail "the two-namespace RBAC does not let the operator $allowed in $ns"
  done
done
for denied in "list agents.heartbeat.dev -n default" "list agents.heartbeat.dev --all-namespaces" \
  "create clusterroles" "list secrets -n $watch_ns_b" "delete pods -n $watch_ns_c"; do
  # shellcheck disable=SC2086
  if k auth can-i $denied "${as_sa2[@]}" >/dev/null 2>&1; then fail "the two-namespace RBAC lets the operator: $denied"; fi
done
k delete -f "$tmp/two-namespaces-rbac.yaml" >/dev/null
echo "ok: two-namespace RBAC grants $rel_ns/$sa2 what it needs in $watch_ns_c and $watch_ns_b only"

echo "== 5. live: the operator as the chart's ServiceAccount, one namespace"
if [ ! -x "$operator_bin" ]; then
  echo "SKIP live part: $operator_bin is not built (build target heartbeat-operator)"
  echo "helm chart test: passed (live part skipped)"
  exit 0
fi
k apply -f "$tmp/one-namespace.yaml" >/dev/null
sa="$(python3 -c 'import json,sys
for i in json.load(open(sys.argv[1]))["items"]:
    if i["kind"] == "Deployment": print(i["spec"]["template"]["spec"]["serviceAccountName"])' "$tmp/one-namespace.json")"
as_sa=(--as="system:serviceaccount:$rel_ns:$sa")
# What it must not do.
for denied in "list secrets -n $watch_ns" "get secrets -n $watch_ns" "get secrets/other -n $watch_ns" \
  "watch secrets/heartbeat-wakeup -n $watch_ns" "get secrets/heartbeat-wakeup -n default" \
  "list agents.heartbeat.dev -n default" \
  "create clusterroles" "delete pods -n $watch_ns" "escalate roles -n $watch_ns" \
  "bind roles -n $watch_ns" "update leases -n $rel_ns"; do
  # shellcheck disable=SC2086
  if k auth can-i $denied "${as_sa[@]}" >/dev/null 2>&1; then fail "the operator may: $denied"; fi
done
k auth can-i get secrets/heartbeat-wakeup -n "$watch_ns" "${as_sa[@]}" >/dev/null ||
  fail "the operator may not read its namespace's wakeup Secret by name"
k auth can-i create tokenreviews.authentication.k8s.io "${as_sa[@]}" >/dev/null &&
  k auth can-i create subjectaccessreviews.authorization.k8s.io "${as_sa[@]}" >/dev/null ||
  fail "the operator may not create the secure metrics' reviews"
sa_token() {  # sa_token NAMESPACE NAME: its token Secret's token (1.20 makes one per ServiceAccount)
  local secret t
  for _ in $(seq 60); do
    secret="$(k -n "$1" get serviceaccount "$2" -o jsonpath='{.secrets[0].name}' 2>/dev/null || true)"
    if [ -n "$secret" ]; then
      t="$(k -n "$1" get secret "$secret" -o jsonpath='{.data.token}' 2>/dev/null | base64 -d || true)"
      [ -n "$t" ] && { echo "$t"; return 0; }
    fi
    sleep 0.5
  done
  return 1
}
token=""
for _ in $(seq 60); do
  secret="$(k -n "$rel_ns" get serviceaccount "$sa" -o jsonpath='{.secrets[0].name}' 2>/dev/null || true)"
  if [ -n "$secret" ]; then
    token="$(k -n "$rel_ns" get secret "$secret" -o jsonpath='{.data.token}' 2>/dev/null | base64 -d || true)"
    [ -n "$token" ] && break
  fi
  sleep 0.5
done
[ -n "$token" ] || fail "no token for ServiceAccount $rel_ns/$sa"
server="$(k config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')"
ca="$(k config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')"
umask 077
cat >"$tmp/sa-kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "$server", certificate-authority-data: "$ca"}
users:
- name: operator
  user: {token: "$token"}
contexts:
- name: c
  context: {cluster: c, user: operator}
current-context: c
EOF
health="127.0.0.1:$(python3 "$src/scripts/free-port.py")"
metrics="127.0.0.1:$(python3 "$src/scripts/free-port.py")"
wakeup="127.0.0.1:$(python3 "$src/scripts/free-port.py")"
mapfile -t args < <(python3 -c 'import json,sys
for i in json.load(open(sys.argv[1]))["items"]:
    if i["kind"] == "Deployment":
        print("\n".join(i["spec"]["template"]["spec"]["containers"][0]["args"]))' "$tmp/one-namespace.json")
# The rendered args, then the pod's surroundings: the kubeconfig stands in for
# the in-cluster token, loopback addresses for the pod's, POD_NAMESPACE for the fieldRef.
POD_NAMESPACE="$rel_ns" "$operator_bin" "${args[@]}" --kubeconfig="$tmp/sa-kubeconfig" \
  --health-address="$health" --metrics-address="$metrics" --wakeup-address="$wakeup" \
  --log-format=text >"$tmp/operator.log" 2>&1 &
operator_pid=$!
show_log() { echo "--- operator log"; tail -n 40 "$tmp/operator.log"; }

ready=""
for _ in $(seq 120); do
  if ! kill -0 "$operator_pid" 2>/dev/null; then show_log; fail "the operator exited"; fi
  if curl -fsS -o /dev/null --max-time 2 "http://$health/readyz" 2>/dev/null; then
    ready=1
    break
  fi
  sleep 0.5
done
[ -n "$ready" ] || { show_log; fail "/readyz never became ready (informers could not list/watch?)"; }
echo "operator ready as $rel_ns/$sa"

k apply -n "$watch_ns" -f "$src/examples/agent.yaml" >/dev/null
k apply -n "$watch_ns" -f "$src/examples/manual-run.yaml" >/dev/null
phase=""
for _ in $(seq 120); do
  phase="$(k -n "$watch_ns" get hbr example-manual -o jsonpath='{.status.phase}' 2>/dev/null || true)"
  [ "$phase" = "Running" ] && break
  sleep 0.5
done
[ "$phase" = "Running" ] || { show_log; fail "the manual run is '$phase', not Running"; }
# Captured first: under pipefail, grep -q leaving early would SIGPIPE kubectl.
[ -n "$(k -n "$watch_ns" get job -l heartbeat.dev/agent=example -o name)" ] ||
  { show_log; fail "no Job for the manual run"; }
for o in serviceaccount role rolebinding; do
  [ -n "$(k -n "$watch_ns" get "$o" -l heartbeat.dev/agent=example -o name)" ] ||
    { show_log; fail "the operator made no per-agent $o"; }
done
k -n "$rel_ns" get lease "$(python3 -c 'import json,sys
for i in json.load(open(sys.argv[1]))["items"]:
    if i["kind"] == "Deployment":
        a=[x for x in i["spec"]["template"]["spec"]["containers"][0]["args"] if x.startswith("--leader-election-id=")]
        print(a[0].split("=",1)[1])' "$tmp/one-namespace.json")" >/dev/null ||
  { show_log; fail "no leader Lease in $rel_ns"; }

echo "== 5b. live: /metrics over HTTPS for an authorised scraper only (TokenReview, SubjectAccessReview)"
# -k: the chart's default certificate is self-signed, made at start.
status_of() { curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$@"; }
got="$(status_of -k "https://$metrics/metrics")"
[ "$got" = 401 ] || { show_log; fail "/metrics without a token answered $got, not 401"; }
got="$(status_of -H "Authorization: Bearer $token" "http://$metrics/metrics" || true)"
[ "$got" = 000 ] || { show_log; fail "/metrics in plain HTTP answered $got: the token would cross in clear"; }
got="$(status_of -k -H "Authorization: Bearer $token" "https://$metrics/metrics")"
[ "$got" = 403 ] || { show_log; fail "/metrics with the operator's own token answered $got, not 403"; }
k -n "$rel_ns" create serviceaccount scraper >/dev/null
reader="$(python3 -c 'import json,sys
for i in json.load(open(sys.argv[1]))["items"]:
    if i["kind"] == "ClusterRole" and i["metadata"]["name"].endswith("-metrics-reader"): print(i["metadata"]["name"])' "$tmp/one-namespace.json")"
[ -n "$reader" ] || fail "the render has no <release>-metrics-reader ClusterRole"
k create clusterrolebinding "$release-scraper" --clusterrole="$reader" \
  --serviceaccount="$rel_ns:scraper" >/dev/null
scraper_token="$(sa_token "$rel_ns" scraper)" || fail "no token for ServiceAccount $rel_ns/scraper"
got="$(curl -s -k --max-time 10 -H "Authorization: Bearer $scraper_token" "https://$metrics/metrics")"
grep -q '^heartbeat_' <<<"$got" || { show_log; fail "the bound scraper got no metrics: ${got:0:200}"; }
k delete clusterrolebinding "$release-scraper" >/dev/null
echo "ok: /metrics over HTTPS only; 401 without a token, 403 to the operator's own, 200 to the bound scraper"

echo "== 5c. live: a wakeup token opens its own namespace only"
wake_token="$(openssl rand -hex 24)"
k -n "$watch_ns" create secret generic heartbeat-wakeup --from-literal=token="$wake_token" >/dev/null
wake() { curl -s -o "$tmp/wake.json" -w '%{http_code}' --max-time 10 -X POST \
  -H "Authorization: Bearer $1" -d '{"reason":"helm test"}' \
  "http://$wakeup/api/v1/namespaces/$2/agents/example/wakeup"; }
# A standby answers 503 until this replica holds the leader Lease.
for _ in $(seq 60); do
  got="$(wake "not-the-token-0123456789" "$watch_ns")"
  [ "$got" = 503 ] || break
  sleep 0.5
done
[ "$got" = 404 ] || { show_log; fail "a wrong wakeup token answered $got, not 404"; }
got="$(wake "$wake_token" "$watch_ns")"
[ "$got" = 201 ] || { show_log; cat "$tmp/wake.json"; fail "the namespace's own token answered $got, not 201"; }
got="$(wake "$wake_token" default)"
[ "$got" = 404 ] || { show_log; fail "the token woke namespace default: $got, not 404"; }
echo "ok: its own namespace 201, a wrong token and another namespace 404"
if grep -qi 'forbidden' "$tmp/operator.log"; then show_log; fail "the operator was refused something"; fi
k -n "$watch_ns" get hba,hbr,jobs
echo "helm chart test: passed"
