#!/usr/bin/env bash
# hb_otlp_conventions_test: the packages (scripts/install-otlp-receiver.sh,
# cached after the first time), then runner_otlp_test.js under node's test
# runner. Env from ctest: HB_RUNNER_BINARY, HB_FAKE_MODEL_BINARY.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
HB_OTLP_NODE_MODULES="$(bash "$here/../../../scripts/install-otlp-receiver.sh" | tail -n 1)"
export HB_OTLP_NODE_MODULES
exec node --test "$here/runner_otlp_test.js"
