#!/usr/bin/env bash
# Installs promtool (checks and unit-tests the chart's PrometheusRule, see
# tests/integration/helm/operations_kit_test.sh). Debian's `prometheus`
# package ships /usr/bin/promtool, but installing that package also installs
# and starts a Prometheus service; so the .deb is only downloaded and
# unpacked (`dpkg -x`), never installed.
#
# Idempotent: cached outside the repo, in
#   ${HEARTBEAT_CACHE_DIR:-~/.cache/heartbeat-operator}/promtool/usr/bin/promtool
# Progress goes to stderr; the last line of stdout is the promtool binary's path.
set -euo pipefail

cache_root="${HEARTBEAT_CACHE_DIR:-$HOME/.cache/heartbeat-operator}"
out_dir="$cache_root/promtool"
promtool_bin="$out_dir/usr/bin/promtool"

if [ -x "$promtool_bin" ] && "$promtool_bin" --version >/dev/null 2>&1; then
  echo "$promtool_bin"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
download() {
  # As root, apt's sandbox user could not write into $work: download as root.
  (cd "$work" && apt-get download -qq -o APT::Sandbox::User=root prometheus >&2)
}
echo "install-promtool: downloading Debian's prometheus package (for promtool only)" >&2
if ! download; then
  echo "install-promtool: refreshing the package lists" >&2
  apt-get update -qq >&2
  download
fi
deb="$(ls "$work"/prometheus_*.deb)"
dpkg -x "$deb" "$work/root"
[ -x "$work/root/usr/bin/promtool" ] || {
  echo "install-promtool: $(basename "$deb") has no usr/bin/promtool" >&2
  exit 1
}
"$work/root/usr/bin/promtool" --version >&2
mkdir -p "$cache_root"
# Atomic: a concurrent run never sees a half-unpacked tree (mv -T refuses to
# replace a directory another run has finished first; that one is as good).
rm -rf "$out_dir.stale.$$"
if [ -e "$out_dir" ]; then mv -T "$out_dir" "$out_dir.stale.$$"; fi
mv -T "$work/root" "$out_dir" 2>/dev/null || [ -x "$promtool_bin" ]
rm -rf "$out_dir.stale.$$"
echo "$promtool_bin"
