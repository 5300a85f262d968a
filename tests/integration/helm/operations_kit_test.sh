#!/usr/bin/env bash
# The chart's operations kit: the PrometheusRule and the Grafana dashboard.
#  1. neither renders by default; with prometheusRule.enabled and
#     grafanaDashboard.enabled both do, `helm lint --strict` is clean, and the
#     dashboard ConfigMap (sidecar label, namespace, annotations) is accepted
#     by `kubectl apply --dry-run=server` and carries the chart's JSON as is;
#  2. the rule groups, extracted from the rendered PrometheusRule, pass
#     `promtool check rules` and the unit tests in heartbeat_rules_test.yaml
#     (`promtool test rules`); rendered with a threshold moved (the budget
#     ratio, the overdue margin, the provider-quota and budget-stop `for`)
#     they must fail them on that alert; every dashboard query, as a
#     recording rule, passes `promtool check rules` too. promtool comes from
#     scripts/install-promtool.sh (run by scripts/install-deps.sh); the test
#     fails without it;
#  3. live: the real operator binary runs against the control plane, and every
#     metric name in the rules and in the dashboard's queries has a
#     `# TYPE <family>` line in its /metrics (`_bucket`/`_sum`/`_count` count
#     for their histogram family).
set -euo pipefail
src="${HB_SOURCE_DIR:?run under ctest}"
build="${HB_BUILD_DIR:-$src/build}"
chart="$src/helm/heartbeat-operator"
here="$(cd "$(dirname "$0")" && pwd)"
operator_bin="${HB_OPERATOR_BIN:-$build/operator/heartbeat-operator}"
dashboard="$chart/dashboards/heartbeat-operator.json"

fail() { echo "FAIL: $*" >&2; exit 1; }
command -v python3 >/dev/null || fail "python3 is needed"
command -v curl >/dev/null || fail "curl is needed"

helm_bin="$(bash "$src/scripts/install-helm.sh" | tail -n 1)"
[ -x "$helm_bin" ] || fail "scripts/install-helm.sh printed no helm binary"
kubectl_bin="$(bash "$src/scripts/build-kube.sh" 2>/dev/null | tail -n 1)/kubectl"
[ -x "$kubectl_bin" ] || kubectl_bin="$(command -v kubectl)" || fail "no kubectl"
promtool="${HEARTBEAT_CACHE_DIR:-$HOME/.cache/heartbeat-operator}/promtool/usr/bin/promtool"
[ -x "$promtool" ] || promtool="$(command -v promtool)" ||
  fail "no promtool: run scripts/install-deps.sh (it runs scripts/install-promtool.sh)"
helm() { "$helm_bin" "$@"; }
k() { "$kubectl_bin" "$@"; }

id="$RANDOM$RANDOM"
# A fixed release name: the rules' default selector is job="hb-heartbeat-operator-metrics",
# which heartbeat_rules_test.yaml's series carry.
release=hb
ns="hb-it-opskit-$id"
tmp="$(mktemp -d)"
operator_pid=""
cleanup() {
  if [ -n "$operator_pid" ]; then
    kill -TERM "$operator_pid" 2>/dev/null || true
    wait "$operator_pid" 2>/dev/null || true
  fi
  k delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
on=(--set prometheusRule.enabled=true --set grafanaDashboard.enabled=true)

echo "== 1. rendering"
helm template "$release" "$chart" -n "$ns" >"$tmp/default.yaml"
if grep -q '^kind: PrometheusRule$' "$tmp/default.yaml"; then fail "a PrometheusRule is rendered by default"; fi
if grep -q 'dashboards/heartbeat-operator.json\|grafana_dashboard' "$tmp/default.yaml"; then
  fail "the dashboard ConfigMap is rendered by default"
fi
lint_out="$(helm lint --strict "$chart" "${on[@]}" 2>&1)" || { echo "$lint_out"; fail "helm lint failed"; }
if grep -E '\[(WARNING|ERROR)\]' <<<"$lint_out"; then fail "helm lint reported the lines above"; fi
helm template "$release" "$chart" -n "$ns" "${on[@]}" --show-only templates/prometheusrule.yaml >"$tmp/pr.yaml"
{ grep -q '^apiVersion: monitoring.coreos.com/v1$' "$tmp/pr.yaml" && grep -q '^kind: PrometheusRule$' "$tmp/pr.yaml"; } ||
  fail "prometheusRule.enabled=true renders no monitoring.coreos.com/v1 PrometheusRule"
helm template "$release" "$chart" -n "$ns" --set prometheusRule.enabled=true \
  --set prometheusRule.labels.release=prometheus --set 'prometheusRule.selector=job="heartbeat"' \
  --set prometheusRule.alerts.runsStalled.enabled=false \
  --show-only templates/prometheusrule.yaml >"$tmp/pr-custom.yaml"
grep -q '^    release: prometheus$' "$tmp/pr-custom.yaml" || fail "prometheusRule.labels is not rendered"
grep -qF 'leader_election_master_status{ job="heartbeat" }' "$tmp/pr-custom.yaml" ||
  fail "prometheusRule.selector is not used"
if grep -q 'HeartbeatRunsStalled' "$tmp/pr-custom.yaml"; then fail "alerts.runsStalled.enabled=false still renders it"; fi
echo "ok: PrometheusRule renders only when enabled (labels, selector, per-alert switch)"

helm template "$release" "$chart" -n "$ns" "${on[@]}" --set grafanaDashboard.namespace="$ns" \
  --set grafanaDashboard.annotations.k8s-sidecar-target-directory=Heartbeat \
  --show-only templates/dashboard.yaml >"$tmp/dashboard.yaml"
k create namespace "$ns" >/dev/null
k apply --dry-run=server -f "$tmp/dashboard.yaml" -o json >"$tmp/dashboard.json" ||
  fail "kubectl apply --dry-run=server refused the dashboard ConfigMap"
python3 - "$tmp/dashboard.json" "$dashboard" "$ns" <<'EOF' || fail "the dashboard ConfigMap is not right (above)"
import json, sys
cm, path, ns = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
errors = []
md = cm["metadata"]
if cm["kind"] != "ConfigMap": errors.append("not a ConfigMap")
if md.get("labels", {}).get("grafana_dashboard") != "1": errors.append("no label grafana_dashboard: \"1\"")
if md.get("namespace") != ns: errors.append(f"namespace {md.get('namespace')}, not {ns}")
if md.get("annotations", {}).get("k8s-sidecar-target-directory") != "Heartbeat":
    errors.append("grafanaDashboard.annotations not rendered")
text = open(path).read()
if cm["data"].get("heartbeat-operator.json") != text.rstrip("\n"):
    errors.append("data heartbeat-operator.json differs from " + path)
d = json.loads(text)
if d.get("uid") != "heartbeat-operator": errors.append(f"uid {d.get('uid')!r}")
variables = {v["name"]: v for v in d["templating"]["list"]}
if variables.get("datasource", {}).get("type") != "datasource" or variables["datasource"].get("query") != "prometheus":
    errors.append("no Prometheus datasource variable `datasource`")
ids = [p["id"] for p in d["panels"]]
if len(ids) != len(set(ids)): errors.append(f"duplicate panel ids {ids}")
for p in d["panels"]:
    for t in p.get("targets", []):
        if t.get("datasource", {}).get("uid") != "${datasource}":
            errors.append(f"panel {p['title']!r}: a target not on ${{datasource}}")
        if 'job=~"$job"' not in t["expr"]:
            errors.append(f"panel {p['title']!r}: {t['expr']} does not filter on $job")
for e in errors: print("  " + e)
print(f"  {len(d['panels'])} panels: " + "; ".join(p["title"] for p in d["panels"]))
sys.exit(1 if errors else 0)
EOF
echo "ok: the dashboard ConfigMap (sidecar label, namespace, annotation) is accepted by the server and holds the chart's JSON"

echo "== 2. promtool check rules / test rules ($("$promtool" --version 2>&1 | head -n 1))"
# The PrometheusRule's spec is a Prometheus rules file, indented by two.
rules_of() { sed -n '/^spec:$/,$p' "$1" | tail -n +2 | sed 's/^  //'; }
rules_of "$tmp/pr.yaml" >"$tmp/heartbeat-rules.yaml"
grep -q '^groups:$' "$tmp/heartbeat-rules.yaml" || fail "no groups: under the PrometheusRule's spec"
"$promtool" check rules "$tmp/heartbeat-rules.yaml" || fail "promtool check rules refused the rendered rules"
cp "$here/heartbeat_rules_test.yaml" "$tmp/"
"$promtool" test rules "$tmp/heartbeat_rules_test.yaml" || fail "the rules' unit tests failed (above)"
# The same tests against rules rendered with a threshold moved must fail, on
# that alert: must_fail_with KEY FIELD VALUE ALERTNAME renders with
# prometheusRule.alerts.KEY.FIELD=VALUE.
must_fail_with() {
  local alert_key="$1" key="$2" value="$3" alert="$4" dir="$tmp/moved-$1-$2"
  mkdir "$dir"
  cp "$here/heartbeat_rules_test.yaml" "$dir/"
  printf 'prometheusRule:\n  enabled: true\n  alerts:\n    %s:\n      %s: %s\n' "$alert_key" "$key" "$value" >"$dir/values.yaml"
  helm template "$release" "$chart" -n "$ns" -f "$dir/values.yaml" --show-only templates/prometheusrule.yaml >"$dir/pr.yaml"
  rules_of "$dir/pr.yaml" >"$dir/heartbeat-rules.yaml"
  if "$promtool" test rules "$dir/heartbeat_rules_test.yaml" >"$dir/out" 2>&1; then
    fail "the rules' unit tests pass with $alert_key.$key=$value: they do not see the rules"
  fi
  grep -q "$alert" "$dir/out" || { cat "$dir/out"; fail "with $alert_key.$key=$value the unit tests fail, but not on $alert"; }
  echo "ok: with $alert_key.$key=$value the unit tests fail on $alert"
}
must_fail_with budgetNearlySpent ratio 0.9 HeartbeatAgentBudgetNearlySpent
must_fail_with agentOverdue marginSeconds 900 HeartbeatAgentOverdue
must_fail_with providerThrottled for 30m HeartbeatAgentProviderThrottled
must_fail_with budgetStopped for 5m HeartbeatAgentStoppedByBudget
# The dashboard's queries parse as PromQL: each becomes a recording rule
# (Grafana's variables replaced by values) that promtool checks.
python3 - "$dashboard" >"$tmp/dashboard-rules.yaml" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
print("groups:\n  - name: dashboard-queries\n    rules:")
for p in d["panels"]:
    for t in p.get("targets", []):
        expr = t["expr"].replace("$__rate_interval", "5m").replace("$job", ".+")
        print(f"      - record: dashboard:panel_{p['id']}_{t['refId'].lower()}")
        print(f"        expr: {json.dumps(expr)}")
EOF
"$promtool" check rules "$tmp/dashboard-rules.yaml" || fail "a dashboard query is not valid PromQL (above)"

echo "== 3. every metric name in the rules and the dashboard is in the operator's /metrics"
[ -x "$operator_bin" ] || fail "$operator_bin is not built (build target heartbeat-operator)"
k apply -f "$src/crds/" >/dev/null 2>"$tmp/crds.err" || { cat "$tmp/crds.err"; fail "could not apply crds/"; }
k wait --for condition=established --timeout=60s crd/agents.heartbeat.dev crd/heartbeatruns.heartbeat.dev >/dev/null
metrics="127.0.0.1:$(python3 "$src/scripts/free-port.py")"
health="127.0.0.1:$(python3 "$src/scripts/free-port.py")"
# It runs "in" a namespace of its own: the one it runs in is never managed.
POD_NAMESPACE="$ns-operator" "$operator_bin" --kubeconfig="${KUBECONFIG:?}" --leader-elect=false --namespace="$ns" \
  --metrics-address="$metrics" --metrics-auth=none --health-address="$health" --log-format=text \
  >"$tmp/operator.log" 2>&1 &
operator_pid=$!
show_log() { echo "--- operator log"; tail -n 40 "$tmp/operator.log"; }
got=""
for _ in $(seq 100); do
  if ! kill -0 "$operator_pid" 2>/dev/null; then show_log; fail "the operator exited"; fi
  if curl -fsS --max-time 2 -o "$tmp/metrics.txt" "http://$metrics/metrics" 2>/dev/null; then
    got=1
    break
  fi
  sleep 0.2
done
[ -n "$got" ] || { show_log; fail "no /metrics on $metrics"; }
python3 - "$tmp/heartbeat-rules.yaml" "$dashboard" "$tmp/metrics.txt" <<'EOF' || fail "names above are missing from /metrics"
import json, re, sys
rules_path, dashboard_path, metrics_path = sys.argv[1:]
# Metric names: the operator's prefixes. The rules file is taken whole
# (expressions and annotations); of the dashboard, every query.
name = re.compile(r"\b(?:heartbeat|controller_runtime|workqueue|rest_client|leader_election)_[a-z_]+\b")
used = {}
for n in name.findall(open(rules_path).read()):
    used.setdefault(n, set()).add("rules")
def walk(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("expr", "definition") and isinstance(v, str):
                yield v
            elif k == "query" and isinstance(v, (str, dict)):
                yield v if isinstance(v, str) else v.get("query", "")
            else:
                yield from walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from walk(v)
for q in walk(json.load(open(dashboard_path))):
    for n in name.findall(q):
        used.setdefault(n, set()).add("dashboard")
types = {}
for line in open(metrics_path):
    m = re.match(r"# TYPE (\S+) (\S+)", line)
    if m:
        types[m.group(1)] = m.group(2)
missing = []
for n in sorted(used):
    where = "+".join(sorted(used[n]))
    if n in types:
        print(f"  ok       {n} ({types[n]}; {where})")
        continue
    base = re.sub(r"_(bucket|sum|count)$", "", n)
    if base != n and types.get(base) in ("histogram", "summary"):
        print(f"  ok       {n} (of {types[base]} {base}; {where})")
        continue
    print(f"  MISSING  {n} ({where}): no '# TYPE {n}' in /metrics")
    missing.append(n)
print(f"  {len(used) - len(missing)} of {len(used)} names found")
sys.exit(1 if missing or not used else 0)
EOF
echo "operations kit test: passed"
