# Helpers for cluster_test.sh (sourced; it sets k, ns, model_url, state and
# the HB_NODE_* variables from node.sh env).

# apply_agent NAME PROMPT [EXTRA_JSON]: an Agent on the stand-in model,
# EXTRA_JSON merged into its spec (a null there removes the field).
apply_agent() {
  local name=$1 prompt=$2 extra=${3:-'{}'}
  jq -n --arg name "$name" --arg prompt "$prompt" --arg url "$model_url" --argjson extra "$extra" '{
    apiVersion: "heartbeat.dev/v1alpha1", kind: "Agent", metadata: {name: $name},
    spec: ({
      type: "memgpt_agent",
      model: {provider: "openai", model: "gpt-4o-mini", baseURL: $url,
              apiKeySecretRef: {name: "llm", key: "api-key"}, maxTokens: 256,
              pricing: {inputCentsPerMillionTokens: 15, outputCentsPerMillionTokens: 60}},
      persona: "You are a test agent on a real node.",
      heartbeat: {prompt: $prompt, interval: "1h"},
      runtime: {timeoutSeconds: 300, graceSeconds: 5}
    } * $extra)} | del(.. | nulls)' | k -n "$ns" apply -f - >/dev/null
}

create_run() {  # create_run AGENT RUN: a manual run, as a user makes one
  printf 'apiVersion: heartbeat.dev/v1alpha1\nkind: HeartbeatRun\nmetadata: {name: %s}\nspec:\n  agentRef: {name: %s}\n  invocationSource: manual\n' \
    "$2" "$1" | k -n "$ns" create -f - >/dev/null
}

run_field() { k -n "$ns" get hbr "$1" -o json 2>/dev/null | jq -r "$2"; }
agent_field() { k -n "$ns" get agent "$1" -o json 2>/dev/null | jq -r "$2"; }
runs_of() { k -n "$ns" get hbr -l "heartbeat.dev/agent=$1" -o name | wc -l; }

poll_until() {  # poll_until SECONDS CMD...: false if CMD never held
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.5
  done
}
wait_until() {  # wait_until SECONDS DESCRIPTION CMD...: fails the test if CMD never held
  local seconds=$1 what=$2; shift 2
  poll_until "$seconds" "$@" || fail "$what: not within ${seconds}s"
}

phase_is() { [[ "$(run_field "$1" .status.phase)" =~ ^($2)$ ]]; }
wait_phase() {  # wait_phase RUN PHASE_REGEX SECONDS
  local deadline=$((SECONDS + $3))
  until phase_is "$1" "$2"; do
    [ $SECONDS -lt $deadline ] ||
      fail "run $1 did not reach $2 within $3 s; its status: $(show_run "$1" | tr -d '\n')"
    sleep 0.5
  done
}

show_run() { run_field "$1" '.status | del(.output)'; }

expect() {  # expect DESCRIPTION CMD...: a check that must hold now
  local what=$1; shift
  "$@" || fail "$what"
}

# The host pid of a run's container, from containerd (the node's view).
container_pid() {  # container_pid RUN CONTAINER
  local id
  id="$(k -n "$ns" get pods -l "heartbeat.dev/run=$1" -o json |
    jq -r --arg c "$2" '.items[0].status.containerStatuses[]? | select(.name == $c) | .containerID // empty' |
    sed 's#^containerd://##')"
  [ -n "$id" ] || return 1
  ctr --address "$HB_NODE_CONTAINERD_SOCKET" -n k8s.io tasks ls |
    awk -v id="$id" '$1 == id && $3 == "RUNNING" {print $2; found = 1} END {exit !found}'
}

runner_beat() {  # runner_beat AGENT RUN: the run's runner renewed its agent's Lease
  local lease
  lease="$(k -n "$ns" get lease "$1-heartbeat" -o json 2>/dev/null)" || return 1
  [ "$(jq -r '.spec.holderIdentity' <<<"$lease")" = "$2" ] &&
    [ -n "$(jq -r '.spec.renewTime // empty' <<<"$lease")" ]
}

# Predicates for wait_until (evaluated afresh on every try).
has_runs() { [ "$(runs_of "$1")" -gt 0 ]; }
cost_recorded() { [ "$(run_field "$1" .status.costRecorded)" = true ]; }
agent_phase_is() { [ "$(agent_field "$1" .status.phase)" = "$2" ]; }
agent_condition_true() {
  [ "$(agent_field "$1" ".status.conditions[] | select(.type == \"$2\") | .status")" = True ]
}
spend_is() { [ "$(agent_field "$1" .status.spend.cents)" = "$2" ]; }
job_gone() { ! k -n "$ns" get job "$1" >/dev/null 2>&1; }
pod_gone() { [ -z "$1" ] || ! k -n "$ns" get pod "$1" >/dev/null 2>&1; }
operator_ready_besides() {  # a ready operator Pod other than $1
  k -n "$release_ns" get pods -l app.kubernetes.io/name=heartbeat-operator \
    -o jsonpath='{range .items[*]}{.metadata.name} {.status.containerStatuses[0].ready}{"\n"}{end}' |
    grep -v "^$1 " | grep -q ' true$'
}
job_complete() { [ "$(k -n "$ns" get job "$1" -o jsonpath='{.status.succeeded}')" = 1 ]; }
pod_states() {  # each container's state in a run's Pod, for messages
  k -n "$ns" get pods -l "heartbeat.dev/run=$1" -o json |
    jq -c '[.items[].status.containerStatuses[] | {name, state}]' 2>/dev/null
}
uid_of() { awk '/^Uid:/ {print $2}' "/proc/$1/status"; }
root_read_only() {  # the mount at / in the process's mount namespace is read-only
  awk '$5 == "/" {print $6}' "/proc/$1/mountinfo" | tail -1 | grep -q '^ro'
}
lease_reports_calls() {  # lease_reports_calls AGENT N: the runner's usage beat counts N calls
  k -n "$ns" get lease "$1-heartbeat" -o json 2>/dev/null |
    jq -e --argjson n "$2" '.metadata.annotations["heartbeat.dev/usage"] // "{}" | fromjson | (.llmCalls // 0) >= $n' >/dev/null
}
claim_bound() { [ "$(k -n "$ns" get pvc "$1" -o jsonpath='{.status.phase}')" = Bound ]; }
run_gone() { ! k -n "$ns" get hbr "$1" >/dev/null 2>&1; }
agent_has_next() { [ -n "$(agent_field "$1" '.status.nextHeartbeatTime // empty')" ]; }
