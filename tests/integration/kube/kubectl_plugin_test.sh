#!/usr/bin/env bash
# The `kubectl heartbeat` plugin (tools/kubectl-heartbeat) against the local
# control plane (no operator, no kubelet): run statuses and agent spend are
# written here through the status subresource, as the operator would, and
# every command's output is compared cell by cell.
set -euo pipefail
src="${HB_SOURCE_DIR:?run under ctest}"
kubectl_bin="$(command -v kubectl || true)"
if [ -z "$kubectl_bin" ]; then
  kubectl_bin="$("$src/scripts/build-kube.sh" | tail -n 1)/kubectl"
fi
export KUBECTL="$kubectl_bin"
plugin_dir="$src/tools/kubectl-heartbeat"
plugin="$plugin_dir/kubectl-heartbeat"
k() { "$kubectl_bin" "$@"; }
ns="hb-it-plugin-$RANDOM"
ns_b="$ns-b"   # a second namespace, for -A
ns_s="$ns-s"   # spend: only the agents of that table
tmp="$(mktemp -d)"
policy_crd=heartbeatpolicies.heartbeat.dev
policy_owner="kubectl-plugin-$ns"
checks=0
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { checks=$((checks + 1)); }
cleanup() {
  for n in "$ns" "$ns_b" "$ns_s"; do k delete namespace "$n" --wait=false >/dev/null 2>&1 || true; done
  if [ "$(k get crd "$policy_crd" -o 'jsonpath={.metadata.labels.heartbeat\.dev/test}' 2>/dev/null)" = "$policy_owner" ]; then
    k delete crd "$policy_crd" --wait=false >/dev/null 2>&1 || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# hb ARGS: runs the plugin; sets out (stdout), err (stderr) and rc.
hb() {
  set +e
  out="$("$plugin" "$@" 2>"$tmp/err")"
  rc=$?
  set -e
  err="$(cat "$tmp/err")"
}
expect_rc() { [ "$rc" = "$1" ] || fail "$2: exit $rc, expected $1; stdout: $out; stderr: $err"; pass; }
expect_eq() { [ "$1" = "$2" ] || fail "$3: got [$1], expected [$2]"; pass; }
expect_in() { grep -qF -- "$2" <<<"$1" || fail "$3: [$2] not in: $1"; pass; }
# The table with runs of blanks squeezed to one: rows compare cell by cell.
squeeze() { tr -s ' ' <<<"$1"; }

mk_agent() { # NS NAME [BUDGET_CENTS]
  local budget=""
  [ -z "${3:-}" ] || budget="  budget: {monthlyCents: $3}"
  k create -n "$1" -f - >/dev/null <<EOF
apiVersion: heartbeat.dev/v1alpha1
kind: Agent
metadata: {name: $2}
spec:
  model: {provider: openai, model: stand-in}
  heartbeat: {interval: 1h}
$budget
EOF
}
mk_run() { # NS NAME AGENT SOURCE [LABEL]
  local labels="{}"
  [ -z "${5:-}" ] || labels="{heartbeat.dev/agent: $5}"
  k create -n "$1" -f - >/dev/null <<EOF
apiVersion: heartbeat.dev/v1alpha1
kind: HeartbeatRun
metadata: {name: $2, labels: $labels}
spec: {agentRef: {name: $3}, invocationSource: $4}
EOF
}
set_status() { # NS PLURAL NAME STATUS_JSON: a PUT to the status subresource, as the operator writes
  k get "$2.heartbeat.dev" "$3" -n "$1" -o json | jq --argjson s "$4" '.status = $s' |
    k replace --raw "/apis/heartbeat.dev/v1alpha1/namespaces/$1/$2/$3/status" -f - >/dev/null
}

k apply -f "$src/crds/" >/dev/null
k wait --for condition=established --timeout=60s crd/agents.heartbeat.dev crd/heartbeatruns.heartbeat.dev >/dev/null
for n in "$ns" "$ns_b" "$ns_s"; do k create namespace "$n" >/dev/null; done

# --- usage ------------------------------------------------------------------
hb
expect_rc 0 "no arguments"
expect_in "$out" "usage: kubectl heartbeat" "no arguments prints the usage"
hb bogus
expect_rc 2 "an unknown command"
expect_in "$err" 'error: unknown command "bogus"' "unknown command names it"
expect_in "$err" "usage: kubectl heartbeat" "unknown command prints the usage line"
hb invoke
expect_rc 2 "invoke without AGENT"
expect_in "$err" "invoke needs AGENT" "missing argument names it"
expect_in "$err" "usage: kubectl heartbeat invoke AGENT" "missing argument prints the command's usage"
hb -n "$ns" pause a b
expect_rc 2 "pause with two agents"
hb runs a --limit x
expect_rc 2 "runs --limit x"
expect_in "$err" 'invalid --limit "x"' "bad --limit names it"
hb logs r -A
expect_rc 2 "logs -A"
hb invoke a --wait --timeout soon
expect_rc 2 "invoke --timeout soon"
hb spend --frobnicate
expect_rc 2 "an unknown flag"
expect_in "$err" "unknown flag: --frobnicate" "unknown flag names it"
# kubectl finds it on PATH as a plugin.
out="$(PATH="$plugin_dir:$PATH" "$kubectl_bin" heartbeat --help)" || fail "kubectl heartbeat --help failed"
expect_in "$out" "usage: kubectl heartbeat" "kubectl runs the plugin from PATH"

# --- invoke -----------------------------------------------------------------
mk_agent "$ns" alpha
mk_agent "$ns" delta.v2
hb -n "$ns" invoke nosuch
expect_rc 1 "invoke of a missing agent"
expect_in "$err" "agent \"nosuch\" not found in namespace \"$ns\"" "missing agent error names agent and namespace"
expect_eq "$(k get hbr -n "$ns" -o name | wc -l)" 0 "no run is made for a missing agent"

hb -n "$ns" invoke alpha --reason 'deploy "42" finished'
expect_rc 0 "invoke alpha"
run="$out"
[[ "$run" =~ ^alpha-manual-[a-z0-9]{5}$ ]] || fail "invoke printed [$run], not the run's name"
expect_eq "$(k get hbr "$run" -n "$ns" -o json | jq -c '[.spec.agentRef.name, .spec.invocationSource, .spec.triggerDetail, .metadata.labels["heartbeat.dev/agent"]]')" \
  '["alpha","manual","deploy \"42\" finished","alpha"]' "the invoked run's spec and label"
hb --namespace="$ns" invoke alpha
expect_rc 0 "invoke alpha without --reason"
expect_eq "$(k get hbr "$out" -n "$ns" -o 'jsonpath={.spec.triggerDetail}')" "kubectl heartbeat invoke" "default reason"
# A name that is no DNS label: the label is controllers/model/names.cpp's
# label_safe_name ("delta-v2-" and the FNV-1a hash of "delta.v2").
hb -n "$ns" invoke delta.v2
expect_rc 0 "invoke delta.v2"
expect_eq "$(k get hbr "$out" -n "$ns" -o 'jsonpath={.metadata.labels.heartbeat\.dev/agent}')" "delta-v2-e168d8f9" "label of a dotted agent name"
delta_run="$out"
hb -n "$ns" runs delta.v2
expect_eq "$(squeeze "$out" | sed -n 2p | cut -d' ' -f1-3)" "$delta_run manual -" "runs of a dotted agent name"

# --wait: nobody finishes this run, so it times out.
start=$(date +%s)
hb -n "$ns" invoke alpha --wait --timeout 3s
elapsed=$(($(date +%s) - start))
expect_rc 1 "invoke --wait on a run nobody finishes"
waited_run="$(head -1 <<<"$out")"
expect_in "$err" "timed out after 3s waiting for run \"$waited_run\"" "--wait says it timed out"
if [ "$elapsed" -lt 3 ] || [ "$elapsed" -gt 10 ]; then fail "--wait --timeout 3s took ${elapsed}s"; fi
pass

# --wait on runs that end: the phase decides the exit code.
finish_next_run() { # AGENT STATUS_JSON: waits for the agent's next run, then ends it
  local r=""
  for _ in $(seq 100); do
    r="$(k get hbr -n "$ns" -l "heartbeat.dev/agent=$1" -o 'jsonpath={.items[0].metadata.name}' 2>/dev/null || true)"
    [ -z "$r" ] || break
    sleep 0.1
  done
  [ -n "$r" ] || return 1
  set_status "$ns" heartbeatruns "$r" "$2"
}
mk_agent "$ns" echo
mk_agent "$ns" foxtrot
finish_next_run echo '{"phase":"Succeeded","reason":"Completed","durationSeconds":42,"usage":{"costCents":1.25,"inputTokens":900,"outputTokens":80}}' &
finisher=$!
hb -n "$ns" invoke echo --wait --timeout 30s
wait "$finisher" || fail "could not finish echo's run"
expect_rc 0 "invoke --wait on a run that succeeds"
expect_eq "$(sed -n 2p <<<"$out")" "$(head -1 <<<"$out"): Succeeded (Completed), cost 1.25 cents, tokens 900/80, duration 42s" "--wait summary"
finish_next_run foxtrot '{"phase":"TimedOut","reason":"DeadlineExceeded","usage":{"costCents":7}}' &
finisher=$!
hb -n "$ns" invoke foxtrot --wait --timeout 30s
wait "$finisher" || fail "could not finish foxtrot's run"
expect_rc 1 "invoke --wait on a run that times out"
expect_in "$out" ": TimedOut (DeadlineExceeded), cost 7 cents" "--wait summary of a TimedOut run"

# --- pause / resume ---------------------------------------------------------
mk_agent "$ns" gamma
hb -n "$ns" pause gamma
expect_rc 0 "pause"
expect_in "$out" "agent $ns/gamma paused" "pause says what it did"
expect_eq "$(k get hba gamma -n "$ns" -o 'jsonpath={.spec.paused}')" true "pause sets spec.paused"
hb -n "$ns" pause gamma
expect_rc 0 "pause again"
expect_in "$out" "already paused" "pause of a paused agent"
hb -n "$ns" invoke gamma
expect_rc 0 "invoke of a paused agent"
expect_in "$err" "is paused" "invoke warns that the agent is paused"
hb -n "$ns" resume gamma
expect_rc 0 "resume"
expect_in "$out" "agent $ns/gamma resumed" "resume says what it did"
expect_eq "$(k get hba gamma -n "$ns" -o 'jsonpath={.spec.paused}')" false "resume clears spec.paused"
hb -n "$ns" resume nosuch
expect_rc 1 "resume of a missing agent"
expect_in "$err" "agent \"nosuch\" not found in namespace \"$ns\"" "resume: missing agent error"

# --- pause / resume --policy (the HeartbeatPolicy's kill switch) -------------
k wait --for condition=established --timeout=60s "crd/$policy_crd" >/dev/null
k create -n "$ns" -f - >/dev/null <<EOF
apiVersion: heartbeat.dev/v1alpha1
kind: HeartbeatPolicy
metadata: {name: team}
spec: {selector: {matchLabels: {team: a}}}
EOF
expect_eq "$(k get hbp team -n "$ns" -o 'jsonpath={.spec.paused}')" false "spec.paused defaults to false"
hb -n "$ns" pause --policy team
expect_rc 0 "pause --policy"
expect_in "$out" "policy $ns/team paused (spec.paused=true)" "pause --policy says what it did"
expect_in "$out" "a running run finishes" "pause --policy says runs in flight finish"
expect_eq "$(k get hbp team -n "$ns" -o 'jsonpath={.spec.paused}')" true "pause --policy sets spec.paused"
expect_eq "$(k get hbp team -n "$ns" -o 'jsonpath={.spec.selector.matchLabels.team}')" a "pause --policy keeps the rest of the spec"
hb -n "$ns" pause --policy=team
expect_rc 0 "pause --policy again"
expect_in "$out" "already paused" "pause of a paused policy"
hb -n "$ns" resume --policy team
expect_rc 0 "resume --policy"
expect_in "$out" "policy $ns/team resumed (spec.paused=false)" "resume --policy says what it did"
expect_eq "$(k get hbp team -n "$ns" -o 'jsonpath={.spec.paused}')" false "resume --policy clears spec.paused"
k patch hbp team -n "$ns" --type=merge -p '{"spec":{"cancelRunning":true}}' >/dev/null
hb -n "$ns" pause --policy team
expect_in "$out" "running runs are cancelled (spec.cancelRunning)" "pause --policy says runs in flight are cancelled"
hb -n "$ns" resume --policy nosuch
expect_rc 1 "resume --policy of a missing policy"
expect_in "$err" "policy \"nosuch\" not found in namespace \"$ns\"" "resume --policy: missing policy error"
hb -n "$ns" pause gamma --policy team
expect_rc 2 "pause with an AGENT and --policy"
expect_in "$err" "usage: kubectl heartbeat pause AGENT | kubectl heartbeat pause --policy NAME" "pause --policy usage line"
hb -n "$ns" runs gamma --policy team
expect_rc 2 "runs --policy"
expect_in "$err" "runs does not take --policy" "--policy only where it applies"

# --- runs -------------------------------------------------------------------
# Three runs of beta a second apart (creationTimestamp has whole seconds):
# labelled as the operator labels them, and one a user made (no label).
mk_agent "$ns" beta
mk_run "$ns" beta-1000 beta scheduler beta
set_status "$ns" heartbeatruns beta-1000 '{"phase":"Succeeded","reason":"Completed","startedAt":"2026-01-02T03:04:05Z","durationSeconds":75,"usage":{"costCents":12.5,"inputTokens":1000,"outputTokens":200}}'
mk_run "$ns" beta-other other-agent scheduler other-agent   # another agent's runs: not listed
mk_run "$ns" other-manual other-agent manual
sleep 1
started="$(date -u -d '-125 seconds' +%Y-%m-%dT%H:%M:%SZ)"
mk_run "$ns" beta-by-hand beta manual
set_status "$ns" heartbeatruns beta-by-hand "{\"phase\":\"Running\",\"startedAt\":\"$started\"}"
sleep 1
mk_run "$ns" beta-3000 beta callback beta
set_status "$ns" heartbeatruns beta-3000 '{"phase":"Failed","reason":"ExitCode","startedAt":"2026-01-02T05:00:00Z","durationSeconds":3700,"usage":{"costCents":3,"inputTokens":50}}'
mk_agent "$ns_b" beta
mk_run "$ns_b" beta-b1 beta scheduler beta

hb -n "$ns" runs beta
expect_rc 0 "runs beta"
table="$(squeeze "$out")"
expect_eq "$(sed -n 1p <<<"$table")" "NAME SOURCE PHASE REASON COST TOKENS DURATION STARTED" "runs header"
expect_eq "$(sed -n 2p <<<"$table")" "beta-3000 callback Failed ExitCode 3 50/- 1h1m 2026-01-02T05:00:00Z" "runs: the newest run first"
row="$(sed -n 3p <<<"$table")"
[[ "$row" =~ ^beta-by-hand\ manual\ Running\ -\ -\ -\ 2m([5-9]|1[0-9])s\ $started$ ]] ||
  fail "runs: the unlabelled running run: [$row]"
pass
expect_eq "$(sed -n 4p <<<"$table")" "beta-1000 scheduler Succeeded Completed 12.5 1000/200 1m15s 2026-01-02T03:04:05Z" "runs: the oldest run last"
expect_eq "$(wc -l <<<"$table")" 4 "runs lists beta's runs only"
hb runs beta -n "$ns" --limit 2
expect_eq "$(squeeze "$out" | cut -d' ' -f1 | tr '\n' ' ')" "NAME beta-3000 beta-by-hand " "runs --limit 2"
hb -A runs beta
expect_rc 0 "runs -A"
table="$(squeeze "$out")"
expect_eq "$(sed -n 1p <<<"$table")" "NAMESPACE NAME SOURCE PHASE REASON COST TOKENS DURATION STARTED" "runs -A header"
expect_in "$table" "$ns_b beta-b1 scheduler - - - - - -" "runs -A: the run in the second namespace"
expect_in "$table" "$ns beta-3000 callback Failed" "runs -A: the first namespace's runs"
hb -n "$ns" runs nobody
expect_rc 0 "runs of an agent without runs"
expect_eq "$out" "no runs of agent \"nobody\" in namespace \"$ns\"" "runs: empty"

# --- logs -------------------------------------------------------------------
mk_agent "$ns" lima
mk_run "$ns" lima-gone lima manual
set_status "$ns" heartbeatruns lima-gone '{"phase":"Succeeded","podName":"lima-gone-pod","jobName":"lima-gone-job","output":"All quiet.\nNothing to do.","stdoutExcerpt":"{\"event\":\"result\"}","log":{"ref":"pod/x/lima-gone-pod/runner","transcript":{"ref":"pvc/lima-archive/transcripts/lima-gone.jsonl.gz","bytes":2048,"sha256":"'"$(printf 'a%.0s' {1..64})"'","compressed":true,"truncated":true,"note":"the volume was full"}}}'
hb -n "$ns" logs lima-gone
expect_rc 1 "logs of a run whose Job is gone"
expect_in "$err" "the Pod \"lima-gone-pod\" and Job \"lima-gone-job\" of run \"lima-gone\" in namespace \"$ns\" are gone" "logs: gone message"
expect_eq "$out" $'All quiet.\nNothing to do.\n{"event":"result"}' "logs prints status.output and stdoutExcerpt"
expect_in "$err" "stored at pvc/lima-archive/transcripts/lima-gone.jsonl.gz (2048 bytes, sha256 aaaa" "logs: names the stored transcript"
expect_in "$err" "cut: the volume was full" "logs: says the stored transcript was cut"
mk_run "$ns" lima-queued lima manual
hb -n "$ns" logs lima-queued
expect_rc 1 "logs of a run without a Job"
expect_in "$err" "has no Job yet" "logs: no Job yet"
expect_eq "$out" "" "logs: no output to print"
hb -n "$ns" logs nosuch
expect_rc 1 "logs of a missing run"
expect_in "$err" "run \"nosuch\" not found in namespace \"$ns\"" "logs: missing run"
# A Pod that exists (no kubelet: never on a node) without a runner
# container: the API server refuses `-c runner`, which shows the plugin asks
# for that container; the run's output still follows.
for _ in $(seq 100); do k get sa default -n "$ns" >/dev/null 2>&1 && break; sleep 0.1; done
k create -n "$ns" -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: lima-odd-pod}
spec:
  automountServiceAccountToken: false
  containers: [{name: tools, image: stand-in}]
EOF
mk_run "$ns" lima-odd lima manual
set_status "$ns" heartbeatruns lima-odd '{"phase":"Running","podName":"lima-odd-pod","output":"so far"}'
hb -n "$ns" logs lima-odd
expect_rc 1 "logs of a Pod without a runner container"
expect_in "$err" "container runner is not valid for pod lima-odd-pod" "logs asks for the runner container"
expect_eq "$out" "so far" "logs falls back to status.output"
# A real Job (the Job controller makes its Pod, labelled job-name) and a run
# that names only the Job: the plugin finds the Pod; Pending, no log yet.
k create -n "$ns" -f - >/dev/null <<EOF
apiVersion: batch/v1
kind: Job
metadata: {name: lima-job}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      automountServiceAccountToken: false
      containers: [{name: tools, image: stand-in}, {name: runner, image: stand-in}]
EOF
job_pod=""
for _ in $(seq 200); do
  job_pod="$(k get pods -n "$ns" -l job-name=lima-job -o 'jsonpath={.items[0].metadata.name}' 2>/dev/null || true)"
  [ -z "$job_pod" ] || break
  sleep 0.1
done
[ -n "$job_pod" ] || fail "the Job controller made no Pod for lima-job"
mk_run "$ns" lima-job lima manual
set_status "$ns" heartbeatruns lima-job '{"phase":"Running","jobName":"lima-job"}'
hb -n "$ns" logs lima-job
expect_rc 0 "logs of a run whose Pod is Pending"
expect_in "$err" "note: Pod \"$job_pod\" of run \"lima-job\" is Pending" "logs finds the Job's Pod"
expect_eq "$out" "" "a Pending Pod has no log"

# --- spend ------------------------------------------------------------------
month="$(date -u +%Y-%m)"
prev="$(date -u -d "$(date -u +%Y-%m-15) -1 month" +%Y-%m)"
mk_agent "$ns_s" s-capped 1000
mk_agent "$ns_s" s-free
mk_agent "$ns_s" s-old 500
mk_agent "$ns_s" s-new 0
mk_agent "$ns_s" s-over 200
set_status "$ns_s" agents s-capped "{\"phase\":\"Idle\",\"spend\":{\"period\":\"$month\",\"cents\":150.2}}"
set_status "$ns_s" agents s-free "{\"phase\":\"Running\",\"spend\":{\"period\":\"$month\",\"cents\":20.1}}"
set_status "$ns_s" agents s-old "{\"phase\":\"Idle\",\"spend\":{\"period\":\"$prev\",\"cents\":400}}"
set_status "$ns_s" agents s-over "{\"phase\":\"BudgetExceeded\",\"spend\":{\"period\":\"$month\",\"cents\":250}}"
set_status "$ns_b" agents beta "{\"phase\":\"Idle\",\"spend\":{\"period\":\"$month\",\"cents\":5}}"
hb -n "$ns_s" spend
expect_rc 0 "spend"
table="$(squeeze "$out")"
expected="NAMESPACE AGENT PERIOD SPENT BUDGET USED PHASE
$ns_s s-capped $month 150.2 1000 15% Idle
$ns_s s-free $month 20.1 unlimited - Running
$ns_s s-new - - 0 - -
$ns_s s-old $prev 400 500 - Idle
$ns_s s-over $month 250 200 125% BudgetExceeded
TOTAL - $month 420.3 - - -"
expect_eq "$(head -7 <<<"$table")" "$expected" "spend table"

hb -A spend
expect_rc 0 "spend -A"
table="$(squeeze "$out")"
expect_in "$table" "$ns_s s-capped $month 150.2 1000 15% Idle" "spend -A: first namespace"
expect_in "$table" "$ns_b beta $month 5 unlimited - Idle" "spend -A: second namespace"
expect_in "$table" "$ns alpha - - unlimited - -" "spend -A: an agent without status"
# TOTAL is the sum of this month's SPENT cells, whoever else uses the control plane.
sum="$(while read -r namespace _ period spent _; do
    [ "$namespace" = TOTAL ] || [ "$period" != "$month" ] || [ "$spent" = - ] || echo "$spent"
  done <<<"$table" | jq -rs '(add * 10000 | round) / 10000 | tostring')"
total="$(grep '^TOTAL ' <<<"$table" | head -1)"
expect_eq "$total" "TOTAL - $month $sum - - -" "spend -A: TOTAL"

# Another tenant's Agent nested deeper than jq parses (spec.runtime.volumes
# keeps unknown fields; the API server takes it) does not break spend -A.
deep=1
for _ in $(seq 300); do deep="{\"a\":$deep}"; done
k create -n "$ns_b" -f - >/dev/null <<EOF
{"apiVersion": "heartbeat.dev/v1alpha1", "kind": "Agent", "metadata": {"name": "deep"},
 "spec": {"model": {"provider": "openai", "model": "stand-in"}, "heartbeat": {"interval": "1h"},
          "runtime": {"volumes": [{"name": "v", "csi": $deep}]}}}
EOF
# Positive control: the whole object is more than jq takes.
if k get hba deep -n "$ns_b" -o json | jq . >/dev/null 2>&1; then
  fail "control: jq parsed an Agent nested 300 levels deep; the case below shows nothing"
fi
pass
hb -A spend
expect_rc 0 "spend -A beside an Agent nested 300 levels deep"
expect_in "$(squeeze "$out")" "$ns_b deep - - unlimited - -" "spend -A lists the deep Agent"
expect_in "$(squeeze "$out")" "$ns_b beta $month 5 unlimited - Idle" "spend -A: the rest as before"

# Per policy: nothing while the resource does not exist; listed once it does
# (a stand-in CRD made here when the cluster serves none; with the real one
# installed, as the control_plane fixture does, these checks are skipped).
if k get crd "$policy_crd" >/dev/null 2>&1; then
  echo "skipped the policy checks: $policy_crd exists already"
else
  hb -n "$ns_s" spend
  expect_eq "$(wc -l <<<"$out")" 7 "spend without policies prints the agents only"
  k create -f - >/dev/null <<EOF
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: $policy_crd
  labels: {heartbeat.dev/test: $policy_owner}
spec:
  group: heartbeat.dev
  scope: Namespaced
  names: {kind: HeartbeatPolicy, plural: heartbeatpolicies, singular: heartbeatpolicy, listKind: HeartbeatPolicyList}
  versions:
    - name: v1alpha1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
EOF
  k wait --for condition=established --timeout=30s "crd/$policy_crd" >/dev/null
  for _ in $(seq 100); do
    k get --raw /apis/heartbeat.dev/v1alpha1 | jq -e '.resources[] | select(.name == "heartbeatpolicies")' >/dev/null && break
    sleep 0.1
  done
  k create -n "$ns_s" -f - >/dev/null <<EOF
apiVersion: heartbeat.dev/v1alpha1
kind: HeartbeatPolicy
metadata: {name: team}
spec: {budget: {monthlyCents: 5000}}
status: {spend: {period: "$month", cents: 420.3}}
EOF
  hb -n "$ns_s" spend
  k delete crd "$policy_crd" --wait=false >/dev/null
  expect_rc 0 "spend with policies"
  table="$(squeeze "$out")"
  expect_eq "$(sed -n 8,10p <<<"$table")" "
NAMESPACE POLICY PERIOD SPENT BUDGET USED
$ns_s team $month 420.3 5000 8%" "spend: per policy"
fi

echo "kubectl plugin test: $checks checks passed"
