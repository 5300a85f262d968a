#!/usr/bin/env bash
# Installs every build, test and demo dependency from Debian packages.
# Idempotent: installs only what is missing, so re-running it is cheap.
set -euo pipefail

# HB_DEPS=build: only what compiling heartbeat-operator and heartbeat-runner
# needs (the Dockerfile's builder stage); default: everything.
build_packages=(
  build-essential cmake ninja-build pkg-config
  libyaml-cpp-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
  libssl-dev libsqlite3-dev libboost-dev zlib1g-dev libzstd-dev
  libhowardhinnant-date-dev  # date-tz: cron schedules in an IANA time zone (the OS tzdata)
)
packages=(
  "${build_packages[@]}" clang-format git rsync libgtest-dev libgmock-dev libbenchmark-dev
  golang-go golang-github-modern-go-reflect2-dev etcd-server etcd-client dpkg-dev curl openssl procps unzip python3
  clang libclang-rt-14-dev  # scripts/fuzz.sh: libFuzzer
  podman runc debootstrap uidmap  # scripts/images.sh
  containerd conntrack containernetworking-plugins iptables iproute2 jq  # tests/cluster: a real node
  lua5.1 lua5.4  # tests/unit/argocd: the chart's Argo CD health checks (5.1: Argo CD's language)
  python3-yaml  # tests/unit/docs: the docs check reads the CRDs
)

[ "${HB_DEPS:-all}" = build ] && packages=("${build_packages[@]}")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all Debian packages present"
fi
[ "${HB_DEPS:-all}" = build ] || bash "$(dirname "$0")/install-helm.sh" >/dev/null
[ "${HB_DEPS:-all}" = build ] || bash "$(dirname "$0")/install-promtool.sh" >/dev/null  # the chart's alert rules
# tests/unit/otlp: the OpenTelemetry project's OTLP definitions from npm
[ "${HB_DEPS:-all}" = build ] || bash "$(dirname "$0")/install-otlp-receiver.sh" >/dev/null
