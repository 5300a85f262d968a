#!/usr/bin/env bash
# A real Kubernetes node on this machine, for the tests that must see real
# containers: the control plane (tests/e2e/control-plane.sh, with
# kube-scheduler) plus containerd, the CNI bridge, kubelet and kube-proxy,
# all under DIR. Needs root.
#
#   node.sh up DIR [IMAGE...]  start (a leftover run in DIR is torn down
#                              first); podman images named are imported
#   node.sh import DIR IMAGE...  import more podman images into the node
#   node.sh down DIR           remove everything `up` added
#   node.sh env DIR            export lines: KUBECONFIG, HB_NODE_ADDRESS, ...
#   node.sh preflight          say what this machine lacks for a node
#
# The node lives in its own network namespace (hb-node-ID), joined to the
# host by a veth pair: the host side 10.99.ID.1 is where the API server (and
# anything Pods must reach, e.g. the stand-in model) listens; the node is
# 10.99.ID.2. Its bridge, Pod network (10.88.0.0/16, masqueraded), kube-proxy
# rules and forwarding sysctl stay inside that namespace, so parallel DIRs do
# not collide and deleting the namespace removes them all. ID comes from DIR.
# Processes share the host's mount namespace (kubelet's volume mounts must be
# seen by containerd); their cgroups live under /hb-node-ID.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cmd="${1:-}"
node_ready_timeout_seconds="${HB_NODE_READY_TIMEOUT_SECONDS:-120}"
pause_image=k8s.gcr.io/pause:3.2
pod_cidr=10.88.0.0/16
registry=/run/heartbeat-node  # ID.dir names its DIR (two DIRs never share an ID); ID/ is its runtime folder

log() { echo "node: $*" >&2; }
die() { log "$*"; exit 1; }
usage() { sed -n '7,13p' "$0" >&2; exit 2; }

preflight() {  # prints one line per thing missing; empty when all is there
  [ "$(id -u)" = 0 ] || echo "root (containerd, kubelet and network namespaces need it)"
  local tool
  for tool in containerd ctr runc iptables ip nsenter conntrack podman gcc; do
    command -v "$tool" >/dev/null 2>&1 || echo "the '$tool' command (apt-get install containerd runc iptables iproute2 util-linux conntrack podman gcc)"
  done
  [ -x /usr/lib/cni/bridge ] || echo "CNI plugins in /usr/lib/cni (apt-get install containernetworking-plugins)"
  grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || echo "the overlay filesystem (containerd's snapshotter)"
  [ -d /sys/fs/cgroup/memory ] || [ -f /sys/fs/cgroup/cgroup.controllers ] || echo "a cgroup filesystem at /sys/fs/cgroup"
  # CAP_SYS_ADMIN (bit 21) and CAP_NET_ADMIN (bit 12) in the effective set.
  local caps
  caps=$((16#$(awk '/^CapEff/ {print $2}' /proc/self/status)))
  (( caps & (1 << 21) )) || echo "CAP_SYS_ADMIN"
  (( caps & (1 << 12) )) || echo "CAP_NET_ADMIN"
}

# --- names derived from DIR --------------------------------------------------
set_names() {  # needs $dir; sets id, netns, addresses, state folders
  id="$(cat "$dir/node-id" 2>/dev/null || true)"
  if [ -z "$id" ]; then
    id=$(( $(printf '%s' "$dir" | cksum | cut -d' ' -f1) % 200 + 20 ))
    mkdir -p "$registry"
    while [ -f "$registry/$id.dir" ] && [ "$(cat "$registry/$id.dir")" != "$dir" ] &&
      [ -d "$(cat "$registry/$id.dir")" ]; do
      id=$(( (id - 20 + 1) % 200 + 20 ))
    done
    echo "$dir" > "$registry/$id.dir"
    echo "$id" > "$dir/node-id"
  fi
  netns="hb-node-$id"
  host_veth="hbh-$id"
  node_veth="hbn-$id"
  host_address="10.99.$id.1"
  node_address="10.99.$id.2"
  node_name="hb-node-$id"
  cgroup_root="/hb-node-$id"
  state="$dir/node"
  sock="$state/containerd/containerd.sock"
}

in_node() { nsenter --net="/run/netns/$netns" "$@"; }

pid_alive() {  # pid_alive NAME: the recorded process runs and is ours (cmdline names DIR)
  local f="$state/pids/$1.pid" pid
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  [ -d "/proc/$pid" ] && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q -- "$dir/"
}

start_daemon() {  # start_daemon NAME ARGS...: in the node's netns, output to logs/NAME.log
  local name=$1; shift
  mkdir -p "$state/pids" "$state/logs"
  setsid nsenter --net="/run/netns/$netns" bash -c 'echo $$ > "$0"; exec "$@"' \
    "$state/pids/$name.pid" "$@" </dev/null >>"$state/logs/$name.log" 2>&1 8>&- &
  for _ in $(seq 1 50); do [ -s "$state/pids/$name.pid" ] && break; sleep 0.1; done
}

stop_daemon() {
  local name=$1 pid
  if pid_alive "$name"; then
    pid=$(cat "$state/pids/$name.pid")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
    [ -d "/proc/$pid" ] && kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$state/pids/$name.pid"
}

source "$here/node-parts.sh"

case "$cmd" in
  preflight)
    missing="$(preflight)"
    [ -z "$missing" ] && { echo "node: this machine can run a real node"; exit 0; }
    echo "node: this machine cannot run a real node; it lacks:" >&2
    sed 's/^/  - /' <<<"$missing" >&2
    echo "node: run the rest of the suite without it: scripts/test.sh -LE cluster (or ctest -LE cluster)" >&2
    exit 1
    ;;
  up | down | env | import)
    dir="${2:-}"
    [ -n "$dir" ] || usage
    mkdir -p "$dir" && dir="$(cd "$dir" && pwd)"
    set_names
    ;;
  *) usage ;;
esac

case "$cmd" in
  up)
    missing="$(preflight)"
    [ -z "$missing" ] || { "$0" preflight || true; exit 1; }
    exec 8>"$dir/.node-lock"; flock 8
    shift 2
    teardown  # whatever a killed run left in DIR
    bin="$(bash "$repo/scripts/build-kube.sh" node | tail -n 1)"
    make_netns
    HB_CONTROL_PLANE_ADDRESS="$host_address" bash "$repo/tests/e2e/control-plane.sh" up "$dir/control-plane" >/dev/null
    eval "$(bash "$repo/tests/e2e/control-plane.sh" env "$dir/control-plane")"
    start_containerd
    import_pause_image
    [ $# -eq 0 ] || import_images "$@"
    start_kubelet
    start_kube_proxy
    wait_node_ready
    log "up: node $node_name at $node_address; Pods reach the host at $host_address"
    print_env
    ;;
  import)
    shift 2
    import_images "$@"
    ;;
  down)
    exec 8>"$dir/.node-lock"; flock 8
    teardown
    ;;
  env) print_env ;;
esac
