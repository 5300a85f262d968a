#!/usr/bin/env bash
# Runs each Argo CD health script on every case of cases.json with lua5.4
# (Argo CD's own Lua is 5.1-compatible; the scripts use nothing newer) and
# checks the status it returns. An argument names another cases file (the
# operator integration test passes objects it read from the control plane).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
scripts="$here/../../../helm/heartbeat-operator/argocd/heartbeat.dev"
lua="$(command -v lua5.4 || command -v lua || true)"
[ -n "$lua" ] || { echo "lua5.4 is missing: run scripts/install-deps.sh" >&2; exit 1; }
python3 - "${1:-$here/cases.json}" "$scripts" "$lua" <<'PY'
import json, subprocess, sys

def lua(value):
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # its escapes (\n, \", \\) are Lua's too
    if isinstance(value, list):
        return "{" + ",".join(lua(v) for v in value) + "}"
    return "{" + ",".join("[%s]=%s" % (json.dumps(k), lua(v)) for k, v in value.items()) + "}"

cases_file, scripts, interpreter = sys.argv[1:]
failed = 0
cases = json.load(open(cases_file))
for case in cases:
    script = open("%s/%s/health.lua" % (scripts, case["kind"])).read()
    program = "obj = %s\nlocal hs = (function()\n%s\nend)()\nprint(hs.status)\nprint(hs.message)\n" % (
        lua(case["object"]), script)
    run = subprocess.run([interpreter, "-"], input=program, capture_output=True, text=True)
    lines = run.stdout.split("\n")
    status = lines[0] if run.returncode == 0 else "error: " + run.stderr.strip()
    message = lines[1] if len(lines) > 1 else ""
    ok = status == case["want"] and case.get("message_has", "") in message
    print("%s %s: %s (%s)%s" % ("ok  " if ok else "FAIL", case["kind"], case["name"], status,
                                "" if ok else " want %s, message %r" % (case["want"], message)))
    failed += not ok
print("%d of %d cases failed" % (failed, len(cases)))
sys.exit(1 if failed else 0)
PY
