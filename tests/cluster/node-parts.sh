# The parts of a real node, sourced by node.sh (which sets dir, id, netns,
# state, sock, the addresses and names). Each part starts one thing; teardown
# removes every kind of thing they add, whether or not they all ran.

# Host-wide sysctls the kubelet sets at start (its kernel tunables); saved
# before the first start and restored by teardown.
kubelet_sysctls="vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes"

run_dir() { echo "$registry/$id"; }  # short paths: socket, containerd state

make_netns() {
  ip netns add "$netns"
  ip link add "$host_veth" type veth peer name "$node_veth"
  ip link set "$node_veth" netns "$netns"
  ip addr add "$host_address/24" dev "$host_veth"
  ip link set "$host_veth" up
  in_node ip link set lo up
  in_node ip addr add "$node_address/24" dev "$node_veth"
  in_node ip link set "$node_veth" up
  in_node ip route add default via "$host_address"
  # Forwarding between the Pod bridge and the veth, inside the node only.
  in_node sysctl -qw net.ipv4.ip_forward=1
}

save_sysctls() {
  [ -f "$dir/node-sysctls" ] && return 0
  local name
  for name in $kubelet_sysctls; do echo "$name=$(sysctl -n "$name")"; done > "$dir/node-sysctls.tmp"
  mv "$dir/node-sysctls.tmp" "$dir/node-sysctls"
}

make_cgroups() {  # the kubelet's cgroupRoot in every v1 hierarchy
  local h
  for h in /sys/fs/cgroup/*/; do
    [ -f "$h/cgroup.procs" ] || continue
    mkdir -p "$h${cgroup_root#/}"
    if [ -f "$h/cpuset.cpus" ]; then  # a cpuset child starts empty
      cat "$h/cpuset.cpus" > "$h${cgroup_root#/}/cpuset.cpus"
      cat "$h/cpuset.mems" > "$h${cgroup_root#/}/cpuset.mems"
    fi
  done
}

write_containerd_config() {
  local c="$state/containerd"
  mkdir -p "$c/root" "$(run_dir)/containerd" "$state/cni/net.d"
  cat > "$c/config.toml" <<TOML
version = 2
root = "$c/root"
state = "$(run_dir)/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$pause_image"
  # No AppArmor here; and root lacks CAP_SYS_RESOURCE, so runc must not
  # lower its own oom_score_adj (every sandbox fails otherwise).
  disable_apparmor = true
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$state/cni/net.d"
TOML
  cat > "$state/cni/net.d/10-hb-node.conflist" <<JSON
{
  "cniVersion": "0.4.0",
  "name": "$netns",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.88.$id.0/24"}]],
              "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "$state/cni/ipam"}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
JSON
}

start_containerd() {
  write_containerd_config
  start_daemon containerd containerd --config "$state/containerd/config.toml"
  for _ in $(seq 1 100); do
    ctr --address "$sock" version >/dev/null 2>&1 && return 0
    pid_alive containerd || break
    sleep 0.2
  done
  tail -n 20 "$state/logs/containerd.log" >&2
  die "containerd did not start (log: $state/logs/containerd.log)"
}

import_images() {  # import_images IMAGE...: podman images into the node's image store
  local image tar
  mkdir -p "$state/images"
  for image in "$@"; do
    tar="$state/images/$(tr '/:' '__' <<<"$image").tar"
    rm -f "$tar"
    podman save --format docker-archive -o "$tar" "$image" >/dev/null ||
      die "podman has no image $image (build it first: scripts/images.sh)"
    ctr --address "$sock" -n k8s.io images import "$tar" >/dev/null
    rm -f "$tar"
    log "imported $image"
  done
}

import_pause_image() {
  if ! podman image exists "$pause_image"; then
    local ctx="$state/pause-image"
    mkdir -p "$ctx"
    cp "$bin/pause" "$ctx/pause"
    printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' > "$ctx/Containerfile"
    podman build -q -t "$pause_image" -f "$ctx/Containerfile" "$ctx" >/dev/null
  fi
  import_images "$pause_image"
}

start_kubelet() {
  local k="$state/kubelet" cp="$dir/control-plane"
  mkdir -p "$k/root" "$k/pki"
  save_sysctls
  make_cgroups
  cat > "$k/config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $node_address
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $cp/pki/ca.crt}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
cgroupRoot: $cgroup_root
failSwapOn: false
# The host's disk is not this test node's to guard: a percentage of a large
# disk (1% of 250 GiB) can exceed what a CI sandbox leaves free, and the
# DiskPressure taint then keeps every Pod Pending. "0%" disables a signal.
evictionHard: {memory.available: 100Mi, nodefs.available: "0%", imagefs.available: "0%", nodefs.inodesFree: "0%"}
# Imported images cannot be pulled again: never collect them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
YAML
  start_daemon kubelet "$bin/kubelet" --config "$k/config.yaml" \
    --kubeconfig "$cp/controller-manager.kubeconfig" \
    --container-runtime remote --container-runtime-endpoint "unix://$sock" \
    --pod-infra-container-image "$pause_image" --node-ip "$node_address" \
    --hostname-override "$node_name" --root-dir "$k/root" --cert-dir "$k/pki" \
    --logtostderr=true --v=2  # 2: "SyncLoop (ADD ...)" names every Pod's UID (teardown)
}

start_kube_proxy() {
  # Conntrack table sizes are host-wide: leave them alone.
  start_daemon kube-proxy "$bin/kube-proxy" \
    --kubeconfig "$dir/control-plane/controller-manager.kubeconfig" \
    --proxy-mode iptables --cluster-cidr "10.88.$id.0/24" --hostname-override "$node_name" \
    --healthz-bind-address 127.0.0.1:10256 --metrics-bind-address 127.0.0.1:10249 \
    --conntrack-max-per-core 0 --conntrack-tcp-timeout-established 0 \
    --conntrack-tcp-timeout-close-wait 0 --logtostderr=true --v=1
}

kubectl_node() { "$bin/kubectl" --kubeconfig "$dir/control-plane/kubeconfig" "$@"; }

wait_node_ready() {
  local deadline=$((SECONDS + node_ready_timeout_seconds)) ready=""
  while [ $SECONDS -lt $deadline ]; do
    ready="$(kubectl_node get node "$node_name" \
      -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null || true)"
    [ "$ready" = True ] && return 0
    pid_alive kubelet || break
    sleep 1
  done
  log "node $node_name not Ready after ${node_ready_timeout_seconds}s (Ready=${ready:-none}); the kubelet's last errors:"
  grep -E '^[EF][0-9]{4}' "$state/logs/kubelet.log" | tail -n 10 >&2 || tail -n 10 "$state/logs/kubelet.log" >&2
  die "logs in $state/logs"
}

print_env() {
  bash "$repo/tests/e2e/control-plane.sh" env "$dir/control-plane"
  echo "export HB_NODE_NAME=$node_name"
  echo "export HB_NODE_ADDRESS=$node_address"
  echo "export HB_NODE_HOST_ADDRESS=$host_address"
  echo "export HB_NODE_CONTAINERD_SOCKET=$sock"
  echo "export HB_NODE_NETNS=$netns"
}

# --- teardown ----------------------------------------------------------------
kill_cgroup_processes() {
  local h pid
  for h in /sys/fs/cgroup/*/; do
    [ -d "$h${cgroup_root#/}" ] || continue
    for pid in $(find "$h${cgroup_root#/}" -name cgroup.procs -exec cat {} + 2>/dev/null); do
      kill -KILL "$pid" 2>/dev/null || true
    done
  done
}

remove_cgroups() {
  local h
  for h in /sys/fs/cgroup/*/; do
    [ -d "$h${cgroup_root#/}" ] || continue
    for _ in 1 2 3 4 5; do  # a killed process leaves its cgroup a moment later
      find "$h${cgroup_root#/}" -depth -type d -exec rmdir {} + 2>/dev/null || true
      [ -d "$h${cgroup_root#/}" ] || break
      sleep 0.2
    done
  done
}

kill_shims() {  # containerd's shims outlive it: find them by our socket
  local pid
  for pid in $(pgrep -f -- "-address $sock" || true); do kill -KILL "$pid" 2>/dev/null || true; done
}

unmount_under() {  # every mount below a folder, deepest first
  local prefix=$1 mnt
  awk -v p="$prefix/" 'index($5, p) == 1 {print $5}' /proc/self/mountinfo | sort -r |
    while read -r mnt; do umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true; done
}

remove_pod_netns() {  # sandboxes' network namespaces, known by our Pod subnet
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '/^cni-/ {print $1}'); do
    if ip -n "$ns" -4 addr 2>/dev/null | grep -q "inet 10\.88\.$id\."; then ip netns del "$ns" || true; fi
  done
}

remove_pod_logs() {  # the kubelet writes them to host-wide folders, by Pod UID
  local uid link
  # Every Pod the kubelet ever ran, deleted ones too (whose log folders it
  # leaves for a later garbage collection that will never come).
  for uid in $( { ls "$state/kubelet/root/pods" 2>/dev/null
      grep -ho 'SyncLoop (ADD, "api"): ".*' "$state/logs/kubelet.log" 2>/dev/null |
        grep -Eo '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'; } | sort -u); do
    rm -rf /var/log/pods/*_"$uid"
  done
  for link in /var/log/containers/*.log; do
    [ -L "$link" ] && [ ! -e "$link" ] && rm -f "$link"
  done
  return 0
}

restore_sysctls() {
  [ -f "$dir/node-sysctls" ] || return 0
  local line
  while read -r line; do sysctl -qw "$line" || true; done < "$dir/node-sysctls"
  rm -f "$dir/node-sysctls"
}

teardown() {
  local name
  for name in kube-proxy kubelet containerd; do stop_daemon "$name"; done
  kill_shims
  kill_cgroup_processes
  remove_pod_netns
  unmount_under "$state"
  unmount_under "$(run_dir)"
  remove_pod_logs
  ip netns del "$netns" 2>/dev/null || true
  ip link del "$host_veth" 2>/dev/null || true
  remove_cgroups
  restore_sysctls
  bash "$repo/tests/e2e/control-plane.sh" down "$dir/control-plane" >/dev/null 2>&1 || true
  rm -rf "$state" "$(run_dir)"
}
