# The scenarios of cluster_test.sh (sourced after cluster_lib.sh).

# Pod create -> the runner's first model request, three manual runs one after
# another (nothing else runs): the Pod is seen in the API by polling, the
# request by the stand-in model's own log (milliseconds, UTC).
scenario_first_model_request() {
  step "Pod create -> first model request"
  apply_agent timing "Say hello."
  local i pod_seen request_at samples=()
  for i in 1 2 3; do
    create_run timing "timing-$i"
    pod_seen=""
    for _ in $(seq 600); do
      if k -n "$ns" get pods -l "heartbeat.dev/run=timing-$i" -o name 2>/dev/null | grep -q .; then
        pod_seen="$(date -u +%s.%N)"
        break
      fi
      sleep 0.05
    done
    [ -n "$pod_seen" ] || fail "no Pod for run timing-$i within 30 s"
    wait_phase "timing-$i" Succeeded 90
    # Both containers end: the tools server exits when the runner's lifeline closes.
    poll_until 30 job_complete "timing-$i" ||
      fail "Job timing-$i not complete; its Pod: $(pod_states "timing-$i")"
    request_at="$(awk -v t="$pod_seen" '
      { cmd = "date -u -d " $1 " +%s.%N"; cmd | getline s; close(cmd);
        if (s + 0 >= t + 0 && $2 == "POST") { print s; exit } }' "$state/model.log")"
    [ -n "$request_at" ] || fail "the stand-in model logged no request after run timing-$i's Pod appeared"
    samples+=("$(awk -v a="$pod_seen" -v b="$request_at" 'BEGIN { printf "%.0f", (b - a) * 1000 }')")
  done
  echo "Pod create -> runner's first model request on the real node: ${samples[*]} ms (3 runs)"
}

# One scheduled heartbeat whose shell calls look around the tools container.
scenario_pod_as_the_kubelet_runs_it() {
  step "a scheduled run; the Pod as the kubelet runs it"
  apply_agent probe "Look around. [[shell id]] [[shell ls /var/run/secrets/kubernetes.io/serviceaccount]] [[shell env]] [[shell ps]] [[shell touch /probe-was-here]]" \
    '{"heartbeat": {"interval": "30s"}}'
  local run=""
  wait_until 90 "a scheduled run of probe" has_runs probe
  run="$(k -n "$ns" get hbr -l heartbeat.dev/agent=probe -o jsonpath='{.items[0].metadata.name}')"
  wait_phase "$run" Succeeded 120
  expect "probe's run is not from the scheduler" [ "$(run_field "$run" .spec.invocationSource)" = scheduler ]
  local job logs tools_logs out
  job="$(run_field "$run" .status.jobName)"
  logs="$(k -n "$ns" logs "job/$job" -c runner)"
  tools_logs="$(k -n "$ns" logs "job/$job" -c tools)"
  # What the tools container said, as the runner's transcript (kubectl logs) shows it.
  out="$(jq -Rr 'fromjson? | select(.event == "tool_result") | .content' <<<"$logs")"
  expect "kubectl logs shows no transcript with tool results: $logs" [ "$(grep -c '"tool_result"' <<<"$logs")" -ge 5 ]
  expect "the tools container does not run as uid 65533: $out" grep -q 'uid=65533' <<<"$out"
  expect "the tools container sees a ServiceAccount token: $out" grep -q 'serviceaccount: No such file or directory' <<<"$out"
  if grep -q 'sk-cluster-stand-in\|HEARTBEAT_API_KEY' <<<"$out"; then fail "the key is in the tools container's environment"; fi
  if grep -q 'heartbeat-runner' <<<"$out"; then fail "the tools container sees the runner's process: $out"; fi
  expect "the tools container's root filesystem is writable: $out" grep -q 'Read-only file system' <<<"$out"
  expect "kubectl logs -c tools shows nothing of the calls: $tools_logs" grep -q 'probe-was-here' <<<"$tools_logs"
  # The plugin shows the same transcript from the run's name alone.
  local plugin_logs
  plugin_logs="$(KUBECTL="$kubectl_bin" bash "$src/tools/kubectl-heartbeat/kubectl-heartbeat" -n "$ns" logs "$run")"
  expect "kubectl heartbeat logs differs from kubectl logs" [ "$plugin_logs" = "$logs" ]
  echo "ok: scheduled run $run: tools as 65533, no token, no key, no runner process, read-only root; transcript in kubectl logs and kubectl heartbeat logs"
}

# pause_heartbeats, a budget stop, a timeout and a cancel, side by side.
scenario_lifecycle() {
  step "pause_heartbeats, budget, timeout, cancel"
  apply_agent pauser "Rest a while. [[pause 30]]"
  apply_agent spender "Spend. [[expensive]]" \
    '{"budget": {"monthlyCents": 1}, "model": {"maxTokens": 100, "pricing": {"inputCentsPerMillionTokens": 0, "outputCentsPerMillionTokens": 10000}}}'
  apply_agent slow "Work long. [[sleep 120]]" '{"runtime": {"timeoutSeconds": 20, "graceSeconds": 2}}'
  apply_agent canceller "Work long. [[sleep 120]]"
  create_run pauser pauser-1
  create_run spender spender-1
  create_run slow slow-1
  create_run canceller canceller-1

  wait_phase canceller-1 Running 90
  wait_until 60 "a beat from canceller-1's runner" runner_beat canceller canceller-1
  k -n "$ns" patch hbr canceller-1 --type=merge -p '{"spec":{"cancel":true}}' >/dev/null
  wait_phase canceller-1 Cancelled 60
  wait_until 60 "canceller-1's cost recorded" cost_recorded canceller-1
  expect "canceller-1 charged no model call: $(show_run canceller-1)" [ "$(run_field canceller-1 '.status.usage.llmCalls // 0')" -ge 1 ]
  echo "ok: cancel: $(run_field canceller-1 '.status | {phase, reason, stopReason, exitCode, usage: {llmCalls: .usage.llmCalls, costCents: .usage.costCents}}' | tr -d '\n ')"

  wait_phase pauser-1 Succeeded 90
  expect "pauser-1 did not stop for pause_heartbeats" [ "$(run_field pauser-1 .status.stopReason)" = pause_heartbeats ]
  wait_until 30 "pauser Paused" agent_phase_is pauser Paused
  expect "pauser has no pausedUntil" [ -n "$(agent_field pauser '.status.pausedUntil // empty')" ]
  echo "ok: pause_heartbeats: pauser Paused until $(agent_field pauser .status.pausedUntil)"

  wait_phase spender-1 'Succeeded|Failed' 90
  expect "spender-1 cost $(run_field spender-1 .status.usage.costCents), not 1 cent" [ "$(run_field spender-1 .status.usage.costCents)" = 1 ]
  wait_until 30 "spender's BudgetExceeded condition" agent_condition_true spender BudgetExceeded
  create_run spender spender-2
  sleep 10
  expect "a run started past the budget: $(show_run spender-2)" [ "$(run_field spender-2 .status.phase)" = Queued ]
  echo "ok: budget: spender-1 cost 1 cent; BudgetExceeded; spender-2 waits Queued"

  wait_phase slow-1 'TimedOut|Failed|Succeeded' 120
  if [ "$(run_field slow-1 .status.phase)" = TimedOut ]; then
    expect "slow-1 timed out for another reason" [ "$(run_field slow-1 .status.reason)" = DeadlineExceeded ]
  else
    expect "slow-1 did not stop at its deadline: $(show_run slow-1)" [ "$(run_field slow-1 .status.stopReason)" = deadline ]
  fi
  echo "ok: timeout: slow-1 $(run_field slow-1 '.status | {phase, reason, stopReason}' | tr -d '\n ')"
}

# A runner frozen in its container (SIGSTOP to its host pid): the lease
# watchdog fails the run as Stalled and its Job goes.
scenario_stall() {
  step "a frozen runner"
  apply_agent staller "Work long. [[sleep 120]]" '{"runtime": {"graceSeconds": 2}}'
  create_run staller staller-1
  wait_phase staller-1 Running 90
  wait_until 60 "a beat from staller-1's runner" runner_beat staller staller-1
  local pid job
  # The kubelet reports container IDs to the API a moment after they start.
  wait_until 30 "staller-1's containers in its Pod's status" container_pid staller-1 tools
  wait_until 30 "staller-1's containers in its Pod's status" container_pid staller-1 runner
  pid="$(container_pid staller-1 runner || true)"
  [ -n "$pid" ] || fail "no host pid for staller-1's runner container"
  job="$(run_field staller-1 .status.jobName)"
  # The containers as the kernel sees them (the kubelet's doing, not the spec's).
  local tools_pid
  tools_pid="$(container_pid staller-1 tools || true)"
  [ -n "$tools_pid" ] || fail "no host pid for staller-1's tools container"
  expect "the runner runs as uid $(uid_of "$pid"), not 65532" [ "$(uid_of "$pid")" = 65532 ]
  expect "the tools server runs as uid $(uid_of "$tools_pid"), not 65533" [ "$(uid_of "$tools_pid")" = 65533 ]
  expect "runner and tools share a pid namespace" [ "$(readlink "/proc/$pid/ns/pid")" != "$(readlink "/proc/$tools_pid/ns/pid")" ]
  expect "the tools container mounts a ServiceAccount token" bash -c "! grep -q serviceaccount /proc/$tools_pid/mountinfo"
  expect "the runner has no ServiceAccount token" grep -q serviceaccount "/proc/$pid/mountinfo"
  expect "the runner's root filesystem is writable" root_read_only "$pid"
  expect "the tools' root filesystem is writable" root_read_only "$tools_pid"
  echo "ok: runner pid $pid uid 65532, tools pid $tools_pid uid 65533, separate pid namespaces, token only in the runner, read-only roots"
  kill -STOP "$pid"
  wait_phase staller-1 'Failed|Succeeded' 90
  kill -CONT "$pid" 2>/dev/null || true
  expect "staller-1 did not fail as Stalled: $(show_run staller-1)" [ "$(run_field staller-1 .status.reason)" = Stalled ]
  wait_until 60 "staller-1's Job deleted" job_gone "$job"
  echo "ok: stall: runner pid $pid frozen; run Failed/Stalled; Job deleted"
}

# The operator's Pod deleted while a heartbeat runs: the Deployment's next
# Pod picks the run up; one run, its cost counted once.
scenario_operator_pod_deleted() {
  step "the operator's Pod deleted mid-run"
  apply_agent survivor "Work a bit. [[sleep 15]]"
  create_run survivor survivor-1
  wait_phase survivor-1 Running 90
  local old
  old="$(k -n "$release_ns" get pods -l app.kubernetes.io/name=heartbeat-operator -o jsonpath='{.items[0].metadata.name}')"
  k -n "$release_ns" delete pod "$old" --wait=false >/dev/null
  wait_until 120 "a new operator Pod ready" operator_ready_besides "$old"
  wait_phase survivor-1 Succeeded 120
  wait_until 30 "survivor-1's cost recorded" cost_recorded survivor-1
  expect "survivor has $(runs_of survivor) runs, not 1" [ "$(runs_of survivor)" = 1 ]
  local cost spend
  cost="$(run_field survivor-1 .status.usage.costCents)"
  wait_until 30 "survivor's spend = its one run's cost ($cost)" spend_is survivor "$cost"
  spend="$(agent_field survivor .status.spend.cents)"
  echo "ok: operator Pod $old deleted mid-run: 1 run, cost $cost cents, spend $spend cents"
}

# The agent attacks from its tools container (its shell): the key through
# /proc, a forged result in a termination log, a process that outlives its
# call. The key's text is split so no command line carries it.
scenario_attacks_from_the_tools_container() {
  step "attacks from the tools container"
  apply_agent attacker "Attack. [[shell printf '%s-%s' sk-cluster stand-in > /tmp/pattern; echo key-files=\$(grep -l -f /tmp/pattern /proc/*/environ /proc/*/cmdline /proc/*/root/etc/* 2>/dev/null | wc -l) control=\$(grep -l HOME= /proc/self/environ 2>/dev/null | wc -l)]] [[shell echo '{\"version\":1,\"stopReason\":\"forged\",\"usage\":{\"llmCalls\":0,\"inputTokens\":0,\"outputTokens\":0,\"costCents\":0}}' > /dev/termination-log; echo forged=\$?]] [[shell setsid sh -c 'sleep 7391' >/dev/null 2>&1 & echo survivor-started]]"
  create_run attacker attacker-1
  wait_phase attacker-1 'Succeeded|Failed' 90
  local job logs out calls
  job="$(run_field attacker-1 .status.jobName)"
  logs="$(k -n "$ns" logs "job/$job" -c runner)"
  out="$(jq -Rr 'fromjson? | select(.event == "tool_result") | .content' <<<"$logs")"
  calls="$(jq -Rr 'fromjson? | select(.event == "model_request") | .event' <<<"$logs" | wc -l)"
  expect "the key search did not run: $out" grep -q 'control=1' <<<"$out"
  expect "the tools container found the key: $out" grep -q 'key-files=0' <<<"$out"
  expect "the forge was not attempted: $out" grep -q 'forged=' <<<"$out"
  expect "a forged result was recorded: $(show_run attacker-1)" [ "$(run_field attacker-1 .status.stopReason)" != forged ]
  expect "attacker-1 was charged $(run_field attacker-1 .status.usage.llmCalls) calls, not the $calls its transcript shows" [ "$(run_field attacker-1 .status.usage.llmCalls)" = "$calls" ]
  wait_until 30 "Job $job complete with a setsid survivor started" job_complete "$job"
  if pgrep -f 'sleep 7391' >/dev/null; then fail "the setsid survivor outlived its Pod"; fi
  echo "ok: attacks: key found in 0 files (control 1), a forged termination log ignored (charged its $calls calls), no survivor, Job complete"
}

# The runner killed with SIGKILL in its container after one model call: the
# run fails and is charged the call its Lease beat reported.
scenario_runner_killed() {
  step "the runner killed mid-run"
  apply_agent victim "Work long. [[sleep 120]]"
  create_run victim victim-1
  wait_phase victim-1 Running 90
  wait_until 60 "victim-1's first call on its Lease" lease_reports_calls victim 1
  wait_until 30 "victim-1's runner in its Pod's status" container_pid victim-1 runner
  local pid
  pid="$(container_pid victim-1 runner || true)"
  [ -n "$pid" ] || fail "no host pid for victim-1's runner"
  kill -KILL "$pid"
  wait_phase victim-1 'Failed|Succeeded|Cancelled|TimedOut' 90
  expect "victim-1 did not fail: $(show_run victim-1)" [ "$(run_field victim-1 .status.phase)" = Failed ]
  wait_until 30 "victim-1's cost recorded" cost_recorded victim-1
  expect "victim-1 charged $(run_field victim-1 .status.usage.llmCalls) calls, not 1" [ "$(run_field victim-1 .status.usage.llmCalls)" = 1 ]
  echo "ok: runner killed: $(run_field victim-1 '.status | {phase, reason, exitCode, usage: {llmCalls: .usage.llmCalls, costCents: .usage.costCents}}' | tr -d '\n ')"
}

# An agent with an archival claim (a hostPath volume on the node, owned as
# the kubelet's fsGroup handling would leave it): each run's whole
# transcript lands on the claim, gzip, with the size and digest its status
# names; a run's file goes when its run is trimmed from history.
scenario_stored_transcript() {
  step "the whole transcript on the agent's archival claim, trimmed with its runs"
  local dir="$state/archival-volume" claim=scribe-archive
  rm -rf "$dir" && mkdir -p "$dir" && chown 65532:65532 "$dir" && chmod 2770 "$dir"
  jq -n --arg dir "$dir" --arg claim "$claim" --arg ns "$ns" '{apiVersion: "v1", kind: "List", items: [
    {apiVersion: "v1", kind: "PersistentVolume", metadata: {name: "hb-test-\($claim)"},
     spec: {capacity: {storage: "1Gi"}, accessModes: ["ReadWriteOnce"], storageClassName: "",
            persistentVolumeReclaimPolicy: "Retain", hostPath: {path: $dir, type: "Directory"},
            claimRef: {namespace: $ns, name: $claim}}},
    {apiVersion: "v1", kind: "PersistentVolumeClaim", metadata: {name: $claim, namespace: $ns},
     spec: {accessModes: ["ReadWriteOnce"], storageClassName: "", volumeName: "hb-test-\($claim)",
            resources: {requests: {storage: "1Gi"}}}}]}' | k apply -f - >/dev/null
  wait_until 60 "claim $claim bound" claim_bound "$claim"
  apply_agent scribe "Write it down. [[shell echo scribe-was-here]]" \
    "{\"memory\": {\"archival\": {\"persistentVolumeClaimName\": \"$claim\"}}, \"heartbeat\": {\"historyLimits\": {\"succeeded\": 1}}}"
  local i run file
  for i in 1 2 3; do
    create_run scribe "scribe-$i"
    wait_phase "scribe-$i" Succeeded 120
  done
  run=scribe-3
  file="$dir/transcripts/$run.jsonl.gz"
  expect "no transcript file $file: $(ls -la "$dir" "$dir/transcripts" 2>&1 | tr '\n' ' ')" [ -s "$file" ]
  expect "$run's log.transcript.ref: $(show_run "$run" | tr -d '\n')" \
    [ "$(run_field "$run" .status.log.transcript.ref)" = "pvc/$claim/transcripts/$run.jsonl.gz" ]
  expect "$run's log.transcript.bytes is not the file's size" \
    [ "$(run_field "$run" .status.log.transcript.bytes)" = "$(stat -c %s "$file")" ]
  expect "$run's log.transcript.sha256 is not the file's digest" \
    [ "$(run_field "$run" .status.log.transcript.sha256)" = "$(sha256sum "$file" | cut -d' ' -f1)" ]
  expect "$run's transcript is not marked compressed" [ "$(run_field "$run" .status.log.transcript.compressed)" = true ]
  local lines
  lines="$(zcat "$file")" || fail "$file is not gzip"
  expect "the stored transcript lacks the tool's output: $lines" grep -q 'scribe-was-here' <<<"$lines"
  expect "the stored transcript does not end with the result" [ "$(tail -1 <<<"$lines" | jq -r .event)" = result ]
  expect "the stored transcript is not JSON lines" jq -e . <<<"$lines" >/dev/null
  expect "$run's stdoutExcerpt is empty" [ -n "$(run_field "$run" '.status.stdoutExcerpt // empty')" ]
  # historyLimits.succeeded 1: scribe-1 was trimmed before scribe-3 started.
  wait_until 60 "scribe-1 trimmed from history" run_gone scribe-1
  expect "scribe-1's transcript outlived its run: $(ls "$dir/transcripts")" [ ! -e "$dir/transcripts/scribe-1.jsonl.gz" ]
  expect "scribe-2's transcript went while the operator still kept scribe-2 at scribe-3's start" \
    [ -e "$dir/transcripts/scribe-2.jsonl.gz" ]
  # Once the Job and its Pod are gone, the plugin names the stored copy. The
  # Pod goes first (foreground), else `logs` would still read it.
  k -n "$ns" delete job "$(run_field "$run" .status.jobName)" --cascade=foreground --wait=true >/dev/null
  wait_until 60 "$run's Pod deleted with its Job" pod_gone "$(run_field "$run" .status.podName)"
  local plugin
  plugin="$(KUBECTL="$kubectl_bin" bash "$src/tools/kubectl-heartbeat/kubectl-heartbeat" -n "$ns" logs "$run" 2>&1 >/dev/null || true)"
  expect "kubectl heartbeat logs does not name the stored transcript: $plugin" grep -q "pvc/$claim/transcripts/$run.jsonl.gz" <<<"$plugin"
  echo "ok: $run's transcript on the claim: $(stat -c %s "$file") bytes, sha256 matches its status; scribe-1's file trimmed with its run, scribe-2's kept"
}

# A schedule in a time zone: the operator's image carries tzdata and the
# tz library, so 09:00 in Berlin is announced as the right UTC instant.
scenario_zoned_schedule() {
  step "a schedule in Europe/Berlin, from the operator's image"
  apply_agent berlin "Good morning." '{"heartbeat": {"schedule": "0 9 * * *", "timeZone": "Europe/Berlin", "interval": null}}'
  wait_until 60 "berlin's nextHeartbeatTime" agent_has_next berlin
  local next
  next="$(agent_field berlin .status.nextHeartbeatTime)"
  expect "berlin's next heartbeat $next is not 09:00 in Berlin" [ "$(TZ=Europe/Berlin date -d "$next" +%H:%M)" = 09:00 ]
  expect "berlin's spec is not valid: $(agent_field berlin .status.conditions)" agent_condition_true berlin SpecValid
  echo "ok: 0 9 * * * in Europe/Berlin: next heartbeat $next"
}
