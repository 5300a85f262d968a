#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager (and kubectl when the machine
# has none) from Debian's `kubernetes` source package, which vendors the whole
# tree. Debian ships no kube-apiserver binary. The result is cached outside the
# repo, keyed by the source version, so later runs skip the ~3 minute build.
#
#   build-kube.sh          the control plane's binaries
#   build-kube.sh node     also a real node's: kubelet, kube-proxy,
#                          kube-scheduler and the pause container's binary
#                          (static, from the tree's build/pause); ~5 min more cold
#
# Prints the folder holding the binaries on its last line of stdout.
set -euo pipefail

want=(kube-apiserver kube-controller-manager kubectl)
case "${1:-}" in
  "") ;;
  node) want+=(kubelet kube-proxy kube-scheduler pause) ;;
  *) echo "usage: build-kube.sh [node]" >&2; exit 2 ;;
esac

cache_root="${HEARTBEAT_CACHE_DIR:-$HOME/.cache/heartbeat-operator}"
mkdir -p "$cache_root"

# Debian's source lists are not enabled by default; add bookworm main sources.
src_list=/etc/apt/sources.list.d/heartbeat-operator-src.sources
if ! apt-get indextargets --format '$(CREATED_BY)' 2>/dev/null | grep -q Sources; then
  if [ ! -f "$src_list" ]; then
    cat > "$src_list" <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    apt-get update -qq >&2
  fi
fi

version=$(apt-cache showsrc kubernetes 2>/dev/null | awk '/^Version:/ {print $2; exit}')
if [ -z "$version" ]; then
  apt-get update -qq >&2
  version=$(apt-cache showsrc kubernetes | awk '/^Version:/ {print $2; exit}')
fi
[ -n "$version" ] || { echo "build-kube: no 'kubernetes' source package found; is deb-src enabled?" >&2; exit 1; }

# Bump when the build recipe changes, so stale cached binaries are rebuilt.
recipe=3
out="$cache_root/kube-$version-r$recipe/bin"
missing() {  # the wanted binaries not yet in the cache
  local b
  for b in "${want[@]}"; do [ -x "$out/$b" ] || echo "$b"; done
}
if [ -z "$(missing)" ]; then
  echo "$out"
  exit 0
fi

# Serialise concurrent builds of the same version.
exec 9>"$cache_root/kube-$version.lock"
flock 9
if [ -z "$(missing)" ]; then
  echo "$out"
  exit 0
fi

work="$cache_root/kube-$version/src"
fetch_tree() {  # the patched source tree, fetched once per version
  rm -rf "$work" && mkdir -p "$work"
  echo "build-kube: fetching kubernetes $version source" >&2
  (cd "$work" && apt-get source -qq --download-only kubernetes >&2 && dpkg-source -x --no-check ./*.dsc tree >&2)

  # Kubernetes 1.20 vendors modern-go/reflect2 1.0.1, which breaks under Go
  # 1.18+ (kube-apiserver panics decoding maps). Debian's golang-go is 1.19, so
  # swap in Debian's reflect2 1.0.2, the upstream fix.
  reflect2_src=/usr/share/gocode/src/github.com/modern-go/reflect2
  [ -f "$reflect2_src/go_above_118.go" ] || { echo "build-kube: $reflect2_src missing; install golang-github-modern-go-reflect2-dev" >&2; exit 1; }
  rm -rf "$work/tree/vendor/github.com/modern-go/reflect2"
  mkdir -p "$work/tree/vendor/github.com/modern-go/reflect2"
  cp "$reflect2_src"/*.go "$reflect2_src"/*.s "$work/tree/vendor/github.com/modern-go/reflect2/"

  # Kubernetes 1.20.2's kube-openapi treats every zero value ("" in a custom
  # resource) as null and rejects it (kubernetes#99804); apply the upstream fix
  # (kube-openapi#230) to the one line it changed.
  typego="$work/tree/vendor/k8s.io/kube-openapi/pkg/validation/validate/type.go"
  sed -i 's/^\tif data == nil || reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data)), reflect.ValueOf(data)) {$/\tif data == nil { \/\/ kube-openapi#230: zero values are not null/' "$typego"
  grep -q 'kube-openapi#230' "$typego" || { echo "build-kube: could not patch $typego" >&2; exit 1; }
  touch "$work/tree/.heartbeat-patched"
}
[ -f "$work/tree/.heartbeat-patched" ] || fetch_tree

gopath="$cache_root/kube-$version/go"
mkdir -p "$gopath/src/k8s.io"
ln -sfn "$work/tree" "$gopath/src/k8s.io/kubernetes"

targets=()
for b in $(missing); do
  case "$b" in
    pause) ;;
    *) targets+=("cmd/$b") ;;
  esac
done
if [ ${#targets[@]} -gt 0 ]; then
  echo "build-kube: compiling ${targets[*]} (a few minutes)" >&2
  (
    cd "$gopath/src/k8s.io/kubernetes"
    export GOPATH="$gopath" GO111MODULE=off GOFLAGS=-mod=vendor GOCACHE="$cache_root/go-build"
    CGO_ENABLED=0 make WHAT="${targets[*]}" >&2
  )
fi
mkdir -p "$out"
for b in $(missing); do
  if [ "$b" = pause ]; then
    # The Pod sandbox's process: the tree's own pause.c, static for a FROM
    # scratch image (no registry here to pull k8s.gcr.io/pause from).
    gcc -Os -static -o "$out/pause.tmp" "$work/tree/build/pause/linux/pause.c" >&2
    mv "$out/pause.tmp" "$out/pause"
  else
    cp "$(find "$work/tree/_output" -type f -name "$b" -perm -u+x | head -1)" "$out/$b"
  fi
done
echo "$out"
