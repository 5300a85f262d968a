#!/usr/bin/env bash
# Installs the npm packages of the test OTLP receiver (tests/unit/otlp: the
# OpenTelemetry project's published OTLP message definitions) exactly as
# tests/unit/otlp/package-lock.json pins them, with `npm ci`, into a cache
# outside the repo keyed by the hash of package.json and the lock:
#   ${HEARTBEAT_CACHE_DIR:-~/.cache/heartbeat-operator}/otlp-receiver/KEY/node_modules
# Node.js and npm: the machine's, else Debian's packages.
#
# Idempotent. Progress goes to stderr; the last line of stdout is the
# node_modules path.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
src="$root/tests/unit/otlp"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "install-otlp-receiver: installing Debian's nodejs and npm" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends nodejs npm >&2
fi

key="$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -c1-16)"
cache_root="${HEARTBEAT_CACHE_DIR:-$HOME/.cache/heartbeat-operator}/otlp-receiver"
dir="$cache_root/$key"
if [ ! -f "$dir/.installed" ]; then
  mkdir -p "$cache_root"
  work="$(mktemp -d "$cache_root/.work.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  cp "$src/package.json" "$src/package-lock.json" "$work/"
  echo "install-otlp-receiver: npm ci in $dir" >&2
  (cd "$work" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >&2)
  touch "$work/.installed"
  rm -rf "$dir"
  mv "$work" "$dir"
fi
echo "$dir/node_modules"
