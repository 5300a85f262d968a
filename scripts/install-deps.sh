#!/usr/bin/env bash
# Installs every build, test and demo dependency from Debian packages.
# Idempotent: installs only what is missing, so re-running it is cheap.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config clang-format git rsync
  libcpprest-dev libyaml-cpp-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
  libssl-dev libgtest-dev libgmock-dev libbenchmark-dev libsqlite3-dev
  golang-go golang-github-modern-go-reflect2-dev etcd-server etcd-client dpkg-dev curl openssl procps unzip
)

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
