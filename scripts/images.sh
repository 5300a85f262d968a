#!/usr/bin/env bash
# Builds both images of the Dockerfile with podman + runc, exactly as
# `docker build --target runner|operator .` would, tagged with the chart's
# default repositories and appVersion so `helm install` finds them:
#   ghcr.io/heartbeat-operator/heartbeat-runner:VERSION
#   ghcr.io/heartbeat-operator/heartbeat-operator:VERSION
# When no debian:bookworm image is present (no registry reachable here), it
# is made with debootstrap from the machine's apt mirror and cached as a
# tarball, so later runs import it in seconds.
#
#   scripts/images.sh [TAG]     build (default TAG: the chart's appVersion)
#
# Env: HB_IMAGE_PREFIX (default ghcr.io/heartbeat-operator/),
# HEARTBEAT_CACHE_DIR (default ~/.cache/heartbeat-operator).
set -euo pipefail
cd "$(dirname "$0")/.."

prefix="${HB_IMAGE_PREFIX:-ghcr.io/heartbeat-operator/}"
version="$(awk -F'"' '/^appVersion:/ {print $2}' helm/heartbeat-operator/Chart.yaml)"
tag="${1:-$version}"
cache_root="${HEARTBEAT_CACHE_DIR:-$HOME/.cache/heartbeat-operator}"
base_image=docker.io/library/debian:bookworm
log() { echo "images: $*" >&2; }
die() { log "$*"; exit 1; }

# podman's defaults that fail on this kind of machine: crun (hybrid cgroups)
# and unlimited ulimits runc cannot set inside the build sandbox.
podman_flags=(--runtime runc)
build_flags=(--network host --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)

install_tools() {
  local missing=() p
  for p in podman runc debootstrap uidmap; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" = 0 ] || die "missing ${missing[*]}; install them (apt-get install ${missing[*]})"
  log "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

apt_mirror() {  # the first Debian mirror this machine's apt uses
  local m
  m="$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' | grep -v security | head -1)"
  [ -n "$m" ] || m="$(awk '/^deb / && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null)"
  echo "${m:-http://deb.debian.org/debian}"
}

# debootstrap's minbase bookworm, imported as debian:bookworm. The tarball is
# cached; delete it to take newer packages from the mirror.
ensure_base_image() {
  podman "${podman_flags[@]}" image exists "$base_image" && return 0
  local tarball="$cache_root/debian-bookworm-minbase.tar"
  if [ ! -s "$tarball" ]; then
    [ "$(id -u)" = 0 ] || die "no $base_image and debootstrap needs root"
    local root
    root="$(mktemp -d "$cache_root/debootstrap.XXXXXX")"
    log "making $base_image with debootstrap from $(apt_mirror) (a few minutes, once)"
    debootstrap --variant=minbase bookworm "$root" "$(apt_mirror)" >&2 ||
      { rm -rf "$root"; die "debootstrap failed (see above)"; }
    # apt's lists and caches are not part of an image.
    rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin
    tar -C "$root" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
    rm -rf "$root"
  fi
  podman "${podman_flags[@]}" import "$tarball" "$base_image" >/dev/null
  log "imported $base_image from $tarball"
}

build_target() {  # build_target TARGET
  local target=$1 image="${prefix}heartbeat-$1:$tag" started=$SECONDS
  log "building $image (--target $target)"
  podman "${podman_flags[@]}" build "${build_flags[@]}" --target "$target" -t "$image" . >&2
  local bytes
  bytes="$(podman "${podman_flags[@]}" image inspect --format '{{.Size}}' "$image")"
  echo "$image $((bytes / 1000000)) MB built in $((SECONDS - started)) s"
}

mkdir -p "$cache_root"
install_tools
ensure_base_image
build_target runner
build_target operator
