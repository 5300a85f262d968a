#!/usr/bin/env bash
# A real local Kubernetes control plane for tests and the demo: etcd,
# kube-apiserver and kube-controller-manager on free loopback ports, with its
# own CA, client-certificate and token auth, RBAC and service-account signing.
# No kubelet: pods stay Pending unless a test plays the kubelet.
#
#   control-plane.sh up DIR       start (idempotent); DIR holds everything
#   control-plane.sh down DIR     stop exactly the processes `up` started
#   control-plane.sh env DIR      print export lines (KUBECONFIG, ...)
#   control-plane.sh restart-apiserver DIR   stop and start kube-apiserver
#   control-plane.sh compact DIR  compact etcd at its current revision
#   control-plane.sh status DIR
#
# Several DIRs may run at once: ports are chosen free, state is per DIR.
# Env: HB_KCM_EXTRA_CONTROLLERS / HB_KCM_FEATURE_GATES add controllers and
# feature gates to kube-controller-manager (benchmarks).
# Env: HB_KCM_API_QPS / HB_KCM_API_BURST set kube-controller-manager's own
# API rate (Kubernetes' defaults, 20 / 30, unless set; the fleet bench raises
# them: the Job controller creates every heartbeat's Pod).
# HB_CONTROL_PLANE_ADDRESS (at `up`): serve on this local IPv4 address instead
# of 127.0.0.1, one a real node and its Pods can reach (tests/cluster/node.sh
# sets it), and run what a node needs: kube-scheduler, the endpoint and
# node-lifecycle controllers, kubelet client credentials.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cmd="${1:-}"
dir="${2:-${HB_CONTROL_PLANE_DIR:-}}"
[ -n "$cmd" ] && [ -n "$dir" ] || { sed -n '2,19p' "$0" >&2; exit 2; }
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
ready_timeout_seconds="${HB_CONTROL_PLANE_READY_TIMEOUT_SECONDS:-120}"
# The serving address is fixed at `up` and read back by every other command.
if [ "$cmd" = up ]; then echo "${HB_CONTROL_PLANE_ADDRESS:-127.0.0.1}" > "$dir/address"; fi
address="$(cat "$dir/address" 2>/dev/null || echo 127.0.0.1)"
node_mode() { [ "$address" != 127.0.0.1 ]; }

log() { echo "control-plane: $*" >&2; }

pick_port() {
  local p
  for _ in $(seq 1 200); do
    p=$(python3 "$repo/scripts/free-port.py") || return 1
    if ! grep -qsx "$p" "$dir"/ports.* 2>/dev/null; then echo "$p"; return 0; fi
  done
  log "no free loopback port found"; return 1
}

pid_alive() {  # pid_alive NAME: the recorded process runs and is ours (cmdline names DIR)
  local f="$dir/pids/$1.pid" pid
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  [ -d "/proc/$pid" ] && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q -- "$dir"
}

stop_one() {
  local name=$1 pid
  if pid_alive "$name"; then
    pid=$(cat "$dir/pids/$name.pid")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
    [ -d "/proc/$pid" ] && kill -KILL "$pid" 2>/dev/null || true
    log "stopped $name (pid $pid)"
  fi
  rm -f "$dir/pids/$name.pid"
}

start_daemon() {  # start_daemon NAME ARGS...: detached, output to DIR/logs/NAME.log
  local name=$1; shift
  mkdir -p "$dir/pids" "$dir/logs"
  # The inner shell records its own pid, then becomes the daemon: setsid may
  # fork, so $! would name the wrong process. fd 8 (our lock) is not inherited.
  setsid bash -c 'echo $$ > "$0"; exec "$@"' "$dir/pids/$name.pid" "$@" \
    </dev/null >>"$dir/logs/$name.log" 2>&1 8>&- &
  for _ in $(seq 1 50); do [ -s "$dir/pids/$name.pid" ] && break; sleep 0.1; done
}

make_certs() {
  local c="$dir/pki"
  [ -f "$c/admin.crt" ] && [ "$(cat "$c/served-address" 2>/dev/null)" = "$address" ] && return 0
  rm -rf "$c" && mkdir -p "$c"
  echo "$address" > "$c/served-address"
  (
    cd "$c"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 \
      -subj "/CN=heartbeat-local-ca" 2>/dev/null
    cat > apiserver.ext <<EXT
subjectAltName=IP:127.0.0.1,IP:$address,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc
extendedKeyUsage=serverAuth
EXT
    openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr -subj "/CN=kube-apiserver" 2>/dev/null
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out apiserver.crt \
      -days 3650 -extfile apiserver.ext 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' > client.ext
    openssl req -newkey rsa:2048 -nodes -keyout admin.key -out admin.csr -subj "/CN=admin/O=system:masters" 2>/dev/null
    openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out admin.crt \
      -days 3650 -extfile client.ext 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    rm -f ./*.csr
  )
  # A static admin token for the controller-manager and curl.
  head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$c/admin.token"
  echo "$(cat "$c/admin.token"),admin,admin-uid,system:masters" > "$c/tokens.csv"
  chmod 600 "$c"/*.key "$c/tokens.csv" "$c/admin.token"
}

write_kubeconfigs() {
  local c="$dir/pki" port
  port=$(cat "$dir/ports.apiserver")
  cat > "$dir/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://$address:$port
    certificate-authority-data: $(base64 -w0 < "$c/ca.crt")
users:
- name: admin
  user:
    client-certificate-data: $(base64 -w0 < "$c/admin.crt")
    client-key-data: $(base64 -w0 < "$c/admin.key")
contexts:
- name: local
  context: {cluster: local, user: admin, namespace: default}
current-context: local
KC
  cat > "$dir/controller-manager.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "https://$address:$port", certificate-authority: $c/ca.crt}
users:
- name: cm
  user: {token: $(cat "$c/admin.token")}
contexts:
- name: local
  context: {cluster: local, user: cm}
current-context: local
KC
  chmod 600 "$dir/kubeconfig" "$dir/controller-manager.kubeconfig"
}

start_etcd() {
  local client peer
  client=$(cat "$dir/ports.etcd"); peer=$(cat "$dir/ports.etcd-peer")
  start_daemon etcd etcd --name default --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$client" --advertise-client-urls "http://127.0.0.1:$client" \
    --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "default=http://127.0.0.1:$peer" --quota-backend-bytes 2147483648
}

start_apiserver() {
  local c="$dir/pki" node_flags=()
  # Logs and exec reach the kubelet by its InternalIP, as the admin user.
  node_mode && node_flags=(--kubelet-preferred-address-types InternalIP
    --kubelet-client-certificate "$c/admin.crt" --kubelet-client-key "$c/admin.key")
  start_daemon apiserver "$bin/kube-apiserver" "${node_flags[@]}" \
    --etcd-servers "http://127.0.0.1:$(cat "$dir/ports.etcd")" \
    --bind-address "$address" --advertise-address "$address" \
    --secure-port "$(cat "$dir/ports.apiserver")" --insecure-port 0 \
    --cert-dir "$dir/apiserver-certs" \
    --tls-cert-file "$c/apiserver.crt" --tls-private-key-file "$c/apiserver.key" \
    --client-ca-file "$c/ca.crt" --token-auth-file "$c/tokens.csv" \
    --authorization-mode RBAC \
    --service-account-key-file "$c/sa.pub" --service-account-signing-key-file "$c/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --api-audiences https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range 10.0.0.0/24 --allow-privileged=true \
    --enable-priority-and-fairness=false --profiling=false --logtostderr=true --v=1
}

start_controller_manager() {
  local c="$dir/pki"
  # clusterrole-aggregation fills the built-in edit/admin/view roles with the
  # chart's aggregated rules (the tenant tests act as a namespace editor).
  local controllers=job,garbagecollector,serviceaccount,serviceaccount-token,namespace,ttl-after-finished,root-ca-cert-publisher,clusterrole-aggregation
  # A real node: Service endpoints for kube-proxy; node lifecycle lifts the
  # not-ready taint (Pods stay Pending without it); Deployments (the chart's
  # operator runs in-cluster there); the volume binder (an agent's archival
  # claim on a hostPath PersistentVolume).
  node_mode && controllers+=,endpoint,endpointslice,nodelifecycle,deployment,replicaset,persistentvolume-binder
  # Benchmarks add controllers and gates (scripts/bench-dispatch.sh: cronjob).
  [ -n "${HB_KCM_EXTRA_CONTROLLERS:-}" ] && controllers+=",$HB_KCM_EXTRA_CONTROLLERS"
  start_daemon controller-manager "$bin/kube-controller-manager" \
    --kubeconfig "$dir/controller-manager.kubeconfig" \
    --controllers "$controllers" \
    ${HB_KCM_FEATURE_GATES:+--feature-gates "$HB_KCM_FEATURE_GATES"} \
    --service-account-private-key-file "$c/sa.key" --root-ca-file "$c/ca.crt" \
    --kube-api-qps "${HB_KCM_API_QPS:-20}" --kube-api-burst "${HB_KCM_API_BURST:-30}" \
    --leader-elect=false --port 0 --secure-port 0 --logtostderr=true --v=1
}

start_scheduler() {  # only with a real node: nothing binds Pods otherwise
  start_daemon scheduler "$bin/kube-scheduler" \
    --kubeconfig "$dir/controller-manager.kubeconfig" \
    --leader-elect=false --port 0 --secure-port 0 --logtostderr=true --v=1
}

curl_api() {
  curl -sS --max-time 5 --cacert "$dir/pki/ca.crt" \
    -H "Authorization: Bearer $(cat "$dir/pki/admin.token")" \
    "https://$address:$(cat "$dir/ports.apiserver")$1"
}

wait_for() {  # wait_for WHAT CMD...
  local what=$1; shift
  local deadline=$((SECONDS + ready_timeout_seconds))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then
      log "$what not ready after ${ready_timeout_seconds}s; logs in $dir/logs"
      tail -n 20 "$dir"/logs/*.log >&2 || true
      return 1
    fi
    sleep 0.5
  done
}

apiserver_ready() { [ "$(curl_api /readyz)" = "ok" ]; }
etcd_ready() { ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:$(cat "$dir/ports.etcd")" endpoint health; }
default_sa_ready() { curl_api /api/v1/namespaces/default/serviceaccounts/default | grep -q '"secrets"'; }

print_env() {
  echo "export KUBECONFIG=$dir/kubeconfig"
  echo "export HB_CONTROL_PLANE_DIR=$dir"
  echo "export HB_ETCD_ENDPOINT=127.0.0.1:$(cat "$dir/ports.etcd")"
}

find_bin() {
  if node_mode; then bin="$("$repo/scripts/build-kube.sh" node | tail -n 1)"
  else bin="$("$repo/scripts/build-kube.sh" | tail -n 1)"; fi
}
daemons="scheduler controller-manager apiserver etcd"  # in stop order

case "$cmd" in
  up)
    exec 8>"$dir/.lock"; flock 8
    if pid_alive etcd && pid_alive apiserver && pid_alive controller-manager && apiserver_ready &&
      { ! node_mode || pid_alive scheduler; }; then
      log "already up in $dir"; print_env; exit 0
    fi
    find_bin
    for name in $daemons; do stop_one "$name"; done
    [ -f "$dir/ports.etcd" ] || pick_port > "$dir/ports.etcd"
    [ -f "$dir/ports.etcd-peer" ] || pick_port > "$dir/ports.etcd-peer"
    [ -f "$dir/ports.apiserver" ] || pick_port > "$dir/ports.apiserver"
    make_certs
    write_kubeconfigs
    start_etcd
    wait_for etcd etcd_ready
    start_apiserver
    wait_for kube-apiserver apiserver_ready
    start_controller_manager
    wait_for "default service account" default_sa_ready
    if node_mode; then start_scheduler; fi
    log "up: kube-apiserver https://$address:$(cat "$dir/ports.apiserver"), kubeconfig $dir/kubeconfig"
    print_env
    ;;
  down)
    exec 8>"$dir/.lock"; flock 8
    for name in $daemons; do stop_one "$name"; done
    rm -rf "$dir/etcd" "$dir"/ports.*
    ;;
  env) print_env ;;
  restart-apiserver)
    find_bin
    stop_one apiserver
    start_apiserver
    wait_for kube-apiserver apiserver_ready
    ;;
  stop-apiserver) stop_one apiserver ;;
  start-apiserver)
    find_bin
    start_apiserver
    wait_for kube-apiserver apiserver_ready
    ;;
  compact)
    ep="127.0.0.1:$(cat "$dir/ports.etcd")"
    rev=$(ETCDCTL_API=3 etcdctl --endpoints "$ep" endpoint status -w json | grep -o '"revision":[0-9]*' | head -1 | cut -d: -f2)
    ETCDCTL_API=3 etcdctl --endpoints "$ep" compact "$rev" >&2
    echo "$rev"
    ;;
  status)
    for name in etcd apiserver controller-manager scheduler; do
      if pid_alive "$name"; then echo "$name: running (pid $(cat "$dir/pids/$name.pid"))"; else echo "$name: stopped"; fi
    done
    ;;
  *) sed -n '2,19p' "$0" >&2; exit 2 ;;
esac
