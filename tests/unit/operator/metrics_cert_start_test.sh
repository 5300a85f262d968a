#!/usr/bin/env bash
# The operator binary with --metrics-cert-dir: a missing or garbage key stops
# the start (exit 2) with a message naming the file; the control, a good pair
# (and the self-signed default), gets past the certificate and stops later
# at the kubeconfig this test withholds.
#   metrics_cert_start_test.sh OPERATOR_BINARY
set -euo pipefail
bin="${1:?usage: metrics_cert_start_test.sh OPERATOR_BINARY}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

start() {  # start ARGS...: the exit code; the output in $tmp/out
  local rc=0
  timeout 20 "$bin" --kubeconfig="$tmp/no-kubeconfig" --log-format=text \
    --metrics-address=127.0.0.1:0 --health-address=127.0.0.2:0 --wakeup-address= "$@" \
    >"$tmp/out" 2>&1 || rc=$?
  echo "$rc"
}
certs="$tmp/certs"
mkdir -p "$certs"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
  -subj /CN=localhost -keyout "$certs/tls.key" -out "$certs/tls.crt" 2>/dev/null

# The control: a good pair, and no cert dir at all, pass the certificate.
for args in "--metrics-cert-dir=$certs" ""; do
  rc="$(start $args)"
  grep -q 'no-kubeconfig' "$tmp/out" || fail "start $args did not reach the kubeconfig: $(cat "$tmp/out")"
  if grep -q 'metrics-cert-dir\|tls.key\|tls.crt' "$tmp/out"; then
    fail "start $args complained about the certificate: $(cat "$tmp/out")"
  fi
done
echo "ok: a good pair and the self-signed default get past the certificate"

rm "$certs/tls.key"
rc="$(start --metrics-cert-dir="$certs")"
[ "$rc" = 2 ] || fail "a missing key exited $rc, not 2: $(cat "$tmp/out")"
grep -qF -- "--metrics-cert-dir: $certs/tls.key: cannot read it" "$tmp/out" ||
  fail "a missing key is not named: $(cat "$tmp/out")"
grep -qF 'no-kubeconfig' "$tmp/out" && fail "a missing key got as far as the kubeconfig"
echo "ok: $(grep -F tls.key "$tmp/out")"

echo 'not a key' >"$certs/tls.key"
rc="$(start --metrics-cert-dir="$certs")"
[ "$rc" = 2 ] || fail "a garbage key exited $rc, not 2: $(cat "$tmp/out")"
grep -qF -- "$certs/tls.key: not a PEM private key" "$tmp/out" ||
  fail "a garbage key is not named: $(cat "$tmp/out")"
echo "ok: $(grep -F tls.key "$tmp/out")"
echo "metrics cert start test: passed"
