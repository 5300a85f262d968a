#!/usr/bin/env bash
# The Dockerfile's images, built and run for real with podman + runc:
#  1. scripts/images.sh builds both targets (as `docker build --target`);
#     their sizes are printed.
#  2. What is inside: the entrypoints and uid 65532 the Jobs and the chart
#     expect, no package manager, a shell only in the runner image.
#  3. The runner image runs a heartbeat as its Pod would: the tools server as
#     uid 65533 and the runner as uid 65532 in two containers, read-only root
#     filesystems, sharing only the socket directory; against the scripted
#     model the agent runs a shell command in the tools container and pauses.
#     The result is checked from the termination file, the tools server exits
#     by itself when the runner's lifeline closes.
#  4. The operator image starts against the real control plane (TLS with the
#     kubeconfig's CA, list/watch of its kinds) and reports /readyz.
set -euo pipefail
src="${HB_SOURCE_DIR:?run under ctest}"
build="${HB_BUILD_DIR:?run under ctest}"
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "building and running the images needs root here (podman rootful); run the rest with: ctest -LE images"

images_out="$(bash "$src/scripts/images.sh")" || fail "scripts/images.sh failed"
echo "$images_out"
runner_image="$(awk '/heartbeat-runner:/ {print $1}' <<<"$images_out")"
operator_image="$(awk '/heartbeat-operator:/ {print $1}' <<<"$images_out")"
[ -n "$runner_image" ] && [ -n "$operator_image" ] || fail "images.sh did not name both images"
pm() { podman --runtime runc "$@"; }
run_flags=(--ulimit nofile=1024:1024 --ulimit nproc=1024:1024)

tmp="$(mktemp -d)"
id="hbimg$$"
cleanup() {
  pm rm -f "$id-tools" "$id-runner" "$id-operator" >/dev/null 2>&1 || true
  [ -n "${model_pid:-}" ] && kill "$model_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# --- 2. contents -------------------------------------------------------------
inspect() { pm image inspect --format "$2" "$1"; }
for image in "$runner_image" "$operator_image"; do
  [ "$(inspect "$image" '{{.Config.User}}')" = 65532:65532 ] || fail "$image does not run as 65532:65532"
done
[ "$(inspect "$runner_image" '{{json .Config.Entrypoint}}')" = '["/usr/local/bin/heartbeat-runner"]' ] ||
  fail "the runner image's entrypoint is not /usr/local/bin/heartbeat-runner"
[ "$(inspect "$operator_image" '{{json .Config.Entrypoint}}')" = '["/usr/local/bin/heartbeat-operator"]' ] ||
  fail "the operator image's entrypoint is not /usr/local/bin/heartbeat-operator"
file_list() {  # file_list IMAGE: every path in the image's filesystem
  local c
  c="$(pm create "$1")"
  pm export "$c" | tar -t
  pm rm "$c" >/dev/null
}
file_list "$runner_image" >"$tmp/runner.files"
file_list "$operator_image" >"$tmp/operator.files"
for f in usr/local/bin/heartbeat-runner usr/local/bin/heartbeat-tools usr/bin/busybox usr/bin/sh \
  etc/ssl/certs/ca-certificates.crt usr/share/zoneinfo/Europe/Berlin; do
  grep -qx "$f" "$tmp/runner.files" || fail "the runner image lacks /$f"
done
grep -qx usr/local/bin/heartbeat-operator "$tmp/operator.files" || fail "the operator image lacks its binary"
grep -Eq '^usr/bin/(sh|busybox|bash|dash)$' "$tmp/operator.files" && fail "the operator image has a shell"
cat "$tmp/runner.files" "$tmp/operator.files" | grep -Eq '^usr/bin/(apt|apt-get|dpkg|dpkg-deb|rpm)$' &&
  fail "an image holds a package manager"
echo "ok: contents ($(wc -l <"$tmp/runner.files") paths in the runner image, $(wc -l <"$tmp/operator.files") in the operator image)"

# --- 3. a heartbeat in the runner image -------------------------------------
model_bin="$build/tools/fake_model/hb-fake-model"
[ -x "$model_bin" ] || fail "$model_bin is not built"
"$model_bin" --port 0 --port-file "$tmp/model.port" 2>"$tmp/model.log" &
model_pid=$!
for _ in $(seq 50); do [ -s "$tmp/model.port" ] && break; sleep 0.1; done
model_port="$(cat "$tmp/model.port")"
deadline="$(date -u -d '+10 min' +%Y-%m-%dT%H:%M:%SZ)"
mkdir -p "$tmp/socket" "$tmp/workspace" "$tmp/context" "$tmp/result"
chown 65533:65533 "$tmp/socket" "$tmp/workspace"
chmod 0711 "$tmp/socket"
chown 65532:65532 "$tmp/result"
cat >"$tmp/context/context.json" <<EOF
{
  "kind": "HeartbeatContext",
  "agent": {"name": "image-test", "namespace": "images", "type": "memgpt_agent"},
  "model": {"provider": "openai", "model": "hb-fake-model", "baseURL": "http://127.0.0.1:$model_port/v1",
            "maxTokens": 256, "pricing": {"inputCentsPerMillionTokens": 15, "outputCentsPerMillionTokens": 60}},
  "persona": "You check that images work.",
  "heartbeat": {"prompt": "[[sleep 1]] [[pause 30]]"},
  "run": {"name": "image-test-1", "invocationSource": "manual", "triggerDetail": "images_test",
          "deadline": "$deadline"}
}
EOF
pm run -d --name "$id-tools" "${run_flags[@]}" --network none --read-only --user 65533:65533 \
  -v "$tmp/socket:/run/heartbeat-tools" -v "$tmp/workspace:/workspace" --tmpfs /tmp -w /workspace \
  --entrypoint /usr/local/bin/heartbeat-tools "$runner_image" \
  --socket=/run/heartbeat-tools/tools.sock --workdir=/workspace >/dev/null
for _ in $(seq 50); do [ -S "$tmp/socket/tools.sock" ] && break; sleep 0.1; done
[ -S "$tmp/socket/tools.sock" ] || { pm logs "$id-tools" >&2; fail "the tools server made no socket"; }
runner_status=0
pm run --name "$id-runner" "${run_flags[@]}" --network host --read-only --user 65532:65532 \
  -v "$tmp/socket:/run/heartbeat-tools" -v "$tmp/context:/etc/heartbeat:ro" -v "$tmp/result:/result" \
  -e HEARTBEAT_API_KEY=image-test-key -e HEARTBEAT_TOOLS_SOCKET=/run/heartbeat-tools/tools.sock \
  -e HEARTBEAT_CONTEXT_PATH=/etc/heartbeat/context.json -e HEARTBEAT_TERMINATION_PATH=/result/termination-log \
  "$runner_image" >"$tmp/runner.out" 2>"$tmp/runner.err" || runner_status=$?
show() { echo "--- runner stdout"; tail -20 "$tmp/runner.out"; echo "--- runner stderr"; tail -20 "$tmp/runner.err"; echo "--- tools"; pm logs "$id-tools" 2>&1 | tail -10; }
[ "$runner_status" = 0 ] || { show; fail "the runner exited $runner_status"; }
python3 - "$tmp/result/termination-log" <<'PY' || { show; fail "the result is not a paused heartbeat with usage"; }
import json, sys
r = json.load(open(sys.argv[1]))
assert r["stopReason"] == "pause_heartbeats", r
assert r["pauseMinutes"] == 30, r
assert r["usage"]["toolCalls"] >= 2 and r["usage"]["inputTokens"] > 0 and r["usage"]["costCents"] > 0, r
print("ok: result", json.dumps({k: r[k] for k in ("stopReason", "pauseMinutes", "usage")}))
PY
grep -q 'sleep 1' "$tmp/runner.out" || { show; fail "the transcript does not show the shell call"; }
# Captured first: under pipefail, grep -q leaving early would SIGPIPE the writer.
tools_log="$(pm logs "$id-tools" 2>&1 || true)"
grep -q 'sleep 1' <<<"$tools_log" || { show; fail "the shell command did not run in the tools container"; }
for _ in $(seq 100); do
  [ "$(pm inspect --format '{{.State.Running}}' "$id-tools")" = false ] && break
  sleep 0.1
done
[ "$(pm inspect --format '{{.State.Running}}' "$id-tools")" = false ] ||
  fail "the tools server still runs 10 s after the runner's lifeline closed"
echo "ok: a heartbeat ran in the runner image (tools as 65533, runner as 65532, read-only roots)"

# --- 4. the operator image against the control plane ------------------------
: "${KUBECONFIG:?run under ctest with the control_plane fixture}"
kubectl_bin="$(bash "$src/scripts/build-kube.sh" | tail -1)/kubectl"
"$kubectl_bin" apply -f "$src/helm/heartbeat-operator/crds/" >/dev/null
"$kubectl_bin" create namespace images-test --dry-run=client -o yaml | "$kubectl_bin" apply -f - >/dev/null
health="127.0.0.1:$(python3 "$src/scripts/free-port.py")"
metrics="127.0.0.1:$(python3 "$src/scripts/free-port.py")"
# The kubeconfig embeds its credentials; a copy the container's user can read.
mkdir -p "$tmp/kube" && cp "$KUBECONFIG" "$tmp/kube/config"
chown -R 65532:65532 "$tmp/kube"
pm run -d --name "$id-operator" "${run_flags[@]}" --network host --read-only \
  -v "$tmp/kube:/kube:ro" "$operator_image" --kubeconfig=/kube/config \
  --namespace=images-test --leader-elect=false --health-address="$health" \
  --metrics-address="$metrics" >/dev/null
ready=""
for _ in $(seq 120); do
  curl -fsS -o /dev/null --max-time 2 "http://$health/readyz" 2>/dev/null && { ready=1; break; }
  [ "$(pm inspect --format '{{.State.Running}}' "$id-operator")" = true ] || break
  sleep 0.5
done
[ -n "$ready" ] || { pm logs "$id-operator" 2>&1 | tail -20; fail "the operator image never became ready"; }
echo "ok: the operator image is ready against the control plane"
echo "images test: passed"
